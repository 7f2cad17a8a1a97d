"""poplin.convolution_weight_update (PopLibs' convolutionWeightUpdate): weights +=
scale * weight deltas on the engine against a direct numpy loop over a small 2-D
convolution with stride and padding (a number scale, a FLOAT scalar tensor scale, HALF),
and bad arguments."""
import numpy as np
import pytest

import popsim
from popsim import FLOAT, HALF, poplin
from popsim.poputil import PoplibsError
from popsim.program import Sequence

from poplin_harness import run_program, small_device

# batch 2, 2 groups of 3 -> 2 channels, a 5x4 field, a 3x2 kernel, stride (2, 1), padding 1 in dim 0
PARAMS = poplin.ConvParams(FLOAT, 2, (5, 4), (3, 2), 3, 2, 2, stride=(2, 1), padding_lower=(1, 0),
                           padding_upper=(1, 0))


def numpy_weight_gradient(dy, x, p):
    """dW[g, co, ci, ky, kx] = sum over b, oy, ox of dy[b, g*Cout+co, oy, ox] *
    xpad[b, g*Cin+ci, oy*sy+ky, ox*sx+kx]."""
    groups, cin, cout = p.num_conv_groups, p.input_channels_per_group, p.output_channels_per_group
    xpad = np.pad(x, [(0, 0), (0, 0), (p.padding_lower[0], p.padding_upper[0]),
                      (p.padding_lower[1], p.padding_upper[1])])
    (sy, sx), (ky, kx) = p.stride, p.kernel_shape
    oy, ox = dy.shape[2:]
    dw = np.zeros(p.weights_shape())
    for g in range(groups):
        for i in range(ky):
            for j in range(kx):
                patch = xpad[:, g * cin:(g + 1) * cin, i:i + sy * oy:sy, j:j + sx * ox:sx]  # [B, Cin, oy, ox]
                dw[g, :, :, i, j] = np.einsum("bopq,bipq->oi", dy[:, g * cout:(g + 1) * cout], patch)
    return dw


@pytest.mark.parametrize("dtype, tensor_scale", [(FLOAT, False), (FLOAT, True), (HALF, False)])
def test_weights_plus_scaled_deltas(dtype, tensor_scale):
    p = PARAMS.replace(data_type=dtype, output_type=dtype)
    device = small_device()
    g = popsim.Graph(device)
    x, w = poplin.create_input(g, p, "x"), poplin.create_weights(g, p, "w")
    dy = poplin.create_conv_output(g, p, "dy")
    scale = -0.25
    if tensor_scale:
        scale = g.add_variable(FLOAT, (), "lr")
        g.set_tile_mapping(scale, 3)
    prog = Sequence()
    poplin.convolution_weight_update(g, dy, w, x, p, scale, prog, "wu")
    rng = np.random.default_rng(5)
    hx = rng.integers(-4, 4, p.input_shape()) / 4
    hdy = rng.integers(-4, 4, p.output_shape()) / 4
    hw = rng.integers(-8, 8, p.weights_shape()) / 8
    writes = {x: hx, dy: hdy, w: hw}
    if tensor_scale:
        writes[scale] = -0.25
    got, = run_program(g, device, prog, writes, [w])
    expected = hw - 0.25 * numpy_weight_gradient(hdy, hx, p)
    tol = 2e-2 if dtype == HALF else 1e-5
    np.testing.assert_allclose(got.astype(np.float64), expected, rtol=tol, atol=tol)


def test_errors():
    g = popsim.Graph(small_device())
    x, w = poplin.create_input(g, PARAMS, "x"), poplin.create_weights(g, PARAMS, "w")
    dy = poplin.create_conv_output(g, PARAMS, "dy")
    prog = Sequence()
    with pytest.raises(PoplibsError, match=r"poplin.convolution_weight_update: weights 'x' must have shape "
                                           r"\(2, 2, 3, 3, 2\) \[G, Cout, Cin, \*kernel\]"):
        poplin.convolution_weight_update(g, dy, x, x, PARAMS, 1.0, prog)
    with pytest.raises(PoplibsError, match="scale must be a number or a scalar tensor, found str"):
        poplin.convolution_weight_update(g, dy, w, x, PARAMS, "0.1", prog)
    with pytest.raises(PoplibsError, match=r"the scale tensor 'k' must be one element of FLOAT or FLOAT, found INT"):
        poplin.convolution_weight_update(g, dy, w, x, PARAMS, g.add_variable(popsim.INT, (), "k"), prog)
    with pytest.raises(PoplibsError, match="zdeltas 'x' must have shape"):
        poplin.convolution_weight_update(g, x, w, x, PARAMS, 1.0, prog)
