"""The C heap while a graph is lowered (glibc's malloc on Linux; elsewhere nothing changes).

Lowering a large graph allocates and frees numpy arrays of megabytes thousands of times:
a ResNet-50's compute sets hold tens of millions of runs, worked through in batches.
glibc gives large blocks back to the system as soon as they are freed (memory mapped past
M_MMAP_THRESHOLD, trimmed off the top of the heap past M_TRIM_THRESHOLD), so each new
batch faults its pages in again: a million page faults, five seconds of system time,
for ResNet-50. While it lowers, popsim keeps freed blocks for reuse (both thresholds
raised) and afterwards hands what is left back (malloc_trim). Setting a threshold ends
glibc's own adjustment of them, so afterwards they stay where that adjustment ends:
blocks up to 32 MiB from the heap, trimmed past 64 MiB free.
"""
from __future__ import annotations

import contextlib
import ctypes
import sys
from typing import Iterator, Optional

__all__ = ["lowering_heap"]

_M_TRIM_THRESHOLD = -1   # mallopt's parameters (malloc.h)
_M_MMAP_THRESHOLD = -3
_MMAP_MAX = 32 << 20     # the largest mmap threshold glibc takes (and its own adjustment's limit)
_TRIM_WHILE_LOWERING = 1 << 30
_TRIM_AFTER = 2 * _MMAP_MAX   # what glibc's adjustment sets with the largest mmap threshold

_libc: Optional[ctypes.CDLL] = None
_looked = False


def _glibc() -> Optional[ctypes.CDLL]:
    """The process's glibc, when it is one (mallopt and malloc_trim are glibc's)."""
    global _libc, _looked
    if not _looked:
        _looked = True
        if sys.platform.startswith("linux"):
            try:
                libc = ctypes.CDLL(None)
                gnu = libc.gnu_get_libc_version
                gnu.restype = ctypes.c_char_p
                gnu()
                libc.mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
                libc.malloc_trim.argtypes = (ctypes.c_size_t,)
                _libc = libc
            except (OSError, AttributeError):   # not glibc (musl has no gnu_get_libc_version)
                _libc = None
    return _libc


@contextlib.contextmanager
def lowering_heap() -> Iterator[None]:
    """Freed blocks kept for reuse while the body runs; the rest handed back after."""
    libc = _glibc()
    if libc is None:
        yield
        return
    libc.mallopt(_M_MMAP_THRESHOLD, _MMAP_MAX)
    libc.mallopt(_M_TRIM_THRESHOLD, _TRIM_WHILE_LOWERING)
    try:
        yield
    finally:
        libc.mallopt(_M_TRIM_THRESHOLD, _TRIM_AFTER)
        libc.malloc_trim(0)
