"""Cache directories and verified cache entries.

popsim caches compiled codelet libraries and executables on disk. An entry is only
used after it is verified: each file is stored with the sha256 of its content beside
it (``<file>.sha256``), and a file whose content no longer matches (truncated, swapped,
edited) is rebuilt, with a WARN in the popsim log. A cache directory that cannot be
used (read-only, a file, a dangling link, cannot be created) is replaced by a private
temporary directory for the rest of the process, with one warning.

Several processes may share one cache (a test run with one worker per core, replicas under
mpiexec): an entry's writes, checks and removal hold its lock (``entry_lock``, a lock file
beside it), so that no process sees one writer's file with another's digest, and a process
about to build an entry another is building waits for it and takes it instead.
"""
from __future__ import annotations

import atexit
import contextlib
import fcntl
import hashlib
import os
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Dict, Iterator, Optional, Set, Tuple

from .log import logger

__all__ = ["usable_dir", "store_verified", "is_verified", "sha256_of", "write_atomic", "entry_lock"]

_lock = threading.Lock()
_fallbacks: Dict[str, Path] = {}      # unusable directory -> its private replacement
_usable: Set[str] = set()             # directories found writable in this process
# path -> ((size, mtime_ns, inode), sha256) when last verified: unchanged files are not hashed
# again (readers then need no checks of their own, e.g. the executable's CRC-32s). A
# truncated file changes size, a replaced one its inode, an edited one its time; only an
# edit of the same size within the file system's time resolution (a few ms) of popsim
# writing the file itself would go unseen.
_verified: Dict[str, Tuple[Tuple[int, int, int], str]] = {}
_private_root: Optional[Path] = None
# entry -> the lock its holder thread takes first, and (lock file descriptor, depth) while
# held: the lock file is locked once per process, however deeply its holder nests.
_entry_threads: Dict[str, threading.RLock] = {}
_entry_held: Dict[str, Tuple[int, int]] = {}


def _private_dir() -> Path:
    global _private_root
    if _private_root is None:
        _private_root = Path(tempfile.mkdtemp(prefix="popsim-cache-"))
        atexit.register(shutil.rmtree, str(_private_root), True)
    return _private_root


def usable_dir(path: Path) -> Path:
    """``path``, created if needed, when popsim can write there; otherwise a private
    temporary directory (warned about once per directory per process)."""
    path = Path(path)
    key = str(path)
    with _lock:
        if key in _fallbacks:
            return _fallbacks[key]
        if key in _usable and path.is_dir():
            return path
        try:
            path.mkdir(parents=True, exist_ok=True)
            fd, probe = tempfile.mkstemp(dir=path, prefix=".popsim-probe-")
            os.close(fd)
            os.unlink(probe)
            _usable.add(key)
            return path
        except OSError as e:
            replacement = _private_dir() / f"{len(_fallbacks)}-{path.name or 'cache'}"
            replacement.mkdir(parents=True, exist_ok=True)
            _fallbacks[key] = replacement
            logger.warning("cache directory %s cannot be used (%s: %s); using the private temporary directory %s "
                           "for this process instead: point POPSIM_CACHE_DIR (or popsim.cacheDir) at a writable "
                           "directory", path, type(e).__name__, e.strerror or e, replacement)
            return replacement


@contextlib.contextmanager
def entry_lock(path: Path) -> Iterator[None]:
    """Hold cache entry ``path``'s lock, across threads and processes (re-entrant in its
    holder thread). Where no lock file can be made (the directory became read-only),
    only this process's threads are kept apart."""
    key = str(path)
    with _lock:
        thread_lock = _entry_threads.setdefault(key, threading.RLock())
    with thread_lock:   # from here on only this thread touches _entry_held[key]
        held = _entry_held.get(key)
        if held is None:
            try:
                fd = os.open(Path(path).with_name(Path(path).name + ".lock"), os.O_RDWR | os.O_CREAT, 0o644)
            except OSError:
                fd = -1
            if fd >= 0:
                fcntl.flock(fd, fcntl.LOCK_EX)
            held = (fd, 0)
        _entry_held[key] = (held[0], held[1] + 1)
        try:
            yield
        finally:
            fd, depth = _entry_held.pop(key)
            if depth > 1:
                _entry_held[key] = (fd, depth - 1)
            elif fd >= 0:
                os.close(fd)   # releases the lock


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _digest_file(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def _stamp(path: Path) -> Tuple[int, int, int]:
    st = os.stat(path)
    return (st.st_size, st.st_mtime_ns, st.st_ino)


def store_verified(path: Path, data: Optional[bytes] = None, source: Optional[Path] = None) -> None:
    """Write ``data`` (or copy file ``source``) to ``path`` atomically, with its digest
    beside it. Concurrent writers of the same entry leave one whole entry."""
    path = Path(path)
    fd, staged = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            if data is not None:
                f.write(data)
            else:
                assert source is not None, "store_verified needs data or source"
                with open(source, "rb") as src:
                    shutil.copyfileobj(src, f)
        digest = sha256_of(Path(staged))
        with entry_lock(path):   # the digest and the file it describes change together
            write_atomic(_digest_file(path), digest.encode())
            os.replace(staged, path)
    except BaseException:
        if os.path.exists(staged):
            os.unlink(staged)
        raise
    with _lock:
        _verified[str(path)] = (_stamp(path), digest)


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same directory, so that
    readers see the old file or the new one, never part of one; nothing is left behind
    if writing fails."""
    fd, staged = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(staged, path)
    except BaseException:
        if os.path.exists(staged):
            os.unlink(staged)
        raise


def is_verified(path: Path, what: str, expected: str = "") -> bool:
    """Whether cache entry ``path`` exists and its content matches its stored digest
    (and ``expected``, a digest prefix the entry's name promises, if given). A
    mismatch is logged (WARN) and the entry removed, so that the caller rebuilds it."""
    path = Path(path)
    try:
        stamp = _stamp(path)
    except OSError:
        return False
    with _lock:
        known = _verified.get(str(path))
    if known is not None and known[0] == stamp:
        return known[1].startswith(expected)
    with entry_lock(path):   # not between another writer's digest and its file
        try:
            stamp = _stamp(path)
            actual = sha256_of(path)
        except OSError:
            return False
        try:
            stored = _digest_file(path).read_text().strip()
        except OSError:
            stored = ""
        if actual == stored and actual.startswith(expected):
            with _lock:
                _verified[str(path)] = (stamp, actual)
            return True
        logger.warning("cached %s %s does not match its digest (truncated or replaced since it was stored); "
                       "rebuilding it", what, path)
        evict(path)
        return False


def evict(path: Path) -> None:
    """Remove cache entry ``path`` and its digest (what is gone is rebuilt)."""
    path = Path(path)
    with _lock:
        _verified.pop(str(path), None)
    with entry_lock(path):
        for p in (path, _digest_file(path)):
            try:
                os.unlink(p)
            except OSError:
                pass
