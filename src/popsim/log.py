"""Logging through Python's logging module, configured like Poplar's.

POPSIM_LOG_LEVEL: OFF (default), ERR, WARN, INFO (compile phases with timings), DEBUG
(per-graph details), TRACE (everything). POPSIM_LOG_DEST: stderr (default), stdout or a
file name. Messages go to the "popsim" logger, so applications can also configure it
themselves (popsim only attaches its handler when POPSIM_LOG_LEVEL is set).
"""
from __future__ import annotations

import contextlib
import logging
import sys
import time
from typing import Dict, Iterator, Optional

from . import config
from .errors import InvalidOptionError

TRACE = 5
logging.addLevelName(TRACE, "TRACE")
LEVELS = {"OFF": logging.CRITICAL + 10, "ERR": logging.ERROR, "WARN": logging.WARNING, "INFO": logging.INFO,
          "DEBUG": logging.DEBUG, "TRACE": TRACE}

logger = logging.getLogger("popsim")
_configured: Optional[tuple] = None


def configure() -> logging.Logger:
    """Apply POPSIM_LOG_LEVEL / POPSIM_LOG_DEST (again, if they changed) and return the logger."""
    global _configured
    level_name, dest = config.log_settings()
    if (level_name, dest) == _configured:
        return logger
    if level_name and level_name not in LEVELS:
        raise InvalidOptionError(f"POPSIM_LOG_LEVEL must be one of {', '.join(LEVELS)}, found {level_name!r}")
    handler: Optional[logging.Handler] = None
    if level_name:  # opened first: a destination that cannot be opened leaves the logging as it was
        if dest.lower() in ("", "stderr"):
            handler = logging.StreamHandler(sys.stderr)
        elif dest.lower() == "stdout":
            handler = logging.StreamHandler(sys.stdout)
        else:
            try:
                handler = logging.FileHandler(dest)
            except OSError as e:
                raise InvalidOptionError(f"POPSIM_LOG_DEST is {dest!r}, which cannot be opened for writing: "
                                         f"{e.strerror or e}; set it to stdout, stderr or a file you can "
                                         "write") from None
    for h in list(logger.handlers):
        if getattr(h, "_popsim", False):
            logger.removeHandler(h)
            h.close()
    if handler is not None:
        handler.setFormatter(logging.Formatter("%(asctime)s PS %(levelname)s: %(message)s"))
        setattr(handler, "_popsim", True)  # marks the handlers this module added
        logger.addHandler(handler)
        logger.setLevel(LEVELS[level_name])
        logger.propagate = False
    _configured = (level_name, dest)
    return logger


@contextlib.contextmanager
def phase(name: str, timings: Dict[str, float]) -> Iterator[None]:
    """Time a compile phase: logged at INFO, recorded in ``timings`` (seconds)."""
    start = time.perf_counter()
    logger.debug("%s...", name)
    try:
        yield
    finally:
        seconds = time.perf_counter() - start
        timings[name] = timings.get(name, 0.0) + seconds
        logger.info("%s: %.3f s", name, seconds)
