"""One engine, one thing at a time: the guard every public Engine call goes through.

The native core is not re-entrant and must not be used from two threads at once (a
run releases the GIL). An engine therefore refuses, with an EngineStateError naming
it and what it is busy with, any call from another thread while it is in use, and,
from its own callbacks (stream callbacks, PrintTensor, interpreted vertices, which run
Python in the middle of a run on the running thread), the calls that would pull the
ground from under the run: run, load, reset_execution_profile, close. Reading and
writing tensors, reports and connecting or disconnecting streams are allowed there:
the core finishes the transfer under way with the buffers it started with.
"""
from __future__ import annotations

import contextlib
import threading
from typing import Iterator, Optional, Tuple

from .errors import EngineStateError

__all__ = ["UseGuard"]


class UseGuard:
    """Tracks what an engine is doing and on which thread."""

    def __init__(self, name: str):
        self._name = name
        self._lock = threading.Lock()
        self._busy: Optional[Tuple[int, str]] = None  # (thread ident, what it is doing)
        self.closed = False

    @property
    def busy(self) -> Optional[str]:
        """What the engine is doing now (None: idle)."""
        busy = self._busy
        return busy[1] if busy else None

    @contextlib.contextmanager
    def use(self, doing: str, allowed_in_callback: bool = True) -> Iterator[None]:
        """Hold the engine for ``doing`` (e.g. "running program 0"); nested use from the
        same thread (a callback) is allowed when ``allowed_in_callback``."""
        me = threading.get_ident()
        with self._lock:
            if self.closed:
                raise EngineStateError(f"{self._name} is closed: it cannot be used for {doing} any more; build a "
                                       "new Engine")
            busy = self._busy
            if busy is None:
                self._busy = (me, doing)
            elif busy[0] != me:
                raise EngineStateError(
                    f"{self._name} is {busy[1]} in another thread; an engine does one thing at a time: wait until "
                    f"that call returns (e.g. join the thread) before {doing}, or give each thread its own engine")
            elif not allowed_in_callback:
                raise EngineStateError(
                    f"{doing} is not allowed from a callback while {self._name} is {busy[1]}: do it after that "
                    "call returns")
        try:
            yield
        finally:
            if busy is None:
                with self._lock:
                    self._busy = None

    def close(self) -> bool:
        """Mark the engine closed; False if it was already. Refused while it is in use."""
        with self._lock:
            if self._busy is not None:
                where = " in another thread" if self._busy[0] != threading.get_ident() else ""
                raise EngineStateError(f"{self._name} is {self._busy[1]}{where}: it cannot be closed before that "
                                       "call returns")
            was_open, self.closed = not self.closed, True
            return was_open
