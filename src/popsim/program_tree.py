"""Walking program trees through the one description of each kind (``Program.PARTS``).

Everything that needs to see a program's structure goes through here: the
graph-membership check, the executable-cache digest (digest.py), lowering
(lower/programs.py) and the reference executor (reference/executor.py). A new
program kind therefore needs only its PARTS, plus its lowering and its reference
semantics. The walks themselves (``drive``, ``iter_programs``, ...) are
program_parts.py's, a floor below program.py; this module adds what needs the program
kinds and the graph's objects: the functions a tree calls and the membership check.
"""
from __future__ import annotations

from collections import deque
from typing import Deque, Iterable, Iterator, Optional, Tuple

from .errors import ControlProgramError
from .program import Function, PartKind, Program
from .program_parts import children, drive, iter_programs, operands, parts_of, program_label
from .streams import DataStream
from .tensor import Tensor

__all__ = ["parts_of", "children", "operands", "drive", "iter_programs", "reachable", "check_belongs_to",
           "program_label"]


def reachable(roots: Iterable[Program]) -> Iterator[Tuple[Program, object]]:
    """Every program reachable from ``roots`` (Called functions' bodies included, each
    once), pre-order, with the function whose body it is in (None in the roots)."""
    seen = set()
    pending: Deque[Tuple[Program, Optional[Function]]] = deque((r, None) for r in roots)
    while pending:
        root, function = pending.popleft()
        for p in iter_programs([root]):
            yield p, function
            for part, obj in operands(p):
                if part.kind is PartKind.FUNCTION and isinstance(obj, Function) and id(obj) not in seen:
                    seen.add(id(obj))
                    pending.append((obj.program, obj))


def _owner_state(obj):
    """The shared graph state an operand belongs to (tensors by their variable table)."""
    if isinstance(obj, Tensor):
        return obj._table
    if isinstance(obj, DataStream):
        return obj._state.table
    state = getattr(obj, "_state", None)
    return None if state is None else state.table


def _operand_name(obj) -> str:
    if isinstance(obj, Tensor):
        return f"tensor '{obj.name}'"
    if isinstance(obj, DataStream):
        return f"stream '{obj.handle}'"
    kind = "compute set" if type(obj).__name__ == "ComputeSet" else "function"
    return f"{kind} '{obj.name}'"


def check_belongs_to(state, p: Program, where: str) -> None:
    """Raise ControlProgramError when ``p`` names a tensor, stream, compute set or
    function of another graph than ``state`` (a graph and its virtual graphs share one
    state). ``where`` says which program or function ``p`` is in."""
    for part, obj in operands(p):
        owner = _owner_state(obj)
        if owner is not state.table:
            raise ControlProgramError(
                f"{program_label(p)} in {where} uses {_operand_name(obj)} (its {part.name}), which belongs to "
                f"another graph: the Engine's graph ({_describe_graph(state)}) is not the graph that created "
                f"it ({_describe_owner(owner)}); build every program an Engine runs from that Engine's graph "
                "(or its virtual graphs)")


def _describe_graph(state) -> str:
    return f"{len(state.table)} variables, {len(state.compute_sets)} compute sets"


def _describe_owner(table) -> str:
    return "unknown" if table is None else f"{len(table)} variables"
