"""Compiling codelet source into cached shared libraries with the host compiler.

A library is keyed by a hash of its sources, the language, the compiler's identity,
the flags, popsim's version and the headers popsim ships; a second request for the same
key is a cache hit that compiles nothing. The cache lives in POPSIM_CACHE_DIR (default
``~/.cache/popsim``), in its ``codelets`` folder. Each library is stored with its sha256 and
checked before use (popsim/cachedir.py): a truncated or replaced library is rebuilt.
"""
from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Dict, Iterable, Mapping, Sequence

from .. import config
from ..cachedir import entry_lock, evict, is_verified, store_verified, usable_dir
from ..errors import CodeletCompileError
from ..log import logger
from . import diagnostics

INCLUDE_DIR = Path(__file__).resolve().parent / "include"

# Exact IEEE arithmetic (no contraction into FMA), wrapping signed ints: what the
# interpreted mode and the documented semantics assume.
_COMMON_FLAGS = ["-O2", "-fPIC", "-shared", "-ffp-contract=off", "-fwrapv", "-fno-strict-aliasing"]
_LANGUAGE_FLAGS = {"c": ["-std=c11"], "c++": ["-std=c++17"]}
_SUFFIX = {"c": ".c", "c++": ".cpp"}

#: Counts of what compile_library did in this process (cache hits vs real compiles).
stats = {"compiled": 0, "cache_hits": 0}
_lock = threading.Lock()


def compiler_command(language: str) -> str:
    """The host compiler for "c" or "c++" (CC / CXX, else the first found)."""
    env = os.environ.get("CXX" if language == "c++" else "CC")
    if env:
        return env
    candidates = ("c++", "g++", "clang++") if language == "c++" else ("cc", "gcc", "clang")
    for c in candidates:
        if shutil.which(c):
            return c
    raise CodeletCompileError(f"no {language.upper()} compiler found (tried {', '.join(candidates)}): install "
                              f"one, or point the {'CXX' if language == 'c++' else 'CC'} environment variable at it")


@functools.lru_cache(maxsize=None)
def _compiler_identity(compiler: str) -> str:
    """The compiler's executable (links resolved) and its version line without the name it
    was called by: ``cc`` and ``gcc`` are often one compiler (the build of the prebuilt tier
    runs with CC=gcc, a user's run with cc), and must key the same code alike."""
    try:
        out = subprocess.run([compiler, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise CodeletCompileError(f"cannot run the compiler '{compiler}': {e}") from None
    first = out.stdout.splitlines()[0] if out.stdout else ""
    found = shutil.which(compiler)
    executable = os.path.realpath(found) if found else compiler
    return f"{executable}: {first.split(' ', 1)[1] if ' ' in first else first}"


@functools.lru_cache(maxsize=1)
def _headers_digest() -> str:
    h = hashlib.sha256()
    for path in sorted(INCLUDE_DIR.rglob("*")):
        if path.is_file():
            h.update(str(path.relative_to(INCLUDE_DIR)).encode())
            h.update(path.read_bytes())
    return h.hexdigest()


def cache_dir() -> Path:
    """Where compiled libraries live (a private temporary directory when the
    configured one cannot be used)."""
    return usable_dir(config.cache_dir() / "codelets")


def cache_key(language: str, *parts: str) -> hashlib._Hash:
    """A hash of ``parts`` plus everything a compiled artefact depends on besides its
    sources: popsim's version, the compiler's identity and popsim's headers."""
    from ..version import __version__
    h = hashlib.sha256()
    for part in (__version__, language, _compiler_identity(compiler_command(language)), _headers_digest(), *parts):
        h.update(part.encode())
        h.update(b"\0")
    return h


def library_key(sources: Mapping[str, str], language: str, flags: Sequence[str]) -> str:
    h = cache_key(language, " ".join(flags))
    for name in sorted(sources):
        h.update(name.encode())
        h.update(b"\0")
        h.update(sources[name].encode())
        h.update(b"\0")
    return h.hexdigest()[:32]


def compile_library(sources: Mapping[str, str], language: str, name: str = "codelets",
                    flags: Iterable[str] = (), include_dirs: Iterable[Path] = (), announce: str = "") -> Path:
    """Compile ``sources`` (file name -> text; the first is the translation unit, the
    others are files it may #include) into one shared library, or find it in the cache.
    ``include_dirs`` are added after popsim's own headers. ``announce``: what is compiled,
    said in one line on stderr when the compiler runs (not on a cache hit)."""
    if language not in _LANGUAGE_FLAGS:
        raise ValueError(f"language must be 'c' or 'c++', not {language!r}")
    flags = list(flags)
    includes = [INCLUDE_DIR, *[Path(d) for d in include_dirs]]
    key = library_key(dict(sources), language, flags + [str(d) for d in includes[1:]])
    safe = re.sub(r"[^A-Za-z0-9_]+", "_", name)[:40] or "codelets"
    target = cache_dir() / f"{safe}-{key}.so"
    # The entry's lock across processes too: a process wanting a library another is
    # compiling waits for it rather than compiling it again.
    with _lock, entry_lock(target):
        if is_verified(target, "codelet library") and loadable(target):
            stats["cache_hits"] += 1
            return target
        if announce:
            print(f"popsim: compiling {announce} for the host (first use; later runs take it from the cache in "
                  f"{target.parent})", file=sys.stderr, flush=True)
        _build(dict(sources), language, flags, includes, target)
        stats["compiled"] += 1
    return target


_loaded: set = set()  # libraries this process has loaded once


def loadable(library: Path) -> bool:
    """Whether the cached ``library`` loads (once per process); one that matches its
    digest but does not (built for another machine, or damaged with its digest
    rewritten) is evicted, so that it is built again rather than used, or embedded in an
    executable, for ever."""
    if str(library) in _loaded:
        return True
    try:
        ctypes.CDLL(str(library))
    except OSError as e:
        logger.warning("cached codelet library %s does not load (%s); building it again", library, e)
        evict(library)
        return False
    _loaded.add(str(library))
    return True


def _build(sources: Dict[str, str], language: str, flags, includes, target: Path) -> None:
    compiler = compiler_command(language)
    with tempfile.TemporaryDirectory(prefix="popsim-build-") as tmp:
        names = list(sources)
        for fname, text in sources.items():
            (Path(tmp) / fname).write_text(text)
        main = Path(tmp) / names[0]
        out = Path(tmp) / "out.so"
        # Flags after the source, so that libraries (-lm) link whatever the linker's as-needed policy.
        cmd = [compiler, *_LANGUAGE_FLAGS[language], *_COMMON_FLAGS, *[f"-I{d}" for d in includes], f"-I{tmp}",
               str(main), "-o", str(out), *flags]
        result = subprocess.run(cmd, capture_output=True, text=True)
        if result.returncode != 0:
            output = result.stderr.replace(tmp + os.sep, "")
            error = CodeletCompileError(_explain(output, sources))
            error.compiler_output = output  # for front ends that place the error in their user's file
            raise error
        # Atomic: a concurrent compile of the same key just replaces an identical file.
        store_verified(target, source=out)


def _explain(output: str, sources: Mapping[str, str]) -> str:
    """The compiler's first error with the offending source line, then its full output."""
    diag = diagnostics.first_error(output)
    if diag is None:
        return diagnostics.compile_error_message("the codelet did not compile",
                                                 diagnostics.link_error(output) or "see the compiler output", output)
    fname = Path(diag.file).name
    lines = sources.get(fname, "").splitlines()
    code = lines[diag.line - 1].strip() if 0 < diag.line <= len(lines) else ""
    return diagnostics.compile_error_message("the codelet did not compile", f"{fname}:{diag.line}: {diag.message}",
                                             output, code)
