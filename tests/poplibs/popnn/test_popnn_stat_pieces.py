"""norm_stat_ops._pieces (a NormStatisticOp vertex's regionPieces, pieceLen, pieceCount and
pieceStat, in one numpy pass over its regions) against the statistic of every element, and
its promise: a region of whole channel groups inside one block is one piece; and the
estimates stat_op gives its vertices."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import popsim
from popsim import FLOAT, HALF
from popsim.popnn import norm_stat_ops
from popsim.popnn.norm_stat_ops import _pieces
from popsim.popnn.norm_vertices import STAT_OPS
from popsim.program import Sequence
from popsim.vertex_store import vertex_ref
from popsim.vertices import VertexInfo


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


@pytest.mark.parametrize("op", ["WHITEN", "GRADIENT", "SCALE"])
@pytest.mark.parametrize("dtype", [FLOAT, HALF])
@pytest.mark.parametrize("channels_inner", [False, True])
def test_stat_op_sets_each_vertex_the_estimate_of_its_types_estimator(small_device, op, dtype, channels_inner):
    """stat_op works out every vertex's estimate at once (_vertex_cycles): each must be what
    its type's estimator (stat_op_cycles, stat_op_1d_cycles) says of the vertex as built."""
    g = popsim.Graph(small_device)
    shape = (2, 8, 3, 5)
    num_data, num_stats, _ = STAT_OPS[op]
    data = []
    for k in range(num_data):
        # channels innermost in memory in groups of 4 (a convolution's output), or not
        var = g.add_variable(dtype, (2, 2, 3, 5, 4) if channels_inner else shape, f"x{k}")
        # in memory order, tile 0 one region (a MultiVertex), the others several (vertices split between workers)
        g.set_tile_mapping(var, [[(0, 40)], [(40, 70), (150, 170)], [(70, 110), (170, 200)], [(110, 150), (200, 240)]])
        data.append(var.dim_shuffle([0, 1, 4, 2, 3]).reshape(shape) if channels_inner else var)
    stats = []
    for k in range(num_stats):
        s = g.add_variable(dtype, (8,), f"s{k}")
        g.set_tile_mapping(s, k % 4)
        stats.append(s)
    norm_stat_ops.stat_op(g, op, data, stats, Sequence(), "op")
    cs = g._state.compute_sets[-1]
    assert len(cs._types) > 4 and {vt.name.startswith("popnn::NormStatisticOp1D") for vt in cs._types} == {True, False}
    for k in range(len(cs._types)):
        estimator = g._state.estimators[cs._types[k].name]
        assert cs._perf[k] == estimator(VertexInfo(vertex_ref(cs, k)), g.target), k


@settings(max_examples=80, deadline=None)
@given(data=st.data(), tiles=st.integers(1, 5), channels=st.integers(1, 30))
def test_needed_by_tile_is_each_tiles_union_of_its_pieces(data, tiles, channels):
    starts = data.draw(st.lists(st.integers(0, channels - 1), min_size=1, max_size=30))
    lengths = [data.draw(st.integers(1, channels - s)) for s in starts]
    piece_tile = sorted(data.draw(st.lists(st.integers(0, tiles - 1), min_size=len(starts), max_size=len(starts))))
    starts, lengths, piece_tile = (np.array(a, np.int64) for a in (starts, lengths, piece_tile))
    needed, rank = norm_stat_ops._needed_by_tile(piece_tile, starts, lengths, tiles)
    for t in range(tiles):
        used = np.zeros(channels, bool)
        for s, n in zip(starts[piece_tile == t], lengths[piece_tile == t]):
            used[s:s + n] = True
        assert needed[t].tolist() == np.flatnonzero(used).tolist()
    assert rank.tolist() == [int(np.searchsorted(needed[t], s)) for t, s in zip(piece_tile, starts)]


def test_the_estimates_follow_their_documented_formulas():
    """stat_op_cycles: 20 + 4·regions + Σ_pieces (6 + vectors·(ops + 1)); stat_op_1d_cycles:
    20 + Σ_pieces (6 + ceil(vectors / workers)·(ops + 1)); a piece's vectors count·ceil(len /
    vw), ceil(count / vw) when len is 1 (vw: float 2, half 4). WHITEN has 2 ops."""
    lengths, counts = [1, 4, 3], [3, 2, 5]
    # float: vectors 2, 2·2 = 4, 5·2 = 10
    assert norm_stat_ops.stat_op_cycles("WHITEN", FLOAT, 2, lengths, counts) == 20 + 4 * 2 + 6 * 3 + 3 * (2 + 4 + 10)
    # half: vectors 1, 2·1 = 2, 5·1 = 5; over 6 workers: 1, 1, 1
    assert norm_stat_ops.stat_op_cycles("GRADIENT", HALF, 1, lengths, counts) == 20 + 4 + 6 * 3 + 5 * (1 + 2 + 5)
    assert norm_stat_ops.stat_op_1d_cycles("WHITEN", HALF, lengths, counts, 6) == 20 + 6 * 3 + 3 * (1 + 1 + 1)
    assert norm_stat_ops.stat_op_1d_cycles("SCALE", FLOAT, lengths, counts, 3) == 20 + 6 * 3 + 2 * (1 + 2 + 4)
