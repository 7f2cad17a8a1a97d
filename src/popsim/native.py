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


def describe(lw) -> "_core.Description":
    """The typed hand-over of ``lw`` (a popsim.lower.Lowered) to the core."""
    p, v = lw.programs, lw.vertices
    d = _core.Description()
    d.arena_bytes = lw.layout.arena_bytes
    d.instrs = p.instrs
    d.entries = p.entries
    d.copy_runs = lw.copy_runs
    d.table_begin = lw.table_begin
    d.table_overlaps = lw.table_overlaps
    d.cases = p.cases
    d.switch_begin = p.switch_begin
    d.switch_default = p.switch_default
    d.stream_transfer_bytes = np.asarray([s.transfer_bytes for s in lw.streams], np.int64)
    d.stream_broadcast = np.asarray([s.broadcast for s in lw.streams], np.uint8)
    d.num_replicas = lw.replication_factor
    d.num_ipus = lw.target.num_ipus
    d.tiles_per_ipu = lw.target.tiles_per_ipu
    d.replica_maps = np.ascontiguousarray(p.replica_maps, np.int64).reshape(-1)
    d.replication_index_offsets = np.ascontiguousarray(lw.replication_index_offsets, np.int64)
    d.step_costs = p.step_costs
    d.step_ipus = p.step_ipus
    d.num_loop_slots = p.num_loop_slots
    d.num_host_calls = len(p.callbacks)
    d.num_messages = len(p.messages)
    d.vertices = v.vertices
    d.fields = v.fields
    d.spans = v.spans
    d.groups = v.groups
    d.compute_sets = v.compute_sets
    d.exchange_costs = v.exchange_costs
    d.codelets = [(path, symbol, [tuple(f) for f in fields])
                  for (path, symbol), fields in zip(v.codelets, v.codelet_fields)]
    d.codelet_names = _codelet_names(v)
    d.compute_set_names = list(v.cs_names)
    d.state_bytes = v.state_bytes
    d.num_workers = lw.target.num_worker_contexts
    d.num_tiles = lw.target.num_tiles
    d.sync_cycles = v.sync_cycles
    return d


def _codelet_names(v) -> List[str]:
    """The vertex type name of each codelet row (for the core's crash report)."""
    names = ["?"] * len(v.codelets)
    if len(v.vertices):
        codelets, first_rows = np.unique(v.vertices[:, COLUMNS["vertices"]["codelet"]], return_index=True)
        for c, row in zip(codelets.tolist(), first_rows.tolist()):
            names[c] = v.type_names[int(v.row_type[row])]
    return names


def build_machine(lw, num_threads: int, trace_length: int, first_replica: int = 0,
                  local_replicas: int = -1) -> "_core.Machine":
    """The core for ``lw``, holding replicas [first_replica, first_replica +
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
        return _core.Machine(describe(lw), num_threads, trace_length, 0, first_replica, local_replicas)
    except _core.MalformedExecutableError as e:
        raise PopsimError(f"the executable is malformed: {e}; it is corrupted or was not made by this popsim "
                          "(version mismatch): compile it again") from None
    except MemoryError:
        raise EngineStateError(
            f"cannot allocate the engine's memory: {lw.layout.arena_bytes:,} bytes of tile memory (all variables, "
            f"constants and exchange buffers) plus {lw.vertices.state_bytes:,} bytes of vertex state"
            f"{f', for each of {lw.replication_factor} replicas' if lw.replication_factor > 1 else ''}, more than "
            "this host can give; make the tensors smaller (with debug.allowOutOfMemory the graph may be far "
            "larger than a real IPU holds)") from None
    except (TypeError, ValueError) as e:  # a Description field of the wrong type or shape
        raise PopsimError(f"cannot hand the executable to the core: {e}; it is corrupted or was not made by "
                          "this popsim: compile it again") from None
    except RuntimeError as e:  # a codelet library that cannot be loaded, threads that cannot start
        hint = (f"; ask for fewer with popsim.numThreads (or POPSIM_NUM_THREADS), now {num_threads}"
                if "threads" in str(e) else "")
        raise PopsimError(f"cannot build the engine: {e}{hint}") from None
