"""popnn softmax (SOFTMAX, SOFTMAX_STABLE, SOFTMAX_SCALED) and log-softmax over the
innermost dimension: forward, in place and gradient against numpy float64 and finite
differences, rows summing to 1 / 62000, FLOAT and HALF, ranks 1 to 3, several mappings,
bad input."""
import numpy as np
import pytest

import popsim
from popsim import FLOAT, HALF, INT, popnn, poputil
from popsim.popnn import NonLinearityType as NL

from popnn_nl_harness import run, variable

SOFTMAXES = [NL.SOFTMAX, NL.SOFTMAX_STABLE, NL.SOFTMAX_SCALED]


def ref_softmax(nl, x):
    x = np.asarray(x, np.float64)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True) * (62000.0 if nl is NL.SOFTMAX_SCALED else 1.0)


def ref_softmax_gradient(nl, x, dy):
    """J^T dy per row, J the softmax's Jacobian: scale * p * (dy - sum(p * dy))."""
    p = ref_softmax(NL.SOFTMAX, x)
    scale = 62000.0 if nl is NL.SOFTMAX_SCALED else 1.0
    return scale * p * (dy - (p * dy).sum(axis=-1, keepdims=True))


def ref_log_softmax(x):
    x = np.asarray(x, np.float64)
    m = x.max(axis=-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))


def finite_difference_gradient(f, x, dy, h=1e-6):
    """d(sum(dy * f(x)))/dx element by element, by central differences."""
    grad = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[index] += h
        down[index] -= h
        grad[index] = ((dy * f(up)).sum() - (dy * f(down)).sum()) / (2 * h)
    return grad


def tolerance(nl, dtype):
    scale = 62000.0 if nl is NL.SOFTMAX_SCALED else 1.0
    return dict(rtol=1e-5, atol=1e-6 * scale) if dtype == FLOAT else dict(rtol=1e-2, atol=2e-3 * scale)


@pytest.mark.parametrize("dtype", [FLOAT, HALF])
@pytest.mark.parametrize("nl", SOFTMAXES)
@pytest.mark.parametrize("shape, mapping", [((3, 7), "scattered"), ((11,), "linear"), ((2, 3, 5), "scattered")])
def test_softmax_matches_numpy(g, small_device, nl, dtype, shape, mapping):
    rng = np.random.default_rng(10)
    x = variable(g, dtype, shape, "x", mapping, rng)
    prog = popsim.Sequence()
    y = popnn.non_linearity(g, nl, x, prog)
    assert y.shape == x.shape and y.dtype == dtype
    values = rng.normal(0, 2, size=shape).astype(dtype.numpy)
    _, (got,) = run(g, small_device, prog, {x: values}, [y])
    expected = ref_softmax(nl, values.astype(np.float64))
    np.testing.assert_allclose(got, expected, **tolerance(nl, dtype))
    total = 62000.0 if nl is NL.SOFTMAX_SCALED else 1.0
    np.testing.assert_allclose(got.sum(axis=-1), total, rtol=1e-5 if dtype == FLOAT else 1e-2)


@pytest.mark.parametrize("nl", SOFTMAXES)
def test_softmax_in_place_and_wrappers(g, small_device, nl):
    rng = np.random.default_rng(11)
    fn = {NL.SOFTMAX: "softmax", NL.SOFTMAX_STABLE: "softmax_stable", NL.SOFTMAX_SCALED: "scaled_softmax_stable"}[nl]
    x = variable(g, FLOAT, (4, 9), "x", "scattered", rng)
    z = variable(g, FLOAT, (4, 9), "z")
    prog = popsim.Sequence()
    y = getattr(popnn, fn)(g, x, prog)
    getattr(popnn, fn + "_in_place")(g, z, prog)
    values = rng.normal(size=(4, 9))
    _, (got, got_in_place) = run(g, small_device, prog, {x: values, z: values}, [y, z])
    np.testing.assert_allclose(got, ref_softmax(nl, values.astype(np.float32)), **tolerance(nl, FLOAT))
    np.testing.assert_allclose(got_in_place, got, **tolerance(nl, FLOAT))
    assert popnn.non_linearity_scaling(nl) == (62000.0 if nl is NL.SOFTMAX_SCALED else 1.0)


def test_stable_softmax_survives_large_inputs(g, small_device):
    x = variable(g, FLOAT, (2, 4), "x")
    prog = popsim.Sequence()
    y = popnn.softmax_stable(g, x, prog)
    values = np.array([[1000.0, 1001.0, 999.0, 1000.5], [-1000.0, -999.0, -1001.0, -998.0]])
    _, (got,) = run(g, small_device, prog, {x: values}, [y])
    np.testing.assert_allclose(got, ref_softmax(NL.SOFTMAX_STABLE, values), rtol=1e-5, atol=1e-7)


def test_softmax_batch_32_by_10(device):
    """The MNIST example's logits on the full device."""
    g = popsim.Graph(device)
    rng = np.random.default_rng(12)
    x = variable(g, FLOAT, (32, 10), "logits")
    dy = variable(g, FLOAT, (32, 10), "dy")
    prog = popsim.Sequence()
    y = popnn.non_linearity(g, NL.SOFTMAX_STABLE, x, prog)
    dx = popnn.non_linearity_input_gradient(g, NL.SOFTMAX_STABLE, y, dy, prog)
    values, grads = rng.normal(size=(32, 10)), rng.normal(size=(32, 10))
    _, (got, got_dx) = run(g, device, prog, {x: values, dy: grads}, [y, dx])
    np.testing.assert_allclose(got, ref_softmax(NL.SOFTMAX, values.astype(np.float32)), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(got_dx, ref_softmax_gradient(NL.SOFTMAX, values.astype(np.float32),
                                                            grads.astype(np.float32)), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("dtype", [FLOAT, HALF])
@pytest.mark.parametrize("nl", SOFTMAXES)
def test_softmax_gradient_matches_numpy_and_finite_differences(g, small_device, nl, dtype):
    rng = np.random.default_rng(13)
    act = variable(g, dtype, (3, 6), "act", "scattered", rng)
    out_grad = variable(g, dtype, (3, 6), "outGrad", "scattered", rng)
    prog = popsim.Sequence()
    in_grad = popnn.non_linearity_input_gradient(g, nl, act, out_grad, prog)
    assert in_grad.shape == act.shape and in_grad.dtype == dtype
    x = rng.normal(size=(3, 6))
    dy = rng.uniform(-1, 1, size=(3, 6)).astype(dtype.numpy).astype(np.float64)
    y = ref_softmax(nl, x).astype(dtype.numpy)  # the activation: the forward output
    _, (got,) = run(g, small_device, prog, {act: y, out_grad: dy}, [in_grad])
    expected = ref_softmax_gradient(nl, x, dy)
    scale = 62000.0 if nl is NL.SOFTMAX_SCALED else 1.0
    tol = dict(rtol=1e-4, atol=1e-6 * scale) if dtype == FLOAT else dict(rtol=2e-2, atol=1e-2 * scale)
    np.testing.assert_allclose(got, expected, **tol)
    np.testing.assert_allclose(got, finite_difference_gradient(lambda v: ref_softmax(nl, v), x, dy), **tol)


@pytest.mark.parametrize("dtype", [FLOAT, HALF])
@pytest.mark.parametrize("shape", [(4, 7), (13,), (2, 2, 5)])
def test_log_softmax(g, small_device, dtype, shape):
    rng = np.random.default_rng(14)
    x = variable(g, dtype, shape, "x", "scattered", rng)
    z = variable(g, dtype, shape, "z")
    prog = popsim.Sequence()
    y = popnn.log_softmax(g, x, prog)
    assert popnn.log_softmax_in_place(g, z, prog) is None
    values = rng.normal(0, 3, size=shape).astype(dtype.numpy)
    _, (got, got_in_place) = run(g, small_device, prog, {x: values, z: values}, [y, z])
    expected = ref_log_softmax(values.astype(np.float64))
    tol = dict(rtol=1e-5, atol=2e-6) if dtype == FLOAT else dict(rtol=1e-2, atol=1e-2)
    np.testing.assert_allclose(got, expected, **tol)
    np.testing.assert_allclose(got_in_place, expected, **tol)
    np.testing.assert_allclose(np.exp(got).sum(axis=-1), 1.0, rtol=1e-5 if dtype == FLOAT else 1e-2)


def test_softmax_runs_on_tiles_as_popops_vertices(g, small_device):
    x = variable(g, FLOAT, (4, 6), "x")
    prog = popsim.Sequence()
    popnn.scaled_softmax_stable(g, x, prog)
    engine, _ = run(g, small_device, prog, {x: np.zeros((4, 6))}, [])
    names = [v["name"] for v in engine.get_report().to_dict()["execution"]["vertex_types"]]
    assert any(n.startswith("popops::Reduce<popops::ReduceMax,float") for n in names)
    assert any(n.startswith("popops::Reduce<popops::ReduceAdd,float") for n in names)
    assert any(n.startswith("popops::map::MapExpr") for n in names)


# -- bad input --------------------------------------------------------------------------------------
def test_softmax_of_a_scalar_refused(g):
    x = variable(g, FLOAT, (), "s", [[(0, 1)], [], [], []])
    with pytest.raises(poputil.PoplibsError, match=r"'s'.*at least 1 dimension"):
        popnn.softmax(g, x, popsim.Sequence())
    with pytest.raises(poputil.PoplibsError, match=r"'s'.*at least 1 dimension"):
        popnn.log_softmax(g, x, popsim.Sequence())


def test_softmax_of_integers_refused(g):
    x = g.add_variable(INT, (2, 3), "labels")
    with pytest.raises(poputil.PoplibsError, match=r"'labels'.*must be FLOAT or HALF, found INT"):
        popnn.softmax_stable(g, x, popsim.Sequence())
    with pytest.raises(poputil.PoplibsError, match=r"'labels'.*must be FLOAT or HALF"):
        popnn.non_linearity_input_gradient(g, NL.SOFTMAX, x, x, popsim.Sequence())


def test_gradient_type_mismatch_names_both(g):
    act = variable(g, FLOAT, (2, 3), "probs")
    out_grad = variable(g, HALF, (2, 3), "dprobs")
    with pytest.raises(poputil.PoplibsError, match=r"'probs' \(FLOAT.*'dprobs' \(HALF"):
        popnn.non_linearity_input_gradient(g, NL.SOFTMAX_SCALED, act, out_grad, popsim.Sequence())


def test_log_softmax_in_place_needs_a_writable_tensor(g):
    c = g.add_constant(FLOAT, (3,), [1.0, 2.0, 3.0], "k")
    g.set_tile_mapping(c, 0)
    with pytest.raises(poputil.PoplibsError, match="'k'.*constants"):
        popnn.log_softmax_in_place(g, c, popsim.Sequence())
