"""Tile mappings of one variable (src/popsim/mapping.py), against brute force over elements."""
import numpy as np
import pytest

from popsim.mapping import VariableMapping


def painted(size, calls):
    """Tile of each element after ``calls`` (begin, end, tile), later calls winning; -1 unmapped."""
    tiles = np.full(size, -1)
    for b, e, t in calls:
        tiles[b:e] = t
    return tiles


@pytest.mark.parametrize("seed", range(30))
def test_resolved_and_first_unmapped_match_brute_force(seed):
    rng = np.random.default_rng(seed)
    size = int(rng.integers(1, 60))
    m = VariableMapping(size)
    calls = []
    for _ in range(int(rng.integers(0, 8))):
        b = int(rng.integers(0, size))
        e = int(rng.integers(b, size + 1))
        t = int(rng.integers(0, 3))
        calls.append((b, e, t))
        if rng.integers(2):
            m.paint_one(b, e, t)
        else:
            m.paint([b], [e], [t])
    want = painted(size, calls)
    begins, ends, tiles = m.resolved()
    got = np.full(size, -1)
    for b, e, t in zip(begins.tolist(), ends.tolist(), tiles.tolist()):
        got[b:e] = t
    assert np.array_equal(got, want)
    gaps = np.flatnonzero(want < 0)
    if gaps.size == 0:
        assert m.first_unmapped() is None
    else:
        b = int(gaps[0])
        e = b
        while e < size and want[e] < 0:
            e += 1
        assert m.first_unmapped() == (b, e)


def test_first_unmapped_of_whole_empty_and_unpainted_variables():
    m = VariableMapping(10)
    assert m.first_unmapped() == (0, 10)
    m.paint_one(0, 10, 3)
    assert m.first_unmapped() is None
    assert VariableMapping(0).first_unmapped() is None
    m = VariableMapping(10)
    m.paint_one(2, 5, 1)
    m.paint_one(5, 8, 2)
    assert m.first_unmapped() == (0, 2)
    m.paint_one(0, 2, 1)
    assert m.first_unmapped() == (8, 10)
