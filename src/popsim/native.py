"""The hand-over to the native core: a Lowered executable becomes a typed
``_core.Description`` (every field checked by the binding as it is set), and the core's
build errors become PopsimErrors.

The binding validates the whole description against tile memory and table sizes
before anything runs (native/core/validate.cpp), so a malformed executable (a corrupted
or tampered file) is an error here, never a wild read or write later.
"""
from __future__ import annotations

from typing import List

import numpy as np

from . import _core, config
from .contract import COLUMNS
from .errors import EngineStateError, InvalidOptionError, PopsimError

__all__ = ["describe", "build_machine", "MAX_THREADS"]

#: More threads than this is a mistake (popsim.numThreads / POPSIM_NUM_THREADS check it first).
MAX_THREADS = config.MAX_THREADS


def describe(lowered) -> "_core.Description":
    """The typed hand-over of ``lowered`` (a popsim.lower.Lowered) to the core."""
    programs, tables = lowered.programs, lowered.vertices
    description = _core.Description()
    description.arena_bytes = lowered.layout.arena_bytes
    description.instrs = programs.instrs
    description.entries = programs.entries
    description.copy_runs = lowered.copy_runs
    description.table_begin = lowered.table_begin
    description.table_overlaps = lowered.table_overlaps
    description.cases = programs.cases
    description.switch_begin = programs.switch_begin
    description.switch_default = programs.switch_default
    description.stream_transfer_bytes = np.asarray([stream.transfer_bytes for stream in lowered.streams], np.int64)
    description.stream_broadcast = np.asarray([stream.broadcast for stream in lowered.streams], np.uint8)
    description.num_replicas = lowered.replication_factor
    description.num_ipus = lowered.target.num_ipus
    description.tiles_per_ipu = lowered.target.tiles_per_ipu
    description.replica_maps = np.ascontiguousarray(programs.replica_maps, np.int64).reshape(-1)
    description.replication_index_offsets = np.ascontiguousarray(lowered.replication_index_offsets, np.int64)
    description.step_costs = programs.step_costs
    description.step_ipus = programs.step_ipus
    description.num_loop_slots = programs.num_loop_slots
    description.num_host_calls = len(programs.callbacks)
    description.num_messages = len(programs.messages)
    description.vertices = tables.vertices
    description.fields = tables.fields
    description.spans = tables.spans
    description.groups = tables.groups
    description.compute_sets = tables.compute_sets
    description.exchange_costs = tables.exchange_costs
    description.codelets = [(path, symbol, [tuple(f) for f in fields])
                  for (path, symbol), fields in zip(tables.codelets, tables.codelet_fields)]
    description.codelet_names = _codelet_names(tables)
    description.compute_set_names = list(tables.cs_names)
    description.state_bytes = tables.state_bytes
    description.num_workers = lowered.target.num_worker_contexts
    description.num_tiles = lowered.target.num_tiles
    description.sync_cycles = tables.sync_cycles
    return description


def _codelet_names(tables) -> List[str]:
    """The vertex type name of each codelet row (for the core's crash report)."""
    names = ["?"] * len(tables.codelets)
    if len(tables.vertices):
        codelets, first_rows = np.unique(tables.vertices[:, COLUMNS["vertices"]["codelet"]], return_index=True)
        for codelet, row in zip(codelets.tolist(), first_rows.tolist()):
            names[codelet] = tables.type_names[int(tables.row_type[row])]
    return names


def build_machine(lowered, num_threads: int, trace_length: int, first_replica: int = 0,
                  local_replicas: int = -1) -> "_core.Machine":
    """The core for ``lowered``, holding replicas [first_replica, first_replica +
    local_replicas) (all by default; popsim.dist); every way building can fail is a
    PopsimError."""
    if isinstance(num_threads, bool) or not isinstance(num_threads, int) or not 1 <= num_threads <= MAX_THREADS:
        raise InvalidOptionError(f"the engine's thread count must be an integer from 1 to {MAX_THREADS}, found "
                                 f"{num_threads!r}: set popsim.numThreads (or POPSIM_NUM_THREADS) to at most the "
                                 "host's cores")
    if isinstance(trace_length, bool) or not isinstance(trace_length, int) or not 0 <= trace_length < 2 ** 62:
        raise InvalidOptionError(f"popsim.traceLength must be a non-negative integer below 2**62, found "
                                 f"{trace_length!r}")
    try:
        return _core.Machine(describe(lowered), num_threads, trace_length, 0, first_replica, local_replicas)
    except _core.MalformedExecutableError as e:
        raise PopsimError(f"the executable is malformed: {e}; it is corrupted or was not made by this popsim "
                          "(version mismatch): compile it again") from None
    except MemoryError:
        raise EngineStateError(
            f"cannot allocate the engine's memory: {lowered.layout.arena_bytes:,} bytes of tile memory (all variables, "
            f"constants and exchange buffers) plus {lowered.vertices.state_bytes:,} bytes of vertex state"
            f"{f', for each of {lowered.replication_factor} replicas' if lowered.replication_factor > 1 else ''}, "
            "more than this host can give; make the tensors smaller (with debug.allowOutOfMemory the graph may be "
            "far larger than a real IPU holds)") from None
    except (TypeError, ValueError) as e:  # a Description field of the wrong type or shape
        raise PopsimError(f"cannot hand the executable to the core: {e}; it is corrupted or was not made by "
                          "this popsim: compile it again") from None
    except RuntimeError as e:  # a codelet library that cannot be loaded, threads that cannot start
        hint = (f"; ask for fewer with popsim.numThreads (or POPSIM_NUM_THREADS), now {num_threads}"
                if "threads" in str(e) else "")
        raise PopsimError(f"cannot build the engine: {e}{hint}") from None
