"""norm_stat_ops._pieces (a NormStatisticOp vertex's regionPieces, pieceLen, pieceCount and
pieceStat, in one numpy pass over its regions) against the statistic of every element, and
its promise: a region of whole channel groups inside one block is one piece."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from popsim.popnn.norm_stat_ops import _pieces


def statistic(k, block, groups, g):
    return (k // block) % groups * g + k % g


@settings(max_examples=60, deadline=None)
@given(data=st.data(), g=st.integers(1, 5), groups=st.integers(1, 4), positions=st.integers(1, 4),
       outer=st.integers(1, 3))
def test_pieces_give_every_element_its_statistic(data, g, groups, positions, outer):
    block = positions * g                        # [outer, groups, positions, g] flattened
    n = outer * groups * block
    group = [(b, data.draw(st.integers(b + 1, n))) for b in
             data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=5))]
    counts, lengths, blocks, stats = _pieces(group, block, groups, g)
    assert all(a.dtype == np.int64 for a in (counts, lengths, blocks, stats))
    assert counts.tolist() and len(counts) == len(group) and counts.sum() == len(lengths)
    k = 0
    for (b, e), count in zip(group, counts):
        got = []
        for _ in range(count):
            assert 1 <= lengths[k] <= g or g == 1
            got += list(np.tile(stats[k] + np.arange(lengths[k]), blocks[k]))
            k += 1
        assert got == [statistic(i, block, groups, g) for i in range(b, e)]


def test_whole_groups_in_one_block_are_one_piece():
    # g 4, 3 positions a block: elements 12..24 are the second block's 3 whole groups
    counts, lengths, blocks, stats = _pieces([(12, 24), (13, 24), (0, 48)], 12, 4, 4)
    assert counts.tolist() == [1, 2, 4]
    assert (lengths.tolist(), blocks.tolist(), stats.tolist()) == (
        [4, 3, 4, 4, 4, 4, 4], [3, 1, 2, 3, 3, 3, 3], [4, 5, 4, 0, 4, 8, 12])
