"""A one-line progress bar for an epoch: redrawn in place on a terminal, printed once when
done otherwise (logs and CI keep one line per epoch)."""
import sys
import time


class ProgressBar:
    WIDTH = 30

    def __init__(self, total: int, label: str, stream=None):
        self.total, self.label, self.done = total, label, 0
        self.stream = stream or sys.stdout
        self.live = self.stream.isatty()
        self.start = time.perf_counter()

    def _line(self, suffix: str = "") -> str:
        filled = self.WIDTH * self.done // max(self.total, 1)
        percent = 100 * self.done // max(self.total, 1)
        return (f"{self.label} [{'#' * filled}{'.' * (self.WIDTH - filled)}] {percent:3d}% "
                f"{time.perf_counter() - self.start:5.1f}s{suffix}")

    def advance(self, steps: int = 1) -> None:
        self.done = min(self.total, self.done + steps)
        if self.live:
            self.stream.write("\r" + self._line())
            self.stream.flush()

    def finish(self, suffix: str = "") -> None:
        self.stream.write(("\r" if self.live else "") + self._line(suffix) + "\n")
        self.stream.flush()
