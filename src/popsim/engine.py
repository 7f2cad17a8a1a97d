"""Engine: compiles a graph and its programs, loads them, runs them on the native core.

Construction validates the graph, lays out tile memory, lowers programs to the
core's instruction list and builds the core. ``run`` executes a program with the GIL
released; PrintTensor and stream callbacks call back into Python as they happen.
After a failed run the engine stays usable.
"""
from __future__ import annotations

import sys
from dataclasses import replace
from typing import Callable, Dict, List, Optional, Sequence, Union

import numpy as np

from . import _core, config
from .device import Device
from .errors import (
    ApplicationRuntimeError,
    EngineStateError,
    IndexError,
    PopsimError,
    StreamConnectionError,
    TensorIOError,
    UnknownHandleError,
    did_you_mean,
)
from .graph import Graph
from .lower import CATEGORIES, HostHandle, Lowered, lower_graph
from .options import EngineOptions
from .printing import format_tensor
from .program import Program
from .report.report import (
    ExecutionInfo,
    GraphInfo,
    MemoryInfo,
    Report,
    StepInfo,
    TargetInfo,
    VertexTypeCycles,
)
from .target import Target, TargetType
from .types import typed_array

__all__ = ["Engine"]

# Status codes of native/core/status.hpp.
(_OK, _ABORTED, _STREAM_NOT_CONNECTED, _HOST_ERROR, _BAD_PROGRAM, _CALL_STACK_OVERFLOW, _NOT_LOADED,
 _VERTEX_FAILED) = range(8)
_POPSIM_INDEX_ERROR, _POPSIM_EXCEPTION = 1, 2  # popsim_codelet.h


class Engine:
    """Compile ``programs`` (one Program or a list, run by index) for ``graph``.

    >>> engine = Engine(graph, prog); engine.load(device); engine.run(0)
    """

    def __init__(self, graph: Graph, programs: Union[Program, Sequence[Program]], options=None):
        if not isinstance(graph, Graph):
            raise TypeError(f"Engine needs a Graph, found {type(graph).__name__}")
        progs = [programs] if isinstance(programs, Program) else list(programs)
        for i, p in enumerate(progs):
            if not isinstance(p, Program):
                raise TypeError(f"Engine: program {i} is a {type(p).__name__}, not a Program")
        if not progs:
            raise PopsimError("Engine needs at least one program")
        self._options = EngineOptions(options)
        self._graph = graph
        self._state = graph._state
        self._target = self._state.target
        self._interpreted = (config.codelet_mode() or self._options["popsim.codeletMode"]) == "interpreted"
        self._lowered: Lowered = lower_graph(self._state, progs, self._options.flag("debug.allowOutOfMemory"),
                                             self._interpreted)
        threads = int(self._options["popsim.numThreads"]) or config.num_threads()
        try:
            self._machine = self._build_machine(self._lowered, threads)
        except RuntimeError as e:  # a codelet library that cannot be loaded
            raise PopsimError(f"cannot build the engine: {e}") from None
        self._vertex_fields: Dict[int, list] = {}  # interpreted vertices' numpy views, by row
        self._stream_index: Dict[str, int] = {s.handle: s.index for s in self._lowered.streams}
        self._program_runs: List[int] = [0] * len(progs)
        self._program_names: List[str] = [p.debug_name or f"program {i}" for i, p in enumerate(progs)]

    @staticmethod
    def _build_machine(lw: Lowered, num_threads: int):
        p = lw.programs
        v = lw.vertices
        description = dict(
            arena_bytes=lw.layout.arena_bytes, instrs=p.instrs, entries=p.entries, segs=lw.segs,
            table_begin=lw.table_begin, table_overlaps=lw.table_overlaps, cases=p.cases,
            switch_begin=p.switch_begin, switch_default=p.switch_default,
            stream_transfer_bytes=np.asarray([s.transfer_bytes for s in lw.streams], np.int64),
            step_costs=p.step_costs, num_loop_slots=p.num_loop_slots,
            vertices=v.vertices, fields=v.fields, spans=v.spans, groups=v.groups, compute_sets=v.compute_sets,
            codelets=v.codelets, state_bytes=v.state_bytes, num_workers=lw.target.num_worker_contexts,
            num_tiles=lw.target.num_tiles)
        return _core.Machine(description, num_threads)

    # -- loading and running ---------------------------------------------------------------------
    @property
    def options(self) -> EngineOptions:
        return self._options

    @property
    def num_programs(self) -> int:
        return self._lowered.num_programs

    def load(self, device: Device) -> None:
        """Load onto ``device``: tile memory gets its initial contents (constants, initial
        values, zeros elsewhere). Stream connections are kept."""
        if not isinstance(device, Device):
            raise TypeError(f"load needs a Device, found {type(device).__name__}")
        mine, theirs = self._target, device.target
        if not _compatible(mine, theirs):
            raise EngineStateError(f"cannot load onto {theirs}: the graph was built for {mine}; build the graph "
                                   "with Graph(device) for the device you load onto")
        lw = self._lowered
        self._machine.load(lw.init_table, lw.init_image)

    def _check_runnable(self) -> None:
        if not self._machine.loaded:
            raise EngineStateError("the engine is not loaded: call engine.load(device) before run, write_tensor "
                                   "or read_tensor")
        over = self._lowered.tiles_out_of_memory
        if over.size:
            worst = int(over[np.argmax(self._lowered.layout.tile_totals[over])])
            raise EngineStateError(f"the engine was built with debug.allowOutOfMemory although {over.size} tile(s) "
                                   f"are out of memory (worst: tile {worst}); it can be inspected "
                                   "(get_report, print_profile_summary) but not run")

    def run(self, program_index: int = 0, debug_name: str = "") -> None:
        """Run program ``program_index`` to completion."""
        if isinstance(program_index, bool) or not isinstance(program_index, (int, np.integer)):
            raise TypeError(f"run: program_index must be an integer, found {type(program_index).__name__}")
        n = self.num_programs
        if not 0 <= program_index < n:
            raise PopsimError(f"run: program index {program_index} is out of range: this engine has {n} "
                              f"program(s), indices 0..{n - 1}")
        self._check_runnable()
        for s in self._lowered.programs.program_streams[program_index]:
            if not self._machine.connected(s):
                handle = self._lowered.streams[s].handle
                raise StreamConnectionError(
                    f"program {program_index} uses stream '{handle}', which is not connected: call "
                    f"engine.connect_stream('{handle}', array) or engine.connect_stream_to_callback('{handle}', fn) "
                    "before running")
        sys.stdout.flush()  # codelets print through C stdio: keep the order of what was printed before
        status = self._machine.run(int(program_index), self._host_call, self._vertex_call)
        if status != _OK:
            raise self._run_error(status, program_index)
        self._program_runs[program_index] += 1
        if debug_name:
            self._program_names[program_index] = debug_name

    def _host_call(self, callback: int) -> None:
        cb = self._lowered.programs.callbacks[callback]
        values = np.empty(cb.shape, cb.dtype.numpy)
        self._machine.read(cb.table, values)
        sys.stdout.write(format_tensor(cb.title, values))
        sys.stdout.flush()

    def _vertex_call(self, row: int, worker: int):
        """Run one interpreted Python vertex on tile memory; returns (result, cycles)."""
        from .codelet.interpret import run_interpreted
        values = self._vertex_fields.get(row)
        if values is None:
            values = self._vertex_fields[row] = self._field_arrays(row)
        v = self._lowered.vertices.vertex_refs[row]
        try:
            ok, cycles = run_interpreted(v.type, values, worker, self._target.num_worker_contexts)
        except IndexError as e:  # keep the traceback through the user's line, for pdb post-mortem
            raise type(e)(f"{_vertex_location(v)}: {e}").with_traceback(e.__traceback__) from None
        return (1 if ok else 0), int(cycles)

    def _field_arrays(self, row: int) -> list:
        arena = self._machine.arena()
        v = self._lowered.vertices.vertex_refs[row]
        out = []
        for spec, view in zip(v.type.fields, self._lowered.vertices.field_views(row)):
            dtype = spec.dtype.numpy
            def at(offset, n):
                return arena[offset:offset + n * dtype.itemsize].view(dtype)
            out.append([at(o, n) for o, n in view] if isinstance(view, list) else at(*view))
        return out

    def _run_error(self, status: int, program_index: int) -> PopsimError:
        err = self._machine.error()
        steps = self._lowered.programs.steps
        where = f" (at {steps[err['step']].name})" if 0 <= err["step"] < len(steps) else ""
        if status == _ABORTED:
            message = self._lowered.programs.messages[err["id"]]
            return ApplicationRuntimeError(f"program {program_index} aborted{where}: {message or '(no message)'}")
        if status == _STREAM_NOT_CONNECTED:
            handle = self._lowered.streams[err["id"]].handle
            return StreamConnectionError(f"stream '{handle}' is not connected: call engine.connect_stream first")
        if status == _NOT_LOADED:
            return EngineStateError("the engine is not loaded: call engine.load(device) first")
        if status == _VERTEX_FAILED:
            return self._vertex_error(err)
        if status == _CALL_STACK_OVERFLOW:
            return ApplicationRuntimeError(f"program {program_index}: Call nesting too deep{where}")
        return PopsimError(f"internal error: the core stopped with status {status} at instruction {err['pc']}"
                           f"{where}; please report this")

    def _vertex_error(self, err) -> PopsimError:
        from .codelet.interpret import index_error_message
        v = self._lowered.vertices.vertex_refs[err["a"]]
        where = f"vertex '{v.type.name}' (#{v.index}) on tile {v.tile} in compute set '{v.compute_set.name}'"
        if err["error_kind"] == _POPSIM_INDEX_ERROR:
            f = err["error_field"]
            name = v.type.fields[f].name if 0 <= f < len(v.type.fields) else "?"
            return IndexError(f"{_vertex_location(v)}: " + index_error_message(
                v.type.name, name, err["error_index"], err["error_size"], err["error_line"],
                v.type.source.rsplit(":", 1)[0]))
        if err["error_kind"] == _POPSIM_EXCEPTION:
            return ApplicationRuntimeError(f"{where} threw a C++ exception (its message is on stderr)")
        return ApplicationRuntimeError(f"{where} returned false")

    # -- host transfers -------------------------------------------------------------------------
    def _handle(self, registry: Dict[str, HostHandle], other: Dict[str, HostHandle], handle: str,
                kind: str) -> HostHandle:
        if handle in registry:
            return registry[handle]
        if handle in other:
            opposite = "read" if kind == "write" else "write"
            raise UnknownHandleError(f"'{handle}' is a host {opposite} handle; {kind}_tensor needs a handle made "
                                     f"with graph.create_host_{kind}")
        raise UnknownHandleError(f"no host {kind} handle '{handle}': {did_you_mean(handle, registry)}; create it "
                                 f"with graph.create_host_{kind}('{handle}', tensor) before building the engine")

    @staticmethod
    def _check_array(h: HostHandle, data: np.ndarray, what: str) -> None:
        want = h.dtype.numpy
        if data.dtype != want:
            raise TensorIOError(f"{what} '{h.handle}': the tensor is {h.dtype.name} ({want}) but the array is "
                                f"{data.dtype}; convert it with .astype(np.{want.name})")
        count = int(np.prod(h.shape, dtype=np.int64))
        if tuple(data.shape) != tuple(h.shape) and not (data.ndim == 1 and data.size == count):
            raise TensorIOError(f"{what} '{h.handle}': the tensor has shape {list(h.shape)} but the array has "
                                f"shape {list(data.shape)}; pass an array of shape {list(h.shape)} (or 1-D with "
                                f"{count} elements)")

    def write_tensor(self, handle: str, data) -> None:
        """Write ``data`` (the tensor's shape and dtype) to the tensor of a host write handle."""
        h = self._handle(self._lowered.host_writes, self._lowered.host_reads, handle, "write")
        if isinstance(data, (np.ndarray, np.generic)):
            arr = np.asarray(data)
        else:
            arr = typed_array(data, h.dtype, np.shape(data), f"write_tensor '{handle}'", TensorIOError)
        self._check_array(h, arr, "write_tensor")
        self._check_runnable()
        self._machine.write(h.table, np.ascontiguousarray(arr))

    def read_tensor(self, handle: str, out: Optional[np.ndarray] = None) -> np.ndarray:
        """The tensor of a host read handle as a new array (or written into ``out``)."""
        h = self._handle(self._lowered.host_reads, self._lowered.host_writes, handle, "read")
        if out is None:
            out = np.empty(h.shape, h.dtype.numpy)
        elif not isinstance(out, np.ndarray):
            raise TensorIOError(f"read_tensor '{handle}': out must be a numpy array, found {type(out).__name__}")
        self._check_array(h, out, "read_tensor")
        if not out.flags.c_contiguous or not out.flags.writeable:
            raise TensorIOError(f"read_tensor '{handle}': out must be a writable C-contiguous array")
        self._check_runnable()
        self._machine.read(h.table, out)
        return out

    # -- streams --------------------------------------------------------------------------------
    def _stream(self, handle: str):
        if handle not in self._stream_index:
            raise UnknownHandleError(f"no stream named '{handle}': {did_you_mean(handle, self._stream_index)}")
        return self._lowered.streams[self._stream_index[handle]]

    def connect_stream(self, handle: str, data) -> None:
        """Connect a FIFO stream to host memory. The array is used in place as a circular
        buffer of whole transfers: each Copy consumes (or fills) the next
        ``num_elements`` elements, wrapping at the end."""
        s = self._stream(handle)
        want = s.dtype.numpy
        if not isinstance(data, np.ndarray):
            if not s.is_host_to_device:
                raise StreamConnectionError(f"connect_stream '{handle}': a device-to-host stream needs a numpy "
                                            "array to write into")
            data = typed_array(data, s.dtype, np.shape(data), f"connect_stream '{handle}'", StreamConnectionError)
        if data.dtype != want:
            raise StreamConnectionError(f"connect_stream '{handle}': the stream carries {s.dtype.name} ({want}) "
                                        f"but the array is {data.dtype}; pass data.astype(np.{want.name})")
        if not data.flags.c_contiguous:
            raise StreamConnectionError(f"connect_stream '{handle}': the array must be C-contiguous (the stream "
                                        "uses it in place); pass np.ascontiguousarray(data)")
        if not s.is_host_to_device and not data.flags.writeable:
            raise StreamConnectionError(f"connect_stream '{handle}': the device-to-host stream writes into the "
                                        "array, which is read-only")
        n = s.num_elements
        if n and (data.size == 0 or data.size % n):
            raise StreamConnectionError(f"connect_stream '{handle}': the array has {data.size} elements, which is "
                                        f"not a positive multiple of the {n} elements of one transfer")
        self._machine.connect_buffer(s.index, data.reshape(-1))

    def connect_stream_to_callback(self, handle: str, callback: Callable[[np.ndarray], None]) -> None:
        """Connect a FIFO stream to ``callback(buffer)``, called once per transfer with a
        1-D array to fill (host-to-device) or to read (device-to-host). The buffer is
        only valid during the call."""
        s = self._stream(handle)
        if not callable(callback):
            raise StreamConnectionError(f"connect_stream_to_callback '{handle}': the callback must be callable, "
                                        f"found {type(callback).__name__}")
        self._machine.connect_callback(s.index, callback, s.dtype.numpy)

    def disconnect_stream(self, handle: str) -> None:
        self._machine.disconnect(self._stream(handle).index)

    def list_streams(self) -> List[str]:
        return [s.handle for s in self._lowered.streams]

    # -- reports --------------------------------------------------------------------------------
    def get_report(self) -> Report:
        """What the graph holds and what the runs so far cost (see popsim.report)."""
        return _build_report(self)

    def print_profile_summary(self, file=None, options: Optional[Dict[str, str]] = None) -> None:
        """Print the profile summary: Target, Graph, Memory Usage, Execution. Options:
        ``{"showExecutionSteps": "true"}`` lists every step."""
        (file or sys.stdout).write(self.get_report().summary(options))

    def reset_execution_profile(self) -> None:
        """Forget the cycles counted so far."""
        self._machine.reset_counters()
        self._program_runs = [0] * self.num_programs


def _vertex_location(v) -> str:
    return f"in compute set '{v.compute_set.name}', vertex #{v.index} on tile {v.tile}"


def _compatible(built_for: Target, device: Target) -> bool:
    """A graph loads on a device with the target it was built for; an IPU target and an
    IPUModel of the same shape are interchangeable."""
    ipu_like = {TargetType.IPU, TargetType.IPU_MODEL}
    if built_for.target_type in ipu_like and device.target_type in ipu_like:
        return replace(built_for, target_type=device.target_type) == device
    return built_for == device


def _build_report(engine: Engine) -> Report:
    lw = engine._lowered
    target = engine._target
    state = engine._state
    counts = engine._machine.step_counts()
    cycles = engine._machine.step_cycles()
    vt = lw.vertices
    group_cycles = engine._machine.group_cycles()
    steps = []
    for i, step in enumerate(lw.programs.steps):
        c = step.cost
        tile_compute = None if c.tile_compute is None else c.tile_compute.tolist()
        if step.compute_set >= 0:  # measured as the compute set ran: per tile, averaged over runs
            first, count = vt.cs_groups[step.compute_set]
            per_tile = np.zeros(target.num_tiles)
            np.add.at(per_tile, vt.group_tiles[first:first + count], group_cycles[first:first + count])
            tile_compute = (per_tile / max(1, int(counts[i]))).tolist()
        steps.append(StepInfo(
            name=step.name, kind=step.kind, program=step.program, count=int(counts[i]), cycles=float(cycles[i, 0]),
            categories={name: float(cycles[i, k]) for k, name in enumerate(CATEGORIES) if k},
            tile_compute=tile_compute,
            tile_exchange=None if c.tile_exchange is None else c.tile_exchange.tolist()))
    by_type: Dict[str, List[float]] = {}
    for ref, spent in zip(vt.vertex_refs, engine._machine.vertex_cycles().tolist()):
        entry = by_type.setdefault(ref.type.name, [0, 0.0])
        entry[0] += 1
        entry[1] += spent
    totals = cycles.sum(axis=0) if cycles.size else np.zeros(len(CATEGORIES))
    layout = lw.layout
    worst = np.argsort(-layout.tile_totals, kind="stable")[:5]
    variables = state.table.variables
    return Report(
        target=TargetInfo(type=target.target_type.value, arch=target.arch, num_ipus=target.num_ipus,
                          tiles_per_ipu=target.tiles_per_ipu, num_tiles=target.num_tiles,
                          bytes_per_tile=target.bytes_per_tile, clock=target.tile_clock_frequency,
                          num_worker_contexts=target.num_worker_contexts),
        graph=GraphInfo(num_vertices=engine._graph.num_vertices, num_edges=engine._graph.num_edges,
                        num_variables=len(variables),
                        num_compute_sets=len(state.compute_sets)),
        memory=MemoryInfo(bytes_per_tile=target.bytes_per_tile,
                          by_category={k: v.tolist() for k, v in layout.by_category.items()},
                          largest=[{"tile": int(t), "tensors": [[n, b] for n, b in
                                                                 layout.largest_on_tile(int(t), variables)]}
                                   for t in worst if layout.tile_totals[t] > 0]),
        execution=ExecutionInfo(
            total_cycles=float(totals[0]),
            programs_executed=[{"index": i, "name": engine._program_names[i], "runs": r}
                               for i, r in enumerate(engine._program_runs) if r],
            steps=steps,
            categories={name: float(totals[k]) for k, name in enumerate(CATEGORIES) if k},
            vertex_types=[VertexTypeCycles(name, n, c) for name, (n, c) in by_type.items()]),
        options=engine._options.explicit, warnings=list(vt.warnings))
