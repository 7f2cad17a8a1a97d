"""popops unary element-wise ops run on the engine against numpy (and math.erf), on
tensors with one region (1D vertices) and several regions (2D vertices) per tile; the
element-wise estimators against PopLibs' cycle estimators evaluated by hand."""
import math
import re

import numpy as np
import pytest

import popsim
from popsim import BOOL, FLOAT, HALF, INT, UNSIGNED_INT, popops, poputil
from popsim.popops import BinaryOpType, UnaryOpType
from popsim.popops.elementwise_ops import UNARY_OPS
from popsim.codelet.python_vertex import fields_of
from popsim.popops.elementwise_vertices import TEMPLATES, vertex_cycles
from popsim.program import Sequence

from popops_harness import MAPPING, run

_erf = np.vectorize(math.erf, otypes=[np.float64])


def _round_away(x):
    return np.where(np.isfinite(x), np.sign(x) * np.floor(np.abs(x) + 0.5), x)


REFERENCES = {
    "abs": np.abs, "neg": np.negative, "exp": np.exp, "expm1": np.expm1, "log": np.log, "log1p": np.log1p,
    "sqrt": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x), "cbrt": np.cbrt, "square": np.square,
    "inv": lambda x: 1 / x, "sigmoid": lambda x: 1 / (1 + np.exp(-x.astype(np.float64))), "tanh": np.tanh,
    "sin": np.sin, "cos": np.cos, "tan": np.tan, "asin": np.arcsin, "erf": _erf,
    "gelu_erf": lambda x: 0.5 * x * (1 + _erf(x / np.sqrt(2))), "ceil": np.ceil, "floor": np.floor,
    "round": _round_away, "trunc": np.trunc, "nearbyint": np.rint, "signum": np.sign,
    "logical_not": np.logical_not, "bitwise_not": np.invert, "is_finite": np.isfinite, "is_nan": np.isnan,
    "popcount": lambda x: np.array([bin(int(v) & 0xFFFFFFFF).count("1") for v in x.flat]).reshape(x.shape),
}
EXACT = {"abs", "neg", "square", "ceil", "floor", "round", "trunc", "nearbyint", "signum", "logical_not",
         "bitwise_not", "is_finite", "is_nan", "popcount", "inv"}


def data(name, dtype, rng, shape=(4, 6)):
    if dtype == BOOL:
        return rng.integers(0, 2, shape).astype(bool)
    if dtype in (INT, UNSIGNED_INT):
        low = -1000 if dtype == INT else 0
        return rng.integers(low, 1000, shape).astype(dtype.numpy)
    if name in ("log", "sqrt", "rsqrt"):
        x = rng.uniform(0.01, 20, shape)
    elif name in ("log1p", "asin"):
        x = rng.uniform(-0.99, 0.99, shape)
    elif name in ("ceil", "floor", "round", "trunc", "nearbyint", "signum"):
        x = rng.integers(-40, 40, shape) / 4  # exact halves: the ties
        x.flat[:3] = [0.0, 1e9, -3e8] if dtype == FLOAT else [0.0, 3e4, -2e4]
    elif name in ("is_finite", "is_nan"):
        x = rng.uniform(-5, 5, shape)
        x.flat[:4] = [np.inf, -np.inf, np.nan, 0.0]
    else:
        x = rng.uniform(-3, 3, shape)
    if name == "inv":
        x[x == 0] = 0.5
    return x.astype(dtype.numpy)


def test_every_unary_op_has_a_reference():
    assert sorted(REFERENCES) == sorted(op.name for op in UNARY_OPS)


@pytest.mark.parametrize("dtype", [FLOAT, HALF, INT, UNSIGNED_INT, BOOL], ids=lambda t: t.name)
def test_unary_ops_against_numpy(small_device, dtype):
    g = popsim.Graph(small_device)
    rng = np.random.default_rng(11)
    prog, reads, writes, cases = Sequence(), [], {}, []
    for op in UNARY_OPS:
        if dtype not in op.types:
            continue
        x = g.add_variable(dtype, (4, 6), f"{op.name}_x")
        g.set_tile_mapping(x, MAPPING)
        vx = data(op.name, dtype, rng)
        out = getattr(popops, op.name)(g, x, prog)
        assert out.dtype == op.result_type(dtype)
        reads.append(out)
        writes[x] = vx
        cases.append((op.name, vx))
    assert cases
    _, results = run(g, small_device, prog, reads, writes)
    for (name, vx), got in zip(cases, results):
        expected = REFERENCES[name](vx)
        if name in EXACT:
            np.testing.assert_array_equal(got, expected.astype(got.dtype), err_msg=name)
        else:
            tolerance = dict(rtol=3e-6, atol=3e-7) if dtype == FLOAT else dict(rtol=2e-3, atol=1e-3)
            np.testing.assert_allclose(got.astype(np.float64), expected, err_msg=name, **tolerance)


def test_in_place_and_with_output(small_device):
    g = popsim.Graph(small_device)
    x = g.add_variable(HALF, (4, 6), "x")
    g.set_tile_mapping(x, MAPPING)
    y = g.add_variable(HALF, (4, 6), "y")
    g.set_tile_mapping(y, g.linear_mapping(y))
    nan = g.add_variable(BOOL, (4, 6), "nan")
    g.set_tile_mapping(nan, 2)
    prog = Sequence()
    popops.sqrt_with_output(g, x, y, prog)
    popops.is_nan_with_output(g, x, nan, prog)
    popops.exp_in_place(g, x, prog)
    vx = np.random.default_rng(5).uniform(0, 4, (4, 6)).astype(np.float16)
    vx[0, 0] = np.nan
    _, (got_x, got_y, got_nan) = run(g, small_device, prog, [x, y, nan], {x: vx})
    np.testing.assert_array_equal(got_y, np.sqrt(vx))  # computed in float32, rounded once to fp16
    np.testing.assert_array_equal(got_nan, np.isnan(vx))
    np.testing.assert_allclose(got_x, np.exp(vx), rtol=1e-3)


def test_unary_vertex_names(small_device):
    g = popsim.Graph(small_device)
    x = g.add_variable(FLOAT, (4, 6), "x")
    g.set_tile_mapping(x, MAPPING)
    prog = Sequence()
    popops.tanh_in_place(g, x, prog)
    engine, _ = run(g, small_device, prog, [], {})
    names = {v["name"] for v in engine.get_report().to_dict()["execution"]["vertex_types"]}
    assert names == {"popops::UnaryOp1DInPlace<TANH,float>",
                     "popops::UnaryOp2DInPlace<TANH,float>"}


def test_estimators_follow_the_poplibs_formulas():
    vw = popsim.Target.create_ipu_target().vector_width  # FLOAT 2, HALF 4
    # BinaryOp1D float ADD, 100 elements: 6 * (29 + ceil(17 / 2) * (1 + 2)) + 11
    assert vertex_cycles(BinaryOpType.ADD, FLOAT, False, False, [100], 6, vw(FLOAT)) == 6 * (29 + 9 * 3) + 11
    # BinaryOp2D half DIVIDE {21,F,4}, regions 10 and 3: 5 + ceil(10/4)*21 + ceil(3/4)*21
    assert vertex_cycles(BinaryOpType.DIVIDE, HALF, True, False, [10, 3], 6, vw(HALF)) == 5 + 3 * 21 + 1 * 21
    # BinaryOp1DInPlace int MULTIPLY {7,F,1}, 13 elements: 6 * (58 + 3 * 7) + 11
    assert vertex_cycles(BinaryOpType.MULTIPLY, INT, False, True, [13], 6, vw(INT)) == 6 * (58 + 21) + 11
    # BinaryOp2DInPlace half ADD natural (width 4, 1 + 2): 20 + ceil(9/4) * 3
    assert vertex_cycles(BinaryOpType.ADD, HALF, True, True, [9], 6, vw(HALF)) == 20 + 3 * 3
    # UnaryOp1D float EXPONENT {6,F,2}, 24 elements: 6 * (33 + ceil(4/2) * 6) + 9 + 11
    assert vertex_cycles(UnaryOpType.EXPONENT, FLOAT, False, False, [24], 6, vw(FLOAT)) == 6 * (33 + 12) + 20
    # UnaryOp2D half CEIL {2,T}: basicOpLoopCycles(n, 4, 2 + 4) = 6 * (n + 3) // 4
    assert vertex_cycles(UnaryOpType.CEIL, HALF, True, False, [10, 1], 6, vw(HALF)) == 20 + 6 * 13 // 4 + 6 * 4 // 4
    # UnaryOp1DInPlace float SIN {2300,F} (no unroll): basicOpLoopCycles(n, 1, 2304)
    assert vertex_cycles(UnaryOpType.SIN, FLOAT, False, True, [7], 6, vw(FLOAT)) == 6 * (55 + 2 * 2304) + 20


def test_the_vertex_runs_the_table_function():
    """UnaryOp2DInPlace<ABSOLUTE,float> is a plain Vertex with one InOut VectorList, and
    the docstring of popops.abs shows the table function's formula."""
    cls = TEMPLATES[(False, True, True)][UnaryOpType.ABSOLUTE, FLOAT]
    assert cls.vertex_name == "popops::UnaryOp2DInPlace<ABSOLUTE,float>"
    assert [(f.name, f.kind.name, f.direction.name) for f in fields_of(cls)[0]] == [("inOut", "VECTOR_LIST", "INOUT")]
    assert "abs(x) element by element" in popops.abs.__doc__


def test_errors(small_device):
    g = popsim.Graph(small_device)
    f = g.add_variable(FLOAT, (3,), "f")
    prog = Sequence()
    with pytest.raises(poputil.PoplibsError, match=re.escape("popops.popcount: POPCOUNT does not support FLOAT "
                                                             "(tensor 'f' (FLOAT, shape (3,))); it takes INT")):
        popops.popcount(g, f, prog)
    with pytest.raises(poputil.PoplibsError, match="popops.exp_in_place: the first operand is written in place and "
                                                   "must be a tensor, found float"):
        popops.exp_in_place(g, 1.0, prog)
    with pytest.raises(poputil.PoplibsError, match="popops.is_nan_in_place: IS_NAN gives BOOL results"):
        popops.is_nan_in_place(g, f, prog)
    with pytest.raises(poputil.PoplibsError, match="popops.neg_in_place: the in-place operand tensor 'k'.*constants"):
        popops.neg_in_place(g, g.add_constant(FLOAT, (3,), 1.0, "k"), prog)
    with pytest.raises(popsim.TypeError, match="operand 1 must be a popsim.Tensor or a number, found str"):
        popops.neg(g, "x", prog)
