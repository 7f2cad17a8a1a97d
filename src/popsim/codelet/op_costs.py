"""Automatic cycle counting for Python vertices: the cost table and the pass that
places counting statements in the typed IR.

The figures are a MODEL of an IPU worker thread, in worker cycles (one instruction
issue each), not measurements: simple integer and float32 operations take one cycle,
there is no hardware divider (integer division and floor division/modulo are software
routines), the transcendental functions the IPU has instructions for (exp, log, tanh,
sqrt) are cheap, the others are software. Memory accesses to tile memory take one
cycle. Bounds checks, print() and breakpoint() cost nothing (they are debugging aids
that an IPU build would not contain), so adding prints never changes a cycle count.

How costs are counted: each straight-line run of statements adds the static cost of
all its operations when it starts; a loop adds its per-iteration cost on each
iteration; the right operand of and/or and the branches of a conditional expression
add theirs only when they run. Both back ends (C and interpreted Python) execute the
same counting statements, so their counts are identical.
"""
from __future__ import annotations

from typing import List, Optional, cast

from .. import types as _types
from .typed_ir import (VK, Assign, Binary, BoolOp, Break, Breakpoint, Cast, Compare, Const, Continue, Expr, FieldRef,
                       ForEach, ForRange, Function, If, IfExp, Intrinsic, Len, Let, Load, Local, Not, NumWorkers,
                       Print, Return, RowAt, ScalarField, Stmt, Store, T, Tick, TickStmt, Unary, ViewT, While)

#: Worker cycles per operation (a model; see the module docstring and docs/python_vertices.md).
CYCLES = {
    "vertex": 6,          # per compute() call: entry, loading field pointers, return
    "load": 1,            # reading one element or a scalar field from tile memory
    "store": 1,           # writing one element
    "row": 1,             # fetching one row (pointer and size) of a list field
    "len": 1,             # reading a field's size
    "half_to_float": 1,   # f16 -> f32 after a HALF load
    "float_to_half": 1,   # f32 -> f16 before a HALF store (round to nearest even)
    "int_op": 1,          # int + - & | ^ << >> negation, ~, comparisons, not
    "int_mul": 1,
    "int_div": 30,        # int // and % (software: no hardware divider)
    "int_pow": 20,
    "float_op": 1,        # float + - * negation, comparisons
    "float_div": 6,       # float / (reciprocal and refinement)
    "float_floordiv": 40, # float // and % (fmod, floor and fix-ups)
    "convert": 1,         # int <-> float, float -> bool
    "branch": 1,          # if / elif / while test, conditional expression, and / or
    "loop_setup": 2,      # before a for loop
    "loop_iter": 1,       # per for-loop iteration (counter update and branch)
    "jump": 1,            # break / continue
    "min_max": 2,         # min / max of two values (compare and select)
    "abs": 1,
    "compare_mixed": 2,   # comparing uint64 with a signed int exactly
    "round": 2,           # floor, ceil, trunc, round
    "classify": 1,        # isnan, isinf, isfinite
    # math.* functions
    "sqrt": 6, "exp": 4, "log": 4, "tanh": 4, "exp2": 4, "log2": 4,
    "expm1": 20, "log1p": 20, "log10": 20, "sin": 30, "cos": 30, "tan": 40, "asin": 40, "acos": 40,
    "atan": 40, "atan2": 50, "sinh": 30, "cosh": 30, "erf": 40, "erfc": 40, "pow": 40, "hypot": 20, "fmod": 30,
    "copysign": 1,
}

_INTRINSIC = {"min": "min_max", "max": "min_max", "iabs": "abs", "fabs": "abs", "cmp3_ui": "compare_mixed",
              "cmp3_iu": "compare_mixed", "rint": "round", "floor": "round", "ceil": "round", "trunc": "round",
              "isnan": "classify", "isinf": "classify", "isfinite": "classify"}


def _binary_cost(op: str, ty: T) -> int:
    if ty is T.F32:
        key = {"div": "float_div", "floordiv": "float_floordiv", "mod": "float_floordiv", "pow": "pow"}.get(op,
                                                                                                          "float_op")
    else:
        key = {"mul": "int_mul", "floordiv": "int_div", "mod": "int_div", "pow": "int_pow"}.get(op, "int_op")
    return CYCLES[key]


class Costs:
    """Static costs of expressions and statements of one function."""

    def __init__(self, fn: Function):
        self.fn = fn

    def is_half(self, view: Expr) -> bool:
        return self.fn.fields[cast(ViewT, view.ty).field].dtype is _types.HALF

    def own(self, e: Expr) -> int:
        c = CYCLES
        if isinstance(e, (Const, Local, NumWorkers, FieldRef, Let, Tick)):
            return 0
        if isinstance(e, ScalarField):
            return c["load"] + (c["half_to_float"] if self.fn.fields[e.field].dtype is _types.HALF else 0)
        if isinstance(e, Load):
            return c["load"] + (c["half_to_float"] if self.is_half(e.view) else 0)
        if isinstance(e, RowAt):
            return c["row"]
        if isinstance(e, Len):
            return c["len"]
        if isinstance(e, Unary):
            return c["float_op"] if e.ty is T.F32 else c["int_op"]
        if isinstance(e, Not):
            return c["int_op"]
        if isinstance(e, Binary):
            return _binary_cost(e.op, cast(T, e.ty))  # a number, never a view
        if isinstance(e, Compare):
            return c["float_op"] if e.left.ty is T.F32 else c["int_op"]
        if isinstance(e, (BoolOp, IfExp)):
            return c["branch"]
        if isinstance(e, Cast):
            src, dst = e.operand.ty, e.ty
            if dst is T.BOOL:
                return c["convert"] if src is T.F32 else c["int_op"]
            return c["convert"] if (src is T.F32) != (dst is T.F32) else 0
        if isinstance(e, Intrinsic):
            return c[_INTRINSIC.get(e.name, e.name)]
        raise TypeError(f"no cost for {type(e).__name__}")  # pragma: no cover

    def expr(self, e: Optional[Expr]) -> int:
        """Cycles to evaluate ``e``, except parts under Tick (counted when they run)."""
        if e is None or isinstance(e, Tick):
            return 0
        total = self.own(e)
        for name in ("view", "index", "operand", "left", "right", "test", "body", "orelse", "value"):
            child = getattr(e, name, None)
            if isinstance(child, Expr):
                total += self.expr(child)
        for a in getattr(e, "args", ()):
            total += self.expr(a)
        return total

    def deferred(self, e: Expr) -> Expr:
        """``e`` with the code that may not run (and/or right operands, conditional
        branches) wrapped in Tick nodes carrying their cost."""
        if e is None:
            return None
        for name in ("view", "index", "operand", "left", "right", "test", "body", "orelse", "value"):
            child = getattr(e, name, None)
            if isinstance(child, Expr):
                setattr(e, name, self.deferred(child))
        if hasattr(e, "args"):
            e.args = [self.deferred(a) for a in e.args]
        if isinstance(e, BoolOp):
            e.right = self._wrap(e.right)
        elif isinstance(e, IfExp):
            e.body, e.orelse = self._wrap(e.body), self._wrap(e.orelse)
        return e

    def _wrap(self, e: Expr) -> Expr:
        k = self.expr(e)
        return Tick(e.ty, e.loc, k, e) if k else e

    def stmt(self, s: Stmt) -> int:
        if isinstance(s, Assign):
            return self.expr(s.value)
        if isinstance(s, Store):
            half = self.fn.fields[s.field].dtype is _types.HALF
            return (self.expr(s.value) + self.expr(s.index) + self.expr(s.view) + CYCLES["store"]
                    + (CYCLES["float_to_half"] if half else 0))
        if isinstance(s, Return):
            return self.expr(s.value)
        if isinstance(s, (Break, Continue)):
            return CYCLES["jump"]
        return 0  # Print, Breakpoint: not counted


def _rewrite(costs: Costs, s: Stmt) -> None:
    for name in ("value", "index", "view", "test", "start", "stop", "step"):
        e = getattr(s, name, None)
        if isinstance(e, Expr):
            setattr(s, name, costs.deferred(e))


def _block(costs: Costs, stmts: List[Stmt], initial: int = 0) -> List[Stmt]:
    out: List[Stmt] = []
    run: List[Stmt] = []
    pending = initial

    def flush(loc):
        nonlocal pending, run
        if pending:
            out.append(TickStmt(run[0].loc if run else loc, pending))
        out.extend(run)
        run, pending = [], 0

    for s in stmts:
        _rewrite(costs, s)
        if isinstance(s, (Assign, Store, Print, Breakpoint)):
            pending += costs.stmt(s)
            run.append(s)
        elif isinstance(s, (Break, Continue, Return)):
            pending += costs.stmt(s)
            run.append(s)
            flush(s.loc)
        elif isinstance(s, If):
            pending += costs.expr(s.test) + CYCLES["branch"]
            flush(s.loc)
            s.body = _block(costs, s.body)
            s.orelse = _block(costs, s.orelse)
            out.append(s)
        elif isinstance(s, While):
            flush(s.loc)
            s.tick = costs.expr(s.test) + CYCLES["branch"]
            s.body = _block(costs, s.body)
            out.append(s)
        elif isinstance(s, ForRange):
            pending += costs.expr(s.start) + costs.expr(s.stop) + costs.expr(s.step) + CYCLES["loop_setup"]
            flush(s.loc)
            s.body = _block(costs, s.body, CYCLES["loop_iter"])   # counted with the body's first run
            out.append(s)
        elif isinstance(s, ForEach):
            pending += costs.expr(s.view) + CYCLES["loop_setup"]
            flush(s.loc)
            if cast(ViewT, s.view.ty).kind is VK.ROWS:
                elem = CYCLES["row"]
            else:
                elem = CYCLES["load"] + (CYCLES["half_to_float"] if costs.is_half(s.view) else 0)
            per_item = CYCLES["loop_iter"] + elem + (CYCLES["int_op"] if s.index is not None else 0)
            s.body = _block(costs, s.body, per_item)
            out.append(s)
        else:  # pragma: no cover - every statement kind is listed above
            raise TypeError(f"no cost rule for {type(s).__name__}")
    flush(stmts[-1].loc if stmts else None)
    return out


def add_cycle_counting(fn: Function) -> Function:
    """Place the counting statements (TickStmt, Tick, loop ticks) in ``fn``, in place."""
    fn.body = _block(Costs(fn), fn.body, CYCLES["vertex"])
    return fn
