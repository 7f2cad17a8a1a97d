"""The reduction plan's stage geometry (reduce_plan.cover_regions, split_region,
block_bounds, inner_rows, box_runs) by hand, and what the stages build: one on-tile
partial per tile over the union of its outputs, contiguous row partials for inner
reductions, intermediate pieces as groups of partials times output blocks, and the vertex's
block and accumulator paths against numpy for every operation."""
import numpy as np
import pytest

import popsim
from popsim import BOOL, FLOAT, INT, popops
from popsim.popops import Operation, ReduceParams
from popsim.popops import reduce_plan as plan
from popsim.program import Execute, Sequence

from popops_harness import run
from test_popops_reduce import check, data, reference


def stages(prog):
    return {p.compute_set.name.split("/")[-1]: p.compute_set for p in prog.children() if isinstance(p, Execute)}


def field(v, name):
    return v.connection([f.name for f in v.type.fields].index(name))


def device_with(tiles):
    model = popsim.IPUModel("ipu2")
    model.tiles_per_ipu = tiles
    return model.create_device()


def test_cover_regions_by_hand():
    """Pieces over [0, 6), [4, 8), [2, 5): bounds 0 2 4 5 6 8; region 0 [0, 2) has piece 0,
    [2, 4) pieces 0 and 2, [4, 5) all three, [5, 6) pieces 0 and 1, [6, 8) piece 1."""
    bounds, region, piece = plan.cover_regions([0, 4, 2], [6, 8, 5])
    assert bounds.tolist() == [0, 2, 4, 5, 6, 8]
    assert list(zip(region.tolist(), piece.tolist())) == [(0, 0), (1, 0), (1, 2), (2, 0), (2, 1), (2, 2), (3, 0),
                                                          (3, 1), (4, 1)]
    bounds, region, piece = plan.cover_regions([0, 10], [2, 12])  # a gap: no pair for [2, 10)
    assert bounds.tolist() == [0, 2, 10, 12] and region.tolist() == [0, 2] and piece.tolist() == [0, 1]


def test_split_region_by_hand():
    # 1472 partials over 4096 outputs, 4096 elements a tile: 1472 pieces, 32 groups x 46 blocks
    assert plan.split_region(1472, 4096, 4096, 16) == (32, 46)
    # 64 one-element partials: 32 groups of two (one block: the region is 1 wide)
    assert plan.split_region(64, 1, 1, 16) == (32, 1)
    # 3 partials: one group (at least two a group), the width in blocks of whole grains
    assert plan.split_region(3, 4096, 64, 16) == (1, 192)
    assert plan.split_region(3, 40, 64, 16) == (1, 1)
    assert plan.block_bounds(100, 3, 16) == [0, 32, 64, 100]
    assert plan.block_bounds(37, 1, 16) == [0, 37]


def test_inner_rows():
    assert plan.inner_rows(((0, 3), (0, 32)), [1]) == 32          # rows of 32 reduced elements
    assert plan.inner_rows(((0, 3), (0, 8)), [1]) == 0            # too short
    assert plan.inner_rows(((0, 3), (0, 32)), [0]) == 0           # the reduced dim is outside
    assert plan.inner_rows(((2, 3), (0, 32)), [0, 1]) == 32       # one output element
    assert plan.inner_rows(((0, 2), (0, 4), (0, 8)), [1, 2]) == 32
    assert plan.inner_rows(((0, 2), (0, 4), (0, 8)), [0, 2]) == 0  # a kept dim between reduced ones


def test_box_runs_single_run_and_grid_agree():
    assert plan.box_runs([(1, 2), (0, 5)], (4, 5)) == [(0, 5, 10)]
    assert plan.box_runs([(1, 3), (0, 5)], (4, 5)) == [(0, 5, 15)]
    assert plan.box_runs([(1, 2), (2, 4)], (4, 5)) == [(0, 7, 9)]
    assert plan.box_runs([(1, 3), (2, 4)], (4, 5)) == [(0, 7, 9), (2, 12, 14)]
    assert plan.box_runs([(1, 1), (0, 5)], (4, 5)) == []


def test_on_tile_stage_makes_one_partial_per_tile_over_its_outputs():
    """Tile 0 holds row 0 cols 3..7, row 1 and row 2 cols 0..4 of an [8, 8] tensor: its
    on-tile vertices write 8 outputs (the union), in regions [0, 3) [3, 5) [5, 8) fed by 2,
    3 and 2 contiguous row pieces; the other tiles hold two rows each."""
    device = device_with(4)
    g = popsim.Graph(device)
    t = g.add_variable(FLOAT, (8, 8), "t")
    g.set_tile_mapping(t, [[(3, 21)], [(0, 3), (21, 32)], [(32, 48)], [(48, 64)]])
    prog = Sequence()
    out = popops.reduce(g, t, [0], ReduceParams(Operation.ADD), prog)
    on_tile = [v for v in stages(prog)["ReduceOnTile"].vertices if v.tile == 0]
    assert sum(o.num_elements() for v in on_tile for o in field(v, "out")) == 8
    assert all(p.num_elements() == o.num_elements() for v in on_tile
               for o, p in zip(field(v, "out"), field(v, "partials")))  # one-row pieces: no gathered views
    assert sorted(int(c) for v in on_tile for c in np.atleast_1d(field(v, "numPartials"))) == [2, 2, 3]
    x = np.random.default_rng(3).standard_normal((8, 8)).astype(np.float32)
    _, (got,) = run(g, device, prog, [out], {t: x})
    np.testing.assert_allclose(got, x.sum(axis=0), rtol=1e-5, atol=1e-5)


def test_inner_reduction_takes_contiguous_rows_as_partials():
    """Row 1 of a [4, 32] tensor lies on two tiles: not tile-local; each output's partial
    on a tile is its row piece (32 or 16 contiguous elements, one output element wide)."""
    device = device_with(2)
    g = popsim.Graph(device)
    t = g.add_variable(FLOAT, (4, 32), "t")
    g.set_tile_mapping(t, [[(0, 48)], [(48, 128)]])
    prog = Sequence()
    out = popops.reduce(g, t, [1], ReduceParams(Operation.ADD), prog)
    on_tile = stages(prog)["ReduceOnTile"].vertices
    sizes = sorted((o.num_elements(), p.num_elements()) for v in on_tile if v.tile == 0
                   for o, p in zip(field(v, "out"), field(v, "partials")))
    assert sizes == [(1, 16), (1, 32)]
    x = np.random.default_rng(4).standard_normal((4, 32)).astype(np.float32)
    _, (got,) = run(g, device, prog, [out], {t: x})
    np.testing.assert_allclose(got, x.sum(axis=1), rtol=1e-5, atol=1e-5)


def test_intermediate_stage_cuts_groups_of_partials_and_blocks_of_outputs():
    """64 tiles each hold one row of a [64, 64] tensor: 4096 partial elements > 32 x 64, so
    an intermediate stage: split_region(64, 64, 64, 16) = 32 groups x 2 blocks of 32, one
    piece on each of the 64 tiles, two partials each; then 32 partials per output."""
    device = device_with(64)
    g = popsim.Graph(device)
    t = g.add_variable(FLOAT, (64, 64), "t")
    g.set_tile_mapping(t, [[(64 * i, 64 * i + 64)] for i in range(64)])
    prog = Sequence()
    out = popops.reduce(g, t, [0], ReduceParams(Operation.ADD), prog)
    sets = stages(prog)
    assert list(sets) == ["ReduceStage0", "ReduceFinalStage"]
    middle = sets["ReduceStage0"].vertices
    assert {v.tile for v in middle} == set(range(64))
    for tile in range(64):
        outs = [o for v in middle if v.tile == tile for o in field(v, "out")]
        partials = [p for v in middle if v.tile == tile for p in field(v, "partials")]
        assert sum(o.num_elements() for o in outs) == 32 and sum(p.num_elements() for p in partials) == 64
    x = np.random.default_rng(5).standard_normal((64, 64)).astype(np.float32)
    _, (got,) = run(g, device, prog, [out], {t: x})
    np.testing.assert_allclose(got, x.sum(axis=0), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("op", list(Operation))
@pytest.mark.parametrize("shape, dim", [((5, 37), 0), ((37, 43), 1)])
def test_vertex_block_and_accumulator_paths(small_device, op, shape, dim):
    """On one tile: over dim 0, 37 outputs wide partials (blocks of 16, 16, 4, then one);
    over dim 1, rows of 43 (four accumulators and a remainder of 3)."""
    dtype = BOOL if op in (Operation.LOGICAL_AND, Operation.LOGICAL_OR) else FLOAT if op is Operation.LOG_ADD \
        else INT if op is Operation.MUL else FLOAT
    g = popsim.Graph(small_device)
    t = g.add_variable(dtype, shape, "t")
    g.set_tile_mapping(t, 0)
    prog = Sequence()
    out = popops.reduce(g, t, [dim], ReduceParams(op), prog)
    x = data(op, dtype, shape, np.random.default_rng(6))
    _, (got,) = run(g, small_device, prog, [out], {t: x})
    check(op, dtype, got, reference(op, x, [dim]))


def test_lanes_by_hand():
    """Sorted by start: [0,2) lane 0, [0,6) lane 1, [2,5) lane 0 (free at 2), [4,8) lane 2,
    [6,9) lane 0 (free at 5): three lanes, the most pieces over one element."""
    assert plan.lanes([0, 4, 2, 6, 0], [6, 8, 5, 9, 2]).tolist() == [1, 2, 0, 0, 0]
    assert plan.lanes([0, 8, 16], [8, 16, 24]).tolist() == [0, 0, 0]


def test_ragged_rows_take_few_edges_in_the_intermediate_stage():
    """A [64, 64] tensor in pieces of 37 elements, one a tile: rows are cut at ragged places,
    so the output regions covered by the same pieces are narrow. The stage works on lanes
    (rows) times blocks, not on those regions: far fewer partial edges than region-piece
    pairs, and the right sum."""
    device = device_with(128)
    g = popsim.Graph(device)
    t = g.add_variable(FLOAT, (64, 64), "t")
    mapping = [[] for _ in range(128)]
    for i, start in enumerate(range(0, 4096, 37)):
        mapping[i].append((start, min(4096, start + 37)))
    g.set_tile_mapping(t, mapping)
    prog = Sequence()
    out = popops.reduce(g, t, [0], ReduceParams(Operation.ADD), prog)
    starts = np.arange(0, 4096, 37)
    lo, hi = starts % 64, np.minimum(starts + 37, 4096)  # each piece's output run, split where rows end
    row_end = (starts // 64 + 1) * 64
    pieces_lo = np.concatenate((lo, np.zeros(int((hi > row_end).sum()), np.int64)))
    pieces_hi = np.concatenate((np.minimum(hi, row_end) - starts // 64 * 64, (hi - row_end)[hi > row_end]))
    _, pairs, _ = plan.cover_regions(pieces_lo, pieces_hi)
    middle = stages(prog)["ReduceStage0"].vertices
    edges = sum(len(field(v, "partials")) for v in middle)
    assert edges * 3 < pairs.size
    x = np.random.default_rng(7).standard_normal((64, 64)).astype(np.float32)
    _, (got,) = run(g, device, prog, [out], {t: x})
    np.testing.assert_allclose(got, x.sum(axis=0), rtol=1e-5, atol=1e-4)
