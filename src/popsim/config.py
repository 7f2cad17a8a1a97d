"""Every POPSIM_* environment variable, read in one place."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Dict, Tuple

from .errors import InvalidOptionError

#: Name -> what it does (README.md lists them too).
ENVIRONMENT = {
    "POPSIM_ENGINE_OPTIONS": "JSON object of engine options; overrides the options a program passes",
    "POPSIM_NUM_THREADS": "threads the engine runs tiles on (default: all host cores)",
    "POPSIM_CACHE_DIR": "directory for compiled codelets and cached executables",
    "POPSIM_CODELET_MODE": "compiled (default) or interpreted: how Python vertices run",
    "POPSIM_LOG_LEVEL": "OFF, ERR, WARN, INFO, DEBUG or TRACE",
    "POPSIM_LOG_DEST": "stdout, stderr or a file name (see popsim/log.py)",
    "POPSIM_CHECKED_CODELETS": "1: compile C++ codelets with bounds-checked field access (an out-of-range index "
                               "raises popsim.IndexError instead of corrupting memory); default 0 (faster)",
}
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("", "0", "false", "no", "off")


def engine_options_override() -> Dict[str, str]:
    """Options from POPSIM_ENGINE_OPTIONS, which win over those a program passes."""
    text = os.environ.get("POPSIM_ENGINE_OPTIONS", "").strip()
    if not text:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        raise InvalidOptionError(
            f"POPSIM_ENGINE_OPTIONS is not valid JSON ({e.msg} at character {e.pos}): expected an object "
            "such as '{\"autoReport.all\": \"true\"}'") from None
    if not isinstance(value, dict):
        raise InvalidOptionError(
            f"POPSIM_ENGINE_OPTIONS must be a JSON object of option -> value, found {type(value).__name__}")
    return {str(k): v for k, v in value.items()}


def num_threads() -> int:
    """Worker threads for the engine (POPSIM_NUM_THREADS, else the host's cores)."""
    text = os.environ.get("POPSIM_NUM_THREADS", "").strip()
    if text:
        try:
            n = int(text)
        except ValueError:
            raise InvalidOptionError(f"POPSIM_NUM_THREADS must be a positive integer, found {text!r}") from None
        if n < 1:
            raise InvalidOptionError(f"POPSIM_NUM_THREADS must be a positive integer, found {n}")
        return n
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1))


def cache_dir() -> Path:
    """Where compiled codelets and cached executables live (POPSIM_CACHE_DIR, else the
    user cache directory)."""
    text = explicit_cache_dir()
    if text:
        return Path(text).expanduser()
    base = os.environ.get("XDG_CACHE_HOME", "").strip() or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "popsim"


def codelet_mode() -> str:
    """POPSIM_CODELET_MODE: "compiled" (default) or "interpreted" (Python vertices run as
    Python, so print and pdb work)."""
    mode = os.environ.get("POPSIM_CODELET_MODE", "").strip().lower()
    if mode and mode not in ("compiled", "interpreted"):
        raise InvalidOptionError(f"POPSIM_CODELET_MODE must be 'compiled' or 'interpreted', found {mode!r}")
    return mode


def checked_codelets() -> bool:
    """POPSIM_CHECKED_CODELETS: whether C++ codelet files are compiled in checked mode
    (read when a file is added with graph.add_codelets)."""
    text = os.environ.get("POPSIM_CHECKED_CODELETS", "").strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise InvalidOptionError(f"POPSIM_CHECKED_CODELETS must be 1 (checked C++ codelets) or 0, found {text!r}")


def log_settings() -> Tuple[str, str]:
    """(POPSIM_LOG_LEVEL upper-cased, POPSIM_LOG_DEST); empty when unset."""
    return (os.environ.get("POPSIM_LOG_LEVEL", "").strip().upper(), os.environ.get("POPSIM_LOG_DEST", "").strip())


def explicit_cache_dir() -> str:
    """POPSIM_CACHE_DIR when the user set it (it switches the executable cache on), else ""."""
    return os.environ.get("POPSIM_CACHE_DIR", "").strip()
