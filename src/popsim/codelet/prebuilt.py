"""The prebuilt codelet tier: PopLibs' codelets compiled when popsim is built, shipped
read-only inside the installed package (``popsim/_prebuilt``, beside the native module),
and consulted before the user's codelet cache (compiler.py), so that the first run after
``pip install`` compiles none of them, as Poplar ships PopLibs' codelets compiled.

The build (CMakeLists.txt runs tools/prebuild_codelets.py) writes the directory:
``index.json`` and the libraries it names. What it holds:

- ``python``: Python vertices (PopLibs' vertex templates and generated vertices), by the C
  symbol of each vertex's translation, with the sha256 of its C code and the library
  (several vertices per library: one compiler run each) that defines it;
- ``cpp``: PopLibs' C++ codelet files, by file name, each a list of builds (the plain one
  and the checked one, POPSIM_CHECKED_CODELETS, which the test suite runs): the flags, the
  sha256 of each file the build read (the file and its own headers, by path relative to
  the file), and the vertex types the file defines, whose library is in the directory.

An entry is used only when everything that changes the compiled code matches: the
environment key (popsim's version, the compiler's identity, popsim's headers, popsim's
codelet front end, the translation's C header and flags), the vertex's full C code or the
codelet file's dependencies byte for byte, and the library's sha256. Anything else (an
edited PopLibs file, another compiler, a damaged library) is a miss: the codelet is
compiled into the user cache as if there were no prebuilt tier; the tier is never written.
"""
from __future__ import annotations

import ctypes
import functools
import hashlib
import importlib.util
import json
import os
import threading
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from ..errors import PopsimError
from ..log import logger

__all__ = ["directory", "python_library", "cpp_types", "python_environment", "cpp_key", "python_entries",
           "write_index", "FORMAT"]

FORMAT = 2  # 2: each C++ codelet file has a list of entries (its plain and checked builds)
INDEX = "index.json"
_lock = threading.Lock()
_index: Dict[str, Optional[dict]] = {}  # directory -> its parsed index (or None when unusable)
_good: Dict[str, bool] = {}     # library path -> verified and loadable (once per process)

#: Set (e.g. by tests, or tools/prebuild_codelets.py while it writes a new tier) to use
#: another directory; "" turns the tier off.
override: Optional[str] = None


def directory() -> Optional[Path]:
    """Where the prebuilt tier is: ``_prebuilt`` beside popsim's native module (site-packages
    for a wheel and for an editable install alike), else beside this package."""
    if override is not None:
        return Path(override) if override else None
    return _default_directory()


@functools.lru_cache(maxsize=1)
def _default_directory() -> Optional[Path]:
    try:
        spec = importlib.util.find_spec("popsim._core")
    except (ImportError, ValueError):
        spec = None
    places = [Path(spec.origin).parent] if spec is not None and spec.origin else []
    places.append(Path(__file__).resolve().parents[1])
    for place in places:
        if (place / "_prebuilt" / INDEX).is_file():
            return place / "_prebuilt"
    return None


def _load_index(where: Path) -> Optional[dict]:
    key = str(where)
    with _lock:
        if key in _index:
            return _index[key]
    try:
        index = json.loads((where / INDEX).read_text())
        if not isinstance(index, dict) or index.get("format") != FORMAT:
            raise ValueError(f"format {index.get('format') if isinstance(index, dict) else '?'}, expected {FORMAT}")
    except (OSError, ValueError) as e:
        logger.warning("prebuilt codelets %s cannot be read (%s); compiling PopLibs' codelets on first use instead",
                       where / INDEX, e)
        index = None
    with _lock:
        _index[key] = index
    return index


# -- keys -----------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=1)
def _front_end_digest() -> str:
    """The codelet front end's own code (the translator, the glue generator): a change to
    it may change compiled code that the sources alone do not show."""
    h = hashlib.sha256()
    here = Path(__file__).resolve().parent
    for path in sorted(here.glob("*.py")):
        if path.name != "prebuilt.py":
            h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def python_environment(flags: Sequence[str]) -> str:
    """The key every prebuilt Python vertex shares: compiler.cache_key of the language, the
    flags, the translation's C header and the front end."""
    from . import compiler
    from .emit_c import LIBRARY_HEADER
    return compiler.cache_key("c", "prebuilt python vertices", " ".join(flags), LIBRARY_HEADER,
                              _front_end_digest()).hexdigest()


def cpp_key(flags: Sequence[str], dependencies: Sequence[Tuple[str, str]]) -> str:
    """The key of a prebuilt C++ codelet file: compiler.cache_key of the flags, the front
    end and each file the codelet file reads (relative name and sha256)."""
    from . import compiler
    parts = [f"{name}={digest}" for name, digest in dependencies]
    return compiler.cache_key("c++", "prebuilt codelet file", " ".join(flags), _front_end_digest(),
                              *parts).hexdigest()


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


# -- libraries ------------------------------------------------------------------------------------
def _library(where: Path, index: dict, name: str) -> Optional[Path]:
    """The prebuilt library ``name``, when its content matches the index and it loads."""
    path = where / name
    key = str(path)
    with _lock:
        known = _good.get(key)
    if known is None:
        digest = index.get("libraries", {}).get(name)
        try:
            actual = hashlib.sha256(path.read_bytes()).hexdigest()
        except OSError:
            actual = None
        known = actual is not None and actual == digest
        if not known:
            logger.warning("prebuilt codelet library %s does not match its digest; compiling instead", path)
        else:
            try:
                ctypes.CDLL(str(path))
            except OSError as e:
                logger.warning("prebuilt codelet library %s does not load (%s); compiling instead", path, e)
                known = False
        with _lock:
            _good[key] = known
    return path if known else None


_environments: Dict[tuple, Optional[str]] = {}


def _environment(flags: Tuple[str, ...]) -> Optional[str]:
    """python_environment(flags), or None when it cannot be made (no compiler)."""
    if flags not in _environments:
        try:
            _environments[flags] = python_environment(flags)
        except PopsimError:
            _environments[flags] = None
    return _environments[flags]


def python_library(symbol: str, c_code: str, flags: Sequence[str]) -> Optional[Path]:
    """The prebuilt library defining the Python vertex translation ``symbol`` with exactly
    ``c_code`` compiled with ``flags``, or None."""
    where = directory()
    if where is None:
        return None
    index = _load_index(where)
    if not index:
        return None
    section = index.get("python") or {}
    entry = section.get("vertices", {}).get(symbol)
    if entry is None or entry[1] != sha256_text(c_code):
        return None
    if section.get("environment") != _environment(tuple(flags)):
        return None
    return _library(where, index, entry[0])


def _file_digest(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return ""


def cpp_types(real: Path, flags: Sequence[str]) -> Optional[List[dict]]:
    """The vertex types (as cpp.py's JSON records, with the library resolved; each source
    location is relative to ``real``'s directory) of the prebuilt codelet file that ``real``
    is byte for byte, with the same flags and headers, or None."""
    where = directory()
    if where is None:
        return None
    index = _load_index(where)
    if not index:
        return None
    entry = next((e for e in (index.get("cpp") or {}).get(real.name, []) if list(e.get("flags", [])) == list(flags)),
                 None)   # (the plain build or the checked one: their flags differ)
    if entry is None:
        return None
    deps = [(name, _file_digest(real.parent / name)) for name, _ in entry["dependencies"]]
    if [list(d) for d in deps] != [list(d) for d in entry["dependencies"]]:
        return None
    try:
        if entry.get("key") != cpp_key(flags, deps):
            return None
    except PopsimError:
        return None
    library = _library(where, index, entry["library"])
    if library is None:
        return None
    return [{**t, "library": str(library)} for t in entry["types"]]


# -- writing (tools/prebuild_codelets.py, and the tests) ----------------------------------------------
def python_entries(library: str, translations) -> Dict[str, list]:
    """The index's entries of the translations (translate.Translation) compiled into
    ``library`` (a file name in the tier)."""
    return {t.symbol: [library, sha256_text(t.c_code)] for t in translations}


def write_index(out: Path, python: Dict[str, list], cpp: Dict[str, List[dict]]) -> None:
    """``out``/index.json for the libraries in ``out`` and these entries (``cpp``: file
    name -> its builds' entries)."""
    from .translate import compile_flags
    index = {"format": FORMAT, "python": {"environment": python_environment(compile_flags(True)), "vertices": python},
             "cpp": cpp, "libraries": {lib.name: hashlib.sha256(lib.read_bytes()).hexdigest()
                                       for lib in sorted(Path(out).glob("*.so"))}}
    (Path(out) / INDEX).write_text(json.dumps(index, indent=1, sort_keys=True))
    with _lock:
        _index.pop(str(out), None)
        for key in [k for k in _good if k.startswith(str(out) + os.sep)]:
            del _good[key]
