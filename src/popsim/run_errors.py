"""What went wrong in a run, in words: the core's error record made a PopsimError."""
from __future__ import annotations

import signal
from typing import Optional

from .contract import ErrorKind, FaultPlace, Status
from .reference.replicas import replicas_diverge_message
from .errors import (ApplicationRuntimeError, ControlProgramError, EngineStateError, IndexError, PopsimError,  # noqa: A004 - popsim.IndexError, Poplar's name
                     StreamConnectionError)

__all__ = ["run_error"]


def run_error(status: int, err: dict, program_index: int, lowered, timed_out: Optional[float] = None) -> PopsimError:
    """The error for a run of ``program_index`` that ended with ``status`` and the core's
    error record ``err`` (Machine.error()); ``timed_out``: the run-time limit (seconds)
    that stopped it, if one did."""
    steps = lowered.programs.steps
    where = f" (at {steps[err['step']].name})" if 0 <= err["step"] < len(steps) else ""
    if timed_out is not None:
        return ApplicationRuntimeError(f"program {program_index} ran longer than popsim.runTimeout ({timed_out:g} s) "
                                       f"and was stopped{where}; the engine stays usable (tile memory holds what the "
                                       "run had written so far)")
    replicated = lowered.replication_factor > 1
    on_replica = f" on replica {err['replica']}" if replicated and err.get("replica", -1) >= 0 else ""
    if status == Status.ABORTED:
        message = lowered.programs.messages[err["id"]]
        return ApplicationRuntimeError(f"program {program_index} aborted{on_replica}{where}: "
                                       f"{message or '(no message)'}")
    if status == Status.VERTEX_FAILED:
        error = _vertex_error(err, lowered.vertices, lowered.layout.arena_bytes)
        return type(error)(f"{error}{on_replica}") if on_replica else error
    if status == Status.STREAM_NOT_CONNECTED:
        stream = lowered.streams[err["id"]]
        which = f" for replica {err['replica']}" if replicated and not stream.broadcast else ""
        return StreamConnectionError(f"stream '{stream.handle}' is not connected{which}: call engine.connect_stream "
                                     "first (or connect it again if a callback disconnected it during the run)")
    if status == Status.REPLICAS_DIVERGE:
        step = steps[err["step"]].name if 0 <= err["step"] < len(steps) else "?"
        return ControlProgramError(replicas_diverge_message(program_index, step, err["replica"],
                                                            lowered.replication_factor))
    if status == Status.NOT_LOADED:
        return EngineStateError("the engine is not loaded: call engine.load(device) first")
    if status == Status.CALL_STACK_OVERFLOW:
        return ApplicationRuntimeError(f"program {program_index}: Call nesting too deep{where}")
    return PopsimError(f"internal error: the core stopped with status {status} at instruction {err['pc']}"
                       f"{where}; please report this")


_SIGNALS = {int(signal.SIGSEGV): "an invalid memory access (SIGSEGV)", int(signal.SIGBUS): "a bus error (SIGBUS)",
            int(signal.SIGFPE): "an arithmetic fault (SIGFPE), e.g. an integer division by zero",
            int(signal.SIGILL): "an illegal instruction (SIGILL)"}


def _fault(err: dict, tile_memory_bytes: int) -> str:
    """What the core's record of a fault in vertex code (ErrorKind.FAULT) says, in words."""
    what = _SIGNALS.get(err["error_index"], f"signal {err['error_index']}")
    place, where = err["error_field"], err["error_size"]
    if place == FaultPlace.STACK_OVERFLOW:
        return f"{what} past the end of its stack: its code recursed too deep or has too big a frame"
    if place == FaultPlace.BESIDE_TILE_MEMORY:
        side = f"{-where} bytes before the start" if where < 0 else f"{where - tile_memory_bytes} bytes past the end"
        return (f"{what} {side} of its replica's tile memory: its code indexed outside the fields it was given "
                "(POPSIM_CHECKED_CODELETS=1 checks every field index of C++ codelets)")
    if err["error_index"] in (signal.SIGSEGV, signal.SIGBUS):
        return (f"{what} at address {where:#x}, outside tile memory: its code followed a bad pointer or index "
                "(POPSIM_CHECKED_CODELETS=1 checks every field index of C++ codelets)")
    return what


def _vertex_error(err: dict, vt, tile_memory_bytes: int) -> PopsimError:
    from .codelet.interpret import index_error_message
    row = err["a"]
    t = vt.row_type[row]
    if err["error_kind"] == ErrorKind.INDEX_ERROR:
        f = err["error_field"]
        fields = vt.type_fields[t]
        name = fields[f] if 0 <= f < len(fields) else "?"
        return IndexError(f"{vt.location(row)}: " + index_error_message(
            vt.type_names[t], name, err["error_index"], err["error_size"], err["error_line"],
            vt.type_sources[t].rsplit(":", 1)[0]))
    if err["error_kind"] == ErrorKind.EXCEPTION:
        return ApplicationRuntimeError(f"{vt.describe(row)} threw a C++ exception (its message is on stderr)")
    if err["error_kind"] == ErrorKind.FAULT:
        return ApplicationRuntimeError(f"{vt.describe(row)} crashed: {_fault(err, tile_memory_bytes)}. The run stopped "
                                       "there; the engine stays usable (tile memory holds what the run wrote until "
                                       "then)")
    return ApplicationRuntimeError(f"{vt.describe(row)} returned false")
