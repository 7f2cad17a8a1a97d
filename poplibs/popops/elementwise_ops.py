"""The element-wise op table: every popops binary and unary op is one entry here.

An entry is a function decorated with ``binary`` or ``unary``: the decorator names the
public function (``add`` gives ``add``, ``add_in_place`` and ``add_with_output``),
PopLibs' op type (the vertex template argument), the element types it takes, the type of
its result (``"same"`` or ``"bool"``) and its row of PopLibs' cycle-estimator table; the
function is what a vertex computes for one element. It is vertex code (a helper that
the translator inlines into the vertex's loop: docs/python_vertices.md) of ``x`` (and
``y`` for binary ops), the operands as loaded: FLOAT and HALF give float32 (HALF is
rounded back to fp16 when stored), INT int32, UNSIGNED_INT uint32, BOOL bool. The
function serves every type; ``int=`` gives INT and UNSIGNED_INT their own (C's
truncating division where the vertex language's ``//`` floors).

To add an op: add its PopLibs op type to op_types.py and one decorated function here;
the public functions, vertices, estimators and constant folding follow from it.
"""
import ast
import inspect
import math
import textwrap
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Tuple, Union

import numpy as np

from popsim import BOOL, FLOAT, HALF, INT, UNSIGNED_INT

from .op_types import BinaryOpType, UnaryOpType

FLOATS = (FLOAT, HALF)
INTS = (INT, UNSIGNED_INT)
NUMBERS = FLOATS + INTS
#: (cycles per loop, natural vector width?, unroll factor): PopLibs' perf table row
Perf = Tuple[int, bool, int]


@dataclass(frozen=True)
class ElementwiseOp:
    name: str
    op: Union[BinaryOpType, UnaryOpType]
    types: Tuple
    body: Dict[str, Callable]
    result: str = "same"
    perf: Dict[object, Perf] = field(default_factory=dict)

    @property
    def is_binary(self) -> bool:
        return isinstance(self.op, BinaryOpType)

    def result_type(self, dtype):
        return BOOL if self.result == "bool" else dtype

    def body_for(self, dtype) -> Callable:
        """The function a vertex computes per element of ``dtype`` operands."""
        return self.body["int"] if dtype in INTS and "int" in self.body else self.body["any"]

    def perf_for(self, dtype) -> Perf:
        """The op's PopLibs perf-table row for ``dtype``; where PopLibs' sources list
        none, the integer row (7 cycles per element) or, for floats, 1 cycle per loop of
        the natural vector width plus loop overhead."""
        if dtype in self.perf:
            return self.perf[dtype]
        return (7, False, 1) if dtype not in FLOATS else (1, True, 0)


def _perf(f=None, h=None, i=None, u=None) -> Dict[object, Perf]:
    rows = {FLOAT: f, HALF: h, INT: i, UNSIGNED_INT: u}
    return {t: r for t, r in rows.items() if r is not None}


def formula(fn: Callable) -> str:
    """The expression an op's function returns, as text (its public functions' docstrings)."""
    node = ast.parse(textwrap.dedent(inspect.getsource(fn))).body[0]
    return ast.unparse(node.body[-1].value)


BINARY_OPS: List[ElementwiseOp] = []
UNARY_OPS: List[ElementwiseOp] = []


def _entry(table: List[ElementwiseOp], name, op, types, result="same", perf=None, int=None):  # noqa: A002
    def register(fn):
        bodies = {"any": fn, **({"int": int} if int is not None else {})}
        table.append(ElementwiseOp(name, op, types, bodies, result, perf or {}))
        return fn
    return register


def binary(name: str, op: BinaryOpType, types, result="same", perf=None, int=None):  # noqa: A002
    """Decorator: the function is the binary op's body (see the module docstring)."""
    return _entry(BINARY_OPS, name, op, types, result, perf, int)


def unary(name: str, op: UnaryOpType, types, result="same", perf=None):
    """Decorator: the function is the unary op's body (see the module docstring)."""
    return _entry(UNARY_OPS, name, op, types, result, perf)


_ARITH = _perf((1, True, 0), (1, True, 0), (7, False, 1), (7, False, 1))
_CMP = _perf((14, False, 4), (9, False, 4), (22, False, 4), (22, False, 4))
_CMP_EQ = _perf((14, False, 4), (9, False, 4), (26, False, 4), (26, False, 4))
_MINMAX = _perf((3, False, 2), (4, False, 4), (7, False, 1), (8, False, 1))


# Integer division truncates toward zero (C), where the vertex language's // floors.
def truncating_div(x, y):
    q = x // y
    return q + 1 if (x % y != 0 and (x < 0) != (y < 0)) else q


def truncating_rem(x, y):
    q = x // y
    q = q + 1 if (x % y != 0 and (x < 0) != (y < 0)) else q
    return x - q * y


def integer_pow(x, y):
    return x ** y


@binary("add", BinaryOpType.ADD, NUMBERS, perf=_ARITH)
def add(x, y):
    return x + y


@binary("sub", BinaryOpType.SUBTRACT, NUMBERS, perf=_ARITH)
def sub(x, y):
    return x - y


@binary("mul", BinaryOpType.MULTIPLY, NUMBERS, perf=_ARITH)
def mul(x, y):
    return x * y


@binary("div", BinaryOpType.DIVIDE, NUMBERS, int=truncating_div,
        perf=_perf((10, False, 2), (21, False, 4), (277, False, 1), (265, False, 1)))
def div(x, y):
    return x / y


@binary("pow", BinaryOpType.POWER, FLOATS + (INT,), int=integer_pow, perf=_perf((312, False, 1), (325, False, 1)))
def pow_(x, y):
    return math.pow(x, y)


@binary("rem", BinaryOpType.REMAINDER, NUMBERS, int=truncating_rem,
        perf=_perf((133, False, 2), (300, False, 4), (292, False, 1)))
def rem(x, y):
    return math.fmod(x, y)


@binary("max", BinaryOpType.MAXIMUM, NUMBERS, perf=_MINMAX)
def max_(x, y):
    return max(x, y)


@binary("min", BinaryOpType.MINIMUM, NUMBERS, perf=_MINMAX)
def min_(x, y):
    return min(x, y)


@binary("atan2", BinaryOpType.ATAN2, FLOATS, perf=_perf((272, False, 2), (578, False, 4)))
def atan2(x, y):
    return math.atan2(x, y)


@binary("eq", BinaryOpType.EQUAL, NUMBERS + (BOOL,), "bool", _CMP)
def eq(x, y):
    return x == y


@binary("neq", BinaryOpType.NOT_EQUAL, NUMBERS + (BOOL,), "bool", _CMP)
def neq(x, y):
    return x != y


@binary("lt", BinaryOpType.LESS_THAN, NUMBERS, "bool", _CMP)
def lt(x, y):
    return x < y


@binary("lteq", BinaryOpType.LESS_THAN_EQUAL, NUMBERS, "bool", _CMP_EQ)
def lteq(x, y):
    return x <= y


@binary("gt", BinaryOpType.GREATER_THAN, NUMBERS, "bool", _CMP)
def gt(x, y):
    return x > y


@binary("gteq", BinaryOpType.GREATER_THAN_EQUAL, NUMBERS, "bool", _CMP_EQ)
def gteq(x, y):
    return x >= y


@binary("logical_and", BinaryOpType.LOGICAL_AND, (BOOL,), "bool")
def logical_and(x, y):
    return x and y


@binary("logical_or", BinaryOpType.LOGICAL_OR, (BOOL,), "bool")
def logical_or(x, y):
    return x or y


@binary("bitwise_and", BinaryOpType.BITWISE_AND, INTS)
def bitwise_and(x, y):
    return x & y


@binary("bitwise_or", BinaryOpType.BITWISE_OR, INTS)
def bitwise_or(x, y):
    return x | y


@binary("bitwise_xor", BinaryOpType.BITWISE_XOR, INTS)
def bitwise_xor(x, y):
    return x ^ y


@binary("bitwise_xnor", BinaryOpType.BITWISE_XNOR, INTS)
def bitwise_xnor(x, y):
    return ~(x ^ y)


@binary("shift_left", BinaryOpType.SHIFT_LEFT, INTS)
def shift_left(x, y):
    return x << y


@binary("shift_right", BinaryOpType.SHIFT_RIGHT, INTS)
def shift_right(x, y):
    return np.uint32(x) >> y  # PopLibs' SHIFT_RIGHT is logical, also for INT: (unsigned)x >> y


# float -> integral float without math.floor's int32 saturation: floats of magnitude
# 2**23 and more are integral already (and so are inf and NaN, returned as they are)
_BIG = 8388608.0


def _u(f=None, h=None) -> Dict[object, Perf]:
    return _perf(f, h)


@unary("abs", UnaryOpType.ABSOLUTE, FLOATS + (INT,), perf=_u((1, False, 0), (1, False, 0)))
def abs_(x):
    return abs(x)


@unary("neg", UnaryOpType.NEGATE, FLOATS + (INT,), perf=_u((2, False, 2), (2, False, 4)))
def neg(x):
    return -x


@unary("exp", UnaryOpType.EXPONENT, FLOATS, perf=_u((6, False, 2), (4, False, 4)))
def exp(x):
    return math.exp(x)


@unary("expm1", UnaryOpType.EXPONENT_MINUS_ONE, FLOATS)
def expm1(x):
    return math.expm1(x)


@unary("log", UnaryOpType.LOGARITHM, FLOATS, perf=_u((12, False, 2), (4, False, 4)))
def log(x):
    return math.log(x)


@unary("log1p", UnaryOpType.LOGARITHM_ONE_PLUS, FLOATS)
def log1p(x):
    return math.log1p(x)


@unary("sqrt", UnaryOpType.SQRT, FLOATS, perf=_u((10, False, 2), (23, False, 4)))
def sqrt(x):
    return math.sqrt(x)


@unary("rsqrt", UnaryOpType.RSQRT, FLOATS, perf=_u((8, False, 2), (19, False, 4)))
def rsqrt(x):
    return 1.0 / math.sqrt(x)


@unary("cbrt", UnaryOpType.CBRT, FLOATS)
def cbrt(x):
    # pow(|x|, 1/3) is up to 15 ulps off (1/3 is rounded to float); one Newton step fixes it
    a = abs(x)
    y = math.pow(a, 1.0 / 3.0)
    y = y + (a / (y * y) - y) / 3.0 if y > 0.0 and math.isfinite(y) else y
    return math.copysign(y, x)


@unary("square", UnaryOpType.SQUARE, FLOATS + (INT,), perf=_u((2, False, 2), (2, False, 4)))
def square(x):
    return x * x


@unary("inv", UnaryOpType.INVERSE, FLOATS, perf=_u((6, False, 2), (15, False, 4)))
def inv(x):
    return 1.0 / x


@unary("sigmoid", UnaryOpType.SIGMOID, FLOATS, perf=_u((12, False, 2), (6, False, 4)))
def sigmoid(x):
    return 1.0 / (1.0 + math.exp(-x))


@unary("tanh", UnaryOpType.TANH, FLOATS, perf=_u((12, False, 2), (4, False, 4)))
def tanh(x):
    return math.tanh(x)


@unary("sin", UnaryOpType.SIN, FLOATS, perf=_u((2300, False, 0), (25, False, 1)))
def sin(x):
    return math.sin(x)


@unary("cos", UnaryOpType.COS, FLOATS, perf=_u((2300, False, 0), (25, False, 1)))
def cos(x):
    return math.cos(x)


@unary("tan", UnaryOpType.TAN, FLOATS, perf=_u((5100, False, 1), (5700, False, 1)))
def tan(x):
    return math.tan(x)


@unary("asin", UnaryOpType.ASIN, FLOATS, perf=_u((102, False, 0), (102, False, 0)))
def asin(x):
    return math.asin(x)


# erf and GELU through libm's erf in double, rounded once to float (relative error below
# one float ulp over the whole range, near zero too; docs/poplibs.md gives the measured bound)
@unary("erf", UnaryOpType.ERF, FLOATS, perf=_u((41, False, 1), (13, False, 1)))
def erf(x):
    return math.erf(x)


@unary("gelu_erf", UnaryOpType.GELU_ERF, FLOATS, perf=_u((22, False, 1), (16, False, 1)))
def gelu_erf(x):
    return 0.5 * x * math.erfc(-x * 0.70710678118654752)  # 1 + erf(z) = erfc(-z), without its cancellation


@unary("ceil", UnaryOpType.CEIL, FLOATS, perf=_u((2, True, 0), (2, True, 0)))
def ceil(x):
    return float(math.ceil(x)) if abs(x) < _BIG else x


@unary("floor", UnaryOpType.FLOOR, FLOATS, perf=_u((2, True, 0), (2, True, 0)))
def floor(x):
    return float(math.floor(x)) if abs(x) < _BIG else x


@unary("round", UnaryOpType.ROUND, FLOATS, perf=_u((2, True, 0), (2, True, 0)))
def round_(x):
    # half away from zero
    a = abs(x)
    f = float(math.floor(a)) if a < _BIG else a
    f = f + 1.0 if a - f >= 0.5 else f
    return math.copysign(f, x)


@unary("trunc", UnaryOpType.TRUNC, FLOATS)
def trunc(x):
    return float(math.trunc(x)) if abs(x) < _BIG else x


# round() in vertex code rounds half to even, as nearbyint does in the default mode
@unary("nearbyint", UnaryOpType.NEARBY_INT, FLOATS, perf=_u((2, True, 0), (2, True, 0)))
def nearbyint(x):
    return float(round(x)) if abs(x) < _BIG else x


@unary("signum", UnaryOpType.SIGNUM, FLOATS + (INT,))
def signum(x):
    return (0 < x) - (x < 0)


@unary("logical_not", UnaryOpType.LOGICAL_NOT, (BOOL,))
def logical_not(x):
    return not x


@unary("bitwise_not", UnaryOpType.BITWISE_NOT, INTS)
def bitwise_not(x):
    return ~x


@unary("is_finite", UnaryOpType.IS_FINITE, FLOATS, "bool", _u((5, True, 0), (5, True, 0)))
def is_finite(x):
    return math.isfinite(x)


@unary("is_nan", UnaryOpType.IS_NAN, FLOATS, "bool", _u((3, True, 0), (3, True, 0)))
def is_nan(x):
    return math.isnan(x)


@unary("popcount", UnaryOpType.POPCOUNT, INTS)
def popcount(x):
    v = np.uint32(x)
    c = 0
    while v != 0:
        c += int(v & 1)
        v = v >> 1
    return c


OPS: Dict[str, ElementwiseOp] = {op.name: op for op in BINARY_OPS + UNARY_OPS}
BY_TYPE: Dict[object, ElementwiseOp] = {op.op: op for op in BINARY_OPS + UNARY_OPS}
