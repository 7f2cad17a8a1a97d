"""poprand.normal and truncated_normal against the host reference, bit for bit, and their
statistics."""
import math

import numpy as np
import pytest

import popsim
from popsim import poprand
from popsim.program import Sequence

import poprand_reference as R
from poprand_harness import SEED, device, reference, run, seed_tensor


def _phi(x):
    return 0.5 * (1.0 + np.vectorize(math.erf)(np.asarray(x) / math.sqrt(2.0)))


def _draw(op, layout, dtype, *params, shape=(100, 120)):
    dev = device()
    g = popsim.Graph(dev)
    ref = reference(g, shape, layout)
    seed = seed_tensor(g)
    prog = Sequence()
    out = op(g, seed, 4, ref, dtype, *params, prog)
    assert g.get_tile_mapping(out) == g.get_tile_mapping(ref)
    return run(g, dev, prog, [out], {seed: SEED})[0]


@pytest.mark.parametrize("layout", ["linear", "scattered"])
def test_normal_matches_the_reference(layout):
    got = _draw(poprand.normal, layout, popsim.FLOAT, 1.5, 0.5, shape=(30, 40))
    np.testing.assert_array_equal(got, R.normal(got.size, SEED, 4, 1.5, 0.5))


def test_normal_half():
    got = _draw(poprand.normal, "one", popsim.HALF, 0.0, 1.0, shape=(30, 40))
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, R.normal(got.size, SEED, 4, 0.0, 1.0).astype(np.float16))


def test_normal_moments_and_kolmogorov_smirnov():
    got = _draw(poprand.normal, "linear", popsim.FLOAT, 2.0, 3.0).astype(np.float64)
    n = got.size
    z = (got - 2.0) / 3.0
    assert abs(z.mean()) < 4 / math.sqrt(n)
    assert abs(z.var() - 1.0) < 4 * math.sqrt(2 / n)
    # third and fourth moments within 5 standard errors (sqrt(15/n) and sqrt(96/n))
    assert abs(np.mean(z ** 3)) < 5 * math.sqrt(15 / n)
    assert abs(np.mean(z ** 4) - 3.0) < 5 * math.sqrt(96 / n)
    assert R.ks_statistic(z, _phi) < 1.63 / math.sqrt(n)


@pytest.mark.parametrize("alpha", [0.3, 1.0, 2.0])
def test_truncated_normal_matches_the_reference_and_stays_within_alpha(alpha):
    got = _draw(poprand.truncated_normal, "scattered", popsim.FLOAT, -1.0, 2.0, alpha)
    np.testing.assert_array_equal(got, R.truncated_normal(got.size, SEED, 4, -1.0, 2.0, alpha))
    z = (got.astype(np.float64) + 1.0) / 2.0
    assert np.all(np.abs(z) <= alpha * (1 + 1e-6))
    lo, span = _phi(-alpha), _phi(alpha) - _phi(-alpha)
    assert R.ks_statistic(z, lambda x: (_phi(x) - lo) / span) < 1.63 / math.sqrt(z.size)
    # the truncated normal's variance: 1 - 2 alpha phi(alpha) / span
    pdf = math.exp(-alpha * alpha / 2) / math.sqrt(2 * math.pi)
    assert abs(z.var() - (1 - 2 * alpha * pdf / span)) < 0.02


def test_truncated_normal_half():
    got = _draw(poprand.truncated_normal, "linear", popsim.HALF, 0.0, 1.0, 2.0, shape=(20, 20))
    np.testing.assert_array_equal(got, R.truncated_normal(got.size, SEED, 4, 0.0, 1.0, 2.0).astype(np.float16))


def test_interpreted_vertices_give_the_same_bits(monkeypatch):
    """The vertices run as Python (debug mode) give the compiled results: the same reference."""
    monkeypatch.setenv("POPSIM_CODELET_MODE", "interpreted")
    got = _draw(poprand.truncated_normal, "scattered", popsim.FLOAT, 0.5, 2.0, 0.7, shape=(6, 7))
    np.testing.assert_array_equal(got, R.truncated_normal(got.size, SEED, 4, 0.5, 2.0, 0.7))
    got = _draw(poprand.normal, "linear", popsim.HALF, 0.0, 1.0, shape=(6, 7))
    np.testing.assert_array_equal(got, R.normal(got.size, SEED, 4, 0.0, 1.0).astype(np.float16))
