"""The element-wise op table: every popops binary and unary op is one entry here.

An entry names the public function (``add`` gives ``add``, ``add_in_place`` and
``add_with_output``), PopLibs' op type (the vertex template argument), the element types
it takes, the type of its result (``"same"`` or ``"bool"``), what a vertex computes for
one element, and its row of PopLibs' cycle-estimator table. The vertex body is
Python-vertex code (docs/python_vertices.md) in terms of ``x``
(and ``y`` for binary ops), the operands as loaded: FLOAT and HALF give float32 (HALF is
rounded back to fp16 when stored), INT int32, UNSIGNED_INT uint32, BOOL bool. It is one
expression, or statements on separate lines followed by the expression on the last line.
Bodies are keyed by ``"float"`` (FLOAT, HALF), ``"int"`` (INT, UNSIGNED_INT) and
``"bool"``; ``"any"`` serves every type without its own body.

To add an op: add its PopLibs op type to op_types.py and an entry to BINARY_OPS or
UNARY_OPS; the public functions, vertices and estimators follow from the entry.
"""
from dataclasses import dataclass, field
from typing import Dict, Tuple, Union

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
    body: Dict[str, str]
    result: str = "same"
    perf: Dict[object, Perf] = field(default_factory=dict)

    @property
    def is_binary(self) -> bool:
        return isinstance(self.op, BinaryOpType)

    def result_type(self, dtype):
        return BOOL if self.result == "bool" else dtype

    def body_for(self, dtype) -> str:
        kind = "float" if dtype in FLOATS else "int" if dtype in INTS else "bool"
        return self.body.get(kind, self.body.get("any"))

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


# Integer division truncates toward zero (C), where the vertex language's // floors.
_TRUNC_DIV = "q = x // y\nq + 1 if (x % y != 0 and (x < 0) != (y < 0)) else q"
_TRUNC_REM = "q = x // y\nq = q + 1 if (x % y != 0 and (x < 0) != (y < 0)) else q\nx - q * y"
_ARITH = _perf((1, True, 0), (1, True, 0), (7, False, 1), (7, False, 1))
_CMP = _perf((14, False, 4), (9, False, 4), (22, False, 4), (22, False, 4))
_CMP_EQ = _perf((14, False, 4), (9, False, 4), (26, False, 4), (26, False, 4))
_MINMAX = _perf((3, False, 2), (4, False, 4), (7, False, 1), (8, False, 1))

BINARY_OPS = [
    ElementwiseOp("add", BinaryOpType.ADD, NUMBERS, {"any": "x + y"}, perf=_ARITH),
    ElementwiseOp("sub", BinaryOpType.SUBTRACT, NUMBERS, {"any": "x - y"}, perf=_ARITH),
    ElementwiseOp("mul", BinaryOpType.MULTIPLY, NUMBERS, {"any": "x * y"}, perf=_ARITH),
    ElementwiseOp("div", BinaryOpType.DIVIDE, NUMBERS, {"float": "x / y", "int": _TRUNC_DIV},
                  perf=_perf((10, False, 2), (21, False, 4), (277, False, 1), (265, False, 1))),
    ElementwiseOp("pow", BinaryOpType.POWER, FLOATS + (INT,), {"float": "math.pow(x, y)", "int": "x ** y"},
                  perf=_perf((312, False, 1), (325, False, 1))),
    ElementwiseOp("rem", BinaryOpType.REMAINDER, NUMBERS, {"float": "math.fmod(x, y)", "int": _TRUNC_REM},
                  perf=_perf((133, False, 2), (300, False, 4), (292, False, 1))),
    ElementwiseOp("max", BinaryOpType.MAXIMUM, NUMBERS, {"any": "max(x, y)"}, perf=_MINMAX),
    ElementwiseOp("min", BinaryOpType.MINIMUM, NUMBERS, {"any": "min(x, y)"}, perf=_MINMAX),
    ElementwiseOp("atan2", BinaryOpType.ATAN2, FLOATS, {"float": "math.atan2(x, y)"},
                  perf=_perf((272, False, 2), (578, False, 4))),
    ElementwiseOp("eq", BinaryOpType.EQUAL, NUMBERS + (BOOL,), {"any": "x == y"}, "bool", _CMP),
    ElementwiseOp("neq", BinaryOpType.NOT_EQUAL, NUMBERS + (BOOL,), {"any": "x != y"}, "bool", _CMP),
    ElementwiseOp("lt", BinaryOpType.LESS_THAN, NUMBERS, {"any": "x < y"}, "bool", _CMP),
    ElementwiseOp("lteq", BinaryOpType.LESS_THAN_EQUAL, NUMBERS, {"any": "x <= y"}, "bool", _CMP_EQ),
    ElementwiseOp("gt", BinaryOpType.GREATER_THAN, NUMBERS, {"any": "x > y"}, "bool", _CMP),
    ElementwiseOp("gteq", BinaryOpType.GREATER_THAN_EQUAL, NUMBERS, {"any": "x >= y"}, "bool", _CMP_EQ),
    ElementwiseOp("logical_and", BinaryOpType.LOGICAL_AND, (BOOL,), {"bool": "x and y"}, "bool"),
    ElementwiseOp("logical_or", BinaryOpType.LOGICAL_OR, (BOOL,), {"bool": "x or y"}, "bool"),
    ElementwiseOp("bitwise_and", BinaryOpType.BITWISE_AND, INTS, {"int": "x & y"}),
    ElementwiseOp("bitwise_or", BinaryOpType.BITWISE_OR, INTS, {"int": "x | y"}),
    ElementwiseOp("bitwise_xor", BinaryOpType.BITWISE_XOR, INTS, {"int": "x ^ y"}),
    ElementwiseOp("bitwise_xnor", BinaryOpType.BITWISE_XNOR, INTS, {"int": "~(x ^ y)"}),
    ElementwiseOp("shift_left", BinaryOpType.SHIFT_LEFT, INTS, {"int": "x << y"}),
    # PopLibs' SHIFT_RIGHT is logical, also for INT: (unsigned)x >> y
    ElementwiseOp("shift_right", BinaryOpType.SHIFT_RIGHT, INTS, {"int": "np.uint32(x) >> y"}),
]

# float -> integral float without math.floor's int32 saturation: floats of magnitude
# 2**23 and more are integral already (and so are inf and NaN, returned as they are)
_BIG = "8388608.0"
_ROUND_AWAY = (f"a = abs(x)\nf = float(math.floor(a)) if a < {_BIG} else a\n"
               "f = f + 1.0 if a - f >= 0.5 else f\nmath.copysign(f, x)")
# erf and GELU through libm's erf in double, rounded once to float (relative error below
# one float ulp over the whole range, near zero too; docs/poplibs.md gives the measured bound)
_ERF = "math.erf(x)"
_GELU = "0.5 * x * math.erfc(-x * 0.70710678118654752)"  # 1 + erf(z) = erfc(-z), without its cancellation
# pow(|x|, 1/3) is up to 15 ulps off (1/3 is rounded to float); one Newton step fixes it
_CBRT = ("a = abs(x)\ny = math.pow(a, 1.0 / 3.0)\n"
         "y = y + (a / (y * y) - y) / 3.0 if y > 0.0 and math.isfinite(y) else y\nmath.copysign(y, x)")
_POPCOUNT = "v = np.uint32(x)\nc = 0\nwhile v != 0:\n    c += int(v & 1)\n    v = v >> 1\nc"


def _rounding(fn: str) -> str:
    return f"float({fn}(x)) if abs(x) < {_BIG} else x"


def _u(f=None, h=None) -> Dict[object, Perf]:
    return _perf(f, h)


UNARY_OPS = [
    ElementwiseOp("abs", UnaryOpType.ABSOLUTE, FLOATS + (INT,), {"any": "abs(x)"}, perf=_u((1, False, 0), (1, False, 0))),
    ElementwiseOp("neg", UnaryOpType.NEGATE, FLOATS + (INT,), {"any": "-x"}, perf=_u((2, False, 2), (2, False, 4))),
    ElementwiseOp("exp", UnaryOpType.EXPONENT, FLOATS, {"float": "math.exp(x)"}, perf=_u((6, False, 2), (4, False, 4))),
    ElementwiseOp("expm1", UnaryOpType.EXPONENT_MINUS_ONE, FLOATS, {"float": "math.expm1(x)"}),
    ElementwiseOp("log", UnaryOpType.LOGARITHM, FLOATS, {"float": "math.log(x)"}, perf=_u((12, False, 2), (4, False, 4))),
    ElementwiseOp("log1p", UnaryOpType.LOGARITHM_ONE_PLUS, FLOATS, {"float": "math.log1p(x)"}),
    ElementwiseOp("sqrt", UnaryOpType.SQRT, FLOATS, {"float": "math.sqrt(x)"}, perf=_u((10, False, 2), (23, False, 4))),
    ElementwiseOp("rsqrt", UnaryOpType.RSQRT, FLOATS, {"float": "1.0 / math.sqrt(x)"},
                  perf=_u((8, False, 2), (19, False, 4))),
    ElementwiseOp("cbrt", UnaryOpType.CBRT, FLOATS, {"float": _CBRT}),
    ElementwiseOp("square", UnaryOpType.SQUARE, FLOATS + (INT,), {"any": "x * x"}, perf=_u((2, False, 2), (2, False, 4))),
    ElementwiseOp("inv", UnaryOpType.INVERSE, FLOATS, {"float": "1.0 / x"}, perf=_u((6, False, 2), (15, False, 4))),
    ElementwiseOp("sigmoid", UnaryOpType.SIGMOID, FLOATS, {"float": "1.0 / (1.0 + math.exp(-x))"},
                  perf=_u((12, False, 2), (6, False, 4))),
    ElementwiseOp("tanh", UnaryOpType.TANH, FLOATS, {"float": "math.tanh(x)"}, perf=_u((12, False, 2), (4, False, 4))),
    ElementwiseOp("sin", UnaryOpType.SIN, FLOATS, {"float": "math.sin(x)"}, perf=_u((2300, False, 0), (25, False, 1))),
    ElementwiseOp("cos", UnaryOpType.COS, FLOATS, {"float": "math.cos(x)"}, perf=_u((2300, False, 0), (25, False, 1))),
    ElementwiseOp("tan", UnaryOpType.TAN, FLOATS, {"float": "math.tan(x)"}, perf=_u((5100, False, 1), (5700, False, 1))),
    ElementwiseOp("asin", UnaryOpType.ASIN, FLOATS, {"float": "math.asin(x)"}, perf=_u((102, False, 0), (102, False, 0))),
    ElementwiseOp("erf", UnaryOpType.ERF, FLOATS, {"float": _ERF}, perf=_u((41, False, 1), (13, False, 1))),
    ElementwiseOp("gelu_erf", UnaryOpType.GELU_ERF, FLOATS, {"float": _GELU}, perf=_u((22, False, 1), (16, False, 1))),
    ElementwiseOp("ceil", UnaryOpType.CEIL, FLOATS, {"float": _rounding("math.ceil")}, perf=_u((2, True, 0), (2, True, 0))),
    ElementwiseOp("floor", UnaryOpType.FLOOR, FLOATS, {"float": _rounding("math.floor")},
                  perf=_u((2, True, 0), (2, True, 0))),
    ElementwiseOp("round", UnaryOpType.ROUND, FLOATS, {"float": _ROUND_AWAY}, perf=_u((2, True, 0), (2, True, 0))),
    ElementwiseOp("trunc", UnaryOpType.TRUNC, FLOATS, {"float": _rounding("math.trunc")}),
    # round() in vertex code rounds half to even, as nearbyint does in the default mode
    ElementwiseOp("nearbyint", UnaryOpType.NEARBY_INT, FLOATS, {"float": _rounding("round")},
                  perf=_u((2, True, 0), (2, True, 0))),
    ElementwiseOp("signum", UnaryOpType.SIGNUM, FLOATS + (INT,), {"any": "(0 < x) - (x < 0)"}),
    ElementwiseOp("logical_not", UnaryOpType.LOGICAL_NOT, (BOOL,), {"bool": "not x"}),
    ElementwiseOp("bitwise_not", UnaryOpType.BITWISE_NOT, INTS, {"int": "~x"}),
    ElementwiseOp("is_finite", UnaryOpType.IS_FINITE, FLOATS, {"float": "math.isfinite(x)"}, "bool",
                  _u((5, True, 0), (5, True, 0))),
    ElementwiseOp("is_nan", UnaryOpType.IS_NAN, FLOATS, {"float": "math.isnan(x)"}, "bool",
                  _u((3, True, 0), (3, True, 0))),
    ElementwiseOp("popcount", UnaryOpType.POPCOUNT, INTS, {"int": _POPCOUNT}),
]

OPS: Dict[str, ElementwiseOp] = {op.name: op for op in BINARY_OPS + UNARY_OPS}
BY_TYPE: Dict[object, ElementwiseOp] = {op.op: op for op in BINARY_OPS + UNARY_OPS}
