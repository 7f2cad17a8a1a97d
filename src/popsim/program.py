"""Control programs (``popsim.program``): what the engine runs, as a tree.

Arguments are checked when a program is built, so a mistake is reported at the line
that made it. The engine lowers the tree to a flat instruction list once.

Every program kind lists its ``PARTS``: each attribute with what it is (a child
program, a tensor, a stream, a compute set, a function, or plain data). That one
description drives everything that walks programs generically (program_parts.py, program_tree.py):
the graph-membership check, the executable-cache digest, and the traversal order of
lowering and of the reference executor. A new program kind declares its PARTS and
gets lowering and reference semantics; nothing else needs to know about it.
"""
from __future__ import annotations

import enum
from typing import Dict, Iterable, List, Mapping, Optional, Tuple, Union

import numpy as np

from .errors import ControlProgramError, StreamConnectionError
from .program_parts import Part, PartKind, children, iter_programs
from .streams import DataStream
from .tensor import Tensor
from .vertices import ComputeSet

__all__ = [
    "Part", "PartKind", "REPEAT_COUNT_MAX", "Function",
    "Program", "Sequence", "Execute", "Copy", "CrossReplicaCopy", "Repeat", "RepeatWhileTrue", "RepeatWhileFalse", "If",
    "Switch", "Call", "PrintTensor", "WriteUndef", "Sync", "SyncType", "Abort", "AbortOnCondition",
]


class SyncType(enum.Enum):
    INTERNAL = "INTERNAL"  # all tiles of each IPU
    EXTERNAL = "EXTERNAL"  # all tiles of all IPUs (and the host)
    GLOBAL = "GLOBAL"      # all replicas


_PROGRAM, _PROGRAMS, _CASES = PartKind.PROGRAM, PartKind.PROGRAMS, PartKind.CASES
_TENSOR, _ENDPOINT, _VALUE = PartKind.TENSOR, PartKind.ENDPOINT, PartKind.VALUE

class Function:
    """A program outlined once and run with ``Call(function)``."""

    __slots__ = ("program", "index", "name", "_state")

    def __init__(self, state, index: int, program, name: str):
        self._state, self.index, self.program, self.name = state, index, program, name

    def __repr__(self) -> str:
        return f"Function({self.name!r})"


#: The largest Repeat count: the core counts iterations in a signed 64-bit integer.
REPEAT_COUNT_MAX = 2 ** 63 - 1


class Program:
    """Base class of every control program.

    Subclasses list their own attributes in ``PARTS`` (see PartKind); program_tree.py
    walks programs through that description only."""

    __slots__ = ("debug_name",)
    PARTS: Tuple[Part, ...] = (Part("debug_name", _VALUE),)

    def __init__(self, debug_name: str = ""):
        self.debug_name = debug_name or ""

    def children(self) -> Tuple["Program", ...]:
        """The child programs, in the order PARTS lists them."""
        return tuple(children(self))

    def is_empty(self) -> bool:
        """True when running it does nothing (only empty Sequences, however nested)."""
        return all(type(p) is Sequence for p in iter_programs([self]))

    def describe(self) -> str:
        """A short label for reports and messages."""
        return self.debug_name or type(self).__name__


def _program(p, what: str) -> Program:
    if not isinstance(p, Program):
        raise ControlProgramError(f"{what} must be a Program, found {type(p).__name__}")
    return p


def _scalar_predicate(t, what: str, integral_only: bool = True) -> Tensor:
    if not isinstance(t, Tensor):
        raise ControlProgramError(f"{what} must be a scalar Tensor, found {type(t).__name__}")
    if t.num_elements() != 1:
        raise ControlProgramError(f"{what}: tensor '{t.name}' of shape {list(t.shape)} must hold exactly one "
                                  "element (slice or index it down to a scalar)")
    if integral_only and not t.dtype.is_integral:
        raise ControlProgramError(f"{what}: tensor '{t.name}' has type {t.dtype.name}; a predicate must be an "
                                  "integral or BOOL scalar (compare or cast it first)")
    return t


class Sequence(Program):
    """Run programs one after another: ``Sequence(p1, p2)`` or ``Sequence([p1, p2])``."""

    __slots__ = ("programs",)
    PARTS = (Part("programs", _PROGRAMS),)

    def __init__(self, *programs: Union[Program, List[Program], Tuple[Program, ...]], debug_name: str = ""):
        super().__init__(debug_name)
        if len(programs) == 1 and isinstance(programs[0], (list, tuple)):
            programs = tuple(programs[0])
        self.programs: List[Program] = [_program(p, "Sequence item") for p in programs]

    def add(self, program: Program) -> None:
        """Append a program."""
        self.programs.append(_program(program, "Sequence.add argument"))

    def __len__(self) -> int:
        return len(self.programs)


class Execute(Program):
    """Run every vertex of a compute set once, in parallel: one BSP superstep."""

    __slots__ = ("compute_set",)
    PARTS = (Part("compute_set", PartKind.COMPUTE_SET),)

    def __init__(self, compute_set: ComputeSet, debug_name: str = ""):
        super().__init__(debug_name)
        if not isinstance(compute_set, ComputeSet):
            raise ControlProgramError(f"Execute takes a ComputeSet, found {type(compute_set).__name__}")
        self.compute_set = compute_set

    def describe(self) -> str:
        return self.debug_name or self.compute_set.name


Endpoint = Union[Tensor, DataStream]


class Copy(Program):
    """Copy between tensors (same type and element count; shapes may differ), from a
    host-to-device stream into a tensor, or from a tensor into a device-to-host stream."""

    __slots__ = ("src", "dst")
    PARTS = (Part("src", _ENDPOINT), Part("dst", _ENDPOINT))

    def __init__(self, src: Endpoint, dst: Endpoint, dont_outline: bool = False, debug_name: str = ""):
        super().__init__(debug_name)
        self.src, self.dst = src, dst
        if isinstance(src, DataStream) and isinstance(dst, DataStream):
            raise ControlProgramError(f"Copy from stream '{src.handle}' to stream '{dst.handle}': one side must "
                                      "be a tensor")
        if isinstance(src, DataStream):
            self._check_stream(src, dst, into_device=True)
        elif isinstance(dst, DataStream):
            self._check_stream(dst, src, into_device=False)
        else:
            self._check_tensors(src, dst)

    @staticmethod
    def _check_tensors(src, dst, kind: str = "Copy") -> None:
        for side, t in (("source", src), ("destination", dst)):
            if not isinstance(t, Tensor):
                raise ControlProgramError(f"{kind} {side} must be a Tensor or DataStream, found {type(t).__name__}")
        if src._table is not dst._table:
            raise ControlProgramError(f"{kind} from '{src.name}' to '{dst.name}': the tensors belong to different "
                                      "graphs")
        if src.dtype is not dst.dtype:
            raise ControlProgramError(f"{kind} from '{src.name}' ({src.dtype.name}) to '{dst.name}' "
                                      f"({dst.dtype.name}): the element types differ; cast first (popops.cast)")
        if src.num_elements() != dst.num_elements():
            raise ControlProgramError(f"{kind} from '{src.name}' {list(src.shape)} ({src.num_elements()} elements) to "
                                      f"'{dst.name}' {list(dst.shape)} ({dst.num_elements()} elements): element "
                                      "counts must be equal (shapes may differ)")
        _check_writable(dst, f"{kind} destination")

    @staticmethod
    def _check_stream(stream: DataStream, tensor, into_device: bool) -> None:
        if not isinstance(tensor, Tensor):
            raise ControlProgramError(f"Copy with stream '{stream.handle}': the other side must be a Tensor, "
                                      f"found {type(tensor).__name__}")
        if into_device and not stream.is_host_to_device:
            raise StreamConnectionError(f"Copy from stream '{stream.handle}' into tensor '{tensor.name}': "
                                        "the stream is device-to-host; read host data through a stream made with "
                                        "add_host_to_device_fifo")
        if not into_device and stream.is_host_to_device:
            raise StreamConnectionError(f"Copy from tensor '{tensor.name}' into stream '{stream.handle}': the "
                                        "stream is host-to-device; send data to the host through a stream made "
                                        "with add_device_to_host_fifo")
        if tensor._table is not stream._state.table:
            raise ControlProgramError(f"Copy: stream '{stream.handle}' and tensor '{tensor.name}' belong to "
                                      "different graphs")
        if stream.dtype is not tensor.dtype:
            raise StreamConnectionError(f"Copy between stream '{stream.handle}' ({stream.dtype.name}) and tensor "
                                        f"'{tensor.name}' ({tensor.dtype.name}): element types differ")
        if stream.num_elements != tensor.num_elements():
            raise StreamConnectionError(f"Copy between stream '{stream.handle}' ({stream.num_elements} elements "
                                        f"per transfer) and tensor '{tensor.name}' ({tensor.num_elements()} "
                                        "elements): sizes must be equal")
        if into_device:
            _check_writable(tensor, f"Copy from stream '{stream.handle}'")

    def describe(self) -> str:
        if self.debug_name:
            return self.debug_name
        def side(x):
            return x.handle if isinstance(x, DataStream) else x.name
        return f"Copy {side(self.src)} -> {side(self.dst)}"


class CrossReplicaCopy(Program):
    """Copy ``src`` of each replica k in ``replica_map`` into ``dst`` of replica
    ``replica_map[k]`` (Poplar's CrossReplicaCopy): every pair at once, over the
    IPU-Links between the replicas' IPUs. Each replica is a source at most once and a
    destination at most once, never of itself; the map is checked against the graph's
    replication factor when the program is compiled."""

    __slots__ = ("src", "dst", "replica_map")
    PARTS = (Part("src", _TENSOR), Part("dst", _TENSOR), Part("replica_map", _VALUE))

    def __init__(self, src: Tensor, dst: Tensor, replica_map: Mapping[int, int], debug_name: str = ""):
        super().__init__(debug_name)
        Copy._check_tensors(src, dst, "CrossReplicaCopy")
        try:
            pairs = [(k, v) for k, v in dict(replica_map).items()]
        except (TypeError, ValueError):
            raise ControlProgramError(f"CrossReplicaCopy from '{src.name}' to '{dst.name}': replica_map must be a "
                                      f"dict of source replica -> destination replica, found "
                                      f"{type(replica_map).__name__}") from None
        for k, v in pairs:
            for what, x in (("source", k), ("destination", v)):
                if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, np.integer)) or x < 0:
                    raise ControlProgramError(f"CrossReplicaCopy from '{src.name}' to '{dst.name}': {what} replica "
                                              f"{x!r} in {replica_map!r} is not a replica index (0, 1, ...)")
            if k == v:
                raise ControlProgramError(f"CrossReplicaCopy from '{src.name}' to '{dst.name}': replica {k} is mapped "
                                          "to itself; a replica may not copy to itself (use Copy within a replica)")
        targets = [v for _, v in pairs]
        repeated = sorted({v for v in targets if targets.count(v) > 1})
        if repeated:
            raise ControlProgramError(f"CrossReplicaCopy from '{src.name}' to '{dst.name}': replica {repeated[0]} is "
                                      f"the destination of several replicas in {replica_map!r}; each replica may "
                                      "receive from at most one")
        self.src, self.dst = src, dst
        self.replica_map = {int(k): int(v) for k, v in sorted(pairs)}

    def check_replicas(self, replication_factor: int) -> None:
        """Every replica in the map exists (ControlProgramError naming the first that does not)."""
        for k, v in self.replica_map.items():
            for what, x in (("source", k), ("destination", v)):
                if x >= replication_factor:
                    raise ControlProgramError(
                        f"{self.describe()}: {what} replica {x} in {self.replica_map} is out of range: the graph has "
                        f"{replication_factor} replica(s), 0..{replication_factor - 1}")

    def describe(self) -> str:
        return self.debug_name or f"CrossReplicaCopy {self.src.name} -> {self.dst.name}"


def _check_writable(t: Tensor, what: str) -> None:
    if t.contains_constant():
        raise ControlProgramError(f"{what}: tensor '{t.name}' is (or contains) a constant, which cannot be written")
    if t.contains_aliases():
        raise ControlProgramError(f"{what}: the view of '{t.name}' contains some elements more than once, so "
                                  "writing it is ambiguous")


class Repeat(Program):
    """Run ``body`` ``count`` times."""

    __slots__ = ("count", "body")
    PARTS = (Part("count", _VALUE), Part("body", _PROGRAM))

    def __init__(self, count: int, body: Program, debug_name: str = ""):
        super().__init__(debug_name)
        if isinstance(count, (bool, np.bool_)) or not isinstance(count, (int, np.integer)):
            raise ControlProgramError(f"Repeat count must be an integer, found {type(count).__name__} {count!r}")
        if count < 0:
            raise ControlProgramError(f"Repeat count must be >= 0, found {count}")
        if count > REPEAT_COUNT_MAX:
            raise ControlProgramError(f"Repeat count {int(count)} is too large: the core counts iterations in a "
                                      f"signed 64-bit integer, so the limit is 2**63-1 ({REPEAT_COUNT_MAX}); nest "
                                      "two Repeats for more iterations")
        self.count = int(count)
        self.body = _program(body, "Repeat body")


class _RepeatWhile(Program):
    __slots__ = ("condition", "predicate", "body")
    PARTS = (Part("condition", _PROGRAM), Part("predicate", _TENSOR), Part("body", _PROGRAM))
    _loop_while = True

    def __init__(self, condition: Program, predicate: Tensor, body: Program, debug_name: str = ""):
        super().__init__(debug_name)
        name = type(self).__name__
        self.condition = _program(condition, f"{name} condition")
        self.predicate = _scalar_predicate(predicate, f"{name} predicate")
        self.body = _program(body, f"{name} body")


class RepeatWhileTrue(_RepeatWhile):
    """Run ``condition``; while the scalar ``predicate`` is non-zero run ``body``, then
    ``condition`` again."""
    _loop_while = True


class RepeatWhileFalse(_RepeatWhile):
    """Like RepeatWhileTrue, looping while ``predicate`` is zero."""
    _loop_while = False


class If(Program):
    """Run ``then_body`` when the scalar ``predicate`` is non-zero, else ``else_body``."""

    __slots__ = ("predicate", "then_body", "else_body")
    PARTS = (Part("predicate", _TENSOR), Part("then_body", _PROGRAM), Part("else_body", _PROGRAM))

    def __init__(self, predicate: Tensor, then_body: Program, else_body: Optional[Program] = None,
                 debug_name: str = ""):
        super().__init__(debug_name)
        self.predicate = _scalar_predicate(predicate, "If predicate")
        self.then_body = _program(then_body, "If then-body")
        self.else_body = _program(else_body, "If else-body") if else_body is not None else Sequence()


class Switch(Program):
    """Run the case whose value equals the integral scalar ``control``, else ``default``."""

    __slots__ = ("control", "cases", "default")
    PARTS = (Part("control", _TENSOR), Part("cases", _CASES), Part("default", _PROGRAM))

    def __init__(self, control: Tensor,
                 cases: Union[Mapping[int, Program], Iterable[Tuple[int, Program]], None] = None,
                 default: Optional[Program] = None, debug_name: str = ""):
        super().__init__(debug_name)
        self.control = _scalar_predicate(control, "Switch control")
        self.cases: Dict[int, Program] = {}
        items = cases.items() if isinstance(cases, Mapping) else (() if cases is None else cases)
        if isinstance(items, (str, bytes, Program)) or not isinstance(items, Iterable):
            raise ControlProgramError(f"Switch cases must be a dict {{value: program}} or (value, program) pairs, "
                                      f"found {type(cases).__name__} {cases!r}")
        for item in items:
            if not isinstance(item, tuple) or len(item) != 2:
                raise ControlProgramError(f"Switch cases must be (value, program) pairs, found {item!r}; write "
                                          "Switch(control, {value: program, ...}, default)")
            self.add(*item)
        self.default = _program(default, "Switch default") if default is not None else Sequence()

    def add(self, value: int, program: Program) -> None:
        """Add the case ``value`` (any value the control's type can hold)."""
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
            raise ControlProgramError(f"Switch case values must be integers, found {type(value).__name__} {value!r}")
        value = int(value)
        dtype = self.control.dtype
        lo, hi = (0, 1) if dtype.numpy.kind == "b" else (int(np.iinfo(dtype.numpy).min), int(np.iinfo(dtype.numpy).max))
        if not lo <= value <= hi:
            raise ControlProgramError(f"Switch case value {value} can never match: the control '{self.control.name}' "
                                      f"is {dtype.name}, which holds {lo}..{hi}; use a value in that range (or a "
                                      "wider control type)")
        if value in self.cases:
            raise ControlProgramError(f"Switch has two cases for the value {value}")
        self.cases[value] = _program(program, f"Switch case {value}")


class Call(Program):
    """Run a function made with ``graph.add_function``."""

    __slots__ = ("function",)
    PARTS = (Part("function", PartKind.FUNCTION),)

    def __init__(self, function: Function, debug_name: str = ""):
        super().__init__(debug_name)
        if not isinstance(function, Function):
            raise ControlProgramError(f"Call takes a Function (from graph.add_function), found "
                                      f"{type(function).__name__}")
        self.function = function

    def describe(self) -> str:
        return self.debug_name or f"Call {self.function.name}"


class PrintTensor(Program):
    """Print a tensor's contents when the program runs: ``PrintTensor("title", t)`` or
    ``PrintTensor(t)``."""

    __slots__ = ("title", "tensor")
    PARTS = (Part("title", _VALUE), Part("tensor", _TENSOR))

    def __init__(self, title_or_tensor: Union[str, Tensor], tensor: Optional[Tensor] = None, debug_name: str = ""):
        super().__init__(debug_name)
        if tensor is None:
            tensor, title = title_or_tensor, None  # type: ignore[assignment]  # checked below
        else:
            title = title_or_tensor
        if not isinstance(tensor, Tensor):
            raise ControlProgramError(f"PrintTensor takes a Tensor, found {type(tensor).__name__}")
        if title is not None and not isinstance(title, str):
            raise ControlProgramError(f"PrintTensor title must be a string, found {type(title).__name__}")
        self.tensor = tensor
        self.title = title if title is not None else tensor.name

    def describe(self) -> str:
        return self.debug_name or f"PrintTensor {self.title}"


class WriteUndef(Program):
    """Declare a tensor's contents undefined from here on (a liveness hint; no data moves)."""

    __slots__ = ("tensor",)
    PARTS = (Part("tensor", _TENSOR),)

    def __init__(self, tensor: Tensor, debug_name: str = ""):
        super().__init__(debug_name)
        if not isinstance(tensor, Tensor):
            raise ControlProgramError(f"WriteUndef takes a Tensor, found {type(tensor).__name__}")
        self.tensor = tensor


class Sync(Program):
    """An explicit barrier across tiles (INTERNAL) or IPUs (EXTERNAL, GLOBAL)."""

    __slots__ = ("sync_type",)
    PARTS = (Part("sync_type", _VALUE),)

    def __init__(self, sync_type: SyncType = SyncType.INTERNAL, debug_name: str = ""):
        super().__init__(debug_name)
        if not isinstance(sync_type, SyncType):
            raise ControlProgramError(f"Sync takes a SyncType, found {sync_type!r}")
        self.sync_type = sync_type


class Abort(Program):
    """Stop the run with ApplicationRuntimeError carrying ``message``."""

    __slots__ = ("message",)
    PARTS = (Part("message", _VALUE),)

    def __init__(self, message: str = "", debug_name: str = ""):
        super().__init__(debug_name)
        self.message = str(message)


class AbortOnCondition(Program):
    """Abort when the scalar ``predicate`` is non-zero."""

    __slots__ = ("predicate", "message")
    PARTS = (Part("predicate", _TENSOR), Part("message", _VALUE))

    def __init__(self, predicate: Tensor, message: str = "", debug_name: str = ""):
        super().__init__(debug_name)
        self.predicate = _scalar_predicate(predicate, "AbortOnCondition predicate")
        self.message = str(message)


# Kept for Poplar users who spell these with their GraphConnectionError-era names.

