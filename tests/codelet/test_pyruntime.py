"""The numeric helpers of interpreted vertices (popsim.codelet.pyruntime)."""
import numpy as np

from popsim.codelet import pyruntime

from vertex_harness import F32, arr


def test_float32_printing_matches_numpy():
    rng = np.random.default_rng(7)
    values = np.concatenate([(rng.standard_normal(300) * 10.0 ** rng.integers(-12, 12, 300)).astype(F32),
                             arr([1e6, 999999.94, 1e-4, 9.99e-5, 1e16, 3.4028235e38, 1e-45, 16777216, 0.5, 65504])])
    for v in values:
        assert pyruntime.format_f32(v) == str(v)
