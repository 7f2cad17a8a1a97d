"""popops.map, map_in_place and map_with_output on the engine, against numpy evaluating
the same expression: fixed expressions over every type, random expression trees and
broadcast shapes (hypothesis), the layout (one compute set, one vertex per one-region
tile), the generated vertex cached by the expression's structure, the estimator, errors."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import popsim
from popsim import BOOL, FLOAT, HALF, INT, UNSIGNED_INT, popops, poputil
from popsim.codelet import compiler
from popsim.popops import expr as pe
from popsim.popops.expr_typing import infer
from popsim.popops.map_vertices import map_vertex_cycles, vertex_class
from popsim.program import Sequence

from popops_harness import MAPPING, run

# numpy's meaning of the ops the tests use (C semantics where PopLibs has them)
NUMPY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "max": np.maximum, "min": np.minimum,
         "div": np.divide, "neg": np.negative, "abs": np.abs, "square": np.square, "tanh": np.tanh,
         "exp": np.exp, "sqrt": np.sqrt, "gt": np.greater, "lt": np.less, "eq": np.equal,
         "bitwise_and": np.bitwise_and, "logical_and": np.logical_and, "logical_not": np.logical_not,
         "is_finite": np.isfinite, "shift_right": np.right_shift,
         "rem": lambda a, b: np.fmod(a, b)}


def evaluate(node, arrays, dtype=None):
    """``node`` with numpy on ``arrays`` (constants as arrays of the operands' type)."""
    if isinstance(node, pe.PlaceHolder):
        return arrays[node.index - 1]
    if isinstance(node, pe.Const):
        return np.asarray(node.value, dtype=dtype)
    if isinstance(node, pe.Cast):
        return evaluate(node.arg, arrays).astype(node.dtype.numpy)
    if isinstance(node, pe.TernaryOp):
        values = node.args[:2] if node.op is pe.TernaryOpType.SELECT else node.args
        typed = [evaluate(a, arrays) for a in values if not isinstance(a, pe.Const)]
        kind = typed[0].dtype if typed else dtype
        a, b, c = (evaluate(x, arrays, kind) for x in node.args)
        if node.op is pe.TernaryOpType.SELECT:
            return np.where(c, a, b)
        return np.minimum(np.maximum(a, b), c)
    kids = pe.children(node)
    typed = [evaluate(k, arrays) for k in kids if not isinstance(k, pe.Const)]
    values = [evaluate(k, arrays, typed[0].dtype if typed else dtype) for k in kids]
    name = node.name
    if values[0].dtype == bool and name in ("bitwise_and", "bitwise_not"):
        name = {"bitwise_and": "logical_and", "bitwise_not": "logical_not"}[name]
    return NUMPY[name](*values)


@pytest.fixture
def g(small_device):
    return popsim.Graph(small_device)


def variable(g, dtype, shape, name, mapping=MAPPING):
    t = g.add_variable(dtype, shape, name)
    g.set_tile_mapping(t, mapping if mapping is not None else g.linear_mapping(t))
    return t


def test_map_float_with_broadcasting(g, small_device):
    a = variable(g, FLOAT, (4, 6), "a")
    b = variable(g, FLOAT, (6,), "b", 1)  # broadcast along the rows
    prog = Sequence()
    expr = pe._1 * 2 + pe.exp(pe._2)
    y = popops.map(g, expr, [a, b], prog, "fused")
    assert (y.dtype, tuple(y.shape)) == (FLOAT, (4, 6))
    assert g.get_tile_mapping(y) == g.get_tile_mapping(a)  # mapped like the full-shape input
    rng = np.random.default_rng(1)
    va, vb = rng.normal(size=(4, 6)).astype(np.float32), rng.normal(size=6).astype(np.float32)
    _, (got,) = run(g, small_device, prog, [y], {a: va, b: vb})
    np.testing.assert_allclose(got, va * 2 + np.exp(vb), rtol=1e-6)


def test_map_int_bool_and_casts(g, small_device):
    x = variable(g, FLOAT, (4, 6), "x")
    n = variable(g, INT, (4, 6), "n")
    m = variable(g, BOOL, (4, 6), "m")
    prog = Sequence()
    ints = popops.map(g, pe.Cast(pe._1, INT) % 3 + (pe._2 >> 1) * pe.select(pe._2, -pe._2, pe._3), [x, n, m], prog)
    bools = popops.map(g, (pe._1 > 0) & ~pe._2 & pe.is_finite(pe._1), [x, m], prog)
    clamped = popops.map(g, pe.clamp(pe._1, -5, 5) - pe.max(pe._1, 0), [n], prog)
    rng = np.random.default_rng(2)
    vx = (rng.integers(-80, 80, (4, 6)) / 8).astype(np.float32)
    vx[0, 0] = np.inf
    vn = rng.integers(-20, 20, (4, 6)).astype(np.int32)
    vm = rng.integers(0, 2, (4, 6)).astype(bool)
    _, (gi, gb, gc) = run(g, small_device, prog, [ints, bools, clamped], {x: vx, n: vn, m: vm})
    with np.errstate(invalid="ignore"):
        cast = np.trunc(vx).clip(-2 ** 31, 2 ** 31 - 1).astype(np.int32)
    cast[0, 0] = 2 ** 31 - 1  # float to int saturates
    expected = np.fmod(cast, 3) + (vn.view(np.uint32) >> 1).view(np.int32) * np.where(vm, vn, -vn)
    np.testing.assert_array_equal(gi, expected)
    np.testing.assert_array_equal(gb, (vx > 0) & ~vm & np.isfinite(vx))
    np.testing.assert_array_equal(gc, np.clip(vn, -5, 5) - np.maximum(vn, 0))
    assert (gi.dtype, gb.dtype) == (np.int32, np.bool_)


def test_map_half_and_unsigned(g, small_device):
    h = variable(g, HALF, (4, 6), "h")
    u = variable(g, UNSIGNED_INT, (4, 6), "u")
    prog = Sequence()
    yh = popops.map(g, pe.square(pe._1) * 0.5 + 1, [h], prog)
    yu = popops.map(g, (pe._1 + 7) / 2 - pe.min(pe._1, 3), [u], prog)
    vh = np.linspace(-3, 3, 24).reshape(4, 6).astype(np.float16)
    vu = np.arange(24, dtype=np.uint32).reshape(4, 6) * 1000
    _, (gh, gu) = run(g, small_device, prog, [yh, yu], {h: vh, u: vu})
    ref = vh.astype(np.float32) ** 2 * 0.5 + 1  # float32 intermediates, rounded to fp16 once
    np.testing.assert_array_equal(gh, ref.astype(np.float16))
    np.testing.assert_array_equal(gu, (vu + 7) // 2 - np.minimum(vu, 3))


def test_in_place_and_with_output(g, small_device):
    a = variable(g, FLOAT, (4, 6), "a")
    b = variable(g, FLOAT, (4, 6), "b", 2)
    out = variable(g, BOOL, (4, 6), "out", None)
    prog = Sequence()
    popops.map_with_output(g, pe._1 > pe._2, [a, b], out, prog)
    popops.map_in_place(g, pe.select(pe._1, pe.Const(0.0), pe._1 > 0), [a], prog)
    popops.map_in_place(g, pe._2 * 3, [b, a], prog)  # _1 unused: b = 3 * a
    va = np.linspace(-2, 2, 24, dtype=np.float32).reshape(4, 6)
    vb = np.full((4, 6), 0.5, np.float32)
    _, (ga, gb, go) = run(g, small_device, prog, [a, b, out], {a: va, b: vb})
    np.testing.assert_array_equal(go, va > vb)
    np.testing.assert_array_equal(ga, np.where(va > 0, va, 0))
    np.testing.assert_array_equal(gb, np.where(va > 0, va, 0) * 3)


def test_one_compute_set_one_vertex_per_tile(g, small_device):
    a = variable(g, FLOAT, (1000,), "a", None)  # linear: one region on each of the 4 tiles
    prog = Sequence()
    y = popops.map(g, pe.tanh(pe._1) * pe._1 - pe.abs(pe._1) + 1, [a], prog)
    engine, _ = run(g, small_device, prog, [y], {a: np.zeros(1000)})
    report = engine.get_report().to_dict()
    assert report["graph"]["num_compute_sets"] == 1
    assert report["graph"]["num_variables"] == 2  # a and y: no temporaries
    assert [cs["vertices"] for cs in report["execution"]["compute_sets"]] == [4]
    (vtype,) = report["execution"]["vertex_types"]
    assert vtype["name"].startswith("popops::map::MapExpr1D_") and vtype["instances"] == 4


def test_generated_vertex_cached_by_structure(small_device):
    expr_a, expr_b = pe._1 * 2 + pe.exp(pe._2), pe._2 * 2 + pe.exp(pe._1)  # same shape, other operands
    names = []
    for expr in (expr_a, expr_b):
        g = popsim.Graph(small_device)
        a, b = variable(g, FLOAT, (4, 6), "a"), variable(g, FLOAT, (4, 6), "b")
        prog = Sequence()
        popops.map(g, expr, [a, b], prog)
        popops.map(g, expr_a, [a, b], prog)  # a second map of the same expression: no new vertex type
        compiled = compiler.stats["compiled"]
        engine, _ = run(g, small_device, prog, [], {})
        names.append(sorted(v["name"] for v in engine.get_report().to_dict()["execution"]["vertex_types"]))
    assert len(names[0]) == 2  # 1D and 2D
    assert names[1] != names[0]  # _2 * 2 + exp(_1) is another structure...
    assert compiler.stats["compiled"] == compiled  # ...and the same shape compiled nothing new on a new graph
    typed = infer(expr_a, [FLOAT, FLOAT])
    assert vertex_class(typed, [FLOAT, FLOAT], FLOAT, False, False) is \
        vertex_class(infer(pe._1 * 2 + pe.exp(pe._2), [FLOAT, FLOAT]), [FLOAT, FLOAT], FLOAT, False, False)


def test_estimator_sums_the_table_costs():
    typed = infer(pe._1 * 2 + pe.exp(pe._2), [FLOAT, FLOAT])
    target = popsim.Target.create_ipu_target()  # vector widths FLOAT 2, HALF 4
    # 1D, 24 elements: 4 per worker; MULTIPLY and ADD {1,T} ext: ceil(4/2)*(1+2) each,
    # EXPONENT {6,F,2}: ceil(4/2)*6: 6 * (17 + 6 + 6 + 12) + 9 + 11
    assert map_vertex_cycles(typed, False, [24], 6, target) == 6 * (17 + 24) + 20
    # 2D, regions 5 and 2: 20 + (3*3 + 3*3 + 3*6) + (1*3 + 1*3 + 1*6)
    assert map_vertex_cycles(typed, True, [5, 2], 6, target) == 20 + 36 + 12
    # INT clamp: MAXIMUM {7,F,1} twice per element; 2D, one region of 4: 20 + 2 * 4 * 7
    assert map_vertex_cycles(infer(pe.clamp(pe._1, 0, 9), [INT]), True, [4], 6, target) == 20 + 56


def test_plain_elementwise_ops_unchanged(g, small_device):
    a, b = variable(g, FLOAT, (4, 6), "a"), variable(g, FLOAT, (4, 6), "b")
    prog = Sequence()
    added, mapped = popops.add(g, a, b, prog), popops.map(g, pe._1 + pe._2, [a, b], prog)
    va, vb = np.full((4, 6), 1.5, np.float32), np.arange(24, dtype=np.float32).reshape(4, 6)
    engine, (x, y) = run(g, small_device, prog, [added, mapped], {a: va, b: vb})
    np.testing.assert_array_equal(x, y)
    names = {v["name"] for v in engine.get_report().to_dict()["execution"]["vertex_types"]}
    assert "popops::BinaryOp1D<ADD,float>" in names


def test_errors(g):
    a = variable(g, FLOAT, (4, 6), "a")
    n = variable(g, INT, (4, 6), "n")
    prog = Sequence()
    with pytest.raises(poputil.PoplibsError,
                       match=r"popops.map: in add\(_1, _3\), at _3: placeholder _3 refers to tensor 3"):
        popops.map(g, pe._1 + pe._3, [a, a], prog)
    with pytest.raises(poputil.PoplibsError, match=r"operands of different types \(FLOAT, INT\)"):
        popops.map(g, pe._1 + pe._2, [a, n], prog)
    with pytest.raises(popsim.TypeError, match="tensors must be a list of popsim.Tensor .* write \\[t\\]"):
        popops.map(g, pe._1, a, prog)
    with pytest.raises(popsim.TypeError, match=r"tensors\[1\] \(_2\) must be a popsim.Tensor, found float"):
        popops.map(g, pe._1, [a, 2.0], prog)
    with pytest.raises(poputil.PoplibsError, match="no tensors given"):
        popops.map(g, pe.Const(1.0), [], prog)
    with pytest.raises(poputil.PoplibsError, match="the in-place tensor _1 tensor 'a' .* must be BOOL"):
        popops.map_in_place(g, pe._1 > 0, [a], prog)
    with pytest.raises(poputil.PoplibsError, match="in-place tensor _1 tensor 'k' .* contains constants"):
        popops.map_in_place(g, pe._1 + 1, [g.add_constant(FLOAT, (2,), 1.0, "k")], prog)
    with pytest.raises(poputil.PoplibsError, match="cannot broadcast"):
        popops.map_with_output(g, pe._1 * 2, [a], variable(g, FLOAT, (4, 5), "o", 0), prog)
    with pytest.raises(poputil.PoplibsError, match="popops.map: tensor 1 \\(_1\\) is SHORT"):
        popops.map(g, pe._1, [variable(g, popsim.SHORT, (4,), "s", 0)], prog)
    with pytest.raises(poputil.PoplibsError, match="prog must be a popsim.Sequence"):
        popops.map(g, pe._1, [a], None)
    assert len(prog) == 0  # nothing added by a refused call


_LEAVES = st.sampled_from([pe._1, pe._2, pe._3]) | st.floats(-2, 2, width=32).map(pe.Const)
_UNARY = ["neg", "abs", "square", "tanh"]
_BINARY = ["add", "sub", "mul", "max", "min"]


def _trees(leaves):
    return st.one_of(
        st.tuples(st.sampled_from(_UNARY), leaves).map(lambda t: getattr(pe, t[0])(t[1])),
        st.tuples(st.sampled_from(_BINARY), leaves, leaves).map(lambda t: getattr(pe, t[0])(t[1], t[2])),
        st.tuples(leaves, leaves, leaves, leaves).map(lambda t: pe.select(t[0], t[1], t[2] > t[3])),
        st.tuples(leaves, leaves).map(lambda t: pe.clamp(t[0], t[1], t[1] + 1)))


_EXPRESSIONS = st.recursive(_LEAVES, _trees, max_leaves=8)
# shapes that broadcast to (3, 4): full, a row, a column, a scalar
_SHAPES = st.sampled_from([(3, 4), (4,), (3, 1), (1,), ()])


@settings(max_examples=25, deadline=None)
@given(expr=_EXPRESSIONS, shapes=st.tuples(st.just((3, 4)), _SHAPES, _SHAPES), seed=st.integers(0, 99))
def test_random_expressions_against_numpy(expr, shapes, seed):
    model = popsim.IPUModel("ipu2")  # conftest's small_device, made per example
    model.tiles_per_ipu = 4
    small_device = model.create_device()
    g = popsim.Graph(small_device)
    tensors = [variable(g, FLOAT, shape, f"t{i}", i % 4) if i else variable(g, FLOAT, shape, "t0", None)
               for i, shape in enumerate(shapes)]
    rng = np.random.default_rng(seed)
    values = [rng.uniform(-2, 2, shape).astype(np.float32) for shape in shapes]
    prog = Sequence()
    y = popops.map(g, expr, tensors, prog)
    _, (got,) = run(g, small_device, prog, [y], dict(zip(tensors, values)))
    expected = np.broadcast_to(evaluate(expr, values, np.float32), (3, 4))
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6, err_msg=repr(expr))
