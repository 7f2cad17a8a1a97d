"""Per-IPU clocks (native/core/clocks.hpp, popsim/lower/cost_model.py), checked against
the rules of the cost model worked by hand.

Each IPU of a replica keeps its own cycle clock. A step charges only the IPUs it
involves, so work on one IPU overlaps work on another; a step that crosses IPUs (an
inter-IPU copy, a cross-replica copy, an external sync, a host copy into a tensor on
several IPUs, a branch) first joins the clocks of the IPUs it names at the latest one,
and the wait counts as sync. At the end of a run every IPU waits for the last.

Vertices here have fixed estimates (``set_perf_estimate``), so the compute phase of a
tile running one vertex of estimate ``e`` alone is exactly ``workers x e`` cycles (a tile
costs its busiest worker times the worker count). Inter-IPU transfers use the
topology's figures: ``l = ipu_link_bytes_per_second / tile_clock_frequency`` bytes per
link per cycle (10.98 on ipu2) and ``hop = ceil(15 ns x clock)`` cycles per hop (20).
"""
import math

import numpy as np
import pytest

import popsim
from popsim import FLOAT, INT
from popsim.program import Call, Copy, Execute, If, Repeat, Sequence, Sync, SyncType
from popsim.lower import cost_model as cm

from ipu_clock_helpers import ipu_model, link_figures, new_graph, run, stage, step_named, trace_rows

pytestmark = pytest.mark.compiler  # the Python vertices of ipu_clock_helpers are compiled to C


# -- compute sets on different IPUs --------------------------------------------------------

def two_stages(device):
    """cs0: a vertex of estimate 50 on tile 0 (IPU 0); cs1: estimate 30 on tile 2 (IPU 1)."""
    g = new_graph(device)
    cs0, _ = stage(g, "cs0", 0, 50)
    cs1, _ = stage(g, "cs1", 2, 30)
    return g, cs0, cs1


def test_compute_sets_on_two_ipus_overlap():
    device = ipu_model(2, 2)
    t = device.target
    g, cs0, cs1 = two_stages(device)
    _, ex = run(g, device, Sequence(Execute(cs0), Execute(cs1)))
    w, sync = t.num_worker_contexts, t.max_ipu_sync_delay
    c0, c1 = w * 50, w * 30                       # 300, 180: compute phase of the one busy tile
    # Nothing joins the IPUs: cs1 runs on IPU 1 while cs0 runs on IPU 0.
    assert ex.total_cycles == max(c0 + sync, c1 + sync) == 316
    assert step_named(ex, "cs0").ipu_cycles == [c0 + sync, 0]
    assert step_named(ex, "cs1").ipu_cycles == [0, c1 + sync]
    assert trace_rows(ex, "cs0") == {0: (0, c0 + sync)}
    assert trace_rows(ex, "cs1") == {1: (0, c1 + sync)}   # starts at 0, not after cs0
    assert max(ex.ipu_cycles) == ex.total_cycles
    # The trace's rows [step, ipu, start, cycles]: two on different IPUs overlap in time.
    rows = ex.trace
    assert all(len(r) == 4 for r in rows)
    assert any(a[1] != b[1] and a[2] < b[2] + b[3] and b[2] < a[2] + a[3] for a in rows for b in rows), rows
    # Categories: tile averages over the replica's 4 tiles (the mean of the IPUs' tile
    # averages). Compute including idle: IPU 0 300 / 2 tiles, IPU 1 180 / 2.
    # Sync: each IPU's step duration less its compute average, plus IPU 1's wait for
    # IPU 0 at the end of the run (316 - 196 = 120).
    tiles = t.tiles_per_ipu
    assert ex.categories["compute_including_idle"] == pytest.approx((c0 / tiles + c1 / tiles) / 2)
    idle1 = (c0 + sync) - (c1 + sync)
    assert ex.categories["sync"] == pytest.approx(((c0 + sync - c0 / tiles) + (c1 + sync - c1 / tiles + idle1)) / 2)
    parts = sum(v for k, v in ex.categories.items() if k != "compute_excluding_idle")
    assert parts == pytest.approx(ex.total_cycles)


def test_execution_ipu_cycles_are_each_ipus_own_clock():
    """report.py: "Per IPU of a replica: its clock at the end (total_cycles is the
    largest)". IPU 1 ran 196 cycles and then waited 120 for IPU 0 (that wait is sync in
    the categories, above)."""
    device = ipu_model(2, 2)
    g, cs0, cs1 = two_stages(device)
    _, ex = run(g, device, Sequence(Execute(cs0), Execute(cs1)))
    assert ex.ipu_cycles == [316, 196]


@pytest.mark.parametrize("kind", [SyncType.EXTERNAL, SyncType.GLOBAL])
def test_external_sync_joins_the_ipus(kind):
    device = ipu_model(2, 2)
    t = device.target
    g, cs0, cs1 = two_stages(device)
    _, ex = run(g, device, Sequence(Execute(cs0), Sync(kind), Execute(cs1)))
    w, sync, gsync = t.num_worker_contexts, t.max_ipu_sync_delay, t.global_sync_cycles
    c0, c1 = w * 50, w * 30
    # IPU 1 (clock 0) waits for IPU 0 (clock 316) at the sync, both spend the global sync,
    # then cs1 runs on IPU 1.
    assert ex.total_cycles == (c0 + sync) + gsync + (c1 + sync) == 316 + 40 + 196
    (s,) = [x for x in ex.steps if x.kind == "Sync"]
    assert s.ipu_cycles == [gsync, (c0 + sync) + gsync]   # IPU 1's wait is part of the sync step
    assert trace_rows(ex, "cs1") == {1: ((c0 + sync) + gsync, c1 + sync)}


def test_internal_sync_does_not_join():
    device = ipu_model(2, 2)
    t = device.target
    g, cs0, cs1 = two_stages(device)
    _, ex = run(g, device, Sequence(Execute(cs0), Sync(SyncType.INTERNAL), Execute(cs1)))
    w, sync = t.num_worker_contexts, t.max_ipu_sync_delay
    # IPU 0: 316 + 16; IPU 1: 16 + 196: each syncs its own tiles.
    assert ex.total_cycles == max(w * 50 + sync + sync, sync + w * 30 + sync) == 332
    assert trace_rows(ex, "cs1") == {1: (sync, w * 30 + sync)}


def test_execute_exchange_out_across_ipus_waits_for_the_outputs():
    """csa: estimate 50 on tile 1 (IPU 0). csb: a vertex on tile 2 (IPU 1) bumps ``a``,
    which lives on tile 0 (IPU 0): its 16 bytes cross to IPU 1 before the compute phase
    and back after it. csc: a vertex on tile 0 bumps ``a`` again."""
    device = ipu_model(2, 2)
    t = device.target
    g = new_graph(device)
    a = g.add_variable(FLOAT, [4], "a")
    g.set_tile_mapping(a, 0)
    csa, _ = stage(g, "csa", 1, 50)
    csb, _ = stage(g, "csb", 2, 10, data=a)
    csc, _ = stage(g, "csc", 0, 1, data=a)
    _, ex = run(g, device, Sequence(Execute(csa), Execute(csb), Execute(csc)))
    w, sync, gsync = t.num_worker_contexts, t.max_ipu_sync_delay, t.global_sync_cycles
    _, hop = link_figures(t)
    # One exchange phase over the links: 16 bytes from one tile: port ceil(16 / 4) = 4
    # (the links need ceil(16 / 43.9) = 1) + 1 hop, then the global sync: 24 + 40 = 64.
    x = max(math.ceil(16 / t.exchange_bytes_per_cycle), math.ceil(16 / (4 * link_figures(t)[0]))) + hop + gsync
    start = w * 50 + sync                                     # IPU 1 joins IPU 0 at 316
    end_b = start + x + w * 10 + sync + x                     # IPU 1: in, compute, sync, out: 520
    assert step_named(ex, "csb").ipu_cycles[1] == end_b       # its wait for IPU 0 included
    assert trace_rows(ex, "csb")[1] == (start, end_b - start)
    # ``a`` is back on IPU 0 only at 520: csc must start there, not at 316 + 64 + 16 + 64.
    assert trace_rows(ex, "csc") == {0: (end_b, w * 1 + sync)}
    assert ex.total_cycles == end_b + w * 1 + sync


# -- host streams --------------------------------------------------------------------------

def test_host_copy_to_one_ipu_leaves_the_others_alone():
    """cs0 (estimate 100, IPU 0), then a stream copy of 100 floats into a tensor on IPU 1,
    then cs0 again: the stream copy runs on IPU 1 while IPU 0 computes."""
    device = ipu_model(2, 2)
    t = device.target
    g = new_graph(device)
    cs0, _ = stage(g, "cs0", 0, 100)
    y = g.add_variable(FLOAT, [100], "y")
    g.set_tile_mapping(y, 3)
    s = g.add_host_to_device_fifo("in", FLOAT, 100)
    _, ex = run(g, device, Sequence(Execute(cs0), Copy(s, y), Execute(cs0)),
                {"in": np.ones(100, np.float32)})
    w, sync = t.num_worker_contexts, t.max_ipu_sync_delay
    host = math.ceil(400 / t.host_bytes_per_cycle) + cm.HOST_STREAM_OVERHEAD_CYCLES + sync  # 67 + 100 + 16
    c0 = w * 100 + sync                                               # 616
    (copy,) = [x for x in ex.steps if x.kind == "StreamCopy"]
    assert copy.ipu_cycles == [0, host]
    assert ex.total_cycles == 2 * c0                                  # IPU 0 never waited
    assert trace_rows(ex, copy.name) == {1: (0, host)}


def test_host_copy_to_two_ipus_joins_them():
    device = ipu_model(2, 2)
    t = device.target
    g = new_graph(device)
    cs0, _ = stage(g, "cs0", 0, 100)
    y = g.add_variable(FLOAT, [100], "y")
    g.set_tile_mapping(y[:50], 1)
    g.set_tile_mapping(y[50:], 3)
    s = g.add_host_to_device_fifo("in", FLOAT, 100)
    _, ex = run(g, device, Sequence(Execute(cs0), Copy(s, y)), {"in": np.ones(100, np.float32)})
    w, sync = t.num_worker_contexts, t.max_ipu_sync_delay
    host = math.ceil(400 / t.host_bytes_per_cycle) + cm.HOST_STREAM_OVERHEAD_CYCLES + sync
    c0 = w * 100 + sync
    (copy,) = [x for x in ex.steps if x.kind == "StreamCopy"]
    assert copy.ipu_cycles == [host, c0 + host]           # IPU 1 waited for IPU 0 first
    assert ex.total_cycles == c0 + host


# -- pipelines -----------------------------------------------------------------------------

def pipeline_graph(device):
    """Stage i: a function running one vertex of estimate 10 (i + 1) on IPU i's first tile."""
    T = device.target.tiles_per_ipu
    g = new_graph(device)
    functions, data = [], []
    for i in range(4):
        cs, x = stage(g, f"stage{i}", i * T, 10 * (i + 1))
        functions.append(g.add_function(Execute(cs), f"f{i}"))
        data.append(x)
    return g, functions, data


def test_pipeline_of_independent_stages_overlaps():
    """Repeat(3, [Call f0, Call f1, Call f2, Call f3]): every IPU pays each Call (6) and
    each iteration (4), and only its own stage; nothing joins them. IPU i: 3 x (4 + 4 x 6 +
    6 x 10 (i + 1) + 16); the total is IPU 3's, not the sum of the stages."""
    device = ipu_model(4, 2)
    t = device.target
    g, functions, _ = pipeline_graph(device)
    _, ex = run(g, device, Repeat(3, Sequence(*[Call(f) for f in functions])))
    w, sync = t.num_worker_contexts, t.max_ipu_sync_delay
    control = cm.LOOP_ITERATION_CYCLES + 4 * cm.CALL_CYCLES   # 4 + 4 x 6
    stages = [w * 10 * (i + 1) + sync for i in range(4)]      # 76, 136, 196, 256
    assert ex.total_cycles == 3 * (control + max(stages)) == 852
    assert 3 * (control + sum(stages)) == 2076                # what running them one after another costs
    for i in range(4):
        assert step_named(ex, f"stage{i}").ipu_cycles == [3 * stages[i] if k == i else 0 for k in range(4)]


def test_pipeline_with_copies_between_stages():
    """Repeat(2, [f0, Copy x0 -> x1, f1, Copy x1 -> x2, f2, Copy x2 -> x3, f3]) on a
    4-IPU ladder, each x a 16-byte variable on its IPU's first tile. Each copy joins the
    two IPUs it links; IPU 0 runs ahead into the second iteration while the later stages
    are still busy with the first.

    Step costs: E = stage cycles 76, 136, 196, 256 (as above); Call 6 and iteration 4 on
    every IPU. Copy 0 -> 1 and 2 -> 3 cross a rung: max(port ceil(16 / 4) = 4, links
    ceil(16 / 43.9) = 1) + 1 hop = 24, + global sync 80 = 104. Copy 1 -> 2 crosses the
    rung 1 -> 0 and the rail 0 -> 2: max(links ceil(16 / 21.96) + 2 hops = 41, port 4 +
    2 hops = 44) = 44, + 80 = 124.

    Clocks [IPU 0, 1, 2, 3], iteration 1:
      Call f0 +6 all, E0 on 0:          [82, 6, 6, 6]
      Copy 0->1: join at 82, +104:      [186, 186, 6, 6]
      Call f1 +6, E1 on 1:              [192, 328, 12, 12]
      Copy 1->2: join at 328, +124:     [192, 452, 452, 12]
      Call f2 +6, E2 on 2:              [198, 458, 654, 18]
      Copy 2->3: join at 654, +104:     [198, 458, 758, 758]
      Call f3 +6, E3 on 3, iteration 4: [208, 468, 768, 1024]
    iteration 2:
      Call f0, E0:                      [290, 474, 774, 1030]
      Copy 0->1: join at 474:           [578, 578, 774, 1030]
      Call f1, E1:                      [584, 720, 780, 1036]
      Copy 1->2: join at 780:           [584, 904, 904, 1036]
      Call f2, E2:                      [590, 910, 1106, 1042]
      Copy 2->3: join at 1106:          [590, 910, 1210, 1210]
      Call f3, E3, iteration:           [600, 920, 1220, 1476]
    Total 1476, where the steps one after another would take 2 x 1024 = 2048."""
    device = ipu_model(4, 2)
    t = device.target
    g, f, x = pipeline_graph(device)
    body = Sequence(Call(f[0]), Copy(x[0], x[1]), Call(f[1]), Copy(x[1], x[2]), Call(f[2]), Copy(x[2], x[3]),
                    Call(f[3]))
    _, ex = run(g, device, Repeat(2, body))
    w, sync, gsync = t.num_worker_contexts, t.max_ipu_sync_delay, t.global_sync_cycles
    l, hop = link_figures(t)
    E = [w * 10 * (i + 1) + sync for i in range(4)]
    port = math.ceil(16 / t.exchange_bytes_per_cycle)
    rung = max(math.ceil(16 / (4 * l)) + hop, port + hop) + gsync
    rung_rail = max(math.ceil(16 / (2 * l)) + 2 * hop, port + 2 * hop) + gsync
    assert (E, rung, rung_rail) == ([76, 136, 196, 256], 104, 124)
    call, loop = cm.CALL_CYCLES, cm.LOOP_ITERATION_CYCLES
    clocks = [0, 0, 0, 0]
    for _ in range(2):   # the table above, step by step
        clocks = [c + call for c in clocks]
        clocks[0] += E[0]
        clocks[0] = clocks[1] = max(clocks[0], clocks[1]) + rung
        clocks = [c + call for c in clocks]
        clocks[1] += E[1]
        clocks[1] = clocks[2] = max(clocks[1], clocks[2]) + rung_rail
        clocks = [c + call for c in clocks]
        clocks[2] += E[2]
        clocks[2] = clocks[3] = max(clocks[2], clocks[3]) + rung
        clocks = [c + call + loop for c in clocks]
        clocks[3] += E[3]
    assert clocks == [600, 920, 1220, 1476]
    assert ex.total_cycles == max(clocks) == 1476
    serial = 2 * (loop + 4 * call + sum(E) + 2 * rung + rung_rail)  # every step after the one before
    assert serial == 2048 and ex.total_cycles < serial
    # IPU 0's second stage 0 starts at 214, while IPU 3 runs its first (764 .. 1020).
    starts = [(start, c) for step, ipu, start, c in ex.trace
              if int(ipu) == 0 and ex.steps[int(step)].compute_set == "stage0"]
    assert starts == [(6, E[0]), (214, E[0])]


# -- one IPU of several: unchanged ---------------------------------------------------------

def one_ipu_program(g):
    """A program on tiles 0..3 (IPU 0): a Copy from tile 0 to tiles 0..3, a compute set
    whose vertices read across tiles, a stream copy, a counted loop and a branch."""
    v1, v2 = g.add_variable(FLOAT, [4], "v1"), g.add_variable(FLOAT, [4], "v2")
    g.set_tile_mapping(v1, 0)
    for i in range(4):
        g.set_tile_mapping(v2[i], i)
    cs = g.add_compute_set("cs")
    for i in range(4):
        vx = g.add_vertex(cs, "Bump", {"x": v1.slice(i, i + 1)})
        g.set_tile_mapping(vx, (i + 1) % 4)
        g.set_perf_estimate(vx, 7 + i)
    p = g.add_variable(INT, [], "p")
    g.set_tile_mapping(p, 3)
    s = g.add_host_to_device_fifo("in", FLOAT, 4)
    return Sequence(Copy(v1, v2), Execute(cs), Copy(s, v1), Repeat(3, Copy(v2, v1)), If(p, Copy(v1, v2)))


def test_a_one_ipu_program_costs_the_same_on_ipu_0_of_four():
    T = 4
    one = ipu_model(1, T)
    four = ipu_model(4, T)
    results = []
    for device in (one, four):
        g = new_graph(device)
        prog = one_ipu_program(g)
        _, ex = run(g, device, prog, {"in": np.ones(4, np.float32)})
        results.append(ex)
    r1, r4 = results
    assert r4.total_cycles == r1.total_cycles
    assert [s.name for s in r4.steps] == [s.name for s in r1.steps]
    for s1, s4 in zip(r1.steps, r4.steps):
        assert s4.count == s1.count
        assert s4.ipu_cycles[0] == s1.cycles, s1.name
    # One figure worked by hand (tests/lower/test_cost_model.py, test_cross_tile_copy):
    # v1 (tile 0) -> v2 (v2[i] on tile i): 4 bytes stay on tile 0, 12 leave it.
    t = one.target
    on_tile = math.ceil(4 / t.memcpy_bytes_per_cycle) + cm.COPY_RUN_OVERHEAD_CYCLES
    exchange = math.ceil(12 / t.exchange_bytes_per_cycle) + cm.EXCHANGE_OVERHEAD_CYCLES
    first = r1.steps[0]
    assert first.name == "Copy v1 -> v2" and first.cycles == on_tile + exchange + 2 * t.max_ipu_sync_delay
    assert r4.steps[0].ipu_cycles == [first.cycles, 0, 0, 0]


# -- replicas run in lockstep --------------------------------------------------------------

def spin_graph(device, replication_factor):
    g = new_graph(device, replication_factor)
    n, x = g.add_variable(INT, [], "n"), g.add_variable(FLOAT, [], "x")
    g.set_tile_mapping(n, 0)
    g.set_tile_mapping(x, 0)
    cs = g.add_compute_set("spin")
    v = g.add_vertex(cs, "Spin", {"n": n, "x": x})
    g.set_tile_mapping(v, 0)
    g.create_host_write("n", n)
    return g, cs


def spin_cycles(replication_factor, counts):
    device = ipu_model(replication_factor, 2)
    g, cs = spin_graph(device, replication_factor)
    e = popsim.Engine(g, Execute(cs))
    e.load(device)
    e.write_tensor("n", np.asarray(counts, np.int32))
    e.run()
    return e.get_report().execution.total_cycles


def test_replicas_in_lockstep_take_the_slowest_replicas_compute_phase():
    """The Spin vertex counts its own cycles, which grow with n: with n = 10 on replica 0
    and n = 50 on replica 1, both replicas take what n = 50 takes alone."""
    slow, fast = spin_cycles(1, 50), spin_cycles(1, 10)
    assert slow > fast
    assert spin_cycles(2, [10, 50]) == slow
    assert spin_cycles(2, [50, 10]) == slow
