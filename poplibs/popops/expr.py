"""popops expressions (PopLibs' popops/Expr.hpp): trees of nodes that ``popops.map`` turns
into one generated vertex per tile.

```python
from popsim.popops import expr as pe
e = pe._1 * 2 + pe.exp(pe._2)                 # Python numbers become pe.Const
e = pe.select(pe._1, pe.Const(0.0), pe._1 > 0)
e = pe.Cast(pe._1, popsim.INT) % 3
```

Nodes: ``PlaceHolder`` (``_1`` .. ``_20``: 1-based indices into map's tensor list),
``Const(value, dtype=None)``, ``Cast(expr, dtype)``, ``UnaryOp``, ``BinaryOp`` and
``TernaryOp`` (``select``, ``clamp``). Operators: ``+ - * / % ** == != < <= > >= & | ^ <<
>> ~``, unary ``-`` and ``abs()``. On BOOL operands ``& | ^ ~`` are the logical ops
(``logical_and``, ``logical_or``, ``neq``, ``logical_not``), as NumPy reads them; Python's
``and``/``or``/``not`` and chained comparisons cannot be overloaded and raise TypeError.
Every op of the element-wise table (elementwise_ops.py) is a function here by its
name (``pe.exp(e)``, ``pe.max(a, b)``, ``pe.logical_and(a, b)``...), with the table's
semantics, element types and costs. Type rules (expr_typing.py) are PopLibs': a
placeholder has its tensor's type, comparisons give BOOL, a constant without a type takes
the type of the operand it meets, operand types must agree (``Cast`` converts).
"""
import enum
import numbers
from typing import TYPE_CHECKING, Any, Optional

import numpy as np

import popsim

from ..poputil import PoplibsError
from .elementwise_ops import BINARY_OPS, OPS, UNARY_OPS

#: the element types map works on (PopLibs' ExpressionGenerator isSupportedType)
TYPES = (popsim.FLOAT, popsim.HALF, popsim.INT, popsim.UNSIGNED_INT, popsim.BOOL)
MAX_PLACEHOLDER = 20


class TernaryOpType(enum.Enum):
    """popops::expr::TernaryOpType."""
    CLAMP = "CLAMP"
    SELECT = "SELECT"


def _node(value, what: str) -> "Expr":
    """An operand as a node: nodes as they are, Python and numpy numbers as Const."""
    if isinstance(value, Expr):
        return value
    if isinstance(value, (numbers.Real, np.bool_, np.number)) and not isinstance(value, np.complexfloating):
        return Const(value)
    raise popsim.TypeError(f"{what}: operands must be expression nodes (pe._1, pe.Const(2.0), ...) or numbers, found "
                           f"{type(value).__name__} {value!r}")


class Expr:
    """An expression node. Operators build new nodes; a node is never changed."""
    __slots__ = ()
    __hash__ = object.__hash__  # == builds a node, so nodes hash by identity

    def _bin(self, name, other, reflected=False):
        other = _node(other, f"pe operator for {name}")
        return BinaryOp(name, other, self) if reflected else BinaryOp(name, self, other)

    def __add__(self, o): return self._bin("add", o)
    def __radd__(self, o): return self._bin("add", o, True)
    def __sub__(self, o): return self._bin("sub", o)
    def __rsub__(self, o): return self._bin("sub", o, True)
    def __mul__(self, o): return self._bin("mul", o)
    def __rmul__(self, o): return self._bin("mul", o, True)
    def __truediv__(self, o): return self._bin("div", o)
    def __rtruediv__(self, o): return self._bin("div", o, True)
    def __mod__(self, o): return self._bin("rem", o)
    def __rmod__(self, o): return self._bin("rem", o, True)
    def __pow__(self, o): return self._bin("pow", o)
    def __rpow__(self, o): return self._bin("pow", o, True)
    def __and__(self, o): return self._bin("bitwise_and", o)
    def __rand__(self, o): return self._bin("bitwise_and", o, True)
    def __or__(self, o): return self._bin("bitwise_or", o)
    def __ror__(self, o): return self._bin("bitwise_or", o, True)
    def __xor__(self, o): return self._bin("bitwise_xor", o)
    def __rxor__(self, o): return self._bin("bitwise_xor", o, True)
    def __lshift__(self, o): return self._bin("shift_left", o)
    def __rlshift__(self, o): return self._bin("shift_left", o, True)
    def __rshift__(self, o): return self._bin("shift_right", o)
    def __rrshift__(self, o): return self._bin("shift_right", o, True)
    def __eq__(self, o): return self._bin("eq", o)  # type: ignore[override]
    def __ne__(self, o): return self._bin("neq", o)  # type: ignore[override]
    def __lt__(self, o): return self._bin("lt", o)
    def __le__(self, o): return self._bin("lteq", o)
    def __gt__(self, o): return self._bin("gt", o)
    def __ge__(self, o): return self._bin("gteq", o)
    def __neg__(self): return UnaryOp("neg", self)
    def __invert__(self): return UnaryOp("bitwise_not", self)
    def __abs__(self): return UnaryOp("abs", self)

    def __floordiv__(self, o):
        raise popsim.TypeError("pe: // has no PopLibs op; '/' is PopLibs' DIVIDE (truncating for integers, as C)")

    def __bool__(self):
        raise popsim.TypeError(f"pe: the expression {self!r} has no truth value while it is being built: Python's "
                               "and/or/not, 'if' and chained comparisons (a < b < c) need one; write "
                               "pe.logical_and(a, b), pe.logical_or(a, b), pe.logical_not(a) (or & | ~ on BOOL nodes) "
                               "and split chains")


class PlaceHolder(Expr):
    """``_n``: the n-th tensor (1-based) of the list given to map."""
    __slots__ = ("index",)

    def __init__(self, index: int):
        if isinstance(index, bool) or not isinstance(index, numbers.Integral) or index < 1:
            raise PoplibsError(f"pe.PlaceHolder: the index is 1-based (pe._1 is the first tensor), found {index!r}")
        self.index = int(index)

    def __repr__(self):
        return f"_{self.index}"


class Const(Expr):
    """A constant. Without ``dtype`` it takes the type of the operand it meets (a float in
    an INT context must be integral); with one, its type is fixed."""
    __slots__ = ("value", "dtype")

    def __init__(self, value, dtype=None):
        if isinstance(value, Expr) or not isinstance(value, (numbers.Real, np.bool_, np.number)) \
                or isinstance(value, np.complexfloating):
            raise popsim.TypeError(f"pe.Const: the value must be a real number or a bool, found {type(value).__name__} "
                                   f"{value!r}")
        if dtype is not None and dtype not in TYPES:
            raise PoplibsError(f"pe.Const: dtype must be one of {', '.join(t.name for t in TYPES)} or None, found "
                               f"{dtype!r}")
        self.value = value.item() if isinstance(value, np.generic) else value
        self.dtype = dtype

    def __repr__(self):
        return f"Const({self.value!r}{', ' + self.dtype.name if self.dtype is not None else ''})"


class Cast(Expr):
    """``expr`` converted to ``dtype`` (C conversions: float to int truncates)."""
    __slots__ = ("arg", "dtype")

    def __init__(self, arg, dtype):
        if dtype not in TYPES:
            raise PoplibsError(f"pe.Cast: dtype must be one of {', '.join(t.name for t in TYPES)}, found {dtype!r}")
        self.arg = _node(arg, "pe.Cast")
        self.dtype = dtype

    def __repr__(self):
        return f"Cast({self.arg!r}, {self.dtype.name})"


class UnaryOp(Expr):
    """An op of the element-wise table's UNARY_OPS, by its name (``"exp"``)."""
    __slots__ = ("name", "arg")

    def __init__(self, name: str, arg):
        if name not in OPS or OPS[name].is_binary:
            raise PoplibsError(f"pe.UnaryOp: unknown unary op {name!r}; one of {', '.join(o.name for o in UNARY_OPS)}")
        self.name, self.arg = name, _node(arg, f"pe.{name}")

    def __repr__(self):
        return f"{self.name}({self.arg!r})"


class BinaryOp(Expr):
    """An op of the element-wise table's BINARY_OPS, by its name (``"add"``)."""
    __slots__ = ("name", "lhs", "rhs")

    def __init__(self, name: str, lhs, rhs):
        if name not in OPS or not OPS[name].is_binary:
            raise PoplibsError(f"pe.BinaryOp: unknown binary op {name!r}; one of "
                               f"{', '.join(o.name for o in BINARY_OPS)}")
        self.name, self.lhs, self.rhs = name, _node(lhs, f"pe.{name}"), _node(rhs, f"pe.{name}")

    def __repr__(self):
        return f"{self.name}({self.lhs!r}, {self.rhs!r})"


class TernaryOp(Expr):
    """``select(a, b, pred)`` (pred ? a : b) or ``clamp(x, lo, hi)`` (min(max(x, lo), hi))."""
    __slots__ = ("op", "args")

    def __init__(self, op: TernaryOpType, a, b, c):
        if not isinstance(op, TernaryOpType):
            raise PoplibsError(f"pe.TernaryOp: op must be a TernaryOpType, found {op!r}")
        self.op = op
        self.args = tuple(_node(x, f"pe.{op.name.lower()}") for x in (a, b, c))

    def __repr__(self):
        return f"{self.op.name.lower()}({', '.join(map(repr, self.args))})"


def select(a, b, pred) -> TernaryOp:
    """``pred ? a : b`` element by element (pred BOOL; a and b of one type)."""
    return TernaryOp(TernaryOpType.SELECT, a, b, pred)


def clamp(x, lo, hi) -> TernaryOp:
    """``min(max(x, lo), hi)`` element by element."""
    return TernaryOp(TernaryOpType.CLAMP, x, lo, hi)


def _function(spec):
    if spec.is_binary:
        def fn(a, b):
            return BinaryOp(spec.name, a, b)
    else:
        def fn(a):
            return UnaryOp(spec.name, a)
    fn.__name__ = fn.__qualname__ = spec.name
    fn.__doc__ = f"PopLibs' {spec.op.name} as an expression node (popops.{spec.name}'s semantics)."
    return fn


for _spec in BINARY_OPS + UNARY_OPS:
    globals()[_spec.name] = _function(_spec)
for _i in range(1, MAX_PLACEHOLDER + 1):
    globals()[f"_{_i}"] = PlaceHolder(_i)

if TYPE_CHECKING:  # for type checkers only: the op functions and placeholders _1, _2, ... made above
    def __getattr__(name: str) -> Any: ...


def placeholders(expr: Expr, found: Optional[set] = None) -> set:
    """The placeholder indices ``expr`` uses."""
    found = set() if found is None else found
    if isinstance(expr, PlaceHolder):
        found.add(expr.index)
    for child in children(expr):
        placeholders(child, found)
    return found


def children(expr: Expr) -> tuple:
    if isinstance(expr, (Cast, UnaryOp)):
        return (expr.arg,)
    if isinstance(expr, BinaryOp):
        return (expr.lhs, expr.rhs)
    if isinstance(expr, TernaryOp):
        return expr.args
    return ()
