"""A progress bar for long Engine constructions, drawn only on a terminal."""
from __future__ import annotations

import sys
import time


class Progress:
    """``Progress(total, "Compiling")``; ``advance(n, what)``; ``close()``. Silent when
    stderr is not a terminal or the work is too small to be worth showing."""

    def __init__(self, total: int, title: str, show_from: int = 20000, stream=None):
        self.stream = stream or sys.stderr
        self.total = max(1, total)
        self.done = 0
        self.title = title
        self.active = total >= show_from and hasattr(self.stream, "isatty") and self.stream.isatty()
        self._last = 0.0
        self._start = time.perf_counter()

    def advance(self, n: int = 1, what: str = "") -> None:
        self.done = min(self.total, self.done + n)
        now = time.perf_counter()
        if self.active and (now - self._last > 0.1 or self.done == self.total):
            self._last = now
            width = 30
            filled = int(width * self.done / self.total)
            bar = "#" * filled + "-" * (width - filled)
            self.stream.write(f"\r{self.title} [{bar}] {100 * self.done // self.total:3d}% "
                              f"{now - self._start:5.1f}s {what[:40]:<40}")
            self.stream.flush()

    def close(self) -> None:
        if self.active:
            self.advance(0)
            self.stream.write("\n")
            self.stream.flush()
            self.active = False
