"""Control programs (``popsim.program``): what the engine runs, as a tree.

Arguments are checked when a program is built, so a mistake is reported at the line
that made it. The engine lowers the tree to a flat instruction list once.
"""
from __future__ import annotations

import enum
from typing import Dict, Iterable, List, Mapping, Optional, Tuple, Union

import numpy as np

from .errors import ControlProgramError, StreamConnectionError
from .graph import ComputeSet, Function
from .streams import DataStream
from .tensor import Tensor

__all__ = [
    "Program", "Sequence", "Execute", "Copy", "Repeat", "RepeatWhileTrue", "RepeatWhileFalse", "If",
    "Switch", "Call", "PrintTensor", "WriteUndef", "Sync", "SyncType", "Abort", "AbortOnCondition",
]


class SyncType(enum.Enum):
    INTERNAL = "INTERNAL"  # all tiles of each IPU
    EXTERNAL = "EXTERNAL"  # all tiles of all IPUs (and the host)
    GLOBAL = "GLOBAL"      # all replicas


class Program:
    """Base class of every control program."""

    __slots__ = ("debug_name",)

    def __init__(self, debug_name: str = ""):
        self.debug_name = debug_name or ""

    def children(self) -> Tuple["Program", ...]:
        return ()

    def is_empty(self) -> bool:
        return False

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

    def __init__(self, *programs, debug_name: str = ""):
        super().__init__(debug_name)
        if len(programs) == 1 and isinstance(programs[0], (list, tuple)):
            programs = tuple(programs[0])
        self.programs: List[Program] = [_program(p, "Sequence item") for p in programs]

    def add(self, program: Program) -> None:
        """Append a program."""
        self.programs.append(_program(program, "Sequence.add argument"))

    def children(self):
        return tuple(self.programs)

    def is_empty(self) -> bool:
        return all(p.is_empty() for p in self.programs)

    def __len__(self) -> int:
        return len(self.programs)


class Execute(Program):
    """Run every vertex of a compute set once, in parallel: one BSP superstep."""

    __slots__ = ("compute_set",)

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
    def _check_tensors(src, dst) -> None:
        for side, t in (("source", src), ("destination", dst)):
            if not isinstance(t, Tensor):
                raise ControlProgramError(f"Copy {side} must be a Tensor or DataStream, found {type(t).__name__}")
        if src._table is not dst._table:
            raise ControlProgramError(f"Copy from '{src.name}' to '{dst.name}': the tensors belong to different "
                                      "graphs")
        if src.dtype is not dst.dtype:
            raise ControlProgramError(f"Copy from '{src.name}' ({src.dtype.name}) to '{dst.name}' "
                                      f"({dst.dtype.name}): the element types differ; cast first (popops.cast)")
        if src.num_elements() != dst.num_elements():
            raise ControlProgramError(f"Copy from '{src.name}' {list(src.shape)} ({src.num_elements()} elements) to "
                                      f"'{dst.name}' {list(dst.shape)} ({dst.num_elements()} elements): element "
                                      "counts must be equal (shapes may differ)")
        _check_writable(dst, "Copy destination")

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


def _check_writable(t: Tensor, what: str) -> None:
    if t.contains_constant():
        raise ControlProgramError(f"{what}: tensor '{t.name}' is (or contains) a constant, which cannot be written")
    if t.contains_aliases():
        raise ControlProgramError(f"{what}: the view of '{t.name}' contains some elements more than once, so "
                                  "writing it is ambiguous")


class Repeat(Program):
    """Run ``body`` ``count`` times."""

    __slots__ = ("count", "body")

    def __init__(self, count: int, body: Program, debug_name: str = ""):
        super().__init__(debug_name)
        if isinstance(count, (bool, np.bool_)) or not isinstance(count, (int, np.integer)):
            raise ControlProgramError(f"Repeat count must be an integer, found {type(count).__name__} {count!r}")
        if count < 0:
            raise ControlProgramError(f"Repeat count must be >= 0, found {count}")
        self.count = int(count)
        self.body = _program(body, "Repeat body")

    def children(self):
        return (self.body,)


class _RepeatWhile(Program):
    __slots__ = ("condition", "predicate", "body")
    _loop_while = True

    def __init__(self, condition: Program, predicate: Tensor, body: Program, debug_name: str = ""):
        super().__init__(debug_name)
        name = type(self).__name__
        self.condition = _program(condition, f"{name} condition")
        self.predicate = _scalar_predicate(predicate, f"{name} predicate")
        self.body = _program(body, f"{name} body")

    def children(self):
        return (self.condition, self.body)


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

    def __init__(self, predicate: Tensor, then_body: Program, else_body: Optional[Program] = None,
                 debug_name: str = ""):
        super().__init__(debug_name)
        self.predicate = _scalar_predicate(predicate, "If predicate")
        self.then_body = _program(then_body, "If then-body")
        self.else_body = _program(else_body, "If else-body") if else_body is not None else Sequence()

    def children(self):
        return (self.then_body, self.else_body)


class Switch(Program):
    """Run the case whose value equals the integral scalar ``control``, else ``default``."""

    __slots__ = ("control", "cases", "default")

    def __init__(self, control: Tensor,
                 cases: Union[Mapping[int, Program], Iterable[Tuple[int, Program]], None] = None,
                 default: Optional[Program] = None, debug_name: str = ""):
        super().__init__(debug_name)
        self.control = _scalar_predicate(control, "Switch control")
        self.cases: Dict[int, Program] = {}
        items = cases.items() if isinstance(cases, Mapping) else (cases or ())
        for value, prog in items:
            self.add(value, prog)
        self.default = _program(default, "Switch default") if default is not None else Sequence()

    def add(self, value: int, program: Program) -> None:
        """Add the case ``value``."""
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
            raise ControlProgramError(f"Switch case values must be integers, found {type(value).__name__} {value!r}")
        if int(value) in self.cases:
            raise ControlProgramError(f"Switch has two cases for the value {int(value)}")
        self.cases[int(value)] = _program(program, f"Switch case {value}")

    def children(self):
        return tuple(self.cases.values()) + (self.default,)


class Call(Program):
    """Run a function made with ``graph.add_function``."""

    __slots__ = ("function",)

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

    def __init__(self, title_or_tensor, tensor: Optional[Tensor] = None, debug_name: str = ""):
        super().__init__(debug_name)
        if tensor is None:
            tensor, title = title_or_tensor, None
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

    def __init__(self, tensor: Tensor, debug_name: str = ""):
        super().__init__(debug_name)
        if not isinstance(tensor, Tensor):
            raise ControlProgramError(f"WriteUndef takes a Tensor, found {type(tensor).__name__}")
        self.tensor = tensor


class Sync(Program):
    """An explicit barrier across tiles (INTERNAL) or IPUs (EXTERNAL, GLOBAL)."""

    __slots__ = ("sync_type",)

    def __init__(self, sync_type: SyncType = SyncType.INTERNAL, debug_name: str = ""):
        super().__init__(debug_name)
        if not isinstance(sync_type, SyncType):
            raise ControlProgramError(f"Sync takes a SyncType, found {sync_type!r}")
        self.sync_type = sync_type


class Abort(Program):
    """Stop the run with ApplicationRuntimeError carrying ``message``."""

    __slots__ = ("message",)

    def __init__(self, message: str = "", debug_name: str = ""):
        super().__init__(debug_name)
        self.message = str(message)


class AbortOnCondition(Program):
    """Abort when the scalar ``predicate`` is non-zero."""

    __slots__ = ("predicate", "message")

    def __init__(self, predicate: Tensor, message: str = "", debug_name: str = ""):
        super().__init__(debug_name)
        self.predicate = _scalar_predicate(predicate, "AbortOnCondition predicate")
        self.message = str(message)


# Kept for Poplar users who spell these with their GraphConnectionError-era names.

