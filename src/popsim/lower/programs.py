"""Control programs lowered to the core's flat instruction list.

Each program the engine runs gets an entry point and ends with HALT; each Function
is lowered once, as a subroutine ending in RETURN, however many Calls it has. Every
instruction that costs cycles belongs to a *step*: one per place in the program
tree, named for reports, with its cost vector from the cost model.

The tree is walked with program_tree.drive, without recursion: a ``_lower_<Kind>``
method emits what comes before each child, yields the child, and patches jump
targets once the child's code exists. Every program's operands are checked to belong
to the graph being lowered (program_tree.check_belongs_to).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Tuple

import numpy as np

from .. import program as P
from ..errors import ControlProgramError
from ..contract import MAX_CALL_DEPTH, NUM_CATEGORIES, ROW_WIDTHS, Op
from ..program_tree import check_belongs_to, drive
from ..types import Type
from .cost_model import CostModel, StepCost
from .liveness import LiveRecorder
from .transfers import CopyTables, TransferPlanner

# Opcodes: the core's own (popsim/contract.py).
OP_HALT, OP_ACCOUNT, OP_COPY, OP_STREAM_TO_DEVICE = Op.HALT, Op.ACCOUNT, Op.COPY, Op.STREAM_TO_DEVICE
OP_STREAM_FROM_DEVICE, OP_HOST_CALL = Op.STREAM_FROM_DEVICE, Op.HOST_CALL
OP_JUMP, OP_LOOP_BEGIN = Op.JUMP, Op.LOOP_BEGIN
OP_LOOP_END, OP_BRANCH_IF_FALSE, OP_BRANCH_IF_TRUE = Op.LOOP_END, Op.BRANCH_IF_FALSE, Op.BRANCH_IF_TRUE
OP_SWITCH, OP_CALL, OP_RETURN, OP_ABORT, OP_ABORT_IF, OP_EXECUTE = (Op.SWITCH, Op.CALL, Op.RETURN, Op.ABORT,
                                                                   Op.ABORT_IF, Op.EXECUTE)
OP_CROSS_REPLICA_COPY = Op.CROSS_REPLICA_COPY
CALL_DEPTH_MAX = MAX_CALL_DEPTH  # the core's call stack (popsim/contract.py)


@dataclass
class Step:
    """A place in the lowered program that costs cycles each time it runs."""

    name: str
    kind: str  # Copy, StreamCopy, PrintTensor, Execute, Sync, Branch, Repeat, Call
    cost: StepCost
    program: str = ""  # the entry program or function it belongs to
    compute_set: int = -1  # Execute steps: the compute set row


@dataclass
class HostCallback:
    """A PrintTensor: read ``table`` into a buffer of ``shape`` and print it."""

    title: str
    table: int
    dtype: Type
    shape: Tuple[int, ...]


@dataclass
class LoweredPrograms:
    instrs: np.ndarray
    entries: np.ndarray
    cases: np.ndarray
    switch_begin: np.ndarray
    switch_default: np.ndarray
    num_loop_slots: int
    steps: List[Step]
    step_costs: np.ndarray  # steps x IPUs of a replica x categories
    step_ipus: np.ndarray   # steps x (involved, join, join_tail) (StepCost; native/core/executable.hpp StepIpus)
    replica_maps: np.ndarray  # CrossReplicaCopy maps x replicas: destination of each source, or -1
    callbacks: List[HostCallback] = field(default_factory=list)
    messages: List[str] = field(default_factory=list)
    program_streams: List[List[int]] = field(default_factory=list)  # streams each entry program may use


class ProgramLowerer:
    def __init__(self, state, planner: TransferPlanner, tables: CopyTables, cost: CostModel, compute_sets):
        self.state = state
        self.compute_sets = compute_sets
        self.planner = planner
        self.tables = tables
        self.cost = cost
        self.instrs: List[List[int]] = []
        self.steps: List[Step] = []
        # Per switch table, in table order: its (case value, target) rows and its default
        # target; filled in when the Switch's cases are lowered, which may add inner tables.
        self.switch_tables: List[Tuple[List[Tuple[int, int]], int]] = []
        self.loop_slots = 0
        self.callbacks: List[HostCallback] = []
        self.messages: List[str] = []
        self.replicas = state.replication_factor
        self.replica_maps: List[List[int]] = []
        self._function_addr: Dict[int, int] = {}
        self._calls: List[Tuple[int, object]] = []  # (instruction, function) to patch
        # Per context (("program", i) or ("function", index)): functions called, streams used.
        self._callees: Dict[Tuple[str, int], set] = {}
        self._streams: Dict[Tuple[str, int], set] = {}
        self._context: Tuple[str, int] = ("program", 0)
        self._context_name = ""  # for step names in reports
        self._where = ""  # for messages
        self.live = LiveRecorder(state.table)  # what each step reads and writes (liveness.py)

    # -- emission ----------------------------------------------------------------------------
    def _emit(self, op: int, step: int = -1, a: int = 0, b: int = 0, c: int = 0, d: int = 0) -> int:
        self.instrs.append([op, step, a, b, c, d])
        return len(self.instrs) - 1

    def _step(self, name: str, kind: str, cost: StepCost) -> int:
        self.steps.append(Step(name, kind, cost, self._context_name))
        return len(self.steps) - 1

    def _here(self) -> int:
        return len(self.instrs)

    # -- entry points ------------------------------------------------------------------------
    def lower(self, programs) -> LoweredPrograms:
        entries = []
        for i, prog in enumerate(programs):
            self._context, self._context_name = ("program", i), f"program {i}"
            self._where = self._context_name
            entries.append(self._here())
            drive(prog, self._lower)
            self._emit(OP_HALT)
        self._lower_functions()
        self._check_call_graph()
        num_ipus = self.cost.num_ipus
        costs = np.array([s.cost.vector for s in self.steps]).reshape(len(self.steps), num_ipus, NUM_CATEGORIES)
        step_ipus = np.array([(s.cost.involved, s.cost.join, s.cost.join_tail) for s in self.steps],
                             np.int64).reshape(-1, ROW_WIDTHS["step_ipus"])
        cases = [row for rows, _ in self.switch_tables for row in rows]
        begins = np.cumsum([0] + [len(rows) for rows, _ in self.switch_tables])
        return LoweredPrograms(
            instrs=np.asarray(self.instrs, np.int64).reshape(-1, ROW_WIDTHS["instrs"]),
            entries=np.asarray(entries, np.int64),
            cases=np.asarray(cases, np.int64).reshape(-1, ROW_WIDTHS["cases"]),
            switch_begin=np.asarray(begins, np.int64),
            switch_default=np.asarray([default for _, default in self.switch_tables], np.int64),
            num_loop_slots=self.loop_slots, steps=self.steps, step_costs=costs, step_ipus=step_ipus,
            replica_maps=np.asarray(self.replica_maps, np.int64).reshape(-1, self.replicas),
            callbacks=self.callbacks, messages=self.messages,
            program_streams=[sorted(self._reachable_streams(("program", i))) for i in range(len(programs))])

    def _reachable_streams(self, context: Tuple[str, int]) -> set:
        seen, todo, streams = {context}, [context], set()
        while todo:
            node = todo.pop()
            streams |= self._streams.get(node, set())
            for f in self._callees.get(node, ()):
                if ("function", f) not in seen:
                    seen.add(("function", f))
                    todo.append(("function", f))
        return streams

    def _lower_functions(self) -> None:
        done = 0
        while done < len(self._calls):
            at, f = self._calls[done]
            done += 1
            if f.index not in self._function_addr:
                self._function_addr[f.index] = self._here()
                self._context, self._context_name = ("function", f.index), f"function {f.name}"
                self._where = f"function '{f.name}'"
                drive(f.program, self._lower)
                self._emit(OP_RETURN)
            self.instrs[at][2] = self._function_addr[f.index]

    def _check_call_graph(self) -> None:
        """Functions must not call themselves, directly or not, and Calls may nest only as
        deep as the core's call stack (CALL_DEPTH_MAX). Depth-first, with a stack."""
        depth: Dict[int, int] = {}  # function -> deepest chain of Calls below it, itself included
        on_path: Dict[int, int] = {}  # function -> its position on the current path
        for root in [key for key in self._callees if key[0] == "program"]:
            path: List[int] = []
            stack = [iter(sorted(self._callees.get(root, ())))]
            while stack:
                callee = next(stack[-1], None)
                if callee is None:
                    stack.pop()
                    if path:
                        done = path.pop()
                        del on_path[done]
                        below = [depth[c] for c in self._callees.get(("function", done), ())]
                        depth[done] = 1 + max(below, default=0)
                    continue
                if callee in on_path:
                    cycle = path[on_path[callee]:] + [callee]
                    names = [self.state.functions[i].name for i in cycle]
                    raise ControlProgramError(f"function '{names[0]}' calls itself ({' -> '.join(names)}); "
                                              "programs cannot recurse: restructure it as a loop (Repeat or "
                                              "RepeatWhileTrue)")
                if callee in depth:
                    continue
                on_path[callee] = len(path)
                path.append(callee)
                stack.append(iter(sorted(self._callees.get(("function", callee), ()))))
            deepest = max((depth[c] for c in self._callees.get(root, ())), default=0)
            if deepest > CALL_DEPTH_MAX:
                raise ControlProgramError(f"program {root[1]} nests Calls {deepest} deep (function calls function "
                                          f"...); the core's call stack holds {CALL_DEPTH_MAX}: call fewer functions "
                                          "in a chain (inline some of them)")

    # -- the program tree -------------------------------------------------------------------------
    def _lower(self, p):
        """Lower ``p``: returns None, or an iterator of the children still to lower."""
        method = getattr(self, "_lower_" + type(p).__name__, None)
        if method is None:
            raise ControlProgramError(f"cannot lower a {type(p).__name__} program")
        check_belongs_to(self.state, p, self._where)
        return method(p)

    def _lower_Sequence(self, p: P.Sequence):
        return self._sequence_children(list(p.programs))

    def _sequence_children(self, programs):
        """The children of a Sequence to lower one by one, except that adjacent
        independent CrossReplicaCopy programs are lowered here as one exchange, as
        Poplar merges them (GCL's two-way rings rely on it): none writes what another
        reads or writes, so together they move what they would one after the other."""
        i = 0
        while i < len(programs):
            group = [programs[i]]
            while isinstance(group[0], P.CrossReplicaCopy) and i + len(group) < len(programs) \
                    and _independent_copies(group, programs[i + len(group)]):
                group.append(programs[i + len(group)])
            if len(group) > 1:
                for q in group:
                    check_belongs_to(self.state, q, self._where)
                self._cross_replica_copies(group)
            else:
                yield group[0]
            i += len(group)

    def _cross_replica_copies(self, copies) -> None:
        maps = []
        for p in copies:
            p.check_replicas(self.replicas)
            dest = np.full(self.replicas, -1, np.int64)
            for k, v in p.replica_map.items():
                dest[k] = v
            maps.append(dest)
        all_segs, cost = self.planner.cross_replica_copies([(p.src, p.dst, m) for p, m in zip(copies, maps)])
        step = self._step(" + ".join(p.describe() for p in copies), "CrossReplicaCopy", cost)
        # a replica no copy writes keeps its old dst: for liveness, such a dst is also read
        kept = [p.dst for p in copies if len(set(p.replica_map.values())) < self.replicas]
        self.live.step(self._context, step, reads=[p.src for p in copies] + kept, writes=[p.dst for p in copies])
        for i, (p, segs, dest) in enumerate(zip(copies, all_segs, maps)):
            table = self.tables.add(segs, overlaps=_overlaps_itself(p))
            self.replica_maps.append(dest.tolist())
            # the first instruction carries the merged exchange's cost; the others move their bytes in it
            self._emit(OP_CROSS_REPLICA_COPY, step if i == 0 else -1, table, len(self.replica_maps) - 1)

    def _lower_Execute(self, p: P.Execute) -> None:
        row, cost = self.compute_sets.lower(p.compute_set)
        step = self._step(f"Execute {p.describe()}", "Execute", cost)
        self.steps[step].compute_set = row
        self.live.step_access(self._context, step, *self.compute_sets.accesses[row])
        self._emit(OP_EXECUTE, step, row)

    def _lower_Copy(self, p: P.Copy) -> None:
        if isinstance(p.src, P.DataStream):
            self._stream_copy(p, p.src, p.dst, to_device=True)
        elif isinstance(p.dst, P.DataStream):
            self._stream_copy(p, p.dst, p.src, to_device=False)
        else:
            segs, cost = self.planner.copy(p.src, p.dst)
            table = self.tables.add(segs, overlaps=p.src.intersects_with(p.dst))
            step = self._step(p.describe(), "Copy", cost)
            self.live.step(self._context, step, reads=[p.src], writes=[p.dst])
            self._emit(OP_COPY, step, table)

    def _lower_CrossReplicaCopy(self, p: P.CrossReplicaCopy) -> None:
        self._cross_replica_copies([p])

    def _stream_copy(self, p: P.Copy, stream, tensor, to_device: bool) -> None:
        table = self.tables.add(self.planner.host_segments(tensor, to_device))
        cost = self.cost.host_transfer(stream.transfer_bytes, self.planner.tiles_of(tensor))
        step = self._step(p.describe(), "StreamCopy", cost)
        self.live.stream(self._context, step, tensor, to_device)
        self._streams.setdefault(self._context, set()).add(stream.index)
        self._emit(OP_STREAM_TO_DEVICE if to_device else OP_STREAM_FROM_DEVICE, step, stream.index, table)

    def _lower_Repeat(self, p: P.Repeat):
        slot = self.loop_slots
        self.loop_slots += 1
        begin = self._emit(OP_LOOP_BEGIN, -1, slot, p.count)
        body = self._here()
        self.live.open(self._context, conditional=p.count == 0)
        yield p.body
        self.live.close(self._context, loop=True)
        step = self._step(f"Repeat x{p.count}", "Repeat", self.cost.loop_iteration())
        self._emit(OP_LOOP_END, step, slot, body)
        self.instrs[begin][4] = self._here()  # exit target when count is 0

    def _predicate(self, tensor) -> Tuple[int, int]:
        """Arena offset and scalar type code of a one-element tensor."""
        gid = tensor._element_ids()[:1]
        return int(self.planner.arena_offsets(gid)[0]), tensor.dtype.code

    def _branch_step(self, what: str, tensor) -> int:
        step = self._step(f"{what} on {tensor.name}", "Branch", self.cost.branch(tensor.dtype.size))
        self.live.step(self._context, step, reads=[tensor])
        return step

    def _lower_RepeatWhileTrue(self, p: P._RepeatWhile):
        top = self._here()
        self.live.open(self._context, conditional=True)
        yield p.condition
        offset, code = self._predicate(p.predicate)
        exit_op = OP_BRANCH_IF_FALSE if p._loop_while else OP_BRANCH_IF_TRUE
        test = self._emit(exit_op, self._branch_step(type(p).__name__, p.predicate), 0, offset, code)
        yield p.body
        self.live.close(self._context, loop=True)
        self._emit(OP_JUMP, -1, top)
        self.instrs[test][2] = self._here()

    _lower_RepeatWhileFalse = _lower_RepeatWhileTrue

    def _lower_If(self, p: P.If):
        offset, code = self._predicate(p.predicate)
        test = self._emit(OP_BRANCH_IF_FALSE, self._branch_step("If", p.predicate), 0, offset, code)
        yield from self._conditional(p.then_body)
        skip = self._emit(OP_JUMP, -1, 0)
        self.instrs[test][2] = self._here()
        yield from self._conditional(p.else_body)
        self.instrs[skip][2] = self._here()

    def _lower_Switch(self, p: P.Switch):
        offset, code = self._predicate(p.control)
        # This Switch's table number is taken now; cases may hold Switches of their own,
        # whose tables come after it. Its rows are recorded under its own number.
        table = len(self.switch_tables)
        self.switch_tables.append(([], -1))
        self._emit(OP_SWITCH, self._branch_step("Switch", p.control), table, offset, code)
        jumps = []
        rows = []
        for value, body in p.cases.items():
            rows.append((_case_word(value), self._here()))
            yield from self._conditional(body)
            jumps.append(self._emit(OP_JUMP, -1, 0))
        default = self._here()
        yield from self._conditional(p.default)
        for j in jumps:
            self.instrs[j][2] = self._here()
        self.switch_tables[table] = (rows, default)

    def _conditional(self, body):
        """Yield ``body`` as a body that may not run (for liveness)."""
        self.live.open(self._context, conditional=True)
        yield body
        self.live.close(self._context, loop=False)

    def _lower_Call(self, p: P.Call) -> None:
        f = p.function
        self._callees.setdefault(self._context, set()).add(f.index)
        at = self._emit(OP_CALL, self._step(p.describe(), "Call", self.cost.call()), 0)
        self.live.call(self._context, f.index)
        self._calls.append((at, f))

    def _lower_PrintTensor(self, p: P.PrintTensor) -> None:
        t = p.tensor
        table = self.tables.add(self.planner.host_segments(t, to_device=False))
        self.callbacks.append(HostCallback(p.title, table, t.dtype, t.shape))
        cost = self.cost.host_transfer(t.num_elements() * t.dtype.size)
        step = self._step(p.describe(), "PrintTensor", cost)
        self.live.step(self._context, step, reads=[t])
        self._emit(OP_HOST_CALL, step, len(self.callbacks) - 1)

    def _lower_WriteUndef(self, p: P.WriteUndef) -> None:
        """Only a liveness hint: nothing runs."""
        self.live.undef(self._context, p.tensor)

    def _lower_Sync(self, p: P.Sync) -> None:
        external = p.sync_type is not P.SyncType.INTERNAL
        name = p.debug_name or f"Sync {p.sync_type.value.lower()}"
        self._emit(OP_ACCOUNT, self._step(name, "Sync", self.cost.sync(external)))

    def _lower_Abort(self, p: P.Abort) -> None:
        self.messages.append(p.message)
        self._emit(OP_ABORT, -1, len(self.messages) - 1)

    def _lower_AbortOnCondition(self, p: P.AbortOnCondition) -> None:
        offset, code = self._predicate(p.predicate)
        self.messages.append(p.message)
        step = self._branch_step("AbortOnCondition", p.predicate)
        self._emit(OP_ABORT_IF, step, len(self.messages) - 1, offset, code)


def _case_word(value: int) -> int:
    """A Switch case value as the core stores it: the core reads the control as a
    64-bit integer (native/core/scalars.hpp: UNSIGNED_LONGLONG as its int64 bits), so
    values from 2**63 up (only an UNSIGNED_LONGLONG control holds them; Switch.add checks
    the range) are stored as the same bits."""
    return value - (1 << 64) if value >= (1 << 63) else value


def _independent_copies(group, p) -> bool:
    """``p`` is a CrossReplicaCopy that may join ``group`` in one exchange: on no
    replica does one of them write what another reads or writes there."""
    if not isinstance(p, P.CrossReplicaCopy) or _overlaps_itself(p):
        return False
    return not any(_overlaps_itself(q) or _conflict(q, p) or _conflict(p, q) for q in group)


def _readers(c):
    return set(c.replica_map)


def _writers(c):
    return set(c.replica_map.values())


def _overlaps_itself(c) -> bool:
    """A replica both sends and receives elements its source and destination share."""
    return bool(_readers(c) & _writers(c)) and c.src.intersects_with(c.dst)


def _conflict(a, b) -> bool:
    """``a`` writes, on some replica, elements that ``b`` reads or writes there."""
    return (bool(_writers(a) & _readers(b)) and a.dst.intersects_with(b.src)) or \
        (bool(_writers(a) & _writers(b)) and a.dst.intersects_with(b.dst))
