"""popnn.gn, popnn.ln and popnn.in_ on the engine against numpy float64 references."""
import numpy as np
import pytest

import popsim
from popsim import FLOAT, popnn
from popsim.program import Sequence
from popsim.poputil import PoplibsError

from norm_reference import finite_difference, forward, run, statistics

EPS = 1e-3


@pytest.fixture
def g(small_device):
    return popsim.Graph(small_device)


def _variable(g, shape, name):
    t = g.add_variable(FLOAT, shape, name)
    n = t.num_elements()
    g.set_tile_mapping(t, [[(0, n // 3)], [(n // 3, n // 2)], [(n // 2, n)], []])
    return t


@pytest.mark.parametrize("strided", [True, False, None])
def test_group_norm_forward_and_gradients(g, small_device, strided):
    shape, groups = (2, 6, 5), 3
    rng = np.random.default_rng(2)
    x, dy = _variable(g, shape, "x"), _variable(g, shape, "dy")
    gamma, beta = _variable(g, (6,), "gamma"), _variable(g, (6,), "beta")
    prog = Sequence()
    kw = {} if strided is None else {"options": {"groupNormStridedChannelGrouping": str(strided).lower()}}
    mean, inv_std = popnn.gn.group_norm_statistics(g, x, EPS, prog, groups, **kw)
    assert tuple(mean.shape) == (2 * groups,)
    y, x_hat = popnn.gn.group_normalise(g, x, gamma, beta, mean, inv_std, prog, **kw)
    dgamma, dbeta = popnn.gn.group_norm_param_gradients(g, x_hat, dy, prog, **kw)
    dx = popnn.gn.group_norm_gradients(g, x, dy, mean, inv_std, gamma, prog, **kw)
    xv = rng.standard_normal(shape).astype(np.float32) * 2 + 1
    dyv = rng.standard_normal(shape).astype(np.float32)
    gv, bv = rng.standard_normal(6).astype(np.float32), rng.standard_normal(6).astype(np.float32)
    (m, s, yv, a, b, d), _ = run(g, small_device, prog, {x: xv, dy: dyv, gamma: gv, beta: bv},
                                 [mean, inv_std, y, dgamma, dbeta, dx])
    is_strided = strided is not False
    m_ref, s_ref = statistics(xv, groups, EPS, strided=is_strided)
    assert np.allclose(m, m_ref, atol=1e-5) and np.allclose(s, s_ref, rtol=1e-4)
    y_ref, xh_ref = forward(xv, gv, bv, groups, EPS, is_strided)
    assert np.allclose(yv, y_ref, atol=1e-4)
    assert np.allclose(a, (xh_ref * dyv).sum((0, 2)), atol=1e-4) and np.allclose(b, dyv.sum((0, 2)), atol=1e-4)
    dx_ref = finite_difference(lambda xs: forward(xs, gv, bv, groups, EPS, is_strided)[0], xv, dyv)
    assert np.allclose(d, dx_ref, atol=1e-3)


def test_strided_and_contiguous_grouping_differ(g, small_device):
    x = _variable(g, (1, 4, 3), "x")
    prog = Sequence()
    m_strided, _ = popnn.gn.group_norm_statistics(g, x, EPS, prog, 2)
    m_contiguous, _ = popnn.gn.group_norm_statistics(g, x, EPS, prog, 2, strided_channel_grouping=False)
    xv = np.arange(12, dtype=np.float32).reshape(1, 4, 3)
    (a, b), _ = run(g, small_device, prog, {x: xv}, [m_strided, m_contiguous])
    assert np.allclose(a, [(1 + 7) / 2, (4 + 10) / 2])      # channels {0, 2}, {1, 3}
    assert np.allclose(b, [(1 + 4) / 2, (7 + 10) / 2])      # channels {0, 1}, {2, 3}


@pytest.mark.parametrize("module, groups", [("ln", 1), ("in_", 4)])
def test_layer_and_instance_norm(g, small_device, module, groups):
    shape = (3, 4, 5)
    ns = getattr(popnn, module)
    prefix = "layer" if module == "ln" else "instance"
    rng = np.random.default_rng(groups)
    x, dy = _variable(g, shape, "x"), _variable(g, shape, "dy")
    gamma, beta = _variable(g, (4,), "gamma"), _variable(g, (4,), "beta")
    prog = Sequence()
    mean, inv_std = getattr(ns, f"{prefix}_norm_statistics")(g, x, EPS, prog, True)
    y, x_hat = getattr(ns, f"{prefix}_normalise")(g, x, gamma, beta, mean, inv_std, prog)
    dx = getattr(ns, f"{prefix}_norm_gradients")(g, x_hat, dy, inv_std, gamma, prog)
    dgamma, dbeta = getattr(ns, f"{prefix}_norm_param_gradients")(g, x_hat, dy, prog)
    getattr(ns, f"{prefix}_norm_param_update")(g, dgamma, dbeta, -0.5, gamma, beta, prog)
    xv = rng.standard_normal(shape).astype(np.float32)
    dyv = rng.standard_normal(shape).astype(np.float32)
    gv, bv = rng.standard_normal(4).astype(np.float32), rng.standard_normal(4).astype(np.float32)
    (m, s, d, gnew), _ = run(g, small_device, prog, {x: xv, dy: dyv, gamma: gv, beta: bv}, [mean, inv_std, dx, gamma])
    m_ref, s_ref = statistics(xv, groups, EPS, unbiased=True)
    assert tuple(mean.shape) == (3 * groups,)
    assert np.allclose(m, m_ref, atol=1e-5) and np.allclose(s, s_ref, rtol=1e-4)
    # the whitened form's gradient uses the unbiased inv_std: compare with the whitened formula
    xh = (xv - m_ref.reshape(3, groups).repeat(4 // groups, 1)[:, :, None]) * s_ref.reshape(3, groups).repeat(
        4 // groups, 1)[:, :, None] if groups == 4 else (xv - m_ref[:, None, None]) * s_ref[:, None, None]
    gg = dyv * gv[None, :, None]
    axes = (2,) if groups == 4 else (1, 2)
    inv = s_ref.reshape(3, 4, 1) if groups == 4 else s_ref.reshape(3, 1, 1)
    dx_ref = inv * (gg - gg.mean(axes, keepdims=True) - xh * (gg * xh).mean(axes, keepdims=True))
    assert np.allclose(d, dx_ref, atol=1e-4)
    assert np.allclose(gnew, gv - 0.5 * (xh * dyv).sum((0, 2)), atol=1e-4)


def test_bad_group_input(g):
    x = _variable(g, (2, 6, 3), "acts")
    prog = Sequence()
    with pytest.raises(PoplibsError, match=r"num_groups must be .* dividing the 6 channels of 'acts'"):
        popnn.gn.group_norm_statistics(g, x, EPS, prog, 4)
    mean = _variable(g, (5,), "mean5")
    with pytest.raises(PoplibsError, match=r"'mean5' must have shape \(B·G,\)"):
        popnn.gn.group_norm_whiten(g, x, mean, mean, prog)
    with pytest.raises(PoplibsError, match="contradicts option"):
        popnn.gn.group_norm_statistics(g, x, EPS, prog, 2, strided_channel_grouping=False,
                                       options={"groupNormStridedChannelGrouping": "true"})
    with pytest.raises(popsim.InvalidOptionError, match="unknown option 'strided'"):
        popnn.gn.group_norm_statistics(g, x, EPS, prog, 2, options={"strided": "true"})
    beta = _variable(g, (3,), "beta3")
    m, s = _variable(g, (4,), "m"), _variable(g, (4,), "s")
    with pytest.raises(PoplibsError, match=r"beta 'beta3' must have shape \(6,\)"):
        popnn.ln.layer_normalise(g, x, _variable(g, (6,), "gamma"), beta, m, s, prog)
    with pytest.raises(PoplibsError, match=r"rank >= 2"):
        popnn.in_.instance_norm_statistics(g, _variable(g, (6,), "v"), EPS, prog)
