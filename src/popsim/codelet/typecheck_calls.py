"""Type checking of calls in a vertex's ``compute``: the builtins and math functions
vertex code may call (resolved by identity, so ``from math import exp`` and ``import
numpy as np; np.float32(x)`` work too), and print() with its f-strings.
"""
from __future__ import annotations

import ast
import math
import pdb
import re
from typing import List

import numpy as np

from . import pyruntime
from .fields import FieldKind
from .typecheck_state import Rules
from .typed_ir import Intrinsic, Len, Loc, NumWorkers, Print, PrintItem, T, arith_type

_SPEC = re.compile(r"^[+ ]?0?\d*(\.\d+)?[feEgGd]$")

# Callables vertex code may call, by identity: -> (handler, argument).
KNOWN = {len: ("len", None), range: ("range", None), min: ("minmax", "min"), max: ("minmax", "max"),
         abs: ("abs", None), int: ("cast", T.I32), float: ("cast", T.F32), bool: ("cast", T.BOOL),
         round: ("round", None), print: ("print", None), breakpoint: ("breakpoint", None),
         pdb.set_trace: ("breakpoint", None), enumerate: ("enumerate", None),
         np.float32: ("cast", T.F32), np.int32: ("cast", T.I32), np.uint32: ("cast", T.U32),
         np.int64: ("cast", T.I64), np.uint64: ("cast", T.U64), np.bool_: ("cast", T.BOOL),
         math.floor: ("fround", "floor"), math.ceil: ("fround", "ceil"), math.trunc: ("fround", "trunc"),
         math.fabs: ("fabs", None), math.isnan: ("fclass", "isnan"), math.isinf: ("fclass", "isinf"),
         math.isfinite: ("fclass", "isfinite")}
for _n in pyruntime.UNARY_MATH:
    if hasattr(math, _n):
        KNOWN[getattr(math, _n)] = ("math1", _n)
for _n in pyruntime.BINARY_MATH:
    KNOWN[getattr(math, _n)] = ("math2", _n)

CALLABLE_NAMES = ("math.* (exp, log, sqrt, tanh, sin, cos, pow, floor, ceil, fabs, isnan...), min, max, abs, "
                  "round, int, float, bool, len, range, enumerate, print, breakpoint")


class Calls(Rules):
    """Typing rules for calls and print()."""

    def callee(self, node: ast.Call):
        f = node.func
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == self.c.self_name \
                and not self.c.is_local(f.value.id):
            if f.attr == "num_workers":
                return ("num_workers", None)
            if f.attr in self.c.field_by_attr:
                raise self.c.err(node, f"field '{f.attr}' cannot be called")
            raise self.c.err(node, f"calling methods (self.{f.attr}(...)) is not supported in vertex code",
                             "inline the code in compute")
        if isinstance(f, ast.Attribute) and self.exprs.refers_to_data(f.value):
            raise self.c.err(node, f"'{ast.unparse(f.value)}' has no methods in vertex code",
                             "write a loop over its elements, or use the functions vertex code can call")
        if isinstance(f, ast.Name) and self.c.is_local(f.id):
            raise self.c.err(node, f"'{f.id}' is a local variable, not a function")
        if not isinstance(f, (ast.Name, ast.Attribute)):
            raise self.exprs.unsupported(f)
        obj = self.exprs.resolve(f)
        try:
            known = KNOWN.get(obj)
        except TypeError:
            known = None
        if known is None:
            raise self.c.err(node, f"calling '{ast.unparse(f)}' is not supported in vertex code",
                             f"vertex code can call {CALLABLE_NAMES}; inline other functions")
        return known

    def call(self, node):
        """A call in an expression (print and breakpoint are statements: Statements.s_Expr)."""
        kind, arg = self.callee(node)
        if kind in ("print", "breakpoint"):
            raise self.c.err(node, f"{kind}() is a statement in vertex code, not a value",
                             f"call {kind}(...) on its own line")
        if kind in ("range", "enumerate"):
            raise self.c.err(node, f"{kind}() can only be used in a for statement",
                             f"write: for i in {kind}(...):")
        if node.keywords:
            raise self.c.err(node, f"keyword arguments are not supported in calls to {ast.unparse(node.func)}")
        if any(isinstance(a, ast.Starred) for a in node.args):
            raise self.c.err(node, "*args are not supported in vertex code")
        args = node.args
        loc = Loc.of(node)
        name = ast.unparse(node.func)
        if kind == "num_workers":
            self.nargs(node, 0, 0)
            return NumWorkers(T.I32, loc)
        if kind == "len":
            self.nargs(node, 1, 1)
            if isinstance(args[0], ast.Attribute) and isinstance(args[0].value, ast.Name) \
                    and args[0].value.id == self.c.self_name and args[0].attr in self.c.field_by_attr:
                i = self.c.field_by_attr[args[0].attr]
                if self.c.fields[i].kind in (FieldKind.SCALAR_EDGE, FieldKind.STATE):
                    raise self.c.err(node, f"field '{self.c.fields[i].name}' is a scalar: it has no len()")
            view = self.exprs.subject(args[0])
            return Len(T.I32, loc, view)
        if kind == "cast":
            self.nargs(node, 1, 1)
            if arg is T.F32 and isinstance(args[0], ast.Constant) and isinstance(args[0].value, str):
                text = args[0].value.strip().lower()
                try:
                    value = float(text)
                except ValueError:
                    raise self.c.err(node, f"float({args[0].value!r}) is not a number") from None
                return self.exprs.constant(value, T.F32, loc)
            e = self.exprs.numeric(args[0])
            return self.exprs.truth(e, args[0]) if arg is T.BOOL else self.exprs.conv(e, arg)
        if kind == "minmax":
            if len(args) < 2:
                raise self.c.err(node, f"{arg}() takes two or more numbers in vertex code",
                                 f"to find the {arg}imum of a vector, loop over it")
            values = [self.exprs.numeric(a) for a in args]
            ty = values[0].ty
            for v in values[1:]:
                ty = T.BOOL if ty is T.BOOL and v.ty is T.BOOL else arith_type(ty, v.ty)
            result = self.exprs.conv(values[0], ty)
            for v in values[1:]:
                result = Intrinsic(ty, loc, arg, [result, self.exprs.conv(v, ty)])
            return result
        if kind == "abs":
            self.nargs(node, 1, 1)
            e = self.exprs.numeric(args[0])
            if e.ty is T.F32:
                return Intrinsic(T.F32, loc, "fabs", [e])
            e = self.exprs.conv(e, T.I32) if e.ty is T.BOOL else e
            return Intrinsic(e.ty, loc, "iabs", [e]) if e.ty.is_signed else e
        if kind == "round":
            if len(args) != 1:
                raise self.c.err(node, "round() with a number of digits is not supported in vertex code",
                                 "scale, round and unscale, e.g. round(x * 100) / 100")
            e = self.exprs.numeric(args[0])
            if e.ty is not T.F32:
                return self.exprs.conv(e, T.I32)
            return self.exprs.conv(Intrinsic(T.F32, loc, "rint", [e]), T.I32)
        if kind == "fround":
            self.nargs(node, 1, 1)
            e = self.exprs.numeric(args[0])
            if e.ty is not T.F32:
                return self.exprs.conv(e, T.I32)
            return self.exprs.conv(Intrinsic(T.F32, loc, arg, [e]), T.I32)
        if kind == "fabs":
            self.nargs(node, 1, 1)
            return Intrinsic(T.F32, loc, "fabs", [self.exprs.conv(self.exprs.numeric(args[0]), T.F32)])
        if kind == "fclass":
            self.nargs(node, 1, 1)
            return Intrinsic(T.BOOL, loc, arg, [self.exprs.conv(self.exprs.numeric(args[0]), T.F32)])
        if kind == "math1":
            self.nargs(node, 1, 1)
            return Intrinsic(T.F32, loc, arg, [self.exprs.conv(self.exprs.numeric(args[0]), T.F32)])
        if kind == "math2":
            self.nargs(node, 2, 2)
            return Intrinsic(T.F32, loc, arg, [self.exprs.conv(self.exprs.numeric(a), T.F32) for a in args])
        raise self.c.err(node, f"calling '{name}' is not supported in vertex code")  # pragma: no cover

    def nargs(self, node, lo: int, hi: int):
        n = len(node.args)
        if not lo <= n <= hi:
            want = str(lo) if lo == hi else f"{lo} to {hi}"
            raise self.c.err(node, f"{ast.unparse(node.func)}() takes {want} argument{'s' if hi != 1 else ''}, "
                             f"found {n}")

    def print_stmt(self, node) -> Print:
        sep, end = " ", "\n"
        for kw in node.keywords:
            value = kw.value
            if kw.arg in ("sep", "end"):
                if isinstance(value, ast.Constant) and (isinstance(value.value, str) or value.value is None):
                    if value.value is not None:
                        sep, end = (value.value, end) if kw.arg == "sep" else (sep, value.value)
                    continue
                raise self.c.err(value, f"print's {kw.arg} must be a string constant in vertex code")
            if kw.arg == "flush" and isinstance(value, ast.Constant) and isinstance(value.value, bool):
                continue
            raise self.c.err(kw.value if kw.arg else node, f"print({kw.arg}=...) is not supported in vertex code",
                             "print writes to standard output")
        items = []
        for a in node.args:
            if isinstance(a, ast.Starred):
                raise self.c.err(a, "print(*...) is not supported in vertex code")
            if isinstance(a, ast.Constant) and isinstance(a.value, str):
                items.append([PrintItem(text=a.value)])
            elif isinstance(a, ast.JoinedStr):
                items.append(self.fstring(a))
            else:
                e = self.c.ex(self.exprs.numeric, a)
                items.append([PrintItem(value=e)] if e is not None else [])
        return Print(Loc.of(node), items, sep, end)

    def fstring(self, node) -> List[PrintItem]:
        parts = []
        for v in node.values:
            if isinstance(v, ast.Constant):
                parts.append(PrintItem(text=str(v.value)))
                continue
            if v.conversion not in (-1, ord("s")):
                raise self.c.err(v, "!r and !a conversions are not supported in vertex code", "write {x}")
            spec = ""
            if v.format_spec is not None:
                pieces = v.format_spec.values
                if not all(isinstance(p, ast.Constant) for p in pieces):
                    raise self.c.err(v, "computed format specs are not supported in vertex code")
                spec = "".join(str(p.value) for p in pieces)
            e = self.c.ex(self.exprs.numeric, v.value)
            if spec and e is not None:
                if not _SPEC.match(spec) or (spec.endswith("d") and e.ty is T.F32) or e.ty is T.BOOL:
                    raise self.c.err(v, f"format spec ':{spec}' is not supported for {self.c.describe(e)} in "
                                     "vertex code",
                                     "use [+ ][0][width][.precision] and one of f e g (floats) or d (integers)")
            parts.append(PrintItem(value=e, spec=spec))
        return parts
