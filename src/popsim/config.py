"""Every environment variable popsim reads (POPSIM_*, and Poplar's POPLAR_ENGINE_OPTIONS),
read in one place; ENVIRONMENT also lists GCL's GCL_OPTIONS, which popsim.gcl reads as a
library of its own (poplibs/gcl/options.py)."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from .errors import InvalidOptionError

#: The most engine threads popsim starts. Results never depend on the thread count, and
#: more threads than host cores only add overhead; the bound is fixed (not a multiple of
#: this host's cores) so that a setting accepted on one machine is accepted on every one.
MAX_THREADS = 256

#: Name -> what it does (README.md lists them too).
ENVIRONMENT = {
    "POPSIM_ENGINE_OPTIONS": "JSON object of engine options; overrides the options a program passes",
    "POPLAR_ENGINE_OPTIONS": "Poplar's JSON object of engine options, read too; POPSIM_ENGINE_OPTIONS wins a key "
                             "both set",
    "POPSIM_NUM_THREADS": f"threads the engine runs tiles on, 1..{MAX_THREADS} (default: all host cores)",
    "POPSIM_CACHE_DIR": "directory for compiled codelets and cached executables",
    "POPSIM_CODELET_MODE": "compiled (default) or interpreted: how Python vertices run",
    "POPSIM_LOG_LEVEL": "OFF, ERR, WARN, INFO, DEBUG or TRACE",
    "POPSIM_LOG_DEST": "stdout, stderr or a file name (see popsim/log.py)",
    "POPSIM_CHECK_RACES": "true or false: the read-after-write race check (option popsim.checkRaces)",
    "POPSIM_CHECKED_CODELETS": "1: compile C++ codelets with bounds-checked field access (an out-of-range index "
                               "raises popsim.IndexError instead of corrupting memory), compiled at -O1 as a debugging "
                               "build; default 0 (faster)",
    "POPSIM_MPI": "1: spread replicas over the MPI processes even without a launcher's variables; 0: never; "
                  "unset: when an MPI launcher started several (popsim/dist.py)",
    "GCL_OPTIONS": "GCL's JSON object of collective options (popsim.gcl reads it, as GCL does); wins over the "
                   "options a collective is given",
}
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("", "0", "false", "no", "off")


#: The variables holding engine options, in increasing precedence: Poplar's (what Poplar
#: users and Graphcore's tests set), then popsim's own.
ENGINE_OPTION_VARIABLES = ("POPLAR_ENGINE_OPTIONS", "POPSIM_ENGINE_OPTIONS")


def _engine_options_from(variable: str) -> Dict[str, object]:
    text = os.environ.get(variable, "").strip()
    if not text:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        raise InvalidOptionError(
            f"{variable} is not valid JSON ({e.msg} at character {e.pos}): expected an object "
            "such as '{\"autoReport.all\": \"true\"}'") from None
    if not isinstance(value, dict):
        raise InvalidOptionError(
            f"{variable} must be a JSON object of option -> value, found {type(value).__name__}")
    return {str(k): v for k, v in value.items()}


def engine_options_overrides() -> List[Tuple[str, Dict[str, object]]]:
    """(variable, options) for each of POPLAR_ENGINE_OPTIONS and POPSIM_ENGINE_OPTIONS that is
    set, in increasing precedence; both win over the options a program passes."""
    found = [(variable, _engine_options_from(variable)) for variable in ENGINE_OPTION_VARIABLES]
    return [(variable, options) for variable, options in found if options]


def num_threads() -> int:
    """Worker threads for the engine (POPSIM_NUM_THREADS, else the host's cores)."""
    text = os.environ.get("POPSIM_NUM_THREADS", "").strip()
    if text:
        try:
            n = int(text)
        except ValueError:
            n = None
        if n is None or not 1 <= n <= MAX_THREADS:
            raise InvalidOptionError(f"POPSIM_NUM_THREADS must be an integer in 1..{MAX_THREADS}, found {text!r}; "
                                     "more threads than host cores only add overhead (unset it to use every core)")
        return n
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(cores, MAX_THREADS))


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


def _switch(name: str, meaning: str) -> Optional[bool]:
    """An on/off variable: True, False, or None when unset."""
    text = os.environ.get(name, "").strip().lower()
    if not text:
        return None
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise InvalidOptionError(f"{name} must be true or false (or 1 / 0) for {meaning}, found {text!r}")


def check_races() -> str:
    """POPSIM_CHECK_RACES as "true" or "false" ("" when unset): whether lowering reports
    a vertex reading what another vertex of its compute set writes."""
    on = _switch("POPSIM_CHECK_RACES", "the read-after-write race check")
    return "" if on is None else ("true" if on else "false")


def checked_codelets() -> bool:
    """POPSIM_CHECKED_CODELETS: whether C++ codelet files are compiled in checked mode
    (read when a file is added with graph.add_codelets)."""
    return bool(_switch("POPSIM_CHECKED_CODELETS", "checked C++ codelets"))


def log_settings() -> Tuple[str, str]:
    """(POPSIM_LOG_LEVEL upper-cased, POPSIM_LOG_DEST); empty when unset."""
    return (os.environ.get("POPSIM_LOG_LEVEL", "").strip().upper(), os.environ.get("POPSIM_LOG_DEST", "").strip())


def explicit_cache_dir() -> str:
    """POPSIM_CACHE_DIR when the user set it (it switches the executable cache on), else ""."""
    return os.environ.get("POPSIM_CACHE_DIR", "").strip()
