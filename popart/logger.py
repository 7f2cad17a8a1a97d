"""popart.getLogger(name="all"): PopART's logger, over Python's logging logger
``popsim.popart`` (``setLevel("TRACE" | "DEBUG" | "INFO" | "WARN" | "ERR" | "CRITICAL" |
"OFF")``, and ``trace``, ``debug``, ``info``, ``warn``, ``err``, ``critical``)."""
import logging

from .errors import popart_exception

#: PopART's level names -> Python's logging levels (TRACE is below DEBUG)
LEVELS = {"TRACE": 5, "DEBUG": logging.DEBUG, "INFO": logging.INFO, "WARN": logging.WARNING,
          "ERR": logging.ERROR, "CRITICAL": logging.CRITICAL, "OFF": logging.CRITICAL + 10}
#: PopART's module names (getLogger's argument)
MODULES = ("all", "builder", "ce", "devicex", "ir", "pattern", "session", "transform", "popart", "python")


class Logger:
    def __init__(self, name: str):
        self.name = name
        self._log = logging.getLogger("popsim.popart" if name == "all" else f"popsim.popart.{name}")

    def setLevel(self, level) -> None:  # noqa: N802 - PopART's name
        if level not in LEVELS:
            raise popart_exception(f"Logger.setLevel: unknown level {level!r}; PopART's levels are {list(LEVELS)}")
        self._log.setLevel(LEVELS[level])

    def trace(self, msg) -> None:
        self._log.log(LEVELS["TRACE"], msg)

    def debug(self, msg) -> None:
        self._log.debug(msg)

    def info(self, msg) -> None:
        self._log.info(msg)

    def warn(self, msg) -> None:
        self._log.warning(msg)

    def err(self, msg) -> None:
        self._log.error(msg)

    def critical(self, msg) -> None:
        self._log.critical(msg)


def getLogger(name: str = "all") -> Logger:  # noqa: N802
    if name not in MODULES:
        raise popart_exception(f"getLogger: unknown logger {name!r}; PopART's are {list(MODULES)}")
    return Logger(name)
