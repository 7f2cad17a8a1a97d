"""Copies between IPUs: IPU-Link transfers costed as global exchange (docs/cost_model.md),
checked against the documented formula evaluated by hand."""
import math

import numpy as np
import pytest

import popsim
from popsim import FLOAT
from popsim.lower import cost_model as cm
from popsim.program import Copy

TILES_PER_IPU = 64

# PopLibs' IPUModel test model, by hand: 4 links x 128 Gibit/s x 0.85, per tile-clock cycle.
LINK_BYTES_PER_CYCLE = 4 * 128 * 2**30 / 8 * 0.85 / 1.33e9


def two_ipus(version="ipu2"):
    model = popsim.IPUModel(version)
    model.num_ipus = 2
    model.tiles_per_ipu = TILES_PER_IPU
    return model.create_device()


def report(graph, device, program, writes=()):
    engine = popsim.Engine(graph, program)
    engine.load(device)
    engine.run()
    return engine.get_report(), engine


def spread(graph, name, first_tile, per_tile, tiles=TILES_PER_IPU):
    """A FLOAT variable with ``per_tile`` elements on each of ``tiles`` tiles from ``first_tile``."""
    v = graph.add_variable(FLOAT, [tiles * per_tile], name)
    for k in range(tiles):
        graph.set_tile_mapping(v[k * per_tile:(k + 1) * per_tile], first_tile + k)
    return v


def test_target_link_figures():
    for version, clock in (("ipu1", 1.6e9), ("ipu2", 1.33e9), ("ipu21", 1.85e9)):
        t = two_ipus(version).target
        assert t.ipu_link_bytes_per_cycle == pytest.approx(4 * 128 * 2**30 / 8 * 0.85 / clock)
        assert t.ipu_link_latency_cycles == math.ceil(15e-9 * clock)
    assert popsim.Target.create_ipu_target(8).ipu_link_latency_cycles == math.ceil(15e-9 * 1.33e9 * 3)


def test_copy_between_ipus_is_global_exchange():
    """64 tiles of IPU 0 each send 400 bytes to a tile of IPU 1: the links carry 25,600
    bytes, more than any tile's port (100 cycles), so the link time rules."""
    device = two_ipus()
    g = popsim.Graph(device)
    a = spread(g, "a", 0, 100)
    b = spread(g, "b", TILES_PER_IPU, 100)
    r, e = report(g, device, Copy(a, b))
    (step,) = r.execution.steps
    t = device.target
    link = math.ceil(TILES_PER_IPU * 400 / LINK_BYTES_PER_CYCLE)
    assert link > 400 / 4  # the case this test is about
    phase = link + math.ceil(15e-9 * 1.33e9)
    assert step.cycles == phase + t.global_sync_cycles
    assert step.categories["global_exchange"] == pytest.approx(phase)  # every tile takes part
    assert step.categories["ipu_exchange"] == 0 and step.categories["compute_including_idle"] == 0
    assert step.categories["sync"] == pytest.approx(t.global_sync_cycles)
    assert r.execution.categories["global_exchange"] == pytest.approx(phase)


def test_one_tile_across_ipus_is_limited_by_its_exchange_port():
    device = two_ipus()
    g = popsim.Graph(device)
    a, b = g.add_variable(FLOAT, [1000], "a"), g.add_variable(FLOAT, [1000], "b")
    g.set_tile_mapping(a, 3)
    g.set_tile_mapping(b, TILES_PER_IPU + 5)
    r, _ = report(g, device, Copy(a, b))
    (step,) = r.execution.steps
    phase = math.ceil(4000 / 4) + math.ceil(15e-9 * 1.33e9)  # port: 1,000 cycles > link: 92
    assert step.cycles == phase + device.target.global_sync_cycles
    assert step.tile_exchange[3] == phase and step.tile_exchange[TILES_PER_IPU + 5] == phase
    assert sum(1 for x in step.tile_exchange if x) == 2
    assert step.categories["global_exchange"] == pytest.approx(2 * phase / (2 * TILES_PER_IPU))


def test_copy_inside_one_ipu_of_two_is_unchanged():
    """The on-chip formula of tests/lower/test_cost_model.py, on IPU 1 of a 2-IPU target."""
    device = two_ipus()
    g = popsim.Graph(device)
    v1, v2 = g.add_variable(FLOAT, [4], "v1"), g.add_variable(FLOAT, [4], "v2")
    g.set_tile_mapping(v1, TILES_PER_IPU)
    for i in range(4):
        g.set_tile_mapping(v2[i], TILES_PER_IPU + i)
    r, _ = report(g, device, Copy(v1, v2))
    (step,) = r.execution.steps
    t = device.target
    on_tile = math.ceil(4 / t.memcpy_bytes_per_cycle) + cm.COPY_RUN_OVERHEAD_CYCLES
    exchange = math.ceil(12 / t.exchange_bytes_per_cycle) + cm.EXCHANGE_OVERHEAD_CYCLES
    assert step.cycles == on_tile + exchange + 2 * t.max_ipu_sync_delay
    assert step.categories["global_exchange"] == 0


def test_mixed_copy_has_both_phases_and_moves_the_data():
    """Half of b stays on IPU 0 (on-chip exchange), half is on IPU 1 (global exchange)."""
    device = two_ipus()
    g = popsim.Graph(device)
    a = g.add_variable(FLOAT, [8], "a")
    b = g.add_variable(FLOAT, [8], "b")
    g.set_tile_mapping(a, 0)
    g.set_tile_mapping(b[:4], 1)
    g.set_tile_mapping(b[4:], TILES_PER_IPU)
    g.create_host_write("a", a)
    g.create_host_read("b", b)
    engine = popsim.Engine(g, Copy(a, b))
    engine.load(device)
    engine.write_tensor("a", np.arange(8, dtype=np.float32))
    engine.run()
    np.testing.assert_array_equal(engine.read_tensor("b"), np.arange(8, dtype=np.float32))
    (step,) = engine.get_report().execution.steps
    t = device.target
    x_phase = math.ceil(16 / 4) + cm.EXCHANGE_OVERHEAD_CYCLES   # tile 0 sends 16 bytes on chip
    g_phase = math.ceil(16 / 4) + math.ceil(15e-9 * 1.33e9)     # and 16 bytes over the links
    assert step.cycles == x_phase + t.max_ipu_sync_delay + g_phase + t.global_sync_cycles
    n = t.num_tiles
    assert step.categories["ipu_exchange"] == pytest.approx(2 * x_phase / n)
    assert step.categories["global_exchange"] == pytest.approx(2 * g_phase / n)


def test_summary_shows_global_exchange():
    device = two_ipus()
    g = popsim.Graph(device)
    a, b = g.add_variable(FLOAT, [16], "a"), g.add_variable(FLOAT, [16], "b")
    g.set_tile_mapping(a, 0)
    g.set_tile_mapping(b, TILES_PER_IPU)
    r, _ = report(g, device, Copy(a, b))
    line = next(line for line in r.summary().splitlines() if "global exchange" in line)
    assert float(line.split(":")[1].split()[0].replace(",", "")) == pytest.approx(
        r.execution.categories["global_exchange"], abs=0.05) and r.execution.categories["global_exchange"] > 0


def test_arena_offsets_with_each_edges_variable_are_the_looked_up_ones(small_device):
    """EdgePlacer gives arena_offsets the variable of each edge whose runs lie in one
    (edge_variables) instead of a search per piece: the offsets must be the same."""
    from popsim.lower.cost_model import CostModel
    from popsim.lower.layout import plan_memory
    from popsim.lower.transfers import TransferPlanner
    g = popsim.Graph(small_device)
    rng = np.random.default_rng(4)
    for k, size in enumerate([5, 0, 7, 1, 0, 12, 3]):
        t = g.add_variable(popsim.HALF if k % 2 else FLOAT, (size,), f"v{k}")
        g.set_tile_mapping(t, k % 4)
    state = g._state
    planner = TransferPlanner(state.table, plan_memory(state.table.variables, state.target),
                              CostModel(state.target, 1))
    total = state.table.next_base
    # per edge a few runs: inside one variable, across two, or empty
    edge, gid, length = [], [], []
    for e in range(40):
        for _ in range(int(rng.integers(1, 4))):
            start = int(rng.integers(0, total))
            edge.append(e)
            gid.append(start)
            length.append(int(rng.integers(0, total - start + 1)) if e % 5 else 1)
    edge, gid, length = (np.array(a, np.int64) for a in (edge, gid, length))
    var = planner.edge_variables(edge, gid, length, 40)
    assert (var >= 0).any() and (var < 0).any()
    assert np.array_equal(planner.arena_offsets(gid, var[edge]), planner.arena_offsets(gid))
