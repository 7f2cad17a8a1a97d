"""The reference executor: what running a program means, in plain Python.

``ReferenceExecutor(graph, programs)`` runs the same programs an ``Engine`` runs, with
the same host interface (load, run, write_tensor / read_tensor, connect_stream /
connect_stream_to_callback), on memory held in numpy arrays, without the native core.
It is the living specification of the engine's semantics, and the oracle the
randomised tests compare the engine with (tests/reference/test_engine_matches_reference.py):

- control flow: Sequence in order; Repeat(n) n times; RepeatWhileTrue/False run the
  condition, test the scalar predicate (non-zero is true), run the body, again; If on
  a non-zero predicate; Switch on the control's integer value (its own type's value:
  an UNSIGNED_LONGLONG control holds 0..2**64-1), else the default; Call runs the
  function's program; Abort and a true AbortOnCondition stop the run with
  ApplicationRuntimeError; Sync and WriteUndef change no data.
- Copy reads all of the source, then writes the destination (so overlapping views
  behave as the exchange does); a host-to-device FIFO copy takes the next transfer of
  its host buffer (a circular buffer of whole transfers, from its start at each
  connect) or fills one from its callback; device-to-host the other way round.
- PrintTensor writes the tensor to sys.stdout in Poplar's format (printing.py).
- Execute(cs) is one BSP superstep (DESIGN.md section 2): exchange-in (every field of
  every vertex is read from memory before any vertex runs), compute (each vertex once,
  a MultiVertex once per worker, with the interpreted codelet runner), exchange-out
  (Output and InOut edges written back). A vertex reading what another vertex of the
  same compute set writes is a race the engine does not define; here it reads the
  value from before the superstep. An Output a vertex does not write is undefined on
  the engine; here it keeps its old value. State fields hold their
  set_initial_value values (vertex code cannot change them).
- load() resets memory: zeros, constants, then set_initial_value data in call order.

Only Python vertices can run here. Programs are walked with program_tree.drive, so any
nesting depth works.
"""
from __future__ import annotations

import itertools
import sys
from typing import Callable, Dict, List, Optional, Sequence, Union

import numpy as np

from ..codelet.interpret import run_all_workers
from ..errors import (ApplicationRuntimeError, GraphConnectionError, InvalidTileMappingError, PopsimError,
                      StreamConnectionError, UnknownHandleError, did_you_mean)
from ..printing import format_tensor
from ..program import Execute, PartKind, Program
from ..program_tree import check_belongs_to, drive, operands, reachable
from ..streams import DataStream
from ..tensor import Tensor
from .memory import ReferenceMemory

__all__ = ["ReferenceExecutor"]


class _Endpoint:
    """The host side of one FIFO stream: a circular buffer or a callback."""

    def __init__(self, stream: DataStream, buffer: Optional[np.ndarray] = None,
                 callback: Optional[Callable[[np.ndarray], None]] = None):
        self.stream = stream
        self.buffer = buffer
        self.callback = callback
        self.position = 0

    def take(self) -> np.ndarray:
        """The next host-to-device transfer."""
        n = self.stream.num_elements
        if self.callback is not None:
            data = np.zeros(n, self.stream.dtype.numpy)
            self.callback(data)
            return data
        data = self.buffer[self.position:self.position + n].copy()
        self._advance()
        return data

    def give(self, values: np.ndarray) -> None:
        """One device-to-host transfer."""
        n = self.stream.num_elements
        if self.callback is not None:
            self.callback(values.reshape(-1).copy())
            return
        self.buffer[self.position:self.position + n] = values.reshape(-1)
        self._advance()

    def _advance(self) -> None:
        self.position += self.stream.num_elements
        if self.position >= self.buffer.size:
            self.position = 0


class ReferenceExecutor:
    """Run ``programs`` (one Program or a list, run by index) of ``graph`` in Python."""

    def __init__(self, graph, programs: Union[Program, Sequence[Program]]):
        state = graph._state
        self._state = state
        self._programs: List[Program] = [programs] if isinstance(programs, Program) else list(programs)
        if not self._programs:
            raise PopsimError("a ReferenceExecutor needs at least one program")
        self._streams_used: List[List[DataStream]] = []
        for i, root in enumerate(self._programs):
            if not isinstance(root, Program):
                raise TypeError(f"program {i} is a {type(root).__name__}, not a Program")
            used: Dict[int, DataStream] = {}
            for p, function in reachable([root]):
                check_belongs_to(state, p, f"function '{function.name}'" if function else f"program {i}")
                for part, obj in operands(p):
                    if part.kind is PartKind.ENDPOINT and isinstance(obj, DataStream):
                        used[obj.index] = obj
                if isinstance(p, Execute):
                    self._check_compute_set(p.compute_set)
            self._streams_used.append([used[k] for k in sorted(used)])
        self._num_workers = state.target.num_worker_contexts
        self._endpoints: Dict[str, _Endpoint] = {}
        self._memory = ReferenceMemory(state.table)
        self._running = -1
        self.load()

    # -- host interface (Engine's) -------------------------------------------------------------
    def load(self) -> None:
        """Memory as Engine.load leaves it; stream connections are kept."""
        self._memory.reset()
        for tensor, values in self._state.initial_values:
            self._memory.write(tensor, values)

    def run(self, program_index: int = 0) -> None:
        """Run program ``program_index`` to completion."""
        n = len(self._programs)
        if isinstance(program_index, bool) or not isinstance(program_index, (int, np.integer)) or \
                not 0 <= program_index < n:
            raise PopsimError(f"run: program index {program_index!r} is out of range: there are {n} program(s)")
        for s in self._streams_used[program_index]:
            if s.handle not in self._endpoints:
                raise StreamConnectionError(f"program {program_index} uses stream '{s.handle}', which is not "
                                            f"connected: call connect_stream('{s.handle}', array) first")
        self._running = int(program_index)
        try:
            drive(self._programs[program_index], self._handle)
        finally:
            self._running = -1

    def read(self, tensor: Tensor) -> np.ndarray:
        """The contents of any view of the graph's tensors."""
        return self._memory.read(tensor)

    def write(self, tensor: Tensor, values) -> None:
        """Set the contents of any view of the graph's tensors."""
        self._memory.write(tensor, values)

    def read_tensor(self, handle: str) -> np.ndarray:
        """The tensor of a host read handle (graph.create_host_read)."""
        return self._memory.read(self._host_handle(self._state.host_reads, handle, "read"))

    def write_tensor(self, handle: str, data) -> None:
        """Write the tensor of a host write handle (graph.create_host_write)."""
        t = self._host_handle(self._state.host_writes, handle, "write")
        self._memory.write(t, np.asarray(data, t.dtype.numpy).reshape(t.shape))

    def connect_stream(self, handle: str, data: np.ndarray) -> None:
        """Use ``data`` in place as the stream's circular buffer of whole transfers."""
        s = self._stream(handle)
        buffer = np.asarray(data)
        if buffer.dtype != s.dtype.numpy or (s.num_elements and (buffer.size == 0 or buffer.size % s.num_elements)):
            raise StreamConnectionError(f"connect_stream '{handle}': needs a {s.dtype.numpy} array of a positive "
                                        f"multiple of {s.num_elements} elements")
        self._endpoints[handle] = _Endpoint(s, buffer=buffer.reshape(-1))

    def connect_stream_to_callback(self, handle: str, callback: Callable[[np.ndarray], None]) -> None:
        """Call ``callback(buffer)`` once per transfer, to fill or to read ``buffer``."""
        self._endpoints[handle] = _Endpoint(self._stream(handle), callback=callback)

    def disconnect_stream(self, handle: str) -> None:
        self._stream(handle)
        self._endpoints.pop(handle, None)

    def _stream(self, handle: str) -> DataStream:
        if handle not in self._state.streams:
            raise UnknownHandleError(f"no stream named '{handle}': {did_you_mean(handle, self._state.streams)}")
        return self._state.streams[handle]

    @staticmethod
    def _host_handle(registry: Dict[str, Tensor], handle: str, kind: str) -> Tensor:
        if handle not in registry:
            raise UnknownHandleError(f"no host {kind} handle '{handle}': {did_you_mean(handle, registry)}")
        return registry[handle]

    # -- program kinds: each handler returns the children to run next (or None) -----------------
    def _handle(self, p: Program):
        return getattr(self, "_run_" + type(p).__name__)(p)

    def _scalar(self, t: Tensor) -> int:
        return int(self._memory.read(t).reshape(-1)[0])

    def _run_Sequence(self, p):
        return iter(p.programs)

    def _run_Repeat(self, p):
        return itertools.repeat(p.body, p.count)

    def _run_RepeatWhileTrue(self, p):
        while True:
            yield p.condition
            if (self._scalar(p.predicate) != 0) != p._loop_while:
                return
            yield p.body

    _run_RepeatWhileFalse = _run_RepeatWhileTrue

    def _run_If(self, p):
        return iter((p.then_body if self._scalar(p.predicate) != 0 else p.else_body,))

    def _run_Switch(self, p):
        return iter((p.cases.get(self._scalar(p.control), p.default),))

    def _run_Call(self, p):
        return iter((p.function.program,))

    def _run_Copy(self, p) -> None:
        stream = p.src if isinstance(p.src, DataStream) else p.dst if isinstance(p.dst, DataStream) else None
        if stream is not None and stream.num_elements == 0:
            return  # nothing moves, and the host is not asked
        if isinstance(p.src, DataStream):
            self._memory.write(p.dst, self._endpoints[p.src.handle].take())
        elif isinstance(p.dst, DataStream):
            self._endpoints[p.dst.handle].give(self._memory.read(p.src))
        else:
            self._memory.write(p.dst, self._memory.read(p.src))

    def _run_PrintTensor(self, p) -> None:
        sys.stdout.write(format_tensor(p.title, self._memory.read(p.tensor)))

    def _run_WriteUndef(self, p) -> None:
        """Only a liveness hint: the data stays as it is."""

    def _run_Sync(self, p) -> None:
        """A barrier: nothing to do when everything runs in order."""

    def _run_Abort(self, p) -> None:
        raise ApplicationRuntimeError(f"program {self._running} aborted: {p.message or '(no message)'}")

    def _run_AbortOnCondition(self, p) -> None:
        if self._scalar(p.predicate) != 0:
            self._run_Abort(p)

    # -- compute sets ----------------------------------------------------------------------------
    @staticmethod
    def _check_compute_set(cs) -> None:
        for v in cs.vertices:
            if v.tile is None:
                raise InvalidTileMappingError(f"{v.describe()} has no tile: place it with graph.set_tile_mapping")
            if v.type.python_class is None:
                raise PopsimError(f"{v.describe()}: the reference executor runs only Python vertices")
            for spec, conn in zip(v.type.fields, v.conn):
                if conn is None or (isinstance(conn, list) and any(c is None for c in conn)):
                    raise GraphConnectionError(f"field '{spec.name}' of {v.describe()} is not connected")

    def _run_Execute(self, p) -> None:
        # Vertices in the order the engine deals them to workers: by tile, then creation.
        order = sorted(p.compute_set.vertices, key=lambda v: (v.tile, v.index))
        staged = []
        dealt: Dict[int, int] = {}
        for v in order:  # exchange-in: everything is read before anything runs
            worker = 0
            if not v.type.multi:
                worker = dealt.get(v.tile, 0) % self._num_workers
                dealt[v.tile] = dealt.get(v.tile, 0) + 1
            staged.append((v, worker, self._field_values(v)))
        for v, worker, values in staged:  # compute
            ok, _ = run_all_workers(v.type, values, self._num_workers, worker)
            if not ok:
                raise ApplicationRuntimeError(f"{v.describe()} returned false")
        for v, _, values in staged:  # exchange-out
            for spec, conn, value in zip(v.type.fields, v.conn, values):
                if not (spec.kind.is_edge and spec.direction.writes):
                    continue
                if isinstance(conn, list):
                    for t, part in zip(conn, value):
                        self._memory.write(t, part)
                else:
                    self._memory.write(conn, value)

    def _field_values(self, v) -> list:
        """Each field as the interpreted runner takes it: a flat array per edge (a list
        of them for list fields), a copy of its values for a state field."""
        values = []
        for conn in v.conn:
            if isinstance(conn, Tensor):
                values.append(self._memory.read(conn).reshape(-1))
            elif isinstance(conn, list):
                values.append([self._memory.read(t).reshape(-1) for t in conn])
            else:
                values.append(np.array(conn).reshape(-1))
        return values
