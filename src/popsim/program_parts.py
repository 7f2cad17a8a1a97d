"""What a program kind is made of (``Program.PARTS``: its Parts) and walking trees of
programs through that one description, the floor program.py and program_tree.py both
stand on.

Nothing here recurses in Python: trees nested 10,000 deep (or 5,000 chained Calls)
are walked with explicit stacks. ``drive`` is the shared trampoline: a per-kind
handler is a generator that yields the child programs it wants handled, in the
order and as many times as it likes (lowering yields each child once; the reference
executor yields a Repeat body ``count`` times), and resumes when each is done.
Programs are taken as they come (anything with PARTS and ``describe``), so this module
needs no program kind.
"""
from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Callable, Dict, Iterable, Iterator, List, NamedTuple, Optional, Tuple

from .errors import ControlProgramError

if TYPE_CHECKING:  # only for annotations: program.py imports this module
    from .program import Program

__all__ = ["PartKind", "Part", "parts_of", "children", "operands", "drive", "iter_programs", "program_label"]


class PartKind(enum.Enum):
    """What one attribute of a program is."""

    PROGRAM = "program"          # one child program
    PROGRAMS = "programs"        # child programs, run in order
    CASES = "cases"              # {value: program}: the values are data, the programs children
    TENSOR = "tensor"
    ENDPOINT = "endpoint"        # a Tensor or a DataStream (Copy's ends)
    COMPUTE_SET = "compute set"
    FUNCTION = "function"
    VALUE = "value"              # plain data that changes behaviour: counts, messages, titles, names


class Part(NamedTuple):
    """One attribute of a program kind: its name and what it is."""

    name: str
    kind: PartKind


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


def program_label(p: Program) -> str:
    """How messages name a program: its kind, and its description when that says more."""
    kind, text = type(p).__name__, p.describe()
    return text if text.startswith(kind) else f"{kind} '{text}'"
