"""popnn non-linearities: every element-wise type forward, in place and gradient against
numpy float64 references and finite differences of the numpy forward, FLOAT and HALF,
linear and scattered tile mappings, vertex names and estimates, bad input."""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import popsim
from popsim import FLOAT, HALF, INT, popnn, poputil
from popsim.popnn import NonLinearityType as NL
from popsim.popnn import non_linearity_vertices as nlv

from popnn_nl_harness import MAPPING, run, variable

ELEMENTWISE = [NL.RELU, NL.SIGMOID, NL.TANH, NL.GELU, NL.GELU_ERF, NL.SWISH, NL.HARD_SIGMOID]
_ERF = np.vectorize(math.erf)
_C = math.sqrt(2 / math.pi)


def ref_forward(nl, x):
    x = np.asarray(x, np.float64)
    if nl is NL.RELU:
        return np.maximum(x, 0)
    if nl is NL.SIGMOID:
        return 1 / (1 + np.exp(-x))
    if nl is NL.TANH:
        return np.tanh(x)
    if nl is NL.GELU:
        return 0.5 * x * (1 + np.tanh(_C * (x + 0.044715 * x ** 3)))
    if nl is NL.GELU_ERF:
        return 0.5 * x * (1 + _ERF(x / math.sqrt(2)))
    if nl is NL.SWISH:
        return x / (1 + np.exp(-x))
    assert nl is NL.HARD_SIGMOID
    return np.clip(0.2 * x + 0.5, 0, 1)


def ref_derivative(nl, x):
    """d forward / dx, written out by hand (checked against finite differences below)."""
    x = np.asarray(x, np.float64)
    s = 1 / (1 + np.exp(-x))
    if nl is NL.RELU:
        return (x > 0).astype(np.float64)
    if nl is NL.SIGMOID:
        return s * (1 - s)
    if nl is NL.TANH:
        return 1 - np.tanh(x) ** 2
    if nl is NL.GELU:
        u = _C * (x + 0.044715 * x ** 3)
        return 0.5 * (1 + np.tanh(u)) + 0.5 * x * (1 - np.tanh(u) ** 2) * _C * (1 + 3 * 0.044715 * x ** 2)
    if nl is NL.GELU_ERF:
        return 0.5 * (1 + _ERF(x / math.sqrt(2))) + x * np.exp(-x * x / 2) / math.sqrt(2 * math.pi)
    if nl is NL.SWISH:
        return s + x * s * (1 - s)
    return np.where(np.abs(x) < 2.5, 0.2, 0.0)


def finite_difference(nl, x, h=1e-6):
    return (ref_forward(nl, x + h) - ref_forward(nl, x - h)) / (2 * h)


def away_from_kinks(rng, shape, nl):
    """Inputs in [-4, 4], none within 1e-2 of a kink (RELU at 0, HARD_SIGMOID at +-2.5)."""
    x = rng.uniform(-4, 4, size=shape)
    kinks = {NL.RELU: [0.0], NL.HARD_SIGMOID: [-2.5, 2.5]}.get(nl, [])
    for k in kinks:
        x = np.where(np.abs(x - k) < 1e-2, k + 0.5, x)
    return x


def tolerance(dtype):
    return dict(rtol=2e-5, atol=2e-6) if dtype == FLOAT else dict(rtol=1e-2, atol=2e-2)


# -- the references themselves ------------------------------------------------------------------------
@pytest.mark.parametrize("nl", ELEMENTWISE)
def test_reference_derivatives_match_finite_differences(nl):
    x = away_from_kinks(np.random.default_rng(1), 200, nl)
    np.testing.assert_allclose(ref_derivative(nl, x), finite_difference(nl, x), rtol=1e-6, atol=1e-7)


# -- forward ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [FLOAT, HALF])
@pytest.mark.parametrize("nl", ELEMENTWISE)
def test_forward_matches_numpy(g, small_device, nl, dtype):
    rng = np.random.default_rng(2)
    x = variable(g, dtype, (4, 6), "x", MAPPING)
    prog = popsim.Sequence()
    y = popnn.non_linearity(g, nl, x, prog)
    assert y.shape == x.shape and y.dtype == dtype and g.get_tile_mapping(y) == g.get_tile_mapping(x)
    values = away_from_kinks(rng, (4, 6), nl).astype(dtype.numpy)
    _, (got,) = run(g, small_device, prog, {x: values}, [y])
    np.testing.assert_allclose(got, ref_forward(nl, values.astype(np.float64)), **tolerance(dtype))


@pytest.mark.parametrize("nl", ELEMENTWISE)
def test_in_place_on_scattered_mapping(g, small_device, nl):
    rng = np.random.default_rng(3)
    x = variable(g, FLOAT, (5, 37), "x", "scattered", rng)
    prog = popsim.Sequence()
    assert popnn.non_linearity_in_place(g, nl, x, prog) is None
    values = away_from_kinks(rng, (5, 37), nl)
    _, (got,) = run(g, small_device, prog, {x: values}, [x])
    np.testing.assert_allclose(got, ref_forward(nl, values.astype(np.float32)), **tolerance(FLOAT))


@pytest.mark.parametrize("fn, nl", [("sigmoid", NL.SIGMOID), ("relu", NL.RELU), ("tanh", NL.TANH),
                                    ("gelu", NL.GELU), ("gelu_erf", NL.GELU_ERF), ("swish", NL.SWISH),
                                    ("hard_sigmoid", NL.HARD_SIGMOID)])
def test_wrappers(g, small_device, fn, nl):
    x = variable(g, FLOAT, (9,), "x")
    z = variable(g, FLOAT, (9,), "z")
    prog = popsim.Sequence()
    y = getattr(popnn, fn)(g, x, prog)
    getattr(popnn, fn + "_in_place")(g, z, prog)
    values = np.linspace(-3, 3, 9) + 0.05
    _, (got, got_in_place) = run(g, small_device, prog, {x: values, z: values}, [y, z])
    np.testing.assert_allclose(got, ref_forward(nl, values.astype(np.float32)), **tolerance(FLOAT))
    np.testing.assert_array_equal(got, got_in_place)


def test_vertices_1d_and_2d_with_their_estimates(g, small_device):
    x = variable(g, FLOAT, (24,), "x", MAPPING)
    prog = popsim.Sequence()
    y = popnn.relu(g, x, prog)
    popnn.non_linearity_input_gradient(g, NL.RELU, y, x, prog)
    engine, _ = run(g, small_device, prog, {x: np.arange(24) - 12.0}, [y])
    kinds = {v["name"]: v for v in engine.get_report().to_dict()["execution"]["vertex_types"]}
    one_d = "popnn::NonLinearity1D<float,popnn::NonLinearityType::RELU>"
    two_d = "popnn::NonLinearity2D<float,popnn::NonLinearityType::RELU>"
    assert kinds[one_d]["instances"] == 2 and kinds[two_d]["instances"] >= 2
    assert "popnn::NonLinearityGrad1D<float,popnn::NonLinearityType::RELU>" in kinds
    assert "popnn::NonLinearityGrad2D<float,popnn::NonLinearityType::RELU>" in kinds
    # tiles 0 and 3 hold 4 and 6 elements in one region: W x ceil(estimate / W) each
    expected = sum(6 * -(-nlv.vertex_cycles("1D", NL.RELU, FLOAT, [n], 6) // 6) for n in (4, 6))
    assert kinds[one_d]["cycles"] == expected


def test_estimates_grow_with_work():
    for nl in ELEMENTWISE:
        for kind in nlv.KINDS:
            for dtype in (FLOAT, HALF):
                assert nlv.vertex_cycles(kind, nl, dtype, [64], 6) < nlv.vertex_cycles(kind, nl, dtype, [640], 6)
    assert nlv.vertex_cycles("2D", NL.RELU, FLOAT, [10], 6) == 20 + 6 + 5 * 3


def test_relu_batch_32_mnist_shape(device):
    """The CNN example's shape on the full device: builds and runs."""
    g = popsim.Graph(device)
    rng = np.random.default_rng(4)
    x = variable(g, FLOAT, (32, 16, 28, 28), "x")
    prog = popsim.Sequence()
    y = popnn.relu(g, x, prog)
    dx = popnn.non_linearity_input_gradient(g, NL.RELU, y, x, prog)
    values = rng.normal(size=x.shape).astype(np.float32)
    _, (got, grad) = run(g, device, prog, {x: values}, [y, dx])
    np.testing.assert_array_equal(got, np.maximum(values, 0))
    np.testing.assert_array_equal(grad, np.where(values > 0, values, 0))


@settings(max_examples=5, deadline=None)
@given(n=st.integers(1, 90), seed=st.integers(0, 1000))
def test_result_independent_of_mapping(n, seed):
    model = popsim.IPUModel("ipu2")
    model.tiles_per_ipu = 4
    small_device = model.create_device()
    rng = np.random.default_rng(seed)
    g = popsim.Graph(small_device)
    a = variable(g, FLOAT, (n,), "a", "scattered", rng)
    b = variable(g, FLOAT, (n,), "b", [[(0, n)], [], [], []])
    prog = popsim.Sequence()
    ya, yb = popnn.gelu(g, a, prog), popnn.gelu(g, b, prog)
    values = rng.normal(size=n)
    _, (got_a, got_b) = run(g, small_device, prog, {a: values, b: values}, [ya, yb])
    np.testing.assert_array_equal(got_a, got_b)


# -- gradients --------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [FLOAT, HALF])
@pytest.mark.parametrize("nl", ELEMENTWISE)
def test_gradient_matches_numpy_and_finite_differences(g, small_device, nl, dtype):
    rng = np.random.default_rng(5)
    act = variable(g, dtype, (7, 11), "act", "scattered", rng)
    out_grad = variable(g, dtype, (7, 11), "outGrad")
    prog = popsim.Sequence()
    in_grad = popnn.non_linearity_input_gradient(g, nl, act, out_grad, prog)
    assert in_grad.shape == act.shape and g.get_tile_mapping(in_grad) == g.get_tile_mapping(act)
    x = away_from_kinks(rng, (7, 11), nl).astype(dtype.numpy).astype(np.float64)
    dy = rng.uniform(-1, 1, size=(7, 11)).astype(dtype.numpy).astype(np.float64)
    # the activation PopLibs takes: the forward input for GELU, GELU_ERF, SWISH, else the output
    act_values = x if nl in nlv.GRAD_FROM_INPUT else ref_forward(nl, x)
    _, (got,) = run(g, small_device, prog, {act: act_values, out_grad: dy}, [in_grad])
    tol = tolerance(dtype) if dtype == HALF else dict(rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got, dy * ref_derivative(nl, x), **tol)
    np.testing.assert_allclose(got, dy * finite_difference(nl, x), **tol)


# -- bad input --------------------------------------------------------------------------------------
def test_non_float_tensor_refused(g):
    x = g.add_variable(INT, (4,), "counts")
    with pytest.raises(poputil.PoplibsError, match=r"'counts'.*must be FLOAT or HALF, found INT"):
        popnn.non_linearity(g, NL.RELU, x, popsim.Sequence())
    with pytest.raises(poputil.PoplibsError, match="'counts'"):
        popnn.log_softmax(g, x, popsim.Sequence())


@pytest.mark.parametrize("bad", ["RELU", 3, None])
def test_unknown_type_refused(g, bad):
    x = variable(g, FLOAT, (4,), "x")
    with pytest.raises(poputil.PoplibsError, match="unknown non-linearity type.*RELU, TANH"):
        popnn.non_linearity(g, bad, x, popsim.Sequence())
    with pytest.raises(poputil.PoplibsError, match="unknown non-linearity type"):
        popnn.non_linearity_input_gradient(g, bad, x, x, popsim.Sequence())


@pytest.mark.parametrize("nl", [NL.RELU, NL.SOFTMAX_STABLE])
def test_gradient_shape_mismatch_names_both(g, nl):
    act = variable(g, FLOAT, (4, 3), "acts")
    out_grad = variable(g, FLOAT, (3, 4), "grads")
    with pytest.raises(poputil.PoplibsError, match=r"act tensor 'acts'.*\(4, 3\).*out_grad tensor 'grads'.*"
                                                   r"\(3, 4\).*same shape"):
        popnn.non_linearity_input_gradient(g, nl, act, out_grad, popsim.Sequence())


def test_in_place_needs_a_writable_tensor(g):
    c = g.add_constant(FLOAT, (4,), [1.0, 2.0, 3.0, 4.0], "c")
    g.set_tile_mapping(c, 0)
    with pytest.raises(poputil.PoplibsError, match="'c'.*constants"):
        popnn.non_linearity_in_place(g, NL.TANH, c, popsim.Sequence())
    x = variable(g, FLOAT, (1, 4), "x")
    with pytest.raises(poputil.PoplibsError, match="alias"):
        popnn.relu_in_place(g, x.broadcast(3, 0), popsim.Sequence())


def test_engine_usable_after_refused_call(g, small_device):
    x = variable(g, FLOAT, (4,), "x")
    prog = popsim.Sequence()
    with pytest.raises(poputil.PoplibsError):
        popnn.non_linearity(g, "SIGMOID", x, prog)
    y = popnn.sigmoid(g, x, prog)
    _, (got,) = run(g, small_device, prog, {x: [0.0, 1.0, -1.0, 2.0]}, [y])
    np.testing.assert_allclose(got, ref_forward(NL.SIGMOID, [0.0, 1.0, -1.0, 2.0]), rtol=1e-6)


def test_aliased_input_and_empty_tensor(g, small_device):
    """A broadcast (aliased) input gives an output of its own, mapped linearly; an empty
    tensor gives an empty result and adds no compute set."""
    x = variable(g, FLOAT, (1, 5), "x")
    prog = popsim.Sequence()
    y = popnn.swish(g, x.broadcast(3, 0), prog)
    empty = popnn.non_linearity(g, NL.TANH, variable(g, FLOAT, (0, 4), "e"), prog)
    assert y.shape == (3, 5) and empty.shape == (0, 4)
    values = np.linspace(-2, 2, 5)
    _, (got,) = run(g, small_device, prog, {x: values}, [y])
    np.testing.assert_allclose(got, np.tile(ref_forward(NL.SWISH, values.astype(np.float32)), (3, 1)),
                               rtol=2e-5, atol=2e-6)


def test_every_type_is_a_table_entry_or_a_softmax():
    """A new NonLinearityType needs an OPS entry (its functions and loop costs) unless it is
    built from popops like the softmaxes."""
    assert set(nlv.OPS) | set(nlv.SOFTMAXES) == set(NL) and not set(nlv.OPS) & set(nlv.SOFTMAXES)
    assert set(nlv.GRAD_FROM_INPUT) == {NL.GELU, NL.GELU_ERF, NL.SWISH}
