"""popnn pooling: pool and pool_input_gradient (MAX, AVG, SUM) against the float64 numpy
model in popnn_pooling_reference.py (itself checked against finite differences), on 1-D,
2-D and 3-D fields, with stride, padding and truncation, FLOAT and HALF, several tile
mappings and channel layouts; PoolParams; bad input."""
import os
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import popsim
from graph_helpers import load_and_run
from popsim import FLOAT, HALF, popnn
from popsim.poputil import PoplibsError, map_tensor_linearly
from popsim.program import Sequence

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import popnn_pooling_reference as ref

MAX, AVG, SUM = popnn.PoolingType.MAX, popnn.PoolingType.AVG, popnn.PoolingType.SUM


def _device(tiles=None):
    model = popsim.IPUModel("ipu2")
    if tiles:
        model.tiles_per_ipu = tiles
    return model.create_device()


def _input(g, pp, layout):
    """The input [B, C, *field]: "linear" (mapped linearly), "tile0" (all on tile 0),
    "chans_inner" (held [B, *field, C], channels contiguous, as a convolution's output) or
    "chans_grouped" (held [B, C/2, *field, 2]: a convolution's output whose out-channels are
    split over tiles holds them in groups)."""
    b, c, field = pp.batch_size, pp.num_channels, pp.input_field_shape
    if layout == "chans_inner":
        v = g.add_variable(pp.dtype, (b,) + field + (c,), "x")
        map_tensor_linearly(g, v)
        return v.dim_shuffle([0, len(field) + 1] + list(range(1, len(field) + 1)))
    if layout == "chans_grouped":
        v = g.add_variable(pp.dtype, (b, c // 2) + field + (2,), "x")
        map_tensor_linearly(g, v)
        rank = len(field)
        return v.dim_shuffle([0, 1, rank + 2] + list(range(2, rank + 2))).reshape(pp.input_shape())
    x = g.add_variable(pp.dtype, pp.input_shape(), "x")
    if layout == "tile0":
        g.set_tile_mapping(x, 0)
    else:
        map_tensor_linearly(g, x)
    return x


def run_pool(pp, xv, dyv=None, scaled=False, layout="linear", tiles=None, avg_sum_form=False):
    """Build and run pool (and its input gradient when ``dyv`` is given); returns
    (y, dx or None, engine)."""
    dev = _device(tiles)
    g = popsim.Graph(dev)
    x = _input(g, pp, layout)
    prog = Sequence()
    y = popnn.pool(g, pp, x, prog)
    reads, writes = [y], {x: xv}
    if dyv is not None:
        dy = g.add_variable(pp.dtype, pp.output_shape(), "dy")
        map_tensor_linearly(g, dy)
        writes[dy] = dyv
        if avg_sum_form:
            dx = popnn.pool_input_gradient(g, pp, 1, dy, prog)
        else:
            dx = popnn.pool_input_gradient(g, pp, x, y, dy, scaled, prog)
        reads.append(dx)
    engine, (out,) = load_and_run(g, dev, [prog], reads, writes)
    return out[0], (out[1] if dyv is not None else None), engine


def _args(pp):
    return (pp.kernel_shape, pp.stride, pp.input_truncation_or_padding_lower, pp.input_truncation_or_padding_upper)


def check(pp, seed=0, scaled=False, layout="linear", tiles=None, ties=False, tol=1e-5):
    rng = np.random.default_rng(seed)
    np_type = np.float16 if pp.dtype == HALF else np.float32
    if ties:   # few distinct values: many windows have several maxima
        xv = rng.integers(0, 3, pp.input_shape()).astype(np_type)
    else:
        xv = rng.standard_normal(pp.input_shape()).astype(np_type)
    dyv = rng.standard_normal(pp.output_shape()).astype(np_type)
    y, dx, _ = run_pool(pp, xv, dyv, scaled, layout, tiles)
    kind = pp.pooling_type.name
    np.testing.assert_allclose(y, ref.pool(kind, xv, *_args(pp)), rtol=tol, atol=tol)
    # the gradient of MAX follows the device's own forward result (its ties are its maxima)
    np.testing.assert_allclose(dx, ref.pool_grad(kind, xv, dyv, *_args(pp), scaled=scaled), rtol=tol,
                               atol=tol * 10)


# -- PoolParams -----------------------------------------------------------------------------------
def test_output_field_shape_is_the_conv_formula():
    pp = popnn.PoolParams(MAX, [28, 28], [2, 2], [2, 2], [0, 0], [0, 0], 16, 32, FLOAT)
    assert pp.get_output_field_shape() == (14, 14)
    pp = popnn.PoolParams(AVG, [7, 9, 5], [3, 2, 5], [2, 3, 1], [1, -1, 0], [2, 0, -0], 2, 1, FLOAT)
    assert pp.get_output_field_shape() == ref.output_field((7, 9, 5), (3, 2, 5), (2, 3, 1), (1, -1, 0), (2, 0, 0))
    assert pp.output_shape() == (1, 2) + pp.get_output_field_shape()


# -- forward and gradient against the reference ------------------------------------------------
@pytest.mark.parametrize("kind", [MAX, AVG, SUM])
def test_2d_stride_2(kind):
    check(popnn.PoolParams(kind, [6, 7], [2, 2], [2, 2], [0, 0], [0, 1], 3, 2, FLOAT))


@pytest.mark.parametrize("kind", [MAX, AVG, SUM])
def test_2d_padding_overlapping_windows(kind):
    check(popnn.PoolParams(kind, [5, 6], [3, 3], [1, 2], [1, 2], [2, 1], 2, 2, FLOAT))


@pytest.mark.parametrize("kind", [MAX, AVG, SUM])
def test_1d_truncation(kind):
    check(popnn.PoolParams(kind, [11], [3], [2], [-2], [-1], 3, 2, FLOAT))


@pytest.mark.parametrize("kind", [MAX, AVG, SUM])
def test_3d(kind):
    check(popnn.PoolParams(kind, [4, 5, 3], [2, 3, 2], [2, 1, 1], [1, 0, -1], [0, 1, 1], 2, 1, FLOAT))


@pytest.mark.parametrize("layout,tiles", [("tile0", 4), ("linear", 4), ("chans_inner", None), ("chans_inner", 3)])
@pytest.mark.parametrize("kind", [MAX, AVG])
def test_mappings_and_channel_layouts(kind, layout, tiles):
    check(popnn.PoolParams(kind, [7, 6], [3, 2], [2, 2], [1, 0], [1, 1], 6, 2, FLOAT), layout=layout, tiles=tiles)


def test_the_result_keeps_the_inputs_channel_groups():
    """An input holding its channels in groups (not the whole channel vector together) gives
    a result that holds them in groups too (PopLibs' detectChannelGrouping), so that the
    convolution after the pooling reads runs of channels, not single elements."""
    from popsim.poputil.memory_order import dim_grouping
    pp = popnn.PoolParams(MAX, [6, 6], [3, 3], [2, 2], [1, 1], [1, 1], 4, 1, FLOAT)
    check(pp, layout="chans_grouped", tiles=1)
    g = popsim.Graph(_device(1))
    y = popnn.pool(g, pp, _input(g, pp, "chans_grouped"), Sequence())
    assert dim_grouping(y, 1) == 2


@pytest.mark.parametrize("scaled", [False, True])
def test_max_gradient_ties(scaled):
    check(popnn.PoolParams(MAX, [6, 6], [3, 3], [1, 1], [1, 1], [1, 1], 2, 2, FLOAT), scaled=scaled, ties=True)


def test_max_ties_every_maximum_gets_the_gradient():
    pp = popnn.PoolParams(MAX, [2, 2], [2, 2], [2, 2], [0, 0], [0, 0], 1, 1, FLOAT)
    xv = np.array([[[[1.0, 3.0], [3.0, 2.0]]]], np.float32)
    _, dx, _ = run_pool(pp, xv, np.array([[[[6.0]]]], np.float32))
    np.testing.assert_array_equal(dx, [[[[0, 6], [6, 0]]]])
    _, dx, _ = run_pool(pp, xv, np.array([[[[6.0]]]], np.float32), scaled=True)
    np.testing.assert_array_equal(dx, [[[[0, 3], [3, 0]]]])


def test_avg_excludes_padding():
    pp = popnn.PoolParams(AVG, [3], [3], [1], [1], [1], 1, 1, FLOAT)
    y, _, _ = run_pool(pp, np.array([[[3.0, 6.0, 9.0]]], np.float32))
    np.testing.assert_allclose(y, [[[4.5, 6.0, 7.5]]])


def test_avg_sum_form_of_the_gradient():
    pp = popnn.PoolParams(AVG, [5, 4], [2, 3], [1, 1], [1, 0], [0, 1], 2, 1, FLOAT)
    rng = np.random.default_rng(3)
    xv = rng.standard_normal(pp.input_shape()).astype(np.float32)
    dyv = rng.standard_normal(pp.output_shape()).astype(np.float32)
    _, dx, _ = run_pool(pp, xv, dyv, avg_sum_form=True)
    np.testing.assert_allclose(dx, ref.pool_grad("AVG", xv, dyv, *_args(pp)), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kind", [MAX, AVG, SUM])
def test_half(kind):
    check(popnn.PoolParams(kind, [6, 5], [2, 3], [2, 1], [0, 1], [1, 0], 4, 2, HALF), tol=2e-3)


# -- the reference's gradients are the forward's derivatives ------------------------------------
@pytest.mark.parametrize("kind", ["AVG", "SUM", "MAX"])
def test_reference_gradient_matches_finite_differences(kind):
    rng = np.random.default_rng(7)
    args = ((3, 2), (2, 1), (1, -1), (2, 0))
    x = rng.standard_normal((2, 2, 5, 6))
    dy = rng.standard_normal((2, 2) + ref.output_field((5, 6), *args))
    dx = ref.pool_grad(kind, x, dy, *args)
    eps = 1e-6
    for _ in range(4):
        v = rng.standard_normal(x.shape)
        numeric = ((ref.pool(kind, x + eps * v, *args) - ref.pool(kind, x - eps * v, *args)) * dy).sum() / (2 * eps)
        assert abs(numeric - (dx * v).sum()) < 1e-6 * max(1.0, abs(numeric))


# -- small random problems ----------------------------------------------------------------------
@st.composite
def pool_params(draw):
    rank = draw(st.integers(1, 3))
    field = [draw(st.integers(1, 6)) for _ in range(rank)]
    kernel, lower, upper = [], [], []
    for f in field:
        lo, hi = draw(st.integers(-1, 2)), draw(st.integers(-1, 2))
        assume(f + lo + hi >= 1)
        lower.append(lo)
        upper.append(hi)
        kernel.append(draw(st.integers(1, min(3, f + lo + hi))))
    stride = [draw(st.integers(1, 3)) for _ in range(rank)]
    return popnn.PoolParams(draw(st.sampled_from([MAX, AVG, SUM])), field, kernel, stride, lower, upper,
                            draw(st.integers(1, 3)), draw(st.integers(1, 2)), FLOAT)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(pp=pool_params(), seed=st.integers(0, 100), scaled=st.booleans())
def test_random_params(pp, seed, scaled):
    check(pp, seed=seed, scaled=scaled, tiles=5)


# -- vertices and estimates ---------------------------------------------------------------------
def test_vertex_names_in_the_report():
    pp = popnn.PoolParams(MAX, [8, 8], [2, 2], [2, 2], [0, 0], [0, 0], 4, 2, FLOAT)
    xv = np.zeros(pp.input_shape(), np.float32)
    _, _, engine = run_pool(pp, xv, np.zeros(pp.output_shape(), np.float32), scaled=True, tiles=4)
    names = {v["name"] for v in engine.get_report().to_dict()["execution"]["vertex_types"]}
    assert {"popnn::MaxPooling<float>", "popnn::MaxPoolingGrad<float>",
            "popnn::MaxPoolingGradientScale<float>"} <= names


def test_estimate_is_poplibs_formula():
    from popsim.popnn.pooling_vertices import pooling_tile_cycles
    # one row, one entry of 4 elements, one float vector of channels, on the first worker
    rows, work = np.array([0, 1]), np.array([0, 0, 4])
    idle = 4 + 2 + 2 + 7 + 2 + 2 + 4 + 5 + 1 + 2 + 1
    busy = 4 + 2 + 2 + 7 + 2 + 2 + 4 + 4 + 5 + 1 + 2 + 2 + 1 + 3 + 2 + 4 + 1 + 15 + 20 + 1 + (2 + 4 + 9 + 1) + 1 + 3 + 1
    assert pooling_tile_cycles(rows, work, 4, 2, FLOAT, True, False, 6) == 7 + 6 * max(idle, busy) + 6


# -- bad input ----------------------------------------------------------------------------------
def test_kernel_larger_than_padded_field():
    with pytest.raises(PoplibsError, match="kernel .5. is larger than the padded field .4"):
        popnn.PoolParams(MAX, [3, 3], [2, 5], [1, 1], [0, 1], [0, 0], 1, 1, FLOAT)


def test_params_entries_per_dimension():
    with pytest.raises(PoplibsError, match="stride has 1 entries, expected one per field dimension"):
        popnn.PoolParams(MAX, [3, 3], [2, 2], [1], [0, 0], [0, 0], 1, 1, FLOAT)
    with pytest.raises(PoplibsError, match="dtype must be FLOAT or HALF"):
        popnn.PoolParams(MAX, [3], [2], [1], [0], [0], 1, 1, popsim.INT)


@pytest.mark.parametrize("shape,found", [((2, 3, 6), "has shape \\(2, 3, 6\\)"), ((2, 4, 6, 6), "num_channels 3")])
def test_wrong_rank_or_channels(shape, found):
    g = popsim.Graph(_device(4))
    pp = popnn.PoolParams(MAX, [6, 6], [2, 2], [2, 2], [0, 0], [0, 0], 3, 2, FLOAT)
    x = g.add_variable(FLOAT, shape, "acts")
    with pytest.raises(PoplibsError, match=r"input 'acts' .*expected \[B, C, \*input_field_shape\] = \[2, 3, 6, 6\]"):
        popnn.pool(g, pp, x, Sequence())
    with pytest.raises(PoplibsError, match=found):
        popnn.pool(g, pp, x, Sequence())


def test_gradient_operands_checked():
    g = popsim.Graph(_device(4))
    pp = popnn.PoolParams(MAX, [4, 4], [2, 2], [2, 2], [0, 0], [0, 0], 1, 1, FLOAT)
    x = g.add_variable(FLOAT, (1, 1, 4, 4), "x")
    y = g.add_variable(FLOAT, (1, 1, 2, 2), "y")
    dy = g.add_variable(FLOAT, (1, 1, 2, 3), "dy")
    with pytest.raises(PoplibsError, match=r"pooled_grad 'dy' has shape \(1, 1, 2, 3\), expected"):
        popnn.pool_input_gradient(g, pp, x, y, dy, False, Sequence())
    with pytest.raises(PoplibsError, match="for AVG and SUM pooling; MAX needs"):
        popnn.pool_input_gradient(g, pp, 1, y, Sequence())
    with pytest.raises(PoplibsError, match="use_scaled_gradient must be a bool"):
        popnn.pool_input_gradient(g, pp, x, y, y, "yes", Sequence())


@pytest.mark.parametrize("kind,expected", [(MAX, ref.LOWEST), (AVG, 0.0), (SUM, 0.0)])
def test_windows_of_padding_only(kind, expected):
    """Regression: a vertex whose rows read only padding has an empty worklist."""
    pp = popnn.PoolParams(kind, [1], [1], [2], [1], [0], 1, 1, FLOAT)
    y, dx, _ = run_pool(pp, np.array([[[5.0]]], np.float32), np.array([[[2.0]]], np.float32), tiles=2)
    np.testing.assert_array_equal(y, [[[expected]]])
    np.testing.assert_array_equal(dx, [[[0.0]]])


def test_options_are_refused():
    g = popsim.Graph(_device(4))
    pp = popnn.PoolParams(MAX, [4], [2], [2], [0], [0], 1, 1, FLOAT)
    x = g.add_variable(FLOAT, (1, 1, 4), "x")
    with pytest.raises(popsim.InvalidOptionError, match="poolUseIntrospectiveMapping"):
        popnn.pool(g, pp, x, Sequence(), options={"poolUseIntrospectiveMapping": "false"})


@pytest.mark.parametrize("args, message", [
    ((MAX, ["²"], [2], [1], [0], [0], 2, 1, FLOAT), "input_field_shape must be whole numbers, found str '²'"),
    ((MAX, [3.0], [2], [1], [0], [0], 2, 1, FLOAT), "input_field_shape must be whole numbers, found float"),
    ((MAX, 3, [2], [1], [0], [0], 2, 1, FLOAT), "input_field_shape must be a list of whole numbers, found int"),
    ((MAX, [3], [2], [1], [0], [0], "2", 1, FLOAT), "num_channels must be a whole number >= 0, found str '2'"),
    ((MAX, [3], [2], [1], [0], [0], 2, 1, np.zeros(2)), "dtype must be FLOAT or HALF"),
])
def test_pool_params_take_whole_numbers_only(args, message):
    """int("²") was a ValueError, int(Graph) a TypeError; "2" and 3.0 were taken as numbers."""
    with pytest.raises(PoplibsError, match=message):
        popnn.PoolParams(*args)
