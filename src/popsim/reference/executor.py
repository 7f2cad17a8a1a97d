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
- Execute(cs) is one BSP superstep (docs/architecture.md): exchange-in (every field of
  every vertex is read from memory before any vertex runs), compute (each vertex once,
  a MultiVertex once per worker, with the interpreted codelet runner), exchange-out
  (Output and InOut edges written back). A vertex reading what another vertex of the
  same compute set writes is a race the engine does not define; here it reads the
  value from before the superstep. An Output a vertex does not write is undefined on
  the engine; here it keeps its old value. State fields hold their
  set_initial_value values (vertex code cannot change them).
- load() resets memory: zeros, constants, then set_initial_value data in call order.
- Replicas (``Graph(device, replication_factor=R)``): R copies of memory run one control
  program in lockstep. Copy, Execute and streams act on every replica; each
  replication-index constant holds its replica's index after load; CrossReplicaCopy
  reads the source of every replica in its map before writing any destination. Every
  If / RepeatWhile predicate must have the same truth, every Switch control the same
  value, on every replica, else the run stops with a ControlProgramError naming the
  program, the branch and the first replica that differs from replica 0 (the engine's
  text: replicas.replicas_diverge_message). AbortOnCondition aborts when it holds on
  any replica. PrintTensor prints once per replica ("title (replica r)"). Host I/O:
  data of the tensor's shape is for every replica, of shape [R, *shape] for each its
  own; reads give [R, *shape] (replicas.py). A REPLICATE host-to-device stream and
  every device-to-host stream have one host side per replica (a buffer of leading
  dimension R, or one callback per replica, called in replica order); a BROADCAST
  stream has one, whose transfer every replica reads. A transfer uses the endpoints
  connected when it starts, so a callback that disconnects its stream lets every
  replica's part of that transfer complete (streams.py).

Only Python vertices can run here. Programs are walked with program_tree.drive, so any
nesting depth works.
"""
from __future__ import annotations

import itertools
import sys
from typing import Dict, List, Optional, Sequence, Union

import numpy as np

from ..codelet.interpret import run_all_workers
from ..errors import (ApplicationRuntimeError, ControlProgramError, GraphConnectionError, InvalidTileMappingError,
                      PopsimError, StreamConnectionError, TensorIOError, UnknownHandleError, did_you_mean)
from ..printing import format_tensor
from ..program import CrossReplicaCopy, Execute, PartKind, Program
from ..program_tree import check_belongs_to, drive, operands, reachable
from ..streams import DataStream
from ..tensor import Tensor
from .memory import ReferenceMemory
from .replicas import replica_arg, replicas_diverge_message, split_by_replica
from .streams import StreamConnections

__all__ = ["ReferenceExecutor"]


class ReferenceExecutor:
    """Run ``programs`` (one Program or a list, run by index) of ``graph`` in Python."""

    def __init__(self, graph, programs: Union[Program, Sequence[Program]]):
        state = graph.description
        self._graph = state
        self._replicas: int = state.replication_factor
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
                if isinstance(p, CrossReplicaCopy):
                    p.check_replicas(self._replicas)
            self._streams_used.append([used[k] for k in sorted(used)])
        self._num_workers = state.target.num_worker_contexts
        self._streams = StreamConnections(state.streams, self._replicas)
        # One memory per replica: replica r's copy of every variable and constant.
        self._memories = [ReferenceMemory(state.table) for _ in range(self._replicas)]
        self._running = -1
        self.load()

    @property
    def replication_factor(self) -> int:
        return self._replicas

    # -- host interface (Engine's) -------------------------------------------------------------
    def load(self) -> None:
        """Memory as Engine.load leaves it (on every replica, each replication-index
        constant holding its replica's index); stream connections are kept."""
        for r, memory in enumerate(self._memories):
            memory.reset()
            for tensor, values in self._graph.initial_values:
                memory.write(tensor, values)
            for t in self._graph.replication_index:
                memory.write(t, r)

    def run(self, program_index: int = 0) -> None:
        """Run program ``program_index`` to completion."""
        n = len(self._programs)
        if isinstance(program_index, bool) or not isinstance(program_index, (int, np.integer)) or \
                not 0 <= program_index < n:
            raise PopsimError(f"run: program index {program_index!r} is out of range: there are {n} program(s)")
        for s in self._streams_used[program_index]:
            r = self._streams.unconnected(s)
            if r is not None:
                which = f" for replica {r}" if self._streams.ends(s) > 1 else ""
                raise StreamConnectionError(f"program {program_index} uses stream '{s.handle}', which is not "
                                            f"connected{which}: call connect_stream('{s.handle}', array) first")
        self._running = int(program_index)
        try:
            drive(self._programs[program_index], self._handle)
        finally:
            self._running = -1

    def read(self, tensor: Tensor, replica: Optional[int] = None) -> np.ndarray:
        """The contents of any view of the graph's tensors: of its shape with one replica
        (or for ``replica``), else of shape [R, *shape], replica r's at [r]."""
        if replica is not None:
            return self._memories[replica_arg(replica, self._replicas, "read")].read(tensor)
        if self._replicas == 1:
            return self._memories[0].read(tensor)
        return np.stack([m.read(tensor) for m in self._memories])

    def write(self, tensor: Tensor, values, replica: Optional[int] = None) -> None:
        """Set the contents of any view of the graph's tensors: ``values`` of its element
        count on every replica (or on ``replica``), or of shape [R, ...] replica by replica."""
        if replica is not None:
            replica = replica_arg(replica, self._replicas, "write")
        data = np.asarray(values, tensor.dtype.numpy)
        for r, part in split_by_replica(data, tensor.shape, self._replicas, replica, "write"):
            self._memories[r].write(tensor, part)

    def read_tensor(self, handle: str, out: Optional[np.ndarray] = None, replica: Optional[int] = None) -> np.ndarray:
        """The tensor of a host read handle (graph.create_host_read): see ``read``. With
        ``out``, written into it (the same elements, in that shape or flattened per replica)."""
        t = self._host_handle(self._graph.host_reads, handle, "read")
        if replica is not None:
            replica = replica_arg(replica, self._replicas, f"read_tensor '{handle}'")
        values = self.read(t, replica)
        if out is None:
            return values
        each = values.ndim > len(t.shape)  # [R, *shape]
        flat = (self._replicas, values.size // self._replicas) if each else (values.size,)
        if not isinstance(out, np.ndarray) or out.dtype != values.dtype or out.shape not in (values.shape, flat):
            raise TensorIOError(f"read_tensor '{handle}': out has shape {list(np.shape(out))}; pass one of shape "
                                f"{list(values.shape)} and type {values.dtype} (found "
                                f"{getattr(out, 'dtype', type(out).__name__)})")
        out[...] = values.reshape(out.shape)
        return out

    def write_tensor(self, handle: str, data, replica: Optional[int] = None) -> None:
        """Write the tensor of a host write handle (graph.create_host_write): ``data``
        of its shape on every replica (or on ``replica``); of shape [R, *shape], replica
        r gets data[r]."""
        t = self._host_handle(self._graph.host_writes, handle, "write")
        if replica is not None:
            replica = replica_arg(replica, self._replicas, f"write_tensor '{handle}'")
        data = np.asarray(data, t.dtype.numpy)
        for r, part in split_by_replica(data, t.shape, self._replicas, replica, f"write_tensor '{handle}'"):
            self._memories[r].write(t, part.reshape(t.shape))

    def connect_stream(self, handle: str, data: np.ndarray) -> None:
        """Use ``data`` in place as the stream's circular buffer of whole transfers; with
        R > 1 replicas, a REPLICATE or device-to-host stream needs data of leading
        dimension R (replica r uses data[r]); a BROADCAST stream takes one buffer."""
        self._streams.connect_buffer(handle, data)

    def connect_stream_to_callback(self, handle: str, replica_or_callback, callback=None) -> None:
        """Call ``callback(buffer)`` once per transfer, to fill or to read ``buffer``:
        ``(handle, fn)`` for every replica (once per replica, in replica order),
        ``(handle, replica, fn)`` for one replica. Also takes a StreamCallback."""
        self._streams.connect_callback(handle, replica_or_callback, callback)

    def disconnect_stream(self, handle: str) -> None:
        self._streams.disconnect(handle)

    @staticmethod
    def _host_handle(registry: Dict[str, Tensor], handle: str, kind: str) -> Tensor:
        if handle not in registry:
            raise UnknownHandleError(f"no host {kind} handle '{handle}': {did_you_mean(handle, registry)}")
        return registry[handle]

    # -- program kinds: each handler returns the children to run next (or None) -----------------
    def _handle(self, p: Program):
        return getattr(self, "_run_" + type(p).__name__)(p)

    def _decision(self, p: Program, t: Tensor, truth: bool) -> int:
        """The scalar ``t`` steering ``p``: the same on every replica (its truth for a
        predicate, its value for a Switch control), else the run stops."""
        values = [int(m.read(t).reshape(-1)[0]) for m in self._memories]
        keys = [v != 0 for v in values] if truth else values
        for r in range(1, self._replicas):
            if keys[r] != keys[0]:
                raise ControlProgramError(replicas_diverge_message(self._running, f"{type(p).__name__} on {t.name}",
                                                                   r, self._replicas))
        return values[0]

    def _run_Sequence(self, p):
        return iter(p.programs)

    def _run_Repeat(self, p):
        return itertools.repeat(p.body, p.count)

    def _run_RepeatWhileTrue(self, p):
        while True:
            yield p.condition
            if (self._decision(p, p.predicate, True) != 0) != p._loop_while:
                return
            yield p.body

    _run_RepeatWhileFalse = _run_RepeatWhileTrue

    def _run_If(self, p):
        return iter((p.then_body if self._decision(p, p.predicate, True) != 0 else p.else_body,))

    def _run_Switch(self, p):
        return iter((p.cases.get(self._decision(p, p.control, False), p.default),))

    def _run_Call(self, p):
        return iter((p.function.program,))

    def _run_Copy(self, p) -> None:
        stream = p.src if isinstance(p.src, DataStream) else p.dst if isinstance(p.dst, DataStream) else None
        if stream is not None and stream.num_elements == 0:
            return  # nothing moves, and the host is not asked
        if isinstance(p.src, DataStream):
            for r, data in self._streams.to_device(p.src):  # r None: one transfer for every replica
                for memory in self._memories if r is None else (self._memories[r],):
                    memory.write(p.dst, data)
        elif isinstance(p.dst, DataStream):
            self._streams.from_device(p.dst, lambda r: self._memories[r].read(p.src))
        else:
            for memory in self._memories:
                memory.write(p.dst, memory.read(p.src))

    def _run_CrossReplicaCopy(self, p) -> None:
        """src of replica k to dst of replica map[k], every source read before any write."""
        sent = {k: self._memories[k].read(p.src) for k in p.replica_map}
        for k, v in p.replica_map.items():
            self._memories[v].write(p.dst, sent[k])

    def _run_PrintTensor(self, p) -> None:
        for r, memory in enumerate(self._memories):
            title = p.title if self._replicas == 1 else f"{p.title} (replica {r})"
            sys.stdout.write(format_tensor(title, memory.read(p.tensor)))

    def _run_WriteUndef(self, p) -> None:
        """Only a liveness hint: the data stays as it is."""

    def _run_Sync(self, p) -> None:
        """A barrier: nothing to do when everything runs in order."""

    def _run_Abort(self, p, replica: Optional[int] = None) -> None:
        on = f" on replica {replica}" if replica is not None and self._replicas > 1 else ""
        raise ApplicationRuntimeError(f"program {self._running} aborted{on}: {p.message or '(no message)'}")

    def _run_AbortOnCondition(self, p) -> None:
        for r, memory in enumerate(self._memories):  # the first replica whose condition holds
            if int(memory.read(p.predicate).reshape(-1)[0]) != 0:
                self._run_Abort(p, r)

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
        """One superstep on every replica: each phase on every replica before the next."""
        # Vertices in the order the engine deals them to workers: by tile, then creation.
        order = sorted(p.compute_set.vertices, key=lambda v: (v.tile, v.index))
        workers = []
        dealt: Dict[int, int] = {}
        for v in order:
            worker = 0
            if not v.type.multi:
                worker = dealt.get(v.tile, 0) % self._num_workers
                dealt[v.tile] = dealt.get(v.tile, 0) + 1
            workers.append(worker)
        # exchange-in: everything is read before anything runs
        staged = [[self._field_values(m, v) for v in order] for m in self._memories]
        for r, replica in enumerate(staged):  # compute (the first failure: by replica, then vertex)
            for v, worker, values in zip(order, workers, replica):
                ok, _ = run_all_workers(v.type, values, self._num_workers, worker)
                if not ok:
                    on = f" on replica {r}" if self._replicas > 1 else ""
                    raise ApplicationRuntimeError(f"{v.describe()} returned false{on}")
        for memory, replica in zip(self._memories, staged):  # exchange-out
            for v, values in zip(order, replica):
                for spec, conn, value in zip(v.type.fields, v.conn, values):
                    if not (spec.kind.is_edge and spec.direction.writes):
                        continue
                    if isinstance(conn, list):
                        for t, part in zip(conn, value):
                            memory.write(t, part)
                    else:
                        memory.write(conn, value)

    @staticmethod
    def _field_values(memory: ReferenceMemory, v) -> list:
        """Each field as the interpreted runner takes it: a flat array per edge (a list
        of them for list fields), a copy of its values for a state field."""
        values = []
        for conn in v.conn:
            if isinstance(conn, Tensor):
                values.append(memory.read(conn).reshape(-1))
            elif isinstance(conn, list):
                values.append([memory.read(t).reshape(-1) for t in conn])
            else:
                values.append(np.array(conn).reshape(-1))
        return values
