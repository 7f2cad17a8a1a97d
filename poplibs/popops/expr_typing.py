"""From an expression (expr.py) and the types of map's tensors to a typed tree: PopLibs'
type rules, checks, and constant folding.

Type rules (PopLibs' ExpressionGenerator / ExprOpUtil):
- ``_n`` has the type of the n-th tensor;
- a ``Const`` without a type takes the type of the operand it meets (``_1 * 2`` with a
  HALF ``_1`` multiplies by a HALF 2); a Const among constants only takes its own
  (float: FLOAT, int: INT, bool: BOOL); a value its type cannot hold exactly is refused;
- the operands of an op (and ``a``, ``b`` of select, all three of clamp) must have one
  type (``Cast`` converts); comparisons, ``is_finite``, ``is_nan`` and the logical ops give
  BOOL, the others their operands' type; select's predicate is BOOL;
- on BOOL operands ``& | ^ ~`` are logical_and, logical_or, neq and logical_not.

Folding: a subtree without placeholders is evaluated when the vertex is generated, with
the op table's body on numpy scalars of the operands' type (math functions in double,
rounded to float32, as vertex code computes them), and becomes one constant.
"""
import math
import types
from dataclasses import dataclass
from typing import Optional, Sequence, Tuple

import numpy as np

import popsim

from ..poputil import PoplibsError
from . import expr as pe
from .elementwise_ops import OPS
from .op_checks import convert

FLOATS = (popsim.FLOAT, popsim.HALF)
_BOOL_FORMS = {"bitwise_and": "logical_and", "bitwise_or": "logical_or", "bitwise_xor": "neq",
               "bitwise_xnor": "eq", "bitwise_not": "logical_not"}


@dataclass(frozen=True)
class Typed:
    """A node of the typed tree. kind: "in" (detail: the placeholder index), "const"
    (detail: the value, a Python scalar of ``dtype``), "cast", "op" (detail: the op
    table's name; ``operand``: the operands' type), "select", "clamp"."""
    kind: str
    dtype: object
    args: Tuple["Typed", ...] = ()
    detail: object = None
    operand: object = None

    def key(self) -> str:
        """The structure and types as text: equal keys generate equal vertex code."""
        if self.kind == "in":
            return f"_{self.detail}:{self.dtype.name}"
        if self.kind == "const":
            return f"{self.dtype.name}({self.detail!r})"
        name = self.dtype.name if self.kind == "cast" else self.detail if self.kind == "op" else self.kind
        return f"{name}({','.join(a.key() for a in self.args)})"


def _describe_type(t) -> str:
    return "a constant without a type" if t is None else t.name


class _Typer:
    def __init__(self, root, dtypes: Sequence, what: str):
        self.root = root
        self.dtypes = list(dtypes)
        self.what = what

    def fail(self, node, message: str):
        where = f"{self.root!r}" + ("" if node is self.root else f", at {node!r}")
        raise PoplibsError(f"{self.what}: in {where}: {message}")

    # -- the type a node has by itself (None: constants without a type only) ------------------
    def type_of(self, node) -> Optional[object]:
        if isinstance(node, pe.PlaceHolder):
            if node.index > len(self.dtypes):
                self.fail(node, f"placeholder _{node.index} refers to tensor {node.index} (1-based), but only "
                                f"{len(self.dtypes)} tensor(s) were given; pass more tensors or use _1.._"
                                f"{len(self.dtypes)}")
            return self.dtypes[node.index - 1]
        if isinstance(node, pe.Const):
            return node.dtype
        if isinstance(node, pe.Cast):
            self.type_of(node.arg)
            return node.dtype
        if isinstance(node, (pe.UnaryOp, pe.BinaryOp)):
            operand = self.common(node, pe.children(node))
            return popsim.BOOL if OPS[node.name].result == "bool" else operand
        if isinstance(node, pe.TernaryOp):
            if node.op is pe.TernaryOpType.SELECT:
                self.type_of(node.args[2])  # checked in resolve: BOOL or an untyped constant
                return self.common(node, node.args[:2])
            return self.common(node, node.args)
        raise popsim.TypeError(f"{self.what}: expected an expression node (pe._1, pe.Const(...), pe.exp(...)), found "
                               f"{type(node).__name__} {node!r}")

    def common(self, node, operands) -> Optional[object]:
        found = [self.type_of(a) for a in operands]
        typed = [t for t in found if t is not None]
        if any(t != typed[0] for t in typed):
            self.fail(node, f"operands of different types ({', '.join(_describe_type(t) for t in found)}); "
                            "convert one with pe.Cast(e, type)")
        return typed[0] if typed else None

    # -- the typed tree --------------------------------------------------------------------------
    def resolve(self, node, want=None) -> Typed:
        """``node`` typed; ``want`` is the type a node without one takes."""
        if isinstance(node, pe.PlaceHolder):
            return Typed("in", self.type_of(node), detail=node.index)
        if isinstance(node, pe.Const):
            return self.constant(node, node.dtype or want or default_type(node))
        if isinstance(node, pe.Cast):
            arg = self.resolve(node.arg)
            return fold(Typed("cast", node.dtype, (arg,)), self.what)
        if isinstance(node, pe.TernaryOp):
            return self.ternary(node, want)
        kids = pe.children(node)
        operand = self.common(node, kids)
        spec = OPS[node.name]
        if operand is None:
            operand = want if spec.result == "same" and want is not None else default_type(node)
        name = _BOOL_FORMS.get(node.name, node.name) if operand == popsim.BOOL else node.name
        spec = OPS[name]
        if operand not in spec.types:
            self.fail(node, f"{spec.op.name} does not take {operand.name} operands; it takes "
                            f"{', '.join(t.name for t in spec.types)} (pe.Cast converts)")
        args = tuple(self.resolve(k, operand) for k in kids)
        return fold(Typed("op", spec.result_type(operand), args, name, operand), self.what)

    def ternary(self, node, want) -> Typed:
        select = node.op is pe.TernaryOpType.SELECT
        values = node.args[:2] if select else node.args
        operand = self.common(node, values)
        if operand is None:
            operand = want if want is not None else default_type(node)
        if select:
            pred_type = self.type_of(node.args[2])
            if pred_type not in (None, popsim.BOOL):
                self.fail(node, f"the predicate (third operand) must be BOOL, found {pred_type.name}; compare "
                                "(pe._1 > 0) or cast it with pe.Cast(e, BOOL)")
            args = tuple(self.resolve(v, operand) for v in values) + (self.resolve(node.args[2], popsim.BOOL),)
        else:
            if operand == popsim.BOOL:
                self.fail(node, "clamp takes FLOAT, HALF, INT or UNSIGNED_INT operands, found BOOL")
            args = tuple(self.resolve(v, operand) for v in values)
        return fold(Typed("select" if select else "clamp", operand, args), self.what)

    def constant(self, node, dtype) -> Typed:
        value = node.value
        if isinstance(value, bool) and dtype != popsim.BOOL and node.dtype is None:
            self.fail(node, f"a bool constant meets a {dtype.name} operand; write a number of that type")
        converted, fits = convert(value, dtype)
        if not fits:
            self.fail(node, f"the constant {value!r:.60} does not fit {dtype.name} exactly ({dtype.name} would hold "
                            f"{converted!r}); write a value of that type or pe.Cast(pe.Const({value!r:.60}), "
                            f"{dtype.name})")
        return Typed("const", dtype, detail=converted)


def default_type(node):
    """The type of a constant subtree left to itself: FLOAT if it holds a float, else INT
    if it holds an int, else BOOL (a Const with a type counts as that type)."""
    found = set()

    def walk(n):
        if isinstance(n, pe.Const):
            found.add(n.dtype or (popsim.BOOL if isinstance(n.value, bool) else
                                  popsim.INT if isinstance(n.value, int) else popsim.FLOAT))
        kids = pe.children(n)
        if isinstance(n, pe.TernaryOp) and n.op is pe.TernaryOpType.SELECT:
            kids = kids[:2]  # the predicate is BOOL whatever the values are
        for c in kids:
            walk(c)
    walk(node)
    for t in (popsim.FLOAT, popsim.HALF, popsim.INT, popsim.UNSIGNED_INT):
        if t in found:
            return t
    return popsim.BOOL


def infer(expr, dtypes: Sequence, what: str = "popops.map") -> Typed:
    """``expr`` typed for tensors of ``dtypes`` (PoplibsError on a bad placeholder index,
    an unsupported type, operands of different types)."""
    if not isinstance(expr, pe.Expr):
        raise popsim.TypeError(f"{what}: expected an expression (pe._1 + 1, pe.exp(pe._1), ...), found "
                               f"{type(expr).__name__} {expr!r}")
    for i, t in enumerate(dtypes):
        if t not in pe.TYPES:
            raise PoplibsError(f"{what}: tensor {i + 1} (_{i + 1}) is {t.name}; map takes "
                               f"{', '.join(x.name for x in pe.TYPES)}")
    typer = _Typer(expr, dtypes, what)
    typer.type_of(expr)  # every check first, whatever the folding leaves
    return typer.resolve(expr)


# -- constant folding ------------------------------------------------------------------------------
def _load(value, dtype):
    """A value as vertex code loads it: float32 for FLOAT and HALF, int32, uint32, bool."""
    loaded = {popsim.HALF: np.float32, popsim.FLOAT: np.float32, popsim.INT: np.int32,
              popsim.UNSIGNED_INT: np.uint32, popsim.BOOL: np.bool_}[dtype]
    return loaded(value)


def _store(value, dtype):
    return np.asarray(value).astype(dtype.numpy).item()


def _rounding(fn):
    def rounded(*args):
        result = fn(*args)
        return np.float32(result) if isinstance(result, float) else result
    return rounded


# math for folded bodies: results rounded to float32, as vertex code rounds them
_MATH = types.SimpleNamespace(**{n: _rounding(getattr(math, n)) for n in dir(math) if callable(getattr(math, n))},
                              pi=math.pi, e=math.e, inf=math.inf, nan=math.nan)


def evaluate_body(name: str, operand, values):
    """The op table's body for ``name`` on ``values`` of type ``operand``: the result
    converted to the op's result type."""
    spec = OPS[name]
    fn = spec.body_for(operand)
    # the same code on the host, its math rounded to float32 as the vertex's is
    host = types.FunctionType(fn.__code__, {**fn.__globals__, "math": _MATH}, fn.__name__, fn.__defaults__,
                              fn.__closure__)
    with np.errstate(all="ignore"):
        result = host(*(_load(v, operand) for v in values))
    return _store(result, spec.result_type(operand))


def fold(node: Typed, what: str) -> Typed:
    """``node`` as one constant when all its operands are constants, else as it is."""
    if not all(a.kind == "const" for a in node.args):
        return node
    values = [a.detail for a in node.args]
    try:
        if node.kind == "op":
            value = evaluate_body(node.detail, node.operand, values)
        elif node.kind == "cast":
            with np.errstate(all="ignore"):
                value = _store(_load(values[0], node.args[0].dtype), node.dtype)
        elif node.kind == "select":
            value = values[0] if values[2] else values[1]
        else:
            value = min(max(values[0], values[1]), values[2])
    except (ArithmeticError, ValueError) as e:
        raise PoplibsError(f"{what}: folding the constant subexpression {node.key()} failed: {e}") from None
    return Typed("const", node.dtype, detail=value)
