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


def test_search_of_a_large_array_agrees_for_sorted_unsorted_and_2d_queries():
    from popsim.runs import CACHED_VALUES, search
    rng = np.random.default_rng(2)
    values = np.sort(rng.integers(0, 10 ** 7, CACHED_VALUES + 10))
    for queries in (rng.integers(-5, 10 ** 7 + 5, 6000), np.sort(rng.integers(0, 10 ** 7, 6000)),
                    values[rng.integers(0, values.size, (80, 70))]):
        for side in ("left", "right"):
            got = search(values, queries, side)
            assert got.shape == queries.shape and np.array_equal(got, np.searchsorted(values, queries, side=side))


def _tile_intervals_one_by_one(pos, length, tiles, num_tiles):
    """get_tile_mapping's rule piece by piece (the path tile_intervals takes with empty pieces)."""
    from popsim.runs import join_piece_by_piece
    order = np.argsort(pos, kind="stable")
    return join_piece_by_piece(pos[order], length[order], tiles[order], [[] for _ in range(num_tiles)])


def test_tile_intervals_join_neighbours_on_one_tile_as_piece_by_piece():
    from popsim.runs import Runs, tile_intervals
    rng = np.random.default_rng(3)
    for _ in range(300):
        k = int(rng.integers(0, 25))
        length = rng.integers(0 if rng.random() < 0.2 else 1, 4, k)   # some with empty pieces
        pos = np.cumsum(length + rng.integers(0, 2, k) * rng.integers(0, 3, k)) - length
        order = rng.permutation(k)   # pieces in any order
        tiles = rng.integers(-1, 3, k)
        got = tile_intervals(Runs(pos[order], pos[order] * 7, length[order]), tiles[order], 3)
        assert got == _tile_intervals_one_by_one(pos[order], length[order], tiles[order], 3)


def test_blocked_search_is_numpys_searchsorted():
    from popsim.runs import BLOCK_BITS, block_counts, blocked_search
    rng = np.random.default_rng(2)
    for size, span in ((1, 5), (40, 200), (3000, 10 ** 6), (2000, 3000)):   # sparse, dense, repeated values
        values = np.sort(rng.integers(0, span, size))
        counts = block_counts(values)
        queries = np.concatenate([rng.integers(0, span + 2 * (1 << BLOCK_BITS), 5000), values, values + 1,
                                  [0, int(values[-1]) << 3]])
        assert np.array_equal(blocked_search(values, counts, queries), np.searchsorted(values, queries, side="right"))


def test_a_mapping_index_past_the_dense_table_finds_the_same_boundaries(monkeypatch):
    import popsim.runs as runs
    rng = np.random.default_rng(3)
    begins = np.sort(rng.choice(np.arange(0, 10 ** 7, 3), 1 << 17, replace=False))
    index = runs.MappingIndex(begins, begins + 2, begins % 7)
    gids = rng.integers(0, 10 ** 7 + 10, 1 << 17)
    want = np.searchsorted(index.boundaries(), gids, side="right")
    monkeypatch.setattr(runs, "DENSE_IDS", 1 << 20)   # ids past it: the blocked counts
    assert np.array_equal(index.boundaries_up_to(gids), want) and index._blocks is not None and index._dense is None
