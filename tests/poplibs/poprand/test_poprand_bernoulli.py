"""poprand.bernoulli and dropout against the host reference, bit for bit, and their
frequencies."""
import math

import numpy as np
import pytest

import popsim
from popsim import poprand
from popsim.program import Sequence

import poprand_reference as R
from poprand_harness import SEED, device, reference, run, seed_tensor


@pytest.mark.parametrize("dtype", [popsim.FLOAT, popsim.HALF, popsim.INT])
def test_bernoulli_matches_the_reference_and_its_frequency(dtype):
    dev = device()
    g = popsim.Graph(dev)
    ref = reference(g, (100, 100), "scattered")
    seed = seed_tensor(g)
    prog = Sequence()
    out = poprand.bernoulli(g, seed, 11, ref, dtype, 0.25, prog)
    got = run(g, dev, prog, [out], {seed: SEED})[0]
    assert got.dtype == dtype.numpy
    np.testing.assert_array_equal(got, R.bernoulli(got.size, SEED, 11, 0.25).astype(dtype.numpy))
    assert set(np.unique(got).tolist()) == {0, 1}
    assert abs(got.mean() - 0.25) < 4 * math.sqrt(0.25 * 0.75 / got.size)


@pytest.mark.parametrize("prob, expected", [(0.0, 0), (1.0, 1)])
def test_bernoulli_certain_outcomes(prob, expected):
    dev = device()
    g = popsim.Graph(dev)
    ref = reference(g, (500,), "linear")
    prog = Sequence()
    out = poprand.bernoulli(g, None, 0, ref, popsim.INT, prob, prog)
    got = run(g, dev, prog, [out])[0]
    assert np.all(got == expected)


@pytest.mark.parametrize("dtype", [popsim.FLOAT, popsim.HALF])
def test_dropout_keeps_and_scales(dtype):
    dev = device()
    g = popsim.Graph(dev)
    x = reference(g, (80, 90), "linear", dtype=dtype, name="x")
    ref = reference(g, (80, 90), "scattered")
    seed = seed_tensor(g)
    prog = Sequence()
    y = poprand.dropout(g, seed, 5, x, ref, 0.8, 1.25, prog)
    assert y.dtype is dtype and g.get_tile_mapping(y) == g.get_tile_mapping(ref)
    data = np.random.default_rng(1).uniform(0.5, 2.0, x.shape).astype(dtype.numpy)
    got = run(g, dev, prog, [y], {seed: SEED, x: data})[0]
    expected = R.dropout(data.astype(np.float32), SEED, 5, 0.8, 1.25).astype(dtype.numpy)
    np.testing.assert_array_equal(got, expected)
    kept = got != 0
    assert abs(kept.mean() - 0.8) < 4 * math.sqrt(0.8 * 0.2 / got.size)
    np.testing.assert_array_equal(got[kept], (data.reshape(-1)[kept].astype(np.float32)
                                              * np.float32(1.25)).astype(dtype.numpy))


def test_dropout_uses_the_same_draws_as_bernoulli_of_the_reference():
    dev = device()
    g = popsim.Graph(dev)
    x = reference(g, (64,), "one", name="x")
    ref = reference(g, (64,), "linear")
    seed = seed_tensor(g)
    prog = Sequence()
    y = poprand.dropout(g, seed, 2, x, ref, 0.5, 1.0, prog)
    mask = poprand.bernoulli(g, seed, 2, ref, popsim.FLOAT, 0.5, prog)
    got_y, got_mask = run(g, dev, prog, [y, mask], {seed: SEED, x: np.ones(64)})
    np.testing.assert_array_equal(got_y, got_mask)


def test_dropout_output_can_clone_the_input():
    dev = device()
    g = popsim.Graph(dev)
    x = reference(g, (64,), "one", name="x")
    ref = reference(g, (64,), "linear")
    prog = Sequence()
    y = poprand.dropout(g, None, 0, x, ref, 0.5, 2.0, prog, output_clones_ref=False)
    assert g.get_tile_mapping(y) == g.get_tile_mapping(x)
