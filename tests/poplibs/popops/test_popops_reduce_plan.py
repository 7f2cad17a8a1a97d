"""The reduction plan for hand-worked cases (stages, where partials go) and the vertex
estimator and last-stage costs against PopLibs' documentation and PopLibs' cycle estimators by hand."""
import numpy as np
import pytest

import popsim
from popsim import BOOL, FLOAT, popops
from popsim.popops import Operation, ReduceParams
from popsim.popops import reduce_plan as plan
from popsim.popops.reduce_vertices import reduce_cycles, vertex_name
from popsim.program import Execute, Sequence

from popops_harness import run


def stages(prog):
    return [(p.compute_set.name.split("/")[-1], p.compute_set) for p in prog.children() if isinstance(p, Execute)]


def graph_with_rows(device, rows, per_tile):
    g = popsim.Graph(device)
    t = g.add_variable(FLOAT, (rows, 6), "t")
    g.set_tile_mapping(t, [[(tile * per_tile * 6, (tile + 1) * per_tile * 6)] for tile in range(rows // per_tile)])
    return g, t


def test_tile_local_reduction_is_one_stage_where_the_rows_live(small_device):
    g, t = graph_with_rows(small_device, 4, 1)
    prog = Sequence()
    out = popops.reduce(g, t, [1], ReduceParams(Operation.ADD), prog)
    assert [name for name, _ in stages(prog)] == ["ReduceOnTile"]
    assert g.get_tile_mapping(out) == [[(0, 1)], [(1, 2)], [(2, 3)], [(3, 4)]]
    (_, cs), = stages(prog)
    assert sorted(v.tile for v in cs.vertices) == [0, 1, 2, 3]
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    _, (got,) = run(g, small_device, prog, [out], {t: x})
    np.testing.assert_array_equal(got, x.sum(axis=1))


def test_one_row_per_tile_goes_straight_to_the_final_stage(small_device):
    """Each tile holds one partial per column: no on-tile stage; 24 partials <= 32 x 6
    outputs, so the last stage follows; the new output (6 floats < 4 vectors of 2) is
    mapped to tile 0, where all 4 partials of each column go."""
    g, t = graph_with_rows(small_device, 4, 1)
    prog = Sequence()
    out = popops.reduce(g, t, [0], ReduceParams(Operation.ADD), prog)
    (name, cs), = stages(prog)
    assert name == "ReduceFinalStage"
    assert g.get_tile_mapping(out) == [[(0, 6)], [], [], []]
    assert {v.tile for v in cs.vertices} == {0}
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    _, (got,) = run(g, small_device, prog, [out], {t: x})
    np.testing.assert_array_equal(got, x.sum(axis=0))


def test_two_rows_per_tile_reduce_on_tile_first(small_device):
    g, t = graph_with_rows(small_device, 8, 2)
    prog = Sequence()
    out = popops.reduce(g, t, [0], ReduceParams(Operation.MAX), prog)
    assert [name for name, _ in stages(prog)] == ["ReduceOnTile", "ReduceFinalStage"]
    on_tile = stages(prog)[0][1]
    assert sorted({v.tile for v in on_tile.vertices}) == [0, 1, 2, 3]
    assert {v.type.name for v in on_tile.vertices} == {
        "popops::Reduce<popops::ReduceMax,float,float,false,popops::ReductionSpecialisation::DEFAULT>"}
    x = np.random.default_rng(0).standard_normal((8, 6)).astype(np.float32)
    _, (got,) = run(g, small_device, prog, [out], {t: x})
    np.testing.assert_array_equal(got, x.max(axis=0))


def test_many_partials_take_an_intermediate_stage():
    """64 tiles each reduce their elements to 1 partial of the scalar: 64 > 32 x 1, so an
    intermediate stage halves them (two partials a piece, one piece per tile: 32), then
    the last stage on tile 0."""
    model = popsim.IPUModel("ipu2")
    model.tiles_per_ipu = 64
    device = model.create_device()
    g = popsim.Graph(device)
    t = g.add_variable(FLOAT, (640,), "t")
    g.set_tile_mapping(t, [[(10 * i, 10 * i + 10)] for i in range(64)])
    prog = Sequence()
    out = popops.reduce(g, t, [0], ReduceParams(Operation.ADD), prog)
    names = [name for name, _ in stages(prog)]
    assert names == ["ReduceOnTile", "ReduceStage0", "ReduceFinalStage"]
    middle = stages(prog)[1][1]
    assert len({v.tile for v in middle.vertices}) == 32
    assert {v.tile for v in stages(prog)[2][1].vertices} == {0}
    x = np.random.default_rng(1).standard_normal(640).astype(np.float32)
    _, (got,) = run(g, device, prog, [out], {t: x})
    assert got == pytest.approx(x.sum(), rel=1e-5, abs=1e-4)


def test_scaled_reduce_vertex_name(small_device):
    assert vertex_name(Operation.ADD, popsim.HALF, FLOAT, True, True) == \
        "popops::ScaledReduce<popops::ReduceAdd,half,float,true,popops::ReductionSpecialisation::DEFAULT>"


def test_estimator_float_add_by_hand(small_device):
    """ADD, float: opVW 4 (accumulators), 64-bit loads of 2, out vector 2, load 2+2+4/2 = 6,
    2 remainder checks. One reduction of 6 outputs (1 vector + remainder 2), 4 partials of 6:
    7 + 26 + (16+6+4+2) + 1*(5 + (2*2+1) + 1) + 1*4*10 + [4 + (2*2+1) + 4*10]
    + 4*(1*(6+3) + 1*(2+1+3)) = 33 + 28 + 11 + 40 + 49 + 60 = 221."""
    target = small_device.target
    assert reduce_cycles(Operation.ADD, FLOAT, FLOAT, False, [6] * 4, [6], [4], target) == 221


def test_estimator_logical_by_hand(small_device):
    """C++ vertices: 7 + 24 + per reduction 8 + per partial 22 + (24 + 1 + 0)*size:
    sizes 3 and 6 into 3 outputs: 31 + 8 + (22 + 75) + (22 + 150) = 308."""
    target = small_device.target
    assert reduce_cycles(Operation.LOGICAL_AND, BOOL, BOOL, False, [3, 6], [3], [2], target) == 308


def test_last_stage_costs_by_hand(small_device):
    """6 float outputs on tile 0, 4 partials each, 4 tiles, 4 bytes/cycle, sync s:
    destination: 6*4/4 + 4*ceil(6/2) + s = 18 + s; balanced (1 group of 8 on a tile):
    8*4*4/4 + s + 4*4 + 6*4/4 + s = 54 + 2s. The destination is cheaper."""
    target = small_device.target
    s = target.max_ipu_sync_delay
    mapping = [[(0, 6)], [], [], []]
    assert plan.reduce_at_destination_cost(target, FLOAT, 4, mapping) == 18 + s
    assert plan.balanced_reduce_cost(target, FLOAT, FLOAT, 4, 6, mapping) == 54 + 2 * s
    assert plan.should_reduce_at_destination(target, FLOAT, FLOAT, 4, 6, mapping)


def test_interval_boxes():
    assert plan.interval_boxes(4, 17, (3, 6)) == [((0, 1), (4, 6)), ((1, 2), (0, 6)), ((2, 3), (0, 5))]
    assert plan.interval_boxes(0, 18, (3, 6)) == [((0, 3), (0, 6))]
    assert plan.box_runs([(1, 3), (2, 4)], (4, 5)) == [(0, 7, 9), (2, 12, 14)]
