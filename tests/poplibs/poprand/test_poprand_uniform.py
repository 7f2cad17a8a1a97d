"""poprand.uniform (and log_uniform) on the device against the host reference, bit for
bit; independence from tile mapping and thread count; statistics."""
import math

import numpy as np
import pytest

import popsim
from popsim import poprand
from popsim.program import Sequence

import poprand_reference as R
from poprand_harness import SEED, device, reference, run, seed_tensor


def _uniform(layout, dtype, lo, hi, shape=(40, 53), options=None, modifier=9):
    dev = device()
    g = popsim.Graph(dev)
    ref = reference(g, shape, layout)
    seed = seed_tensor(g)
    prog = Sequence()
    out = poprand.uniform(g, seed, modifier, ref, dtype, lo, hi, prog)
    assert out.shape == ref.shape and out.dtype is dtype
    assert g.get_tile_mapping(out) == g.get_tile_mapping(ref)
    return run(g, dev, prog, [out], {seed: SEED}, options)[0]


@pytest.mark.parametrize("layout", ["linear", "one", "scattered"])
def test_float_matches_the_reference_for_any_mapping(layout):
    got = _uniform(layout, popsim.FLOAT, -2.0, 5.0)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, R.uniform(got.size, SEED, 9, -2.0, 5.0))


def test_half_is_the_float_value_rounded():
    got = _uniform("scattered", popsim.HALF, 0.0, 1.0)
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, R.uniform(got.size, SEED, 9, 0.0, 1.0).astype(np.float16))


@pytest.mark.parametrize("lo, hi", [(-5, 10), (0, 0), (-2 ** 31, 2 ** 31 - 1), (7, 8)])
def test_int_is_inclusive_of_both_ends(lo, hi):
    got = _uniform("linear", popsim.INT, lo, hi)
    np.testing.assert_array_equal(got, R.uniform_int(got.size, SEED, 9, lo, hi))
    assert got.min() >= lo and got.max() <= hi
    if hi - lo < 20:
        assert set(got.tolist()) == set(range(lo, hi + 1))  # every value, the ends included


def test_results_do_not_depend_on_the_thread_count():
    one = _uniform("scattered", popsim.FLOAT, 0.0, 1.0, options={"popsim.numThreads": "1"})
    two = _uniform("scattered", popsim.FLOAT, 0.0, 1.0, options={"popsim.numThreads": "2"})
    np.testing.assert_array_equal(one, two)


def test_seed_modifier_changes_the_numbers():
    a = _uniform("linear", popsim.FLOAT, 0.0, 1.0, modifier=1)
    b = _uniform("linear", popsim.FLOAT, 0.0, 1.0, modifier=2)
    assert np.mean(a == b) < 0.001


def test_statistics_and_kolmogorov_smirnov():
    got = _uniform("linear", popsim.FLOAT, -1.0, 3.0, shape=(100, 200)).astype(np.float64)
    n = got.size
    assert got.min() >= -1.0 and got.max() < 3.0
    assert abs(got.mean() - 1.0) < 4 * math.sqrt(16 / 12 / n)
    assert abs(got.var() - 16 / 12) < 0.03
    d = R.ks_statistic(got, lambda x: (x + 1.0) / 4.0)
    assert d < 1.63 / math.sqrt(n)  # the 1% critical value


def test_log_uniform_matches_the_reference_and_its_logarithm_is_uniform():
    dev = device()
    g = popsim.Graph(dev)
    ref = reference(g, (100, 100), "scattered")
    seed = seed_tensor(g)
    prog = Sequence()
    out = poprand.log_uniform(g, seed, 3, ref, popsim.FLOAT, 0.01, 100.0, prog, base=10.0)
    got = run(g, dev, prog, [out], {seed: SEED})[0]
    np.testing.assert_array_equal(got, R.log_uniform(got.size, SEED, 3, 0.01, 100.0))
    assert got.min() >= np.float32(0.01) and got.max() <= np.float32(100.0)
    logs = np.log(got.astype(np.float64))
    d = R.ks_statistic(logs, lambda x: (x - math.log(0.01)) / (math.log(100.0) - math.log(0.01)))
    assert d < 1.63 / math.sqrt(got.size)
