"""Helpers of src/popsim/runs.py."""
import numpy as np

from popsim.runs import distinct


def test_distinct_is_numpys_unique():
    rng = np.random.default_rng(0)
    for size in (0, 1, 2, 50):
        values = rng.integers(-5, 5, size)
        assert np.array_equal(distinct(values), np.unique(values))


def test_search_is_numpys_searchsorted_for_few_and_many_queries():
    from popsim.runs import search
    rng = np.random.default_rng(1)
    values = np.sort(rng.integers(0, 1000, 300))
    for size in (0, 10, 5000):
        queries = rng.integers(-10, 1010, size)
        for side in ("left", "right"):
            assert np.array_equal(search(values, queries, side), np.searchsorted(values, queries, side=side))


def test_a_mapping_index_in_order_or_not_is_sorted_by_begin():
    from popsim.runs import MappingIndex
    for begins in ([0, 4, 9], [9, 0, 4]):
        b = np.array(begins)
        index = MappingIndex(b, b + 2, b * 10)
        assert index.begins.tolist() == [0, 4, 9] and index.ends.tolist() == [2, 6, 11]
        assert index.tiles.tolist() == [0, 40, 90]
