"""Loop versioning: a fast body for counted loops, used by the C back end only.

Checked mode bounds-checks every index it cannot prove in range. In a loop
``for i in range(...)`` that indexes ``v[i + c]`` or ``v[i + b]`` (v a field, or a view
the body does not change; c a constant, 0 included; b a local of the loop variable's type
that the body does not assign, such as the start of a block computed by an outer loop),
one test before the loop can show that every value the index takes is a valid index:
then the whole loop runs without those checks. This pass gives such a ForRange a
``fast`` body (a copy of ``body`` without the checks its ``guards`` cover) that emit_c.py
runs when every guard holds, and the original, checked ``body`` otherwise. Running the
checked body is always correct, so a failing guard changes nothing: the same IndexError
(field, index, size, line) at the same iteration, after the same stores. The interpreter always runs ``body``.

The fast body also
- reads the loop variable as a 64-bit value (``LoopIndex``) in index positions, which
  saves a sign extension per access (exact: the variable is not assigned in the body);
- leaves out the per-iteration cycle count (the body's leading TickStmt) when nothing
  in it can leave an iteration early (no break, return, checked access or inner loop):
  the C loop adds it once per chunk of iterations (``hoisted``), after the chunk's
  interrupt poll, so the total is the cost table's at every exit, as in the
  interpreter. ForEach loops get such a fast body too.

Guard arithmetic (include/popsim_python_runtime.h, popsim_py_fits_*) is exact in 64
bits because offsets are kept below 2**31 in magnitude.
"""
from __future__ import annotations

import copy
from typing import Dict, List, Optional, Set, Tuple, cast

from .typed_ir import (Binary, Break, Const, Expr, FieldRef, ForEach, ForRange, Function, Guard, Load, Local, LoopIndex,
                       Print, Return, RowAt, Stmt, Store, T, TickStmt, While, child_blocks, has_sites, walk_stmts)

__all__ = ["version_loops"]

#: Offsets (the c of v[i + c]) allowed in a guard, exclusive (keeps its arithmetic in 64 bits).
MAX_OFFSET = 1 << 31
#: A loop body with more IR nodes than this is not duplicated for versioning (code size).
MAX_VERSIONED_NODES = 2000

_CHILDREN = ("view", "index", "operand", "left", "right", "test", "body", "orelse", "value", "target")
_STMT_EXPRS = ("value", "index", "view", "test", "start", "stop", "step")


def version_loops(fn: Function) -> Function:
    """Give the counted loops of ``fn`` their fast bodies where that pays (in place)."""
    _block(fn.body)
    return fn


def _block(stmts: List[Stmt]) -> None:
    for s in stmts:
        for block in child_blocks(s):
            _block(block)          # inner loops first: the outer loop's copy includes their versions
        if isinstance(s, ForRange):
            _version_range(s)
        elif isinstance(s, ForEach):
            _version_each(s)


def _version_range(s: ForRange) -> None:
    fast = copy.deepcopy(s.body)
    guards: List[Guard] = []
    changed = False
    assigned = _assigned(s.body)
    if s.var.ty is s.start.ty and s.var.name not in assigned:
        cover = _Cover(s, assigned, with_guards=_size(s.body) <= MAX_VERSIONED_NODES)
        cover.block(fast)
        guards, changed = list(cover.guards.values()), cover.changed
    hoisted = _hoistable(fast)
    if hoisted:
        fast = fast[1:]
    if changed or hoisted:
        s.fast, s.guards, s.hoisted = fast, guards, hoisted


def _version_each(s: ForEach) -> None:
    hoisted = _hoistable(s.body)
    if hoisted:
        s.fast, s.hoisted = copy.deepcopy(s.body[1:]), hoisted


def _hoistable(body: List[Stmt]) -> int:
    """The cycles of ``body``'s leading TickStmt when every iteration that starts also
    ends normally (so counting them per chunk is exact), else 0."""
    if not body or not isinstance(body[0], TickStmt):
        return 0
    for s in walk_stmts(body):
        if isinstance(s, (Return, Break, While, ForRange, ForEach)) or has_sites(s) \
                or (isinstance(s, Store) and s.site is not None):
            return 0
    return body[0].cycles


def _assigned(stmts: List[Stmt]) -> Set[str]:
    """Names of the (non-temporary) locals that ``stmts`` assign."""
    names: Set[str] = set()
    for s in walk_stmts(stmts):
        targets: List[Optional[Local]] = []
        if hasattr(s, "target") and isinstance(s.target, Local):
            targets.append(s.target)
        if isinstance(s, (ForRange, ForEach)):
            targets += [s.var, getattr(s, "index", None)]
        names.update(t.name for t in targets if t is not None and not t.temp)
    return names


def _size(stmts: List[Stmt]) -> int:
    n = 0
    for s in walk_stmts(stmts):
        n += 1
        for name in _STMT_EXPRS:
            e = getattr(s, name, None)
            if isinstance(e, Expr):
                n += _expr_size(e)
    return n


def _expr_size(e: Expr) -> int:
    n = 1
    for name in _CHILDREN:
        child = getattr(e, name, None)
        if isinstance(child, Expr):
            n += _expr_size(child)
    return n + sum(_expr_size(a) for a in getattr(e, "args", ()))


class _Cover:
    """Rewrites a copy of one loop's body: accesses indexed by the loop variable (plus a
    constant) get a LoopIndex, and checked ones on a view the body does not change lose
    their check, each recorded in a guard of the loop."""

    def __init__(self, loop: ForRange, assigned: Set[str], with_guards: bool):
        self.var = loop.var.name
        self.ty: T = cast(T, loop.start.ty)  # a range's bounds are numbers
        self.counter = loop.counter
        self.assigned = assigned
        self.with_guards = with_guards
        self.guards: Dict[tuple, Guard] = {}
        self.changed = False

    def is_var(self, e: Expr) -> bool:
        return isinstance(e, Local) and not e.temp and e.name == self.var and e.ty is self.ty

    def is_base(self, e: Expr) -> bool:
        """Whether ``e`` is a local of the loop's type that the loop does not change."""
        return isinstance(e, Local) and not e.temp and e.ty is self.ty and e.name != self.var and \
            e.name not in self.assigned

    def offset(self, idx: Expr) -> Optional[Tuple[Optional[Local], int]]:
        """(None, c) when ``idx`` is the loop variable plus the constant c, (b, 0) when it
        is the loop variable plus a local b the loop does not change (computed in the
        loop's type), else None."""
        if self.is_var(idx):
            return None, 0
        if not (isinstance(idx, Binary) and idx.ty is self.ty and idx.op in ("add", "sub")):
            return None
        left, right = idx.left, idx.right
        if self.is_var(left) and isinstance(right, Const):
            off = int(right.value) if idx.op == "add" else -int(right.value)
        elif idx.op == "add" and isinstance(left, Const) and self.is_var(right):
            off = int(left.value)
        elif idx.op == "add" and self.is_var(left) and self.is_base(right):
            return cast(Local, right), 0  # (is_base: a Local)
        elif idx.op == "add" and self.is_base(left) and self.is_var(right):
            return cast(Local, left), 0
        else:
            return None
        return (None, off) if -MAX_OFFSET < off < MAX_OFFSET else None

    def view_key(self, view: Expr) -> Optional[tuple]:
        """What identifies a view that keeps its size for the whole loop, else None."""
        if isinstance(view, FieldRef):
            return ("field", view.field)
        if isinstance(view, Local) and not view.temp and view.name not in self.assigned:
            return ("local", view.name)
        if isinstance(view, RowAt) and isinstance(view.view, FieldRef) and isinstance(view.index, Local) \
                and not view.index.temp and view.index.name not in self.assigned and view.index.name != self.var:
            return ("row", view.view.field, view.index.name)
        return None

    def access(self, view: Expr, index: Expr, site):
        """(index, site) of an access in the fast body."""
        found = self.offset(index)
        if found is None:
            return index, site
        base, off = found
        if site is None and (off != 0 or base is not None):
            return index, site
        if site is not None:
            key = self.view_key(view) if self.with_guards else None
            if key is None:
                return index, site
            key += (base.name if base is not None else None,)
            guard = self.guards.get(key)
            if guard is None:
                self.guards[key] = Guard(copy.deepcopy(view), off, off, copy.deepcopy(base))
            else:
                guard.low, guard.high = min(guard.low, off), max(guard.high, off)
        self.changed = True
        return LoopIndex(T.I64, index.loc, self.counter, off, copy.deepcopy(base)), None

    def expr(self, e: Optional[Expr]) -> Optional[Expr]:
        if e is None:
            return None
        for name in _CHILDREN:
            child = getattr(e, name, None)
            if isinstance(child, Expr):
                setattr(e, name, self.expr(child))
        if hasattr(e, "args"):
            e.args = [self.expr(a) for a in e.args]
        if isinstance(e, (Load, RowAt)):
            e.index, e.site = self.access(e.view, e.index, e.site)
        return e

    def block(self, stmts: List[Stmt]) -> None:
        for s in stmts:
            for name in _STMT_EXPRS:
                e = getattr(s, name, None)
                if isinstance(e, Expr):
                    setattr(s, name, self.expr(e))
            if isinstance(s, Print):
                for arg in s.items:
                    for item in arg:
                        item.value = self.expr(item.value)
            if isinstance(s, Store) and s.index is not None and s.view is not None:  # (an indexed store has a view)
                s.index, s.site = self.access(s.view, s.index, s.site)
            for block in child_blocks(s):
                self.block(block)
