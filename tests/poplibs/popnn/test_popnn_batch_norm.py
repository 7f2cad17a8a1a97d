"""popnn.bn on the engine against numpy float64 references and finite differences."""
import numpy as np
import pytest

import popsim
from popsim import FLOAT, HALF, popnn
from popsim.popnn import norm_stat_ops
from popsim.program import Sequence
from popsim.poputil import PoplibsError

from norm_reference import batch_forward, finite_difference, run

EPS = 1e-3


def _variable(g, shape, name, dtype=FLOAT, spread=True):
    t = g.add_variable(dtype, shape, name)
    n = t.num_elements()
    if spread:  # several tiles, some holding several regions
        cuts = sorted({0, n // 5, n // 3, n // 2, (2 * n) // 3, n})
        mapping = [[] for _ in range(4)]
        for k, (b, e) in enumerate(zip(cuts, cuts[1:])):
            mapping[k % 4].append((b, e))
        g.set_tile_mapping(t, mapping)
    else:
        g.set_tile_mapping(t, 3)
    return t


@pytest.fixture
def g(small_device):
    return popsim.Graph(small_device)


@pytest.mark.parametrize("shape", [(3, 5, 7), (2, 3, 4, 5), (4, 6)])
@pytest.mark.parametrize("unbiased", [False, True])
@pytest.mark.parametrize("stable", [False, True])
def test_statistics_and_normalise(g, small_device, shape, unbiased, stable):
    rng = np.random.default_rng(sum(shape))
    x = _variable(g, shape, "x")
    gamma, beta = _variable(g, (shape[1],), "gamma", spread=False), _variable(g, (shape[1],), "beta")
    prog = Sequence()
    mean, inv_std = popnn.bn.batch_norm_statistics(g, x, EPS, prog, unbiased, stable)
    y, x_hat = popnn.bn.batch_normalise(g, x, gamma, beta, mean, inv_std, prog)
    whitened = popnn.bn.batch_norm_whiten(g, x, mean, inv_std, prog)
    xv = rng.standard_normal(shape) * 3 + 2
    gv, bv = rng.standard_normal(shape[1]), rng.standard_normal(shape[1])
    (m, s, yv, xh, wv), _ = run(g, small_device, prog, {x: xv, gamma: gv, beta: bv},
                                [mean, inv_std, y, x_hat, whitened])
    axes = (0,) + tuple(range(2, len(shape)))
    xr = xv.astype(np.float32).astype(np.float64)
    n = xr.size // shape[1]
    var = xr.var(axes)
    assert np.allclose(m, xr.mean(axes), atol=1e-5)
    scale = n / (n - 1) if unbiased else 1.0
    assert np.allclose(s, 1 / np.sqrt((var + EPS) * scale), rtol=1e-4)
    cs = (1, shape[1]) + (1,) * (len(shape) - 2)
    xh_ref = (xr - xr.mean(axes).reshape(cs)) / np.sqrt((var + EPS) * scale).reshape(cs)
    y_ref = xh_ref * gv.astype(np.float32).reshape(cs) + bv.astype(np.float32).reshape(cs)
    assert np.allclose(yv, y_ref, atol=1e-4)
    assert np.allclose(xh, xh_ref, atol=1e-4) and np.allclose(wv, xh_ref, atol=1e-4)
    if not unbiased:
        assert np.allclose(yv, batch_forward(xr, gv.astype(np.float32), bv.astype(np.float32), EPS)[0], atol=1e-4)


def test_gradients_against_finite_differences(g, small_device):
    shape = (3, 4, 5)
    rng = np.random.default_rng(7)
    x, dy = _variable(g, shape, "x"), _variable(g, shape, "dy", spread=False)
    gamma, beta = _variable(g, (4,), "gamma"), _variable(g, (4,), "beta")
    prog = Sequence()
    mean, inv_std = popnn.bn.batch_norm_statistics(g, x, EPS, prog)
    y, x_hat = popnn.bn.batch_normalise(g, x, gamma, beta, mean, inv_std, prog)
    dgamma, dbeta = popnn.bn.batch_norm_param_gradients(g, x_hat, dy, prog)
    dgamma2, dbeta2 = popnn.bn.batch_norm_param_gradients(g, x, dy, mean, inv_std, prog)
    dx = popnn.bn.batch_norm_gradients(g, x_hat, dy, inv_std, gamma, prog)
    dx2 = popnn.bn.batch_norm_gradients(g, x, dy, mean, inv_std, gamma, prog)
    xv = rng.standard_normal(shape).astype(np.float32) * 2
    dyv = rng.standard_normal(shape).astype(np.float32)
    gv, bv = rng.standard_normal(4).astype(np.float32), rng.standard_normal(4).astype(np.float32)
    (a, b, a2, b2, d, d2), _ = run(g, small_device, prog, {x: xv, dy: dyv, gamma: gv, beta: bv},
                                   [dgamma, dbeta, dgamma2, dbeta2, dx, dx2])
    def f(xs):
        return batch_forward(xs, gv, bv, EPS)[0]
    dx_ref = finite_difference(f, xv, dyv)
    assert np.allclose(d, dx_ref, atol=1e-3) and np.allclose(d2, dx_ref, atol=1e-3)
    dgamma_ref = finite_difference(lambda gs: batch_forward(xv, gs, bv, EPS)[0], gv, dyv)
    dbeta_ref = finite_difference(lambda bs: batch_forward(xv, gv, bs, EPS)[0], bv, dyv)
    for got in (a, a2):
        assert np.allclose(got, dgamma_ref, atol=1e-3)
    for got in (b, b2):
        assert np.allclose(got, dbeta_ref, atol=1e-3)


@pytest.mark.parametrize("tensor_scale", [False, True])
def test_param_update_adds_scaled_deltas(g, small_device, tensor_scale):
    gamma, beta = _variable(g, (6,), "gamma"), _variable(g, (6,), "beta", spread=False)
    dgamma, dbeta = _variable(g, (6,), "dgamma"), _variable(g, (6,), "dbeta")
    prog = Sequence()
    scale = -0.25
    if tensor_scale:
        scale = g.add_constant(FLOAT, (), -0.25, "scale")
        g.set_tile_mapping(scale, 0)
    popnn.bn.batch_norm_param_update(g, dgamma, dbeta, scale, gamma, beta, prog)
    rng = np.random.default_rng(3)
    vals = {t: rng.standard_normal(6) for t in (gamma, beta, dgamma, dbeta)}
    (gv, bv), _ = run(g, small_device, prog, vals, [gamma, beta])
    f32 = {t: v.astype(np.float32) for t, v in vals.items()}
    assert np.allclose(gv, f32[gamma] - 0.25 * f32[dgamma], atol=1e-6)
    assert np.allclose(bv, f32[beta] - 0.25 * f32[dbeta], atol=1e-6)


def test_inference_form_and_layout_following(g, small_device):
    """acts as a channels-innermost view (a convolution's layout): the combined form."""
    base = g.add_variable(FLOAT, (2, 3, 3, 4), "x_nhwc")
    g.set_tile_mapping(base, [[(0, 20)], [(20, 50)], [(50, 60)], [(60, 72)]])
    x = base.dim_roll(3, 1)  # [2, 4, 3, 3]
    mult, add = _variable(g, (4,), "mult"), _variable(g, (4,), "add")
    prog = Sequence()
    y = popnn.bn.batch_normalise(g, x, mult, add, prog)
    rng = np.random.default_rng(5)
    xv, mv, av = rng.standard_normal((2, 3, 3, 4)), rng.standard_normal(4), rng.standard_normal(4)
    (yv,), engine = run(g, small_device, prog, {base: xv, mult: mv, add: av}, [y])
    xr = np.moveaxis(xv.astype(np.float32), 3, 1)
    ref = xr * mv.astype(np.float32)[None, :, None, None] + av.astype(np.float32)[None, :, None, None]
    assert np.allclose(yv, ref, atol=1e-6)
    kinds = {v["name"] for v in engine.get_report().to_dict()["execution"]["vertex_types"]}
    assert kinds == {"popnn::NormStatisticOp1D<AFFINE,float>"}   # each tile holds one region: a MultiVertex


def test_grouped_channels_innermost_layout_whitens_and_normalises(g, small_device):
    """acts laid out [N][C/G][H][W][G] (poplin's grouped conv output), G = 4, tile cuts
    inside channel groups: the ops see G (one piece per block of whole groups) and match numpy."""
    base = g.add_variable(FLOAT, (2, 2, 3, 3, 4), "x_grouped")   # [N, C/G, H, W, G]
    g.set_tile_mapping(base, [[(0, 18), (50, 97)], [(18, 50)], [(97, 144)]])
    x = base.dim_shuffle([0, 1, 4, 2, 3]).reshape((2, 8, 3, 3))
    assert norm_stat_ops.channel_grouping(x) == 4
    mean, inv_std = _variable(g, (8,), "mean"), _variable(g, (8,), "inv_std")
    gamma, beta = _variable(g, (8,), "gamma"), _variable(g, (8,), "beta")
    prog = Sequence()
    y, x_hat = popnn.bn.batch_normalise(g, x, gamma, beta, mean, inv_std, prog)
    rng = np.random.default_rng(9)
    xv = rng.standard_normal((2, 2, 3, 3, 4))
    mv, sv, gv, bv = (rng.standard_normal(8).astype(np.float32) for _ in range(4))
    (yv, hv), engine = run(g, small_device, prog, {base: xv, mean: mv, inv_std: sv, gamma: gv, beta: bv},
                           [y, x_hat])
    kinds = {v["name"] for v in engine.get_report().to_dict()["execution"]["vertex_types"]}
    assert {"popnn::NormStatisticOp<WHITEN,float>", "popnn::NormStatisticOp1D<WHITEN,float>"} <= kinds  # tile 0: 2
    xr = xv.astype(np.float32).transpose(0, 1, 4, 2, 3).reshape(2, 8, 3, 3)
    c = (1, 8, 1, 1)
    h_ref = (xr - mv.reshape(c)) * sv.reshape(c)
    assert np.allclose(hv, h_ref, atol=1e-5)
    assert np.allclose(yv, h_ref * gv.reshape(c) + bv.reshape(c), atol=1e-5)


def test_half(g, small_device):
    shape = (4, 3, 6)
    x = _variable(g, shape, "x", HALF)
    gamma, beta = _variable(g, (3,), "gamma", HALF), _variable(g, (3,), "beta", HALF)
    prog = Sequence()
    mean, inv_std = popnn.bn.batch_norm_statistics(g, x, EPS, prog)
    y, _ = popnn.bn.batch_normalise(g, x, gamma, beta, mean, inv_std, prog)
    assert y.dtype == HALF and mean.dtype == HALF
    rng = np.random.default_rng(11)
    xv = rng.standard_normal(shape).astype(np.float16)
    gv, bv = rng.standard_normal(3).astype(np.float16), rng.standard_normal(3).astype(np.float16)
    (yv,), engine = run(g, small_device, prog, {x: xv, gamma: gv, beta: bv}, [y])
    y_ref, _ = batch_forward(xv.astype(np.float64), gv.astype(np.float64), bv.astype(np.float64), EPS)
    assert np.allclose(yv, y_ref, atol=2e-2, rtol=1e-2)
    kinds = {v["name"] for v in engine.get_report().to_dict()["execution"]["vertex_types"]}
    assert "poplin::InverseStdDeviation<half,float,half,false>" in kinds


def test_bad_input_names_tensor_and_layout(g):
    x = _variable(g, (2, 4, 3), "acts")
    prog = Sequence()
    gamma3 = _variable(g, (3,), "gamma3")
    beta = _variable(g, (4,), "beta")
    mean, inv_std = _variable(g, (4,), "mean"), _variable(g, (4,), "istd")
    with pytest.raises(PoplibsError, match=r"gamma 'gamma3' must have shape \(4,\): one per channel.*\[B, C"):
        popnn.bn.batch_normalise(g, x, gamma3, beta, mean, inv_std, prog)
    with pytest.raises(PoplibsError, match=r"acts 'flat' must have layout \[B, C, ...field\].*rank 1"):
        popnn.bn.batch_norm_statistics(g, _variable(g, (8,), "flat"), EPS, prog)
    with pytest.raises(PoplibsError, match=r"mean 'm5' must have shape \(4,\)"):
        popnn.bn.batch_norm_whiten(g, x, _variable(g, (5,), "m5"), inv_std, prog)
    with pytest.raises(PoplibsError, match=r"grads_in 'dy' must be FLOAT of shape \(2, 4, 3\)"):
        popnn.bn.batch_norm_param_gradients(g, x, _variable(g, (2, 4), "dy"), prog)
    with pytest.raises(PoplibsError, match="match no form"):
        popnn.bn.batch_normalise(g, x, gamma3, prog)
    with pytest.raises(popsim.InvalidOptionError, match="takes no options"):
        popnn.bn.batch_norm_statistics(g, x, EPS, prog, options={"groupNormStridedChannelGrouping": "true"})
    assert len(prog) == 0


def test_an_eps_too_large_for_a_float(g):
    """An integer past 1.8e308 was float()'s OverflowError."""
    with pytest.raises(PoplibsError, match="eps 1000000000.* is too large for a floating-point number"):
        popnn.bn.batch_norm_statistics(g, _variable(g, (2, 3, 4), "x"), 10 ** 400, Sequence())
