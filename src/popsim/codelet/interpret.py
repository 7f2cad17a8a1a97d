"""Interpreted (debug) mode for Python vertices.

The typed IR that emit_c.py turns into C is turned here into a Python function instead,
compiled with the SAME file name and line numbers as the user's ``compute``: print()
prints, breakpoint() stops in pdb on the user's own source lines, and locals show up
under their own names. Every value is a numpy scalar of its static C type, and every
operation that numpy would do differently from the C code calls a helper from
pyruntime.py, so results and cycle counts are identical to compiled mode.

Field values follow popsim/codelet/abi.py: a 1-element array for a scalar edge
or state scalar, a 1-D array for a vector, a list of 1-D arrays for a vector of edges or
a VectorList. Arrays are used in place.
"""
from __future__ import annotations

import ast
import builtins
import functools
import threading
from typing import Dict, List, Tuple

import numpy as np

from ..errors import IndexError as PopsimIndexError
from ..target import HARDWARE_WORKER_CONTEXTS
from . import pyruntime as rt
from .typed_ir import (STORAGE, VK, Assign, Binary, BoolOp, Break, Breakpoint, Cast, Compare, Const, Continue, Expr,
                       FieldRef, ForEach, ForRange, Function, If, IfExp, Intrinsic, Len, Let, Load, Local, Loc, Not,
                       NumWorkers, Print, Return, RowAt, ScalarField, Store, T, Tick, TickStmt, Unary, While)

__all__ = ["run_interpreted", "run_all_workers", "index_error_message", "interpreted_function"]


class _IndexFault(Exception):
    def __init__(self, site: int, index, size: int):
        super().__init__(site, index, size)
        self.site, self.index, self.size = site, index, size


def _fault(site, i, n):
    raise _IndexFault(site, int(rt.wrap(int(i), T.I64)), n)


# -- runtime helpers, by storage suffix ----------------------------------------------------------
_VALUE = {
    "f32": lambda x: x, "f16": rt.h2f, "i32": lambda x: x, "u32": lambda x: x, "i64": lambda x: x,
    "u64": lambda x: x, "b8": lambda x: x, "i16": np.int32, "u16": np.int32, "i8": np.int32, "u8": np.int32,
}
_RAW = {
    "f16": rt.f2h, "i16": lambda x: x.astype(np.int16), "u16": lambda x: x.astype(np.uint16),
    "i8": lambda x: x.astype(np.int8), "u8": lambda x: x.astype(np.uint8),
}


def _helpers() -> dict:
    h = {}
    for sfx, value in _VALUE.items():
        raw = _RAW.get(sfx, lambda x: x)

        def ld(a, i, s, value=value):
            n = a.shape[0]
            if 0 <= i < n:
                return value(a[i])
            _fault(s, i, n)

        def lds(rows, i, s, value=value):
            n = len(rows)
            if 0 <= i < n:
                return value(rows[i][0])
            _fault(s, i, n)

        def st(x, a, i, s, raw=raw):
            n = a.shape[0]
            if 0 <= i < n:
                a[i] = raw(x)
                return
            _fault(s, i, n)

        def sts(x, rows, i, s, raw=raw):
            n = len(rows)
            if 0 <= i < n:
                rows[i][0] = raw(x)
                return
            _fault(s, i, n)

        def ust(x, a, i, raw=raw):
            a[i] = raw(x)

        def usts(x, rows, i, raw=raw):
            rows[i][0] = raw(x)

        h[f"_p_ld_{sfx}"], h[f"_p_lds_{sfx}"], h[f"_p_st_{sfx}"], h[f"_p_sts_{sfx}"] = ld, lds, st, sts
        h[f"_p_ust_{sfx}"], h[f"_p_usts_{sfx}"] = ust, usts
        h[f"_p_get_{sfx}"] = _getter(value)
        h[f"_p_put_{sfx}"] = _putter(raw)
        h[f"_p_val_{sfx}"] = value

    def row(rows, i, s):
        n = len(rows)
        if 0 <= i < n:
            return rows[i]
        _fault(s, i, n)

    true, false = np.bool_(True), np.bool_(False)
    h.update({
        "_p_row": row, "_p_len": lambda v: np.int32(len(v)), "_p_not": lambda x: false if x else true,
        "_p_fadd": rt.fadd, "_p_fsub": rt.fsub, "_p_fmul": rt.fmul, "_p_fdiv": rt.fdiv,
        "_p_floordiv": rt.floordiv, "_p_mod": rt.mod, "_p_ipow": rt.ipow, "_p_ffloordiv": rt.ffloordiv,
        "_p_fmodpy": rt.fmod_py, "_p_lshift": rt.lshift, "_p_rshift": rt.rshift, "_p_min": rt.fmin,
        "_p_max": rt.fmax, "_p_iabs": rt.iabs, "_p_fabs": abs, "_p_rint": np.rint, "_p_floor": np.floor,
        "_p_ceil": np.ceil, "_p_trunc": np.trunc, "_p_isnan": np.isnan, "_p_isinf": np.isinf,
        "_p_isfinite": np.isfinite, "_p_cmp3_ui": rt.cmp3_ui, "_p_cmp3_iu": rt.cmp3_iu, "_p_range": rt.py_range,
        "_p_print": builtins.print, "_p_breakpoint": builtins.breakpoint, "_p_bool": bool,
        "_p_cat": lambda *parts: "".join(parts), "_p_enumerate": enumerate,
    })
    for name in rt.UNARY_MATH:
        h["_p_m_" + name] = rt.math1(name)
    for name in rt.BINARY_MATH:
        h["_p_m_" + name] = rt.math2(name)
    for (src, dst), fn in rt.CONVERT.items():
        h[f"_p_cv_{src.name}_{dst.name}"] = fn
    for t in T:
        h[f"_p_{t.name}"] = t.np
        h[f"_p_str_{t.name}"] = functools.partial(_text, t)
        h[f"_p_fmt_{t.name}"] = functools.partial(_spec, t)
    return h


def _getter(value):
    return lambda a: value(a[0])


def _putter(raw):
    def put(x, a):
        a[0] = raw(x)
    return put


def _text(t, x):
    return rt.to_text(x, t)


def _spec(t, x, spec):
    return rt.format_spec(x, t, spec)


HELPERS = _helpers()
_SFX = {T.BOOL: "b", T.I32: "i32", T.U32: "u32", T.I64: "i64", T.U64: "u64", T.F32: "f32"}
_BINOP = {"add": ast.Add, "sub": ast.Sub, "mul": ast.Mult, "div": ast.Div, "and": ast.BitAnd, "or": ast.BitOr,
          "xor": ast.BitXor}
_CMPOP = {"lt": ast.Lt, "le": ast.LtE, "gt": ast.Gt, "ge": ast.GtE, "eq": ast.Eq, "ne": ast.NotEq}


# -- IR -> Python AST -----------------------------------------------------------------------------
def _name(id_: str, store: bool = False) -> ast.Name:
    return ast.Name(id=id_, ctx=ast.Store() if store else ast.Load())


def _call(fn: str, *args) -> ast.Call:
    return ast.Call(func=_name(fn), args=list(args), keywords=[])


def _subscript(value, index) -> ast.Subscript:
    return ast.Subscript(value=value, slice=index, ctx=ast.Load())


def _locate(node, loc: Loc):
    """Give ``node`` and its children without a position the position ``loc``."""
    for n in ast.walk(node):
        if "lineno" in n._attributes and getattr(n, "lineno", None) is None:
            n.lineno, n.col_offset = loc.line, loc.col
            n.end_lineno, n.end_col_offset = loc.end_line, loc.end_col
    return node


class PyEmitter:
    def __init__(self, fn: Function):
        self.fn = fn
        self.consts: Dict[str, object] = {}
        self.default = Loc(fn.line, 0, fn.line, 0)

    def sfx(self, field: int) -> str:
        return STORAGE[self.fn.fields[field].dtype].suffix

    def const(self, value, ty: T) -> ast.Name:
        name = f"_p_c{len(self.consts)}"
        self.consts[name] = rt.const(value, ty)
        return _name(name)

    def field(self, i: int) -> ast.Attribute:
        return ast.Attribute(value=_name(self.fn.self_name), attr=self.fn.attrs[i], ctx=ast.Load())

    def convert(self, node, src, dst):
        return node if src == dst else _call(f"_p_cv_{src.name}_{dst.name}", node)

    # -- expressions -----------------------------------------------------------------------------
    def expr(self, e: Expr):
        node = self._expr(e)
        return _locate(node, e.loc) if e.loc is not None else node

    def _expr(self, e: Expr):
        x = self.expr
        if isinstance(e, Const):
            return self.const(e.value, e.ty)
        if isinstance(e, Local):
            return _name("_p_" + e.name if e.temp else e.name)
        if isinstance(e, NumWorkers):
            return _name("_p_nw")
        if isinstance(e, FieldRef):
            return self.field(e.field)
        if isinstance(e, ScalarField):
            return _call(f"_p_get_{self.sfx(e.field)}", self.field(e.field))
        if isinstance(e, Load):
            kind = "lds" if e.view.ty.kind is VK.SCALARS else "ld"
            if e.site is None:
                item = _subscript(x(e.view), x(e.index))
                if kind == "lds":
                    item = _subscript(item, ast.Constant(0))
                return _call(f"_p_val_{self.sfx(e.view.ty.field)}", item)
            return _call(f"_p_{kind}_{self.sfx(e.view.ty.field)}", x(e.view), x(e.index), ast.Constant(e.site.id))
        if isinstance(e, RowAt):
            if e.site is None:
                return _subscript(x(e.view), x(e.index))
            return _call("_p_row", x(e.view), x(e.index), ast.Constant(e.site.id))
        if isinstance(e, Len):
            return _call("_p_len", x(e.view))
        if isinstance(e, Unary):
            return ast.UnaryOp(op=ast.USub() if e.op == "neg" else ast.Invert(), operand=x(e.operand))
        if isinstance(e, Not):
            return _call("_p_not", x(e.operand))
        if isinstance(e, Binary):
            a, b = x(e.left), x(e.right)
            if e.ty is T.F32 and e.op in ("add", "sub", "mul", "div"):
                return _call(f"_p_f{e.op}", a, b)
            if e.op in _BINOP:
                return ast.BinOp(left=a, op=_BINOP[e.op](), right=b)
            if e.op in ("floordiv", "mod"):
                name = ("_p_ffloordiv" if e.op == "floordiv" else "_p_fmodpy") if e.ty is T.F32 else f"_p_{e.op}"
                return _call(name, a, b)
            if e.op == "pow":
                return _call("_p_m_pow" if e.ty is T.F32 else "_p_ipow", a, b)
            return _call("_p_lshift" if e.op == "lshift" else "_p_rshift", a, b)
        if isinstance(e, Compare):
            return ast.Compare(left=x(e.left), ops=[_CMPOP[e.op]()], comparators=[x(e.right)])
        if isinstance(e, BoolOp):
            return ast.BoolOp(op=ast.And() if e.op == "and" else ast.Or(), values=[x(e.left), x(e.right)])
        if isinstance(e, IfExp):
            return ast.IfExp(test=x(e.test), body=x(e.body), orelse=x(e.orelse))
        if isinstance(e, Cast):
            return self.convert(x(e.operand), e.operand.ty, e.ty)
        if isinstance(e, Intrinsic):
            args = [x(a) for a in e.args]
            prefix = "_p_m_" if e.name in rt.MATH else "_p_"
            return _call(prefix + e.name, *args)
        if isinstance(e, Let):
            return ast.NamedExpr(target=_name("_p_" + e.target.name, True), value=x(e.value))
        if isinstance(e, Tick):
            bump = ast.NamedExpr(target=_name("_p_cyc", True),
                                 value=ast.BinOp(left=_name("_p_cyc"), op=ast.Add(), right=ast.Constant(e.cycles)))
            return ast.Subscript(value=ast.Tuple(elts=[bump, x(e.value)], ctx=ast.Load()), slice=ast.Constant(1),
                                 ctx=ast.Load())
        raise TypeError(f"cannot emit {type(e).__name__}")  # pragma: no cover

    # -- statements ------------------------------------------------------------------------------
    def block(self, stmts) -> List[ast.stmt]:
        out = []
        for s in stmts:
            out.extend(self.stmt(s))
        return out or [ast.Pass()]

    def tick(self, cycles: int):
        return ast.AugAssign(target=_name("_p_cyc", True), op=ast.Add(), value=ast.Constant(cycles))

    def stmt(self, s) -> List[ast.stmt]:
        loc = s.loc or self.default
        return [_locate(n, loc) for n in self._stmt(s)]

    def _stmt(self, s) -> List[ast.stmt]:
        x = self.expr
        if isinstance(s, TickStmt):
            return [self.tick(s.cycles)]
        if isinstance(s, Assign):
            return [ast.Assign(targets=[self.target(s.target)], value=x(s.value))]
        if isinstance(s, Store):
            sfx = self.sfx(s.field)
            if s.index is None:
                return [ast.Expr(_call(f"_p_put_{sfx}", x(s.value), self.field(s.field)))]
            kind = "sts" if s.view.ty.kind is VK.SCALARS else "st"
            if s.site is None:
                return [ast.Expr(_call(f"_p_u{kind}_{sfx}", x(s.value), x(s.view), x(s.index)))]
            return [ast.Expr(_call(f"_p_{kind}_{sfx}", x(s.value), x(s.view), x(s.index),
                                   ast.Constant(s.site.id)))]
        if isinstance(s, If):
            return [ast.If(test=x(s.test), body=self.block(s.body), orelse=self.block(s.orelse) if s.orelse else [])]
        if isinstance(s, While):
            body = [self.tick(s.tick)] if s.tick else []
            if not (isinstance(s.test, Const) and s.test.value):
                body.append(ast.If(test=ast.UnaryOp(op=ast.Not(), operand=x(s.test)), body=[ast.Break()], orelse=[]))
            body.extend(self.block(s.body))
            return [ast.While(test=ast.Constant(True), body=body, orelse=[])]
        if isinstance(s, ForRange):
            rt_ty = s.start.ty
            k = "_p_" + s.counter
            body = [ast.Assign(targets=[self.target(s.var)],
                               value=self.convert(_call(f"_p_{rt_ty.name}", _name(k)), rt_ty, s.var.ty))]
            body.extend(self.block(s.body))
            it = _call("_p_range", x(s.start), x(s.stop), x(s.step))
            return [ast.For(target=_name(k, True), iter=it, body=body, orelse=[])]
        if isinstance(s, ForEach):
            return [self.for_each(s)]
        if isinstance(s, Break):
            return [ast.Break()]
        if isinstance(s, Continue):
            return [ast.Continue()]
        if isinstance(s, Return):
            ok = ast.Constant(True) if s.value is None else _call("_p_bool", x(s.value))
            return [ast.Return(value=ast.Tuple(elts=[ok, _name("_p_cyc")], ctx=ast.Load()))]
        if isinstance(s, Print):
            return [self.print_stmt(s)]
        if isinstance(s, Breakpoint):
            return [ast.Expr(_call("_p_breakpoint"))]
        raise TypeError(f"cannot emit {type(s).__name__}")  # pragma: no cover

    def target(self, local: Local) -> ast.Name:
        return _name("_p_" + local.name if local.temp else local.name, True)

    def for_each(self, s: ForEach) -> ast.For:
        k, item = "_p_" + s.counter, "_p_e" + s.counter[1:]
        vt = s.view.ty
        if vt.kind is VK.ROWS:
            value = _name(item)
        else:
            elem_ty = STORAGE[self.fn.fields[vt.field].dtype].value
            raw = ast.Subscript(value=_name(item), slice=ast.Constant(0), ctx=ast.Load()) \
                if vt.kind is VK.SCALARS else _name(item)
            value = self.convert(_call(f"_p_val_{self.sfx(vt.field)}", raw), elem_ty, s.var.ty)
        body = [ast.Assign(targets=[self.target(s.var)], value=value)]
        if s.index is not None:
            body.append(ast.Assign(targets=[self.target(s.index)],
                                   value=self.convert(_call("_p_I32", _name(k)), T.I32, s.index.ty)))
        body.extend(self.block(s.body))
        target = ast.Tuple(elts=[_name(k, True), _name(item, True)], ctx=ast.Store())
        return ast.For(target=target, iter=_call("_p_enumerate", self.expr(s.view)), body=body, orelse=[])

    def print_stmt(self, s: Print) -> ast.Expr:
        args = []
        for arg in s.items:
            parts = []
            for item in arg:
                if item.value is None:
                    parts.append(ast.Constant(item.text or ""))
                elif item.spec:
                    parts.append(_call(f"_p_fmt_{item.value.ty.name}", self.expr(item.value), ast.Constant(item.spec)))
                else:
                    parts.append(_call(f"_p_str_{item.value.ty.name}", self.expr(item.value)))
            args.append(parts[0] if len(parts) == 1 else _call("_p_cat", *parts) if parts else ast.Constant(""))
        keywords = [ast.keyword(arg="sep", value=ast.Constant(s.sep)),
                    ast.keyword(arg="end", value=ast.Constant(s.end))]
        return ast.Expr(ast.Call(func=_name("_p_print"), args=args, keywords=keywords))

    # -- the function ----------------------------------------------------------------------------
    def module(self) -> ast.Module:
        fn = self.fn
        start = Loc(fn.line, 4, fn.line, 4)
        worker = fn.worker_name or "_p_worker"
        prologue = [ast.Assign(targets=[_name("_p_cyc", True)], value=ast.Constant(0)),
                    ast.Assign(targets=[_name("_p_nw", True)], value=_call("_p_I32", _name("_p_nw")))]
        if fn.worker_name is not None:
            prologue.append(ast.Assign(targets=[_name(worker, True)],
                                       value=self.convert(_call("_p_I32", _name(worker)), T.I32,
                                                          fn.locals[fn.worker_name])))
        prologue = [_locate(p, start) for p in prologue]
        body = prologue + self.block(fn.body)
        # The implicit return shares the last statement's line: stepping past the end in pdb
        # shows no phantom line.
        last = next((st.loc for st in reversed(fn.body) if st.loc is not None), start)
        body.append(_locate(ast.Return(value=ast.Tuple(elts=[ast.Constant(True), _name("_p_cyc")],
                                                        ctx=ast.Load())), last))
        args = ast.arguments(posonlyargs=[], args=[ast.arg(arg=fn.self_name), ast.arg(arg=worker),
                                                   ast.arg(arg="_p_nw")],
                             vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])
        func = ast.FunctionDef(name="compute", args=args, body=body, decorator_list=[], returns=None)
        if "type_params" in ast.FunctionDef._fields:
            func.type_params = []
        _locate(func, Loc(fn.line, 0, fn.line, 0))
        module = ast.Module(body=[func], type_ignores=[])
        return ast.fix_missing_locations(module)


def interpreted_function(fn: Function, user_globals: dict):
    """Compile ``fn`` to a Python function f(self, worker, num_workers) -> (ok, cycles)."""
    emitter = PyEmitter(fn)
    module = emitter.module()
    code = compile(module, fn.filename, "exec")
    namespace = dict(user_globals)
    namespace.update(HELPERS)
    namespace.update(emitter.consts)
    exec(code, namespace)  # noqa: S102 - code generated from the user's own compute
    return namespace["compute"]


# -- running --------------------------------------------------------------------------------------
class _Program:
    def __init__(self, vertex_type):
        from .python_compile import translation_of
        cls = vertex_type.python_class
        if cls is None:
            raise TypeError(f"vertex type '{vertex_type.name}' is not a Python vertex: it cannot run interpreted")
        t = translation_of(cls)
        self.cls = cls
        self.fn = t.function
        self.attrs = t.attrs
        self.func = interpreted_function(t.function, _compute_globals(cls))


def _compute_globals(cls) -> dict:
    for klass in cls.__mro__:
        if "compute" in klass.__dict__:
            return klass.__dict__["compute"].__globals__
    return {}  # pragma: no cover


_programs: Dict[Tuple[str, int], _Program] = {}
_lock = threading.Lock()


def _program(vertex_type) -> _Program:
    key = (vertex_type.symbol, id(vertex_type.python_class))
    p = _programs.get(key)
    if p is None:
        p = _Program(vertex_type)
        with _lock:
            _programs[key] = p
    return p


def index_error_message(name: str, field: str, index: int, size: int, line: int, filename: str = "") -> str:
    """The message of an out-of-range index in a vertex (both modes)."""
    valid = f"valid indices are 0 to {size - 1}" if size > 0 else "it is empty"
    where = f" at line {line}" + (f" of {filename}" if filename else "") if line > 0 else ""
    hint = "; negative indices do not wrap around in vertex code" if index < 0 else ""
    return (f"vertex type '{name}': index {index} is out of range for field '{field}' of size {size} "
            f"({valid}){where}{hint}")


def run_interpreted(vertex_type, values, worker: int = 0,
                    num_workers: int = HARDWARE_WORKER_CONTEXTS) -> Tuple[bool, int]:
    """Run one call of the vertex's compute as Python (debug mode) on ``values`` (one
    per field, as in abi.py; used in place). Runs worker ``worker`` only (the engine
    calls a MultiVertex once per worker). Returns (ok, cycles): ok False when compute
    returned False. An index out of range raises popsim.IndexError."""
    p = _program(vertex_type)
    if len(values) != len(p.attrs):
        raise ValueError(f"vertex type '{vertex_type.name}' has {len(p.attrs)} fields, {len(values)} values given")
    obj = object.__new__(p.cls)
    obj.__dict__.update(zip(p.attrs, values))
    obj.__dict__["_p_num_workers"] = num_workers
    try:
        with np.errstate(all="ignore"):
            ok, cycles = p.func(obj, worker, num_workers)
    except _IndexFault as f:
        site = p.fn.sites[f.site]
        spec = p.fn.fields[site.field]
        error = PopsimIndexError(index_error_message(vertex_type.name, spec.name, f.index, f.size, site.line,
                                                     p.fn.filename))
        # Keep the traceback through the user's compute: pdb post-mortem lands on the line.
        raise error.with_traceback(f.__traceback__) from None
    return bool(ok), int(cycles)


def run_all_workers(vertex_type, values, num_workers: int = HARDWARE_WORKER_CONTEXTS,
                    worker: int = 0) -> Tuple[bool, int]:
    """Like abi.run_compiled: a MultiVertex runs on every worker in turn (cycles
    summed), a Vertex once as ``worker``. Stops at the first failing call."""
    workers = range(num_workers) if vertex_type.multi else [worker]
    total, ok = 0, True
    for w in workers:
        ok, cycles = run_interpreted(vertex_type, values, w, num_workers)
        total += cycles
        if not ok:
            break
    return ok, total
