"""Typing rules for expressions in a vertex's ``compute``: Python AST -> typed IR.

Every expression gets a static C type (typed_ir.T) or a view type; conversions C would
do implicitly become explicit Cast nodes, so both back ends convert at the same points.
Calls are typecheck_calls.py's, statements typecheck_stmt.py's.
"""
from __future__ import annotations

import ast
import builtins
import operator
from typing import Dict, List, Optional, cast

import numpy as np

from .. import types as _types
from ..errors import closest, did_you_mean
from . import pyruntime
from .fields import Direction, FieldKind
from .inline import scope_of
from .typecheck_state import Rules
from .typed_ir import (STORAGE, VK, BoolOp, Binary, Cast, Compare, Const, Expr, FieldRef, IfExp, Intrinsic, Let,
                       Load, Local, Loc, Not, RowAt, ScalarField, Site, T, Type, Unary, ViewT, arith_type)

_BINOPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div", ast.FloorDiv: "floordiv",
           ast.Mod: "mod", ast.Pow: "pow", ast.BitAnd: "and", ast.BitOr: "or", ast.BitXor: "xor",
           ast.LShift: "lshift", ast.RShift: "rshift"}
_CMPOPS = {ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge", ast.Eq: "eq", ast.NotEq: "ne"}
_FOLDABLE = {ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
             ast.Eq: operator.eq, ast.NotEq: operator.ne}
_SYMBOL = {"add": "+", "sub": "-", "mul": "*", "div": "/", "floordiv": "//", "mod": "%", "pow": "**", "and": "&",
           "or": "|", "xor": "^", "lshift": "<<", "rshift": ">>"}

_NUMPY_SCALARS = {np.float32: T.F32, np.float64: T.F32, np.float16: T.F32, np.int32: T.I32, np.int16: T.I32,
                  np.int8: T.I32, np.uint8: T.I32, np.uint16: T.I32, np.uint32: T.U32, np.int64: T.I64,
                  np.uint64: T.U64, np.bool_: T.BOOL}


def constant_type(value):
    """The type of a Python or numpy number used as a constant, or None. Python ints
    are int32 when they fit, else int64, else uint64."""
    if isinstance(value, (bool, np.bool_)):
        return T.BOOL
    if isinstance(value, np.generic):
        return _NUMPY_SCALARS.get(type(value))
    if isinstance(value, int):
        if -2 ** 31 <= value < 2 ** 31:
            return T.I32
        if -2 ** 63 <= value < 2 ** 63:
            return T.I64
        return T.U64 if 0 <= value < 2 ** 64 else None
    if isinstance(value, float):
        return T.F32
    return None


def make_const(value, ty: T, loc) -> Const:
    """A constant of type ``ty`` (its value converted the way the runtime converts)."""
    return Const(ty, loc, pyruntime.const(value, ty).item())


loc_of = Loc.of


class Expressions(Rules):
    """Builds typed expressions."""

    # -- expressions -------------------------------------------------------------------------
    def conv(self, e: Expr, ty: Type, node=None, what: str = "") -> Expr:
        """``e`` converted to ``ty`` as C's implicit conversions do (a view converts to nothing else)."""
        if e.ty == ty:
            return e
        if isinstance(e.ty, ViewT) or isinstance(ty, ViewT):
            raise self.c.err(node, f"{self.c.describe(e)} cannot be used as a number{what}",
                             "index a vector field (self.a[i]) to get one element")
        if isinstance(e, Const):
            value = pyruntime.convert(pyruntime.const(e.value, e.ty), e.ty, ty)
            return Const(ty, e.loc, value.item())
        return Cast(ty, e.loc, e)

    @staticmethod
    def constant(value, ty: T, loc) -> Const:
        return make_const(value, ty, loc)

    def numeric(self, node) -> Expr:
        e = self.expr(node)
        if isinstance(e.ty, ViewT):
            raise self.c.err(node, f"{self.c.describe(e)} is not a number",
                             "index it (self.a[i]) or loop over it (for x in self.a)")
        return e

    def integer(self, node, what: str) -> Expr:
        e = self.numeric(node)
        if e.ty is T.F32:
            raise self.c.err(node, f"{what} must be an integer, found a float", "convert it with int(...)")
        return self.conv(e, T.I32) if e.ty is T.BOOL else e

    def truth(self, e: Expr, node) -> Expr:
        if isinstance(e.ty, ViewT):
            raise self.c.err(node, f"{self.c.describe(e)} cannot be used as a condition", "test len(...) > 0 instead")
        if e.ty is T.BOOL:
            return e
        if isinstance(e, Const):
            return Const(T.BOOL, e.loc, bool(e.value))
        return Compare(T.BOOL, e.loc, "ne", e, Const(e.ty, e.loc, 0.0 if e.ty is T.F32 else 0))

    def expr(self, node) -> Expr:
        method = getattr(self, "e_" + type(node).__name__, None)
        if method is None:
            raise self.unsupported(node)
        return method(node)

    def e_Constant(self, node):
        v = node.value
        if isinstance(v, str):
            raise self.c.err(node, "strings can only be printed in vertex code", "use print('text', value)")
        if v is None or v is Ellipsis or isinstance(v, (bytes, complex)):
            raise self.c.err(node, f"{v!r} cannot be used as a value in vertex code")
        ty = constant_type(v)
        if ty is None:
            raise self.c.err(node, f"the integer {v} does not fit in 64 bits")
        return make_const(v, ty, loc_of(node))

    def e_Name(self, node):
        if self.c.is_local(node.id):
            return Local(self.c.local_type(node.id, node), loc_of(node), node.id)
        if node.id == self.c.self_name:
            raise self.c.err(node, f"'{node.id}' can only be used to reach fields ({node.id}.field)")
        return self.global_value(node, self.resolve(node))

    def e_Attribute(self, node):
        if isinstance(node.value, ast.Name) and node.value.id == self.c.self_name \
                and not self.c.is_local(node.value.id):
            return self.field_value(node)
        if self.refers_to_data(node.value):
            raise self.c.err(node, f"'{ast.unparse(node.value)}' has no attribute '{node.attr}' in vertex code",
                             "use len(...) for sizes and indexing for elements")
        return self.global_value(node, self.resolve(node))

    def global_value(self, node, value):
        ty = constant_type(value)
        if ty is None:
            kind = type(value).__name__
            raise self.c.err(node, f"'{ast.unparse(node)}' is a {kind}: only numbers (int, float, bool) from outside "
                             "compute can be used in vertex code",
                             "pass data through a field, or call it" if callable(value) else None)
        return make_const(value, ty, loc_of(node))

    def resolve(self, node):
        """The object a global name or dotted name refers to."""
        if isinstance(node, ast.Name):
            name = node.id
            scope = scope_of(node, self.c.func)  # an inlined helper's names are its own module's
            code = scope.__code__
            if name in code.co_freevars and scope.__closure__:
                try:
                    return scope.__closure__[code.co_freevars.index(name)].cell_contents
                except ValueError:
                    pass
            if name in scope.__globals__:
                return scope.__globals__[name]
            if hasattr(builtins, name):
                return getattr(builtins, name)
            globals_ = [g for g in scope.__globals__ if not g.startswith("__")]
            best = closest(name, list(self.c.local_names) + globals_)
            hint = f": did you mean '{best}'?" if best else ""
            raise self.c.err(node, f"name '{name}' is not defined{hint}",
                             "assign a local before reading it, or define the constant at module level")
        if isinstance(node, ast.Attribute):
            base = self.resolve(node.value)
            try:
                return getattr(base, node.attr)
            except AttributeError:
                raise self.c.err(node, f"'{ast.unparse(node.value)}' has no attribute '{node.attr}'") from None
        raise self.unsupported(node)

    def field_index(self, node: ast.Attribute) -> int:
        i = self.c.field_by_attr.get(node.attr)
        if i is None:
            raise self.c.err(node, f"{self.c.vertex_name} has no field '{node.attr}': "
                             f"{did_you_mean(node.attr, self.c.attrs)}",
                             "declare it as a class annotation, e.g. x: Input[Vector[float]]")
        return i

    def field_value(self, node: ast.Attribute) -> Expr:
        """self.x in an expression: a scalar field's value or a vector / list field."""
        if node.attr not in self.c.field_by_attr:
            cval = getattr(self.c.cls, node.attr, None)
            if node.attr == "num_workers":
                raise self.c.err(node, "num_workers is a method", "call it: self.num_workers()")
            if cval is not None and constant_type(cval) is not None and not callable(cval):
                return make_const(cval, constant_type(cval), loc_of(node))
        i = self.field_index(node)
        spec = self.c.fields[i]
        if spec.kind in (FieldKind.SCALAR_EDGE, FieldKind.STATE):
            self.check_readable(i, node)
            return ScalarField(STORAGE[spec.dtype].value, loc_of(node), i)
        return FieldRef(self.view_type(i), loc_of(node), i)

    def view_type(self, i: int) -> ViewT:
        spec = self.c.fields[i]
        if spec.kind in (FieldKind.VECTOR_EDGE, FieldKind.STATE_VECTOR, FieldKind.SCALAR_EDGE, FieldKind.STATE):
            return ViewT(i, VK.VECTOR)
        if spec.kind is FieldKind.EDGE_VECTOR and spec.element_kind is FieldKind.SCALAR_EDGE:
            return ViewT(i, VK.SCALARS)
        return ViewT(i, VK.ROWS)

    def check_readable(self, field: int, node):
        spec = self.c.fields[field]
        if spec.direction is Direction.OUTPUT:
            raise self.c.err(node, f"field '{spec.name}' is an Output: reading it gives undefined values",
                             "keep the value in a local, or declare the field InOut[...] to read and write it")

    def subject(self, node) -> Expr:
        """The view a subscript indexes (a scalar field counts as a 1-element vector)."""
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                and node.value.id == self.c.self_name and not self.c.is_local(node.value.id):
            i = self.field_index(node)
            return FieldRef(self.view_type(i), loc_of(node), i)
        e = self.expr(node)
        if not isinstance(e.ty, ViewT):
            raise self.c.err(node, f"{self.c.describe(e)} cannot be indexed",
                             "only fields and their rows can be indexed")
        return e

    def index_of(self, node) -> Expr:
        sl = node.slice
        if isinstance(sl, ast.Slice):
            raise self.c.err(sl, "slicing is not supported in vertex code", "index single elements in a loop")
        if isinstance(sl, ast.Tuple):
            raise self.c.err(sl, "multi-dimensional indexing a[i, j] is not supported", "write a[i][j]")
        idx = self.integer(sl, "an index")
        if isinstance(idx, Const) and idx.value < 0:
            raise self.c.err(sl, "negative indices do not wrap around in vertex code",
                             "write the position explicitly, e.g. self.a[len(self.a) - 1]")
        return idx

    def e_Subscript(self, node):
        view = self.subject(node.value)
        idx = self.index_of(node)
        return self.element(view, idx, node)

    @staticmethod
    def view_key(view: Expr):
        """What identifies a view for bounds proofs: a whole field or a (non-temp) local."""
        if isinstance(view, FieldRef):
            return ("field", view.field)
        if isinstance(view, Local) and not view.temp:
            return ("local", view.name)
        if isinstance(view, RowAt) and isinstance(view.view, FieldRef) and isinstance(view.index, Local) \
                and not view.index.temp:
            return ("row", view.view.field, view.index.name)
        return None

    def checked_site(self, view: Expr, idx: Expr, node) -> Optional[Site]:
        """A site for a bounds-checked access, or None when ``idx`` is provably in range:
        the unmodified variable of an enclosing ``for i in range(len(view))``."""
        key = self.view_key(view)
        if key is not None and isinstance(idx, Local) and not idx.temp and (idx.name, key) in self.c.proven:
            return None
        return self.c.new_site(cast(ViewT, view.ty).field, node)

    def element(self, view: Expr, idx: Expr, node) -> Expr:
        vt = cast(ViewT, view.ty)  # (the callers index views)
        if vt.kind is VK.ROWS:
            return RowAt(ViewT(vt.field, VK.ROW), loc_of(node), view, idx, self.checked_site(view, idx, node))
        self.check_readable(vt.field, node)
        return Load(STORAGE[self.c.fields[vt.field].dtype].value, loc_of(node), view, idx,
                    self.checked_site(view, idx, node))

    def e_BinOp(self, node):
        op = _BINOPS.get(type(node.op))
        if op is None:
            raise self.c.err(node, "the matrix product operator @ is not supported in vertex code",
                             "write the loops")
        left, right = self.numeric(node.left), self.numeric(node.right)
        return self.binary(op, left, right, node)

    def binary(self, op: str, left: Expr, right: Expr, node) -> Expr:
        """``left op right`` of two numbers (numeric() checked them)."""
        loc = loc_of(node)
        if op == "div":
            return Binary(T.F32, loc, op, self.conv(left, T.F32), self.conv(right, T.F32))
        if op in ("and", "or", "xor"):
            if T.F32 in (left.ty, right.ty):
                raise self.c.err(node, f"the bitwise operator {_SYMBOL[op]} needs integers or bools, found a float",
                                 "convert with int(...), or use 'and' / 'or' for conditions")
            if left.ty is T.BOOL and right.ty is T.BOOL:
                return Binary(T.BOOL, loc, op, left, right)
        if op in ("lshift", "rshift"):
            if T.F32 in (left.ty, right.ty):
                raise self.c.err(node, f"the shift operator {_SYMBOL[op]} needs integers, found a float",
                                 "convert with int(...)")
            ty = T.I32 if left.ty is T.BOOL else cast(T, left.ty)
            return Binary(ty, loc, op, self.conv(left, ty), self.conv(right, T.I64))
        ty = arith_type(cast(T, left.ty), cast(T, right.ty))
        return Binary(ty, loc, op, self.conv(left, ty), self.conv(right, ty))

    def e_UnaryOp(self, node):
        if isinstance(node.op, ast.Not):
            operand = self.truth(self.expr(node.operand), node.operand)
            if isinstance(operand, Const):
                return Const(T.BOOL, loc_of(node), not operand.value)
            return Not(T.BOOL, loc_of(node), operand)
        if isinstance(node.operand, ast.Constant) and isinstance(node.operand.value, (int, float)) \
                and not isinstance(node.operand.value, bool) and isinstance(node.op, (ast.USub, ast.UAdd)):
            value = -node.operand.value if isinstance(node.op, ast.USub) else node.operand.value
            ty = constant_type(value)
            if ty is not None:
                return make_const(value, ty, loc_of(node))
        e = self.numeric(node.operand)
        ty = T.I32 if e.ty is T.BOOL else e.ty
        e = self.conv(e, ty)
        if isinstance(node.op, ast.UAdd):
            return e
        if isinstance(node.op, ast.Invert):
            if ty is T.F32:
                raise self.c.err(node, "~ needs an integer, found a float", "convert with int(...)")
            return Unary(ty, loc_of(node), "invert", e)
        return Unary(ty, loc_of(node), "neg", e)

    def e_BoolOp(self, node):
        op = "and" if isinstance(node.op, ast.And) else "or"
        result = self.truth(self.expr(node.values[0]), node.values[0])
        for v in node.values[1:]:
            result = BoolOp(T.BOOL, loc_of(node), op, result, self.truth(self.expr(v), v))
        return result

    def e_Compare(self, node):
        folded = self.folded_compare(node)
        if folded is not None:
            return folded
        left = self.numeric(node.left)
        result = None
        n = len(node.ops)
        for k, (op, right_node) in enumerate(zip(node.ops, node.comparators)):
            if isinstance(op, (ast.In, ast.NotIn)):
                raise self.c.err(node, "'in' is not supported in vertex code", "loop over the field and compare")
            if isinstance(op, (ast.Is, ast.IsNot)):
                raise self.c.err(node, "'is' is not supported in vertex code", "compare values with == or !=")
            right = self.numeric(right_node)
            if k < n - 1 and not isinstance(right, (Const, Local)):
                temp = self.c.new_temp(right.ty, loc_of(right_node))
                cmp = self.compare(_CMPOPS[type(op)], left, Let(right.ty, right.loc, temp, right), node)
                right = temp
            else:
                cmp = self.compare(_CMPOPS[type(op)], left, right, node)
            result = cmp if result is None else BoolOp(T.BOOL, loc_of(node), "and", result, cmp)
            left = right
        return result

    def folded_compare(self, node) -> Optional[Const]:
        """A comparison of constants (a template's parameters, module constants) is worked
        out here, so that ``if`` can skip the branch it rules out (s_If)."""
        operands = [node.left] + list(node.comparators)
        if not all(isinstance(o, ast.Constant) or (isinstance(o, ast.Name) and not self.c.is_local(o.id)
                                                   and o.id != self.c.self_name) for o in operands):
            return None
        values = [self.expr(o) for o in operands]
        if not all(isinstance(v, Const) for v in values) or \
                not all(type(op) in _FOLDABLE for op in node.ops):
            return None
        consts = cast(List[Const], values)
        result = all(_FOLDABLE[type(op)](a.value, b.value) for op, a, b in zip(node.ops, consts, consts[1:]))
        return Const(T.BOOL, loc_of(node), result)

    def compare(self, op: str, left: Expr, right: Expr, node) -> Expr:
        """An exact comparison: ints of mixed signedness compare by value (unlike C);
        int vs float converts the int to float (like C)."""
        loc = loc_of(node)
        a, b = cast(T, left.ty), cast(T, right.ty)  # numbers (numeric() checked them)
        if T.F32 in (a, b):
            ty = T.F32
        elif a is T.BOOL and b is T.BOOL:
            ty = T.BOOL
        else:
            a = T.I32 if a is T.BOOL else a
            b = T.I32 if b is T.BOOL else b
            if a.is_signed == b.is_signed:
                ty = arith_type(a, b)
            elif T.U64 in (a, b):
                if a is T.U64:
                    three = Intrinsic(T.I32, loc, "cmp3_ui", [left, self.conv(right, T.I64)])
                else:
                    three = Intrinsic(T.I32, loc, "cmp3_iu", [self.conv(left, T.I64), right])
                return Compare(T.BOOL, loc, op, three, Const(T.I32, loc, 0))
            else:
                ty = T.I64
        return Compare(T.BOOL, loc, op, self.conv(left, ty), self.conv(right, ty))

    def e_IfExp(self, node):
        test = self.truth(self.expr(node.test), node.test)
        body, orelse = self.numeric(node.body), self.numeric(node.orelse)
        ty = T.BOOL if (body.ty is T.BOOL and orelse.ty is T.BOOL) else arith_type(body.ty, orelse.ty)
        return IfExp(ty, loc_of(node), test, self.conv(body, ty), self.conv(orelse, ty))

    def e_Call(self, node):
        return self.calls.call(node)

    def refers_to_data(self, node) -> bool:
        """Whether ``node`` names vertex data (a local, a field, a row) rather than a module."""
        while isinstance(node, (ast.Attribute, ast.Subscript)):
            node = node.value
        return isinstance(node, ast.Name) and (self.c.is_local(node.id) or node.id == self.c.self_name)

    def unsupported(self, node):
        name = type(node).__name__
        msg, fix = UNSUPPORTED.get(name, (None, None))
        if msg is None:
            try:
                text = ast.unparse(node)
            except Exception:  # noqa: BLE001 - a node ast cannot print is still named by its type
                text = name
            msg = f"'{text[:40]}' ({name}) is not supported in vertex codelets"
        return self.c.err(node, msg, fix)

    def element_type(self, t) -> Optional[T]:
        """A local's annotation (float, int, bool, popsim.UNSIGNED_INT...) as a type; None
        for anything else."""
        try:
            pt = _types.as_type(t)
        except TypeError:
            pt = None
        table: Dict[Optional[_types.Type], T] = {
            _types.FLOAT: T.F32, _types.INT: T.I32, _types.UNSIGNED_INT: T.U32, _types.LONGLONG: T.I64,
            _types.UNSIGNED_LONGLONG: T.U64, _types.BOOL: T.BOOL}
        return table.get(pt)


_COMPREHENSION = ("comprehensions are not supported in vertex codelets (vertices cannot create lists)",
                  "write a for loop that stores into an Output field: for i in range(len(self.out)): "
                  "self.out[i] = ...")
_CONTAINER = ("lists, tuples, sets and dicts cannot be created in vertex code (vertices have no heap)",
              "keep values in scalar locals or in a field such as Output[Vector[float]]")
UNSUPPORTED = {
    "ListComp": _COMPREHENSION, "SetComp": _COMPREHENSION, "DictComp": _COMPREHENSION,
    "GeneratorExp": _COMPREHENSION, "List": _CONTAINER, "Tuple": _CONTAINER, "Set": _CONTAINER,
    "Dict": _CONTAINER,
    "Lambda": ("lambda is not supported in vertex codelets", "inline the expression"),
    "NamedExpr": ("assignment expressions (:=) are not supported in vertex codelets",
                  "assign on a separate line"),
    "JoinedStr": ("f-strings can only be printed in vertex code", "use print(f'...')"),
    "Starred": ("*args are not supported in vertex codelets", None),
    "Await": ("await is not supported in vertex codelets", None),
    "Yield": ("yield is not supported in vertex codelets", None),
    "YieldFrom": ("yield is not supported in vertex codelets", None),
    "Slice": ("slicing is not supported in vertex code", "index single elements in a loop"),
}
