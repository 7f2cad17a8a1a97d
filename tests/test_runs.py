"""Helpers of src/popsim/runs.py."""
import numpy as np

from popsim.runs import distinct


def test_distinct_is_numpys_unique():
    rng = np.random.default_rng(0)
    for size in (0, 1, 2, 50):
        values = rng.integers(-5, 5, size)
        assert np.array_equal(distinct(values), np.unique(values))
