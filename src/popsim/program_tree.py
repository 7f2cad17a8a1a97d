"""Walking program trees through the one description of each kind (``Program.PARTS``).

Everything that needs to see a program's structure goes through here: the
graph-membership check, the executable-cache digest (digest.py), lowering
(lower/programs.py) and the reference executor (reference/executor.py). A new
program kind therefore needs only its PARTS, plus its lowering and its reference
semantics.

Nothing here recurses in Python: trees nested 10,000 deep (or 5,000 chained Calls)
are walked with explicit stacks. ``drive`` is the shared trampoline: a per-kind
handler is a generator that yields the child programs it wants handled, in the
order and as many times as it likes (lowering yields each child once; the reference
executor yields a Repeat body ``count`` times), and resumes when each is done.
"""
from __future__ import annotations

from collections import deque
from typing import Callable, Deque, Dict, Iterable, Iterator, List, Optional, Tuple

from .errors import ControlProgramError
from .graph import Function
from .program import Part, PartKind, Program
from .streams import DataStream
from .tensor import Tensor

__all__ = ["parts_of", "children", "operands", "drive", "iter_programs", "reachable", "check_belongs_to",
           "program_label"]

_CHILD_KINDS = (PartKind.PROGRAM, PartKind.PROGRAMS, PartKind.CASES)
_parts_cache: Dict[type, Tuple[Part, ...]] = {}


def parts_of(kind: type) -> Tuple[Part, ...]:
    """Every part of a program kind: its bases' parts first, then its own."""
    parts = _parts_cache.get(kind)
    if parts is None:
        collected: List[Part] = []
        for klass in reversed(kind.__mro__):
            collected.extend(klass.__dict__.get("PARTS", ()))
        parts = _parts_cache[kind] = tuple(collected)
    return parts


def children(p: Program) -> List[Program]:
    """The child programs of ``p``, in PARTS order (a Switch's cases in insertion order)."""
    out: List[Program] = []
    for part in parts_of(type(p)):
        kind = part.kind
        if kind is PartKind.PROGRAM:
            out.append(getattr(p, part.name))
        elif kind is PartKind.PROGRAMS:
            out.extend(getattr(p, part.name))
        elif kind is PartKind.CASES:
            out.extend(getattr(p, part.name).values())
    return out


def operands(p: Program) -> Iterator[Tuple[Part, object]]:
    """The graph objects ``p`` names: (part, tensor / stream / compute set / function)."""
    for part in parts_of(type(p)):
        if part.kind not in _CHILD_KINDS and part.kind is not PartKind.VALUE:
            yield part, getattr(p, part.name)


def _walk(root: Program, handle: Callable[[Program], Optional[Iterator[Program]]]) -> Iterator[Program]:
    """Pre-order over the tree from ``root``, without recursion: yields each program,
    then calls ``handle`` on it for the iterator of its children to visit next (None:
    nothing below it). A program found inside itself raises ControlProgramError
    instead of looping forever."""
    yield root
    below = handle(root)
    if below is None:
        return
    stack = [(root, below)]
    on_path = {id(root)}
    while stack:
        child = next(stack[-1][1], None)
        if child is None:
            on_path.discard(id(stack.pop()[0]))
            continue
        if id(child) in on_path:
            raise _contains_itself(child)
        yield child
        below = handle(child)
        if below is not None:
            stack.append((child, below))
            on_path.add(id(child))


def drive(root: Program, handle: Callable[[Program], Optional[Iterator[Program]]]) -> None:
    """Run ``handle`` over the tree from ``root`` without recursion: ``handle(p)`` returns
    None (nothing below ``p`` to visit) or an iterator of the child programs to handle
    next; each is handled completely before the iterator is resumed. A program found
    inside itself raises ControlProgramError instead of looping forever."""
    for _ in _walk(root, handle):
        pass


def iter_programs(roots: Iterable[Program]) -> Iterator[Program]:
    """Every program in the trees of ``roots``, pre-order (not entering Called functions);
    a program shared by several parents is visited under each of them."""
    for root in roots:
        yield from _walk(root, lambda p: iter(children(p)))


def _contains_itself(p: Program) -> ControlProgramError:
    return ControlProgramError(f"{program_label(p)} contains itself (it was added to one of its own children, or a "
                               "function's program calls that function): programs cannot recurse; restructure it as "
                               "a loop (Repeat or RepeatWhileTrue)")


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


def program_label(p: Program) -> str:
    """How messages name a program: its kind, and its description when that says more."""
    kind, text = type(p).__name__, p.describe()
    return text if text.startswith(kind) else f"{kind} '{text}'"


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
