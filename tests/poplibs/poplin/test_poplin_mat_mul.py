"""The public matmul API (poplin.mat_mul and friends) against numpy: shapes, transposed
operands as views, grouped, accumulate with a number or a tensor scale, output types,
plan-consistent creators; and bad input."""
import numpy as np
import pytest

import popsim
from popsim import FLOAT, HALF, INT, poplin
from popsim.poputil import PoplibsError, map_tensor_linearly
from popsim.program import Sequence

from poplin_harness import run_program, small_device




def _var(g, dtype, shape, name):
    t = g.add_variable(dtype, shape, name)
    map_tensor_linearly(g, t)
    return t


@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (17, 33, 9), (64, 48, 40)])
def test_mat_mul(m, k, n):
    device = small_device()
    g = popsim.Graph(device)
    a, b = _var(g, FLOAT, (m, k), "a"), _var(g, FLOAT, (k, n), "b")
    prog = Sequence()
    c = poplin.mat_mul(g, a, b, prog, "mm")
    assert c.shape == (m, n) and c.dtype == FLOAT
    rng = np.random.default_rng(m)
    ha, hb = rng.standard_normal((m, k)), rng.standard_normal((k, n))
    got, = run_program(g, device, prog, {a: ha, b: hb}, [c])
    np.testing.assert_allclose(got, ha.astype(np.float32) @ hb.astype(np.float32), rtol=1e-4, atol=1e-4)


def test_transposed_operands_are_views():
    device = small_device()
    g = popsim.Graph(device)
    at, bt = _var(g, FLOAT, (20, 12), "at"), _var(g, FLOAT, (30, 20), "bt")
    prog = Sequence()
    c = poplin.mat_mul(g, at.transpose(), bt.transpose(), prog)
    rng = np.random.default_rng(1)
    ha, hb = rng.standard_normal((20, 12)), rng.standard_normal((30, 20))
    got, = run_program(g, device, prog, {at: ha, bt: hb}, [c])
    np.testing.assert_allclose(got, ha.T @ hb.T, rtol=1e-4, atol=1e-4)


def test_grouped_with_output_and_acc_tensor_scale():
    device = small_device()
    g = popsim.Graph(device)
    a, b = _var(g, FLOAT, (3, 5, 7), "a"), _var(g, FLOAT, (3, 7, 4), "b")
    out, acc = _var(g, FLOAT, (3, 5, 4), "out"), _var(g, FLOAT, (3, 5, 4), "acc")
    k = _var(g, FLOAT, (), "k")
    prog = Sequence()
    c = poplin.mat_mul_grouped(g, a, b, prog)
    poplin.mat_mul_grouped_with_output(g, a, b, out, prog)
    poplin.mat_mul_grouped_acc(g, acc, k, a, b, prog)
    rng = np.random.default_rng(2)
    ha, hb, hacc = rng.standard_normal((3, 5, 7)), rng.standard_normal((3, 7, 4)), rng.standard_normal((3, 5, 4))
    got_c, got_out, got_acc = run_program(g, device, prog, {a: ha, b: hb, acc: hacc, k: 0.25}, [c, out, acc])
    expected = ha @ hb
    np.testing.assert_allclose(got_c, expected, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got_out, expected, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got_acc, hacc + 0.25 * expected, rtol=1e-4, atol=1e-4)


def test_mat_mul_acc_number_and_with_output():
    device = small_device()
    g = popsim.Graph(device)
    a, b, c, out = (_var(g, FLOAT, s, nm) for s, nm in (((6, 8), "a"), ((8, 10), "b"), ((6, 10), "c"),
                                                       ((6, 10), "out")))
    prog = Sequence()
    poplin.mat_mul_acc(g, c, 2.0, a, b, prog)
    poplin.mat_mul_with_output(g, a, b, out, prog)
    rng = np.random.default_rng(3)
    ha, hb, hc = rng.standard_normal((6, 8)), rng.standard_normal((8, 10)), rng.standard_normal((6, 10))
    got_c, got_out = run_program(g, device, prog, {a: ha, b: hb, c: hc}, [c, out])
    np.testing.assert_allclose(got_c, hc + 2.0 * ha @ hb, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got_out, ha @ hb, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("partials", ["float", "half"])
@pytest.mark.parametrize("output_type", [None, FLOAT])
def test_half_inputs_and_output_types(partials, output_type):
    device = small_device()
    g = popsim.Graph(device)
    a, b = _var(g, HALF, (9, 16), "a"), _var(g, HALF, (16, 11), "b")
    prog = Sequence()
    c = poplin.mat_mul(g, a, b, prog, options={"partialsType": partials}, output_type=output_type)
    assert c.dtype == (output_type or HALF)
    rng = np.random.default_rng(4)
    ha, hb = rng.standard_normal((9, 16)).astype(np.float16), rng.standard_normal((16, 11)).astype(np.float16)
    got, = run_program(g, device, prog, {a: ha, b: hb}, [c])
    np.testing.assert_allclose(got, ha.astype(np.float64) @ hb.astype(np.float64), rtol=2e-2, atol=5e-2)


def test_created_inputs_follow_the_plan():
    device = small_device()
    g = popsim.Graph(device)
    a = poplin.create_mat_mul_input_lhs(g, FLOAT, (40, 24), (24, 48), "a")
    b = poplin.create_mat_mul_input_rhs(g, FLOAT, (40, 24), (24, 48), "b")
    assert a.shape == (40, 24) and b.shape == (24, 48)
    # every element mapped, spread over several tiles
    for t in (a, b):
        mapping = g.get_tile_mapping(t)
        assert sum(e - s for regions in mapping for s, e in regions) == t.num_elements()
        assert sum(1 for regions in mapping if regions) > 1
    prog = Sequence()
    c = poplin.mat_mul(g, a, b, prog)
    rng = np.random.default_rng(5)
    ha, hb = rng.standard_normal((40, 24)), rng.standard_normal((24, 48))
    got, = run_program(g, device, prog, {a: ha, b: hb}, [c])
    np.testing.assert_allclose(got, ha @ hb, rtol=1e-4, atol=1e-4)


def test_errors():
    device = small_device()
    g = popsim.Graph(device)
    a, b = _var(g, FLOAT, (4, 5), "lhs"), _var(g, FLOAT, (6, 3), "rhs")
    prog = Sequence()
    with pytest.raises(PoplibsError, match=r"lhs' of shape \(4, 5\) and B 'rhs' of shape \(6, 3\) do not multiply"):
        poplin.mat_mul(g, a, b, prog)
    with pytest.raises(PoplibsError, match="must have rank 2"):
        poplin.mat_mul(g, _var(g, FLOAT, (2, 4, 5), "a3"), b, prog)
    with pytest.raises(PoplibsError, match="must have rank 3"):
        poplin.mat_mul_grouped(g, a, b, prog)
    with pytest.raises(PoplibsError, match="must be FLOAT or HALF, found"):
        poplin.mat_mul(g, _var(g, INT, (4, 5), "i"), _var(g, INT, (5, 3), "j"), prog)
    with pytest.raises(PoplibsError, match="must have the same type"):
        poplin.mat_mul(g, a, _var(g, HALF, (5, 3), "h"), prog)
    with pytest.raises(PoplibsError, match="output_type must be FLOAT or HALF"):
        poplin.mat_mul(g, a, _var(g, FLOAT, (5, 3), "ok"), prog, output_type=INT)
    with pytest.raises(PoplibsError, match=r"C 'c' must have shape \(4, 3\)"):
        poplin.mat_mul_acc(g, _var(g, FLOAT, (4, 4), "c"), 1.0, a, _var(g, FLOAT, (5, 3), "b2"), prog)
    with pytest.raises(PoplibsError, match="scale k must be a number"):
        poplin.mat_mul_acc(g, _var(g, FLOAT, (4, 3), "c2"), "x", a, _var(g, FLOAT, (5, 3), "b3"), prog)
    with pytest.raises(PoplibsError, match=r"do not multiply"):
        poplin.create_mat_mul_input_lhs(g, FLOAT, (4, 5), (6, 3), "x")


@pytest.mark.parametrize("a_shape, b_shape", [((4, 0), (0, 3)), ((70, 0), (0, 50)), ((2, 5, 0), (2, 0, 3))])
def test_an_inner_dimension_of_zero_gives_zeros(a_shape, b_shape):
    """PopLibs' semantics (a convolution without input channels is its getZeroConv): A [M, 0]
    @ B [0, N] is an [M, N] of zeros, through the normal path: planned (as K = 1), created
    as the plan lays it out, and zeroed by the program. mat_mul_acc adds nothing. It was a
    ZeroDivisionError in the planner."""
    device = small_device()
    g = popsim.Graph(device)
    a, b = _var(g, FLOAT, a_shape, "a"), _var(g, FLOAT, b_shape, "b")
    grouped = len(a_shape) == 3
    prog = Sequence()
    c = (poplin.mat_mul_grouped if grouped else poplin.mat_mul)(g, a, b, prog)
    shape = a_shape[:-1] + b_shape[-1:]
    assert c.shape == shape
    assert sum(n for tile in g.get_tile_mapping(c) for b0, e in tile for n in [e - b0]) == c.num_elements()
    acc = _var(g, FLOAT, shape, "acc")
    (poplin.mat_mul_grouped_acc if grouped else poplin.mat_mul_acc)(g, acc, 2.0, a, b, prog)
    # garbage in c beforehand: the program must zero it
    got_c, got_acc = run_program(g, device, prog, {c: np.full(shape, 7.0), acc: np.full(shape, 3.0)}, [c, acc])
    np.testing.assert_array_equal(got_c, np.zeros(shape))
    np.testing.assert_array_equal(got_acc, np.full(shape, 3.0))


def test_empty_matmuls_are_empty():
    """M, N or G of 0: an empty result (it was 'no plan satisfies' a convolution of those sizes)."""
    g = popsim.Graph(small_device())
    for a_shape, b_shape in (((0, 3), (3, 4)), ((4, 3), (3, 0)), ((0, 0), (0, 0))):
        assert poplin.mat_mul(g, _var(g, FLOAT, a_shape, "a"), _var(g, FLOAT, b_shape, "b"), Sequence()).shape == \
            (a_shape[0], b_shape[1])
    assert poplin.mat_mul_grouped(g, _var(g, FLOAT, (0, 4, 3), "a"), _var(g, FLOAT, (0, 3, 2), "b"),
                                  Sequence()).shape == (0, 4, 2)


@pytest.mark.parametrize("call, message", [
    (lambda g, a, b: poplin.mat_mul(g, a, b, None), "prog must be a popsim.Sequence"),
    (lambda g, a, b: poplin.create_mat_mul_input_lhs(g, FLOAT, 1.5, (3, 2)), "a_shape must be a list of whole "
                                                                              "numbers, found float"),
    (lambda g, a, b: poplin.create_mat_mul_input_rhs(g, FLOAT, (4, "3"), (3, 2)), "a_shape must be whole numbers, "
                                                                                  "found str '3'"),
    (lambda g, a, b: poplin.create_mat_mul_input_lhs(g, np.zeros(2), (4, 3), (3, 2)), "the input type must be FLOAT "
                                                                                      "or HALF"),
])
def test_arguments_of_the_wrong_kind(call, message):
    """Found by tests/poplibs/test_poplibs_fuzz.py: an AttributeError half-way through
    (prog None), int() of a string or a float, the truth value of an array."""
    g = popsim.Graph(small_device())
    with pytest.raises(PoplibsError, match=message):
        call(g, _var(g, FLOAT, (4, 3), "a"), _var(g, FLOAT, (3, 2), "b"))
