"""poplin.convolution and its passes on the engine against an independent numpy convolution
(poplin_conv_reference): ConvParams drawn by hypothesis (1-D and 2-D fields, stride,
padding, input and kernel dilation, truncation, flips, output padding, groups, batch,
channels including 1); the backward pass (transpose_and_flip_weights) and the weight
deltas; results independent of the plan (splits forced with planConstraints); bad input."""
import json
import os
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import popsim
from popsim import FLOAT, HALF, poplin
from popsim.poputil import PoplibsError
from popsim.program import Sequence

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import poplin_conv_reference as ref
from poplin_harness import run_program, small_device

SETTINGS = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def conv_params(draw, transforms=True, dtype=FLOAT):
    rank = draw(st.integers(1, 2))
    small = st.integers(0, 2)

    def per_dim(strategy):
        return tuple(draw(strategy) for _ in range(rank))
    kw = dict(stride=per_dim(st.integers(1, 3)), padding_lower=per_dim(small), padding_upper=per_dim(small),
              input_dilation=per_dim(st.integers(1, 2)), kernel_dilation=per_dim(st.integers(1, 2)))
    if transforms and draw(st.booleans()):
        kw.update(input_truncation_lower=per_dim(st.integers(0, 1)), input_flip=per_dim(st.booleans()),
                  kernel_flip=per_dim(st.booleans()), kernel_padding_upper=per_dim(st.integers(0, 1)),
                  output_truncation_lower=per_dim(st.integers(0, 1)), output_padding_upper=per_dim(st.integers(0, 1)))
    elif draw(st.booleans()):
        kw.update(kernel_flip=per_dim(st.booleans()))
    try:
        return poplin.ConvParams(dtype, draw(st.integers(1, 2)), per_dim(st.integers(1, 6)), per_dim(st.integers(1, 3)),
                                 draw(st.integers(1, 4)), draw(st.integers(1, 5)), draw(st.integers(1, 2)), **kw)
    except PoplibsError:   # no room for the kernel: not a convolution
        assume(False)


def _forward(p, options=None, seed=0):
    device = small_device()
    g = popsim.Graph(device)
    x = poplin.create_input(g, p, "x", options)
    w = poplin.create_weights(g, p, "w", options)
    prog = Sequence()
    y = poplin.convolution(g, x, w, p, False, prog, "conv", options)
    assert tuple(y.shape) == p.output_shape() and y.dtype == p.output_type
    rng = np.random.default_rng(seed)
    hx, hw = rng.standard_normal(p.input_shape()), rng.standard_normal(p.weights_shape())
    got, = run_program(g, device, prog, {x: hx, w: hw}, [y])
    dt = p.data_type.numpy
    return got, ref.conv(hx.astype(dt), hw.astype(dt), p)


@SETTINGS
@given(conv_params())
def test_forward_matches_reference(p):
    got, expected = _forward(p)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


@SETTINGS
@given(conv_params(transforms=False))
def test_backward_pass_is_the_input_gradient(p):
    bwd = poplin.get_gradient_params(p)
    assert bwd.output_shape() == p.input_shape()
    device = small_device()
    g = popsim.Graph(device)
    dy = poplin.create_input(g, bwd, "dy")
    w = poplin.create_weights(g, p, "w")   # the forward weights
    prog = Sequence()
    dx = poplin.convolution(g, dy, w, bwd, True, prog, "bwd")
    rng = np.random.default_rng(1)
    hdy, hw = rng.standard_normal(p.output_shape()), rng.standard_normal(p.weights_shape())
    got, = run_program(g, device, prog, {dy: hdy, w: hw}, [dx])
    np.testing.assert_allclose(got, ref.input_gradient(hdy.astype(np.float32), hw.astype(np.float32), p),
                               rtol=1e-4, atol=1e-4)


@st.composite
def wu_params(draw):
    p = draw(conv_params(transforms=False))
    if draw(st.booleans()):
        rank = p.num_field_dims
        try:
            p = p.replace(input_flip=tuple(draw(st.booleans()) for _ in range(rank)),
                          input_truncation_upper=tuple(draw(st.integers(0, 1)) for _ in range(rank)))
        except PoplibsError:
            assume(False)
    return p


@SETTINGS
@given(wu_params())
def test_weight_deltas_are_the_weight_gradient(p):
    device = small_device()
    g = popsim.Graph(device)
    dy = g.add_variable(FLOAT, p.output_shape(), "dy")
    popsim.poputil.map_tensor_linearly(g, dy)
    x = poplin.create_input(g, p, "x")
    prog = Sequence()
    dw = poplin.calculate_weight_deltas(g, dy, x, p, prog, "wu")
    assert tuple(dw.shape) == p.weights_shape()
    rng = np.random.default_rng(2)
    hdy, hx = rng.standard_normal(p.output_shape()), rng.standard_normal(p.input_shape())
    got, = run_program(g, device, prog, {dy: hdy, x: hx}, [dw])
    np.testing.assert_allclose(got, ref.weight_gradient(hdy.astype(np.float32), hx.astype(np.float32), p),
                               rtol=1e-4, atol=1e-4)


PARAMS_2D = poplin.ConvParams(FLOAT, 2, (7, 9), (3, 3), 12, 10, 1, stride=(1, 2), padding_lower=(1, 1),
                              padding_upper=(1, 1), kernel_dilation=(1, 2))


@pytest.mark.parametrize("partition", [
    {"inChanSplit": {"parallel": 2}},
    {"kernelSplit": {"0": 3}},
    {"fieldSplit": {"0": 3, "1": 2}, "batchSplit": 2},
    {"outChanSplit": {"serial": 2}},
    {"inChanSplit": {"serial": 2}, "kernelSplit": {"0": 2}},
])
def test_result_does_not_depend_on_the_plan(partition):
    options = {"planConstraints": json.dumps({"0": {"partition": partition}})}
    plan = poplin.get_plan(small_device().target, PARAMS_2D, options)
    for key, value in partition.items():
        if key == "kernelSplit":
            assert plan.partition.kernel_split[0] == value["0"]
        if key == "fieldSplit":
            assert plan.partition.field_split == (3, 2)
    got, expected = _forward(PARAMS_2D, options)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


def test_one_by_one_and_matmul_shaped_convolutions():
    for p in (poplin.ConvParams(FLOAT, 3, (5, 4), (1, 1), 9, 7, 2),       # ConvPartial1x1Out
              poplin.ConvParams(FLOAT, 6, (1,), (1,), 5, 3, 1),            # a matmul
              poplin.ConvParams(FLOAT, 2, (4,), (1,), 3, 2, 1, stride=(2,), padding_lower=(1,))):
        got, expected = _forward(p)
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


def test_half_inputs_with_float_output():
    p = poplin.ConvParams(HALF, 1, (6, 5), (3, 2), 4, 6, 1, padding_lower=(1, 0), output_type=FLOAT)
    got, expected = _forward(p, {"partialsType": "float"})
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, expected, rtol=2e-3, atol=2e-3)


def test_input_layout_is_spread_over_the_tiles_that_read_it():
    device = small_device()
    g = popsim.Graph(device)
    x = poplin.create_input(g, PARAMS_2D, "x")
    tiles = {tile for tile, regions in enumerate(g.get_tile_mapping(x)) if regions}
    assert len(tiles) > 1


def test_biases():
    device = small_device()
    g = popsim.Graph(device)
    acts = g.add_variable(FLOAT, (2, 3, 4), "acts")
    popsim.poputil.map_tensor_linearly(g, acts)
    b = poplin.create_biases(g, acts)
    assert tuple(b.shape) == (3,)
    prog = Sequence()
    poplin.add_bias(g, acts, b, prog)
    ha, hb = np.arange(24.0).reshape(2, 3, 4), np.array([1.0, -2.0, 0.5])
    got, = run_program(g, device, prog, {acts: ha, b: hb}, [acts])
    np.testing.assert_allclose(got, ha + hb[None, :, None])


def _bias_tiles(g, b):
    return {c: tile for tile, regions in enumerate(g.get_tile_mapping(b)) for lo, hi in regions for c in range(lo, hi)}


def test_biases_live_on_the_tiles_of_their_channels():
    """PopLibs' createBiases maps each grain of biases to a tile holding activations of its
    channels, spreading a set of tiles' grains over them (not all on tile 0)."""
    model = popsim.IPUModel("ipu2")
    model.tiles_per_ipu = 16
    g = popsim.Graph(model.create_device().target)
    acts = g.add_variable(FLOAT, (2, 8, 4), "acts")  # channels 0-3 on tiles 0-3, channels 4-7 on tiles 8-11
    for ch in range(8):
        for b in range(2):
            g.set_tile_mapping(acts[b, ch], ch // 2 + (8 if ch >= 4 else 0))
    bias = poplin.create_biases(g, acts)
    where = _bias_tiles(g, bias)
    assert sorted(where) == list(range(8))
    for ch, tile in where.items():
        assert any(g.get_tile_mapping(acts[:, ch])[tile]), (ch, tile)
    # a conv output (channels innermost, every tile holding every channel): spread out
    params = poplin.ConvParams(FLOAT, 8, (4, 4), (3, 3), 4, 16, padding_lower=(1, 1), padding_upper=(1, 1))
    out = poplin.create_conv_output(g, params, "out")
    assert len(set(_bias_tiles(g, poplin.create_biases(g, out)).values())) > 1


def test_weights_transpose_chans_flip_xy():
    device = small_device()
    g = popsim.Graph(device)
    w = g.add_variable(FLOAT, (1, 2, 3, 2, 2), "w")
    out = g.add_variable(FLOAT, (1, 3, 2, 2, 2), "wt")
    for t in (w, out):
        popsim.poputil.map_tensor_linearly(g, t)
    prog = Sequence()
    poplin.weights_transpose_chans_flip_xy(g, w, out, prog)
    hw = np.arange(24.0).reshape(1, 2, 3, 2, 2)
    got, = run_program(g, device, prog, {w: hw}, [out])
    np.testing.assert_array_equal(got, hw.transpose(0, 2, 1, 3, 4)[:, :, :, ::-1, ::-1])


def test_bad_input():
    device = small_device()
    g = popsim.Graph(device)
    p = poplin.ConvParams(FLOAT, 1, (5,), (3,), 2, 3)
    x, w = poplin.create_input(g, p, "x"), poplin.create_weights(g, p, "w")
    prog = Sequence()
    bad_x = g.add_variable(FLOAT, (1, 3, 5), "bad_x")
    with pytest.raises(PoplibsError, match=r"in 'bad_x' must have shape \(1, 2, 5\)"):
        poplin.convolution(g, bad_x, w, p, False, prog)
    with pytest.raises(PoplibsError, match=r"weights 'w' must have shape \(1, 2, 3, 3\)"):
        poplin.convolution(g, x, w, p, True, prog)
    half_w = g.add_variable(HALF, p.weights_shape(), "half_w")
    with pytest.raises(PoplibsError, match="must be FLOAT"):
        poplin.convolution(g, x, half_w, p, False, prog)
    with pytest.raises(PoplibsError, match="params must be a poplin.ConvParams"):
        poplin.convolution(g, x, w, (1, 2), False, prog)
    with pytest.raises(PoplibsError, match="unknown option|not an option|planz"):
        poplin.convolution(g, x, w, p, False, prog, options={"planz": "1"})
    with pytest.raises(PoplibsError, match=r"biases 'b' must be \[C\]"):
        poplin.add_bias(g, x, g.add_variable(FLOAT, (3,), "b"), prog)
    with pytest.raises(PoplibsError, match="output_padding_lower"):
        poplin.get_gradient_params(p.replace(output_padding_lower=(1,)))
    with pytest.raises(PoplibsError, match="zdeltas 'x' must have shape"):
        poplin.calculate_weight_deltas(g, x, x, p, prog)


@pytest.mark.parametrize("in_chans, out_chans, batch", [(0, 2, 1), (2, 0, 1), (1, 2, 0)])
def test_a_convolution_without_channels_or_batch(in_chans, out_chans, batch):
    """PopLibs' zero convolution: no input channels give an output of zeros, no output
    channels or batch an empty output (planned with those sizes as 1; was a
    ZeroDivisionError or 'no plan satisfies')."""
    device = small_device()
    g = popsim.Graph(device)
    params = poplin.ConvParams(FLOAT, batch, [4, 4], [3, 3], in_chans, out_chans)
    x, w = poplin.create_input(g, params), poplin.create_weights(g, params)
    prog = Sequence()
    out = poplin.convolution(g, x, w, params, False, prog)
    assert out.shape == (batch, out_chans, 2, 2)
    if out.num_elements():
        got, = run_program(g, device, prog, {out: np.full(out.shape, 7.0)}, [out])
        np.testing.assert_array_equal(got, np.zeros(out.shape))


def test_transpose_and_flip_weights_must_be_true_or_false():
    """An array was a ValueError before the check (its truth value was taken first)."""
    g = popsim.Graph(small_device())
    params = poplin.ConvParams(FLOAT, 1, [4, 4], [3, 3], 1, 1)
    x, w = poplin.create_input(g, params), poplin.create_weights(g, params)
    with pytest.raises(PoplibsError, match="transpose_and_flip_weights must be True or False, found array"):
        poplin.convolution(g, x, w, params, np.zeros((2, 2)), Sequence())
