"""popops binary element-wise ops run on the engine against numpy references (with C's
truncating integer division and logical right shift), on tensors spread over tiles with
one region (1D vertices) and several regions (2D vertices) per tile."""
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import popsim
from popsim import BOOL, FLOAT, HALF, INT, UNSIGNED_INT, popops, poputil
from popsim.popops.elementwise_ops import BINARY_OPS, OPS
from popsim.program import Sequence

from popops_harness import MAPPING, mapped, run


def _trunc_div(a, b):
    q = np.abs(a.astype(np.int64)) // np.abs(b.astype(np.int64))
    return (np.sign(a.astype(np.int64)) * np.sign(b.astype(np.int64)) * q).astype(a.dtype)


REFERENCES = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply,
    "div": lambda a, b: _trunc_div(a, b) if a.dtype.kind in "iu" else a / b,
    "pow": lambda a, b: np.power(a, b), "rem": lambda a, b: (a - _trunc_div(a, b) * b) if a.dtype.kind in "iu"
    else np.fmod(a, b), "max": np.maximum, "min": np.minimum, "atan2": np.arctan2,
    "eq": np.equal, "neq": np.not_equal, "lt": np.less, "lteq": np.less_equal, "gt": np.greater,
    "gteq": np.greater_equal, "logical_and": np.logical_and, "logical_or": np.logical_or,
    "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor,
    "bitwise_xnor": lambda a, b: np.invert(np.bitwise_xor(a, b)), "shift_left": np.left_shift,
    "shift_right": lambda a, b: (a.view(np.uint32) >> b.view(np.uint32)).view(a.dtype),
}


@pytest.fixture
def g(small_device):
    return popsim.Graph(small_device)


def operands(name, dtype, rng, shape=(4, 6)):
    """Data an op is defined on: no zero divisors, shifts below 32, small integer powers."""
    np_type = dtype.numpy
    if dtype == BOOL:
        return rng.integers(0, 2, shape).astype(bool), rng.integers(0, 2, shape).astype(bool)
    if name in ("shift_left", "shift_right"):
        return rng.integers(-1000 if dtype == INT else 0, 1000, shape).astype(np_type), \
            rng.integers(0, 32, shape).astype(np_type)
    if name == "pow":
        if dtype == INT:
            return rng.integers(-5, 6, shape).astype(np_type), rng.integers(0, 6, shape).astype(np_type)
        return rng.uniform(0.1, 3, shape).astype(np_type), rng.uniform(-2, 2, shape).astype(np_type)
    if dtype in (INT, UNSIGNED_INT):
        low = 0 if dtype == UNSIGNED_INT else -100
        a, b = rng.integers(low, 100, shape).astype(np_type), rng.integers(low, 100, shape).astype(np_type)
    else:
        a, b = (rng.integers(-40, 40, shape) / 4).astype(np_type), (rng.integers(-40, 40, shape) / 4).astype(np_type)
    b.flat[:3] = a.flat[:3]  # some equal pairs for the comparisons
    if name in ("div", "rem"):
        b[b == 0] = 3
    return a, b


def check(name, got, a, b):
    expected = REFERENCES[name](a, b)
    assert got.dtype == expected.dtype or got.dtype == bool, (name, got.dtype, expected.dtype)
    if name in ("pow", "atan2") and a.dtype.kind == "f":
        np.testing.assert_allclose(got, expected, rtol=1e-6 if a.dtype == np.float32 else 1e-3, err_msg=name)
    else:
        np.testing.assert_array_equal(got, expected, err_msg=name)


def test_every_binary_op_has_a_reference():
    assert sorted(REFERENCES) == sorted(op.name for op in BINARY_OPS)


@pytest.mark.parametrize("dtype", [FLOAT, HALF, INT, UNSIGNED_INT, BOOL], ids=lambda t: t.name)
def test_binary_ops_against_numpy(g, small_device, dtype):
    rng = np.random.default_rng(7)
    prog, reads, writes, data = Sequence(), [], {}, []
    for op in BINARY_OPS:
        if dtype not in op.types:
            continue
        a = g.add_variable(dtype, (4, 6), f"{op.name}_a")
        g.set_tile_mapping(a, MAPPING)
        b = g.add_variable(dtype, (4, 6), f"{op.name}_b")
        g.set_tile_mapping(b, g.linear_mapping(b))
        va, vb = operands(op.name, dtype, rng)
        out = getattr(popops, op.name)(g, a, b, prog)
        assert out.dtype == op.result_type(dtype) and g.get_tile_mapping(out) == MAPPING
        reads.append(out)
        writes.update({a: va, b: vb})
        data.append((op.name, va, vb))
    _, results = run(g, small_device, prog, reads, writes)
    for (name, va, vb), got in zip(data, results):
        check(name, got, va, vb)


@pytest.mark.parametrize("dtype", [FLOAT, HALF, INT], ids=lambda t: t.name)
def test_in_place_and_with_output(g, small_device, dtype):
    rng = np.random.default_rng(3)
    prog, writes, expected = Sequence(), {}, []
    for name in ("add", "sub", "mul", "div", "max", "rem"):
        a = g.add_variable(dtype, (4, 6), f"{name}_a")
        g.set_tile_mapping(a, MAPPING)
        b = g.add_variable(dtype, (6,), f"{name}_b")  # broadcast along rows
        g.set_tile_mapping(b, 3)
        out = g.add_variable(dtype, (4, 6), f"{name}_out")
        g.set_tile_mapping(out, g.linear_mapping(out))
        va, vb = operands(name, dtype, rng)
        vb = vb[0]
        getattr(popops, f"{name}_with_output")(g, a, b, out, prog)
        assert getattr(popops, f"{name}_in_place")(g, a, b, prog) is None
        writes.update({a: va, b: vb})
        expected += [(name, out, va, np.broadcast_to(vb, va.shape)), (name, a, va, np.broadcast_to(vb, va.shape))]
    _, results = run(g, small_device, prog, [e[1] for e in expected], writes)
    for (name, _, va, vb), got in zip(expected, results):
        check(name, got, va, vb)


@settings(max_examples=12, deadline=None)
@given(shapes=st.sampled_from([((3, 1), (1, 5)), ((5,), (2, 3, 5)), ((2, 1, 4), (3, 1)), ((7,), ()),
                               ((), (4, 2)), ((1,), (6,))]),
       scalar_side=st.sampled_from([None, 0, 1]), seed=st.integers(0, 1000))
def test_broadcasting_and_scalars(shapes, scalar_side, seed):
    model = popsim.IPUModel("ipu2")
    model.tiles_per_ipu = 4
    device = model.create_device()
    g = popsim.Graph(device)
    rng = np.random.default_rng(seed)
    tensors, values = [], []
    for i, shape in enumerate(shapes):
        t = g.add_variable(FLOAT, shape, f"t{i}")
        g.set_tile_mapping(t, g.linear_mapping(t) if t.num_elements() > 1 else i)
        tensors.append(t)
        values.append(rng.uniform(-4, 4, shape).astype(np.float32))
    operands_ = list(tensors)
    if scalar_side is not None:
        operands_[scalar_side] = 2.5
        values[scalar_side] = np.float32(2.5)
    prog = Sequence()
    outs = [popops.sub(g, *operands_, prog), popops.gt(g, *operands_, prog)]
    writes = {t: v for t, v, o in zip(tensors, values, operands_) if o is t}
    _, (diff, greater) = run(g, device, prog, outs, writes)
    np.testing.assert_array_equal(diff, np.subtract(*values))
    np.testing.assert_array_equal(greater, np.greater(*values))


def test_scalar_operands_take_the_tensor_type(g, small_device):
    a = g.add_variable(INT, (8,), "a")
    g.set_tile_mapping(a, 1)
    prog = Sequence()
    left, right = popops.sub(g, 100, a, prog), popops.shift_left(g, a, 2, prog)
    va = np.arange(8, dtype=np.int32) - 3
    _, (got_l, got_r) = run(g, small_device, prog, [left, right], {a: va})
    np.testing.assert_array_equal(got_l, 100 - va)
    np.testing.assert_array_equal(got_r, va << 2)


def test_vertex_names_and_estimates_in_the_report(g, small_device):
    a = g.add_variable(FLOAT, (4, 6), "a")
    g.set_tile_mapping(a, MAPPING)
    prog = Sequence()
    popops.add(g, a, a, prog, "Add")
    engine, _ = run(g, small_device, prog, [], {})
    kinds = {v["name"]: v for v in engine.get_report().to_dict()["execution"]["vertex_types"]}
    one_d = "popops::BinaryOp1D<ADD,float>"
    two_d = "popops::BinaryOp2D<ADD,float>"
    assert kinds[one_d]["instances"] == 2  # tiles 0 and 3 hold one region each
    assert kinds[two_d]["instances"] >= 2
    # 1D float ADD over n elements: 6 * (29 + ceil(ceil(n/6)/2) * (1 + 2)) + 11 tile cycles
    # (PopLibs' cycle estimators), charged as ceil(that / 6) on each of the 6 workers
    tile0, tile3 = 6 * (29 + 1 * 3) + 11, 6 * (29 + 1 * 3) + 11
    assert kinds[one_d]["cycles"] == 6 * (-(-tile0 // 6)) + 6 * (-(-tile3 // 6))
    assert "Add" in [c["name"] for c in engine.get_report().to_dict()["execution"]["compute_sets"]]


def test_errors(g, small_device):
    a = g.add_variable(FLOAT, (4, 6), "a")
    g.set_tile_mapping(a, MAPPING)
    prog = Sequence()
    with pytest.raises(poputil.PoplibsError, match=re.escape("popops.add: cannot broadcast tensor 'a' of shape "
                                                             "(4, 6), tensor 'w' of shape (5,)")):
        popops.add(g, a, g.add_variable(FLOAT, (5,), "w"), prog)
    c = g.add_constant(FLOAT, (4, 6), 1.0, "ones")
    with pytest.raises(poputil.PoplibsError, match="popops.add_in_place: the in-place operand tensor 'ones'.*"
                                                   "contains constants"):
        popops.add_in_place(g, c, a, prog)
    row = g.add_variable(FLOAT, (6,), "row")
    with pytest.raises(poputil.PoplibsError, match=r"popops.mul_with_output: the output tensor 'row' \(FLOAT, shape "
                                                   r"\(4, 6\)\) has elements that alias"):
        popops.mul_with_output(g, a, a, poputil.broadcast_to_match(row, (4, 6)), prog)
    with pytest.raises(poputil.PoplibsError, match=r"popops.bitwise_and: BITWISE_AND does not support FLOAT "
                                                   r"\(tensor 'a'.*it takes INT, UNSIGNED_INT"):
        popops.bitwise_and(g, a, a, prog)
    with pytest.raises(poputil.PoplibsError, match="popops.sub: operand 2 'v' belongs to another graph"):
        popops.sub(g, a, popsim.Graph(small_device).add_variable(FLOAT, (4, 6), "v"), prog)
    with pytest.raises(poputil.PoplibsError, match="popops.add: operands must have one element type, found tensor "
                                                   "'a' .FLOAT.*tensor 'i' .INT"):
        popops.add(g, a, g.add_variable(INT, (4, 6), "i"), prog)
    with pytest.raises(poputil.PoplibsError, match="popops.lt_in_place: LESS_THAN gives BOOL results"):
        popops.lt_in_place(g, a, 1.0, prog)
    with pytest.raises(poputil.PoplibsError, match="the in-place operand tensor 'row'.*broadcast shape \\(4, 6\\)"):
        popops.add_in_place(g, row, a, prog)
    with pytest.raises(poputil.PoplibsError, match="popops.add_with_output: the output tensor 'o' .INT.*must be "
                                                   "FLOAT of shape \\(4, 6\\)"):
        popops.add_with_output(g, a, a, g.add_variable(INT, (4, 6), "o"), prog)
    i = g.add_variable(INT, (3,), "ints")
    with pytest.raises(poputil.PoplibsError, match=r"popops.add: the scalar 1.5 does not fit tensor 'ints'"):
        popops.add(g, i, 1.5, prog)
    with pytest.raises(poputil.PoplibsError, match="popops.add: needs at least one tensor operand"):
        popops.add(g, 1, 2, prog)
    with pytest.raises(poputil.PoplibsError, match="prog must be a popsim.Sequence"):
        popops.add(g, a, a, None)
    assert g.num_vertices == 0  # nothing was added by the refused calls
    assert OPS["add"].result_type(FLOAT) == FLOAT and OPS["eq"].result_type(INT) == BOOL


@pytest.mark.parametrize("first, second", [(slice(None), slice(None)), (slice(1, None), slice(None, -1)),
                                            (slice(None, -1), slice(1, None)), (slice(None), slice(None, None, -1))])
def test_an_in_place_operand_aliasing_the_other_reads_values_from_before_the_op(g, small_device, first, second):
    """add_in_place(g, a, a) (legal in PopLibs, and under the race check) doubles a; an
    overlapping shifted or reversed view reads every element as it was before the op."""
    a = mapped(g, FLOAT, "a", shape=(24,))
    prog = Sequence()
    popops.sub_in_place(g, a[first], a[second], prog)
    before = np.arange(24, dtype=np.float32) ** 2
    want = before.copy()
    want[first] = before[first] - before[second]
    _, (got,) = run(g, small_device, prog, [a], {a: before})
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype, value", [(FLOAT, 1e300), (FLOAT, 10 ** 400), (INT, 2 ** 100), (INT, float("inf"))])
def test_a_scalar_operand_that_fits_no_value_of_the_type(g, dtype, value):
    """An integer past 64 bits was numpy's OverflowError; 1e300 became inf in FLOAT unseen."""
    t = g.add_variable(dtype, (4, 6), "t")
    g.set_tile_mapping(t, MAPPING)
    with pytest.raises(poputil.PoplibsError, match="popops.add: the scalar .* does not fit tensor 't'"):
        popops.add(g, t, value, Sequence())
