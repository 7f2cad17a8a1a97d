"""Copies between IPUs on the per-IPU clocks: rung, rail and two-hop copies on the
ladder, the port bound, the meeting after each IPU's own local phases, replicated
copies and cross-replica swaps and rings on the ladder and the torus, each worked by
hand from the topology's figures (see test_ipu_clocks.py for the rules)."""
import math

import numpy as np
import pytest

import popsim
from popsim import FLOAT
from popsim.program import Copy, CrossReplicaCopy, Sequence
from popsim.lower import cost_model as cm
from popsim.topology import IpuLinkTopology

from ipu_clock_helpers import copy_and_check, ipu_model, link_figures, new_graph, run, spread, step_named, trace_rows

pytestmark = pytest.mark.compiler  # the Python vertices of ipu_clock_helpers are compiled to C


# -- copies between IPUs -------------------------------------------------------------------

LINK_TILES = 16  # tiles per IPU of the link-bound cases: 16 tiles x 4 bytes/cycle outrun 4 links


@pytest.mark.parametrize("dst, links, hops", [(1, 4, 1), (2, 2, 1), (3, 2, 2)],
                         ids=["card-partners", "rail-neighbours", "two-hops"])
def test_copy_between_ipus_on_the_ladder(dst, links, hops):
    """Each of IPU 0's 16 tiles sends 1000 bytes to a tile of IPU ``dst`` (B = 16,000
    bytes), and tile 0 also copies 256 bytes on chip.

    Routes (topology.py): 0 -> 1 crosses the rung (4 links); 0 -> 2 goes up the even
    rail (2 links); 0 -> 3 crosses the rung then goes up the odd rail (2 hops, the rail's
    2 links the narrowest). Link phase = ceil(B / (links x l)) + hops x hop: 365 + 20,
    729 + 20, 729 + 40 on ipu2; a tile's port would need only 1000 / 4 + 20 = 270."""
    T = LINK_TILES
    device = ipu_model(4, T)
    t = device.target
    g = new_graph(device)
    a, b = spread(g, "a", 0, 250, T), spread(g, "b", dst, 250, T)
    c, d = g.add_variable(FLOAT, [64], "c"), g.add_variable(FLOAT, [64], "d")
    g.set_tile_mapping(c, 0)
    g.set_tile_mapping(d, 0)
    data = np.arange(T * 250, dtype=np.float32)
    ex = copy_and_check(g, device, Copy(popsim.concat([a, c]), popsim.concat([b, d])), a, b, data, data)
    l, hop = link_figures(t)
    B = T * 1000
    local = math.ceil(256 / t.memcpy_bytes_per_cycle) + cm.COPY_RUN_OVERHEAD_CYCLES + t.max_ipu_sync_delay
    link_phase = math.ceil(B / (links * l)) + hops * hop
    assert link_phase > math.ceil(1000 / t.exchange_bytes_per_cycle) + hop   # the links, not the ports, rule
    expected = local + link_phase + t.global_sync_cycles
    per_ipu = [0.0] * 4
    per_ipu[0] = per_ipu[dst] = expected   # both start the link phase after IPU 0's local phase
    (step,) = ex.steps
    assert step.ipu_cycles == per_ipu
    assert ex.total_cycles == expected
    # The link loads behind it, by hand:
    route = {1: [(0, 1)], 2: [(0, 2)], 3: [(0, 1), (1, 3)]}[dst]
    assert IpuLinkTopology.of(t).link_loads([(0, dst, B)]) == {hop_: B for hop_ in route}


def test_port_bound_copy_between_card_partners():
    """4 tiles each send 1000 bytes over the rung: the links need ceil(4000 / 43.9) = 92
    cycles, each tile's port 1000 / 4 = 250: the phase is the port's + one hop."""
    device = ipu_model(2, 4)
    t = device.target
    g = new_graph(device)
    a, b = spread(g, "a", 0, 250, 4), spread(g, "b", 1, 250, 4)
    _, ex = run(g, device, Copy(a, b))
    l, hop = link_figures(t)
    assert math.ceil(4000 / (4 * l)) < 250
    assert ex.total_cycles == 250 + hop + t.global_sync_cycles == 250 + 20 + 40


def test_a_copy_joins_the_ipus_after_their_own_local_phases():
    """IPU 1 is ahead (a copy inside it: ceil(256 / 4) + 10 + 16 = 90). Then one Copy
    moves 1 KiB inside IPU 0 (tile 0 -> tile 3: ceil(1024 / 4) + 10 exchange + 16 sync =
    282 cycles, IPU 0 only) and 256 B from tile 1 to tile 12 on IPU 1 (card partners).
    IPU 0 reaches the meeting at 0 + 282, IPU 1 at 90 + 0 (it has no local phase): they
    meet at 282 (IPU 1 waits 192, counted as sync), then the link phase, max(links
    ceil(256 / (4 x 10.98)) + 20 = 26, port ceil(256 / 4) + 20 = 84) = 84, and the global
    sync 40: both end at 282 + 124 = 406 (joining at the step's start would give
    90 + 282 + 124 = 496)."""
    device = ipu_model(2, 8)
    g = new_graph(device)
    t = device.target
    tiles = {"a": 0, "b": 3, "x": 1, "y": 12, "d": 9, "e": 14}
    big, small = 256, 64  # FLOAT elements: 1 KiB and 256 B
    v = {n: g.add_variable(FLOAT, [big if n in "ab" else small], n) for n in tiles}
    for n, tile in tiles.items():
        g.set_tile_mapping(v[n], tile)
    both = Copy(popsim.concat([v["a"], v["x"]]), popsim.concat([v["b"], v["y"]]), debug_name="both")
    _, ex = run(g, device, Sequence(Copy(v["d"], v["e"], debug_name="inside1"), both))
    sync, gsync = t.max_ipu_sync_delay, t.global_sync_cycles
    l, hop = link_figures(t)
    ahead = math.ceil(4 * small / t.exchange_bytes_per_cycle) + cm.EXCHANGE_OVERHEAD_CYCLES + sync
    local = math.ceil(4 * big / t.exchange_bytes_per_cycle) + cm.EXCHANGE_OVERHEAD_CYCLES + sync
    link = max(math.ceil(4 * small / (4 * l)) + hop, math.ceil(4 * small / t.exchange_bytes_per_cycle) + hop)
    assert (ahead, local, link) == (90, 282, 84)
    assert ex.ipu_cycles == [local + link + gsync] * 2 == [406, 406]
    # IPU 1 spent its wait (192) and the joined part (124) on the copy; IPU 0 all of it.
    assert step_named(ex, "both").ipu_cycles == [406, 406 - ahead]
    assert trace_rows(ex, "both") == {0: (0, 406), 1: (local, link + gsync)}


def test_replicated_copy_costs_the_same_per_replica():
    """R = 2 replicas of 2 IPUs on a 4-IPU ladder: each replica copies from its IPU 0 to
    its IPU 1. Replica 0 uses the rung 0 -> 1, replica 1 the rung 2 -> 3: disjoint links,
    so the copy costs what it costs on the 4-IPU device unreplicated (the global sync is
    the device's, as the replica's target keeps it)."""
    T = LINK_TILES
    device = ipu_model(4, T)
    t = device.target
    l, hop = link_figures(t)
    B = T * 1000
    expected = math.ceil(B / (4 * l)) + hop + t.global_sync_cycles     # 365 + 20 + 80

    g = new_graph(device, replication_factor=2)
    assert g.target.num_ipus == 2 and g.target.global_sync_cycles == t.global_sync_cycles
    a, b = spread(g, "a", 0, 250, T), spread(g, "b", 1, 250, T)
    data = np.arange(2 * T * 250, dtype=np.float32).reshape(2, -1)
    ex = copy_and_check(g, device, Copy(a, b), a, b, data, data)
    assert ex.steps[0].ipu_cycles == [expected, expected]
    assert ex.total_cycles == expected
    assert IpuLinkTopology.of(t).link_loads([(0, 1, B), (2, 3, B)]) == {(0, 1): B, (2, 3): B}

    g1 = new_graph(device)
    _, ex1 = run(g1, device, Copy(spread(g1, "a", 0, 250, T), spread(g1, "b", 1, 250, T)))
    assert ex1.total_cycles == expected


def test_cross_replica_swap_of_two_replicas():
    """2 replicas of 1 IPU: {0: 1, 1: 0} sends B bytes each way over the rung (4 links
    in each direction): ceil(B / (4 l)) + 1 hop + the 2-IPU device's global sync."""
    T = LINK_TILES
    device = ipu_model(2, T)
    t = device.target
    g = new_graph(device, replication_factor=2)
    a, b = spread(g, "a", 0, 250, T), spread(g, "b", 0, 250, T)
    data = np.arange(2 * T * 250, dtype=np.float32).reshape(2, -1)
    ex = copy_and_check(g, device, CrossReplicaCopy(a, b, {0: 1, 1: 0}), a, b, data, data[::-1])
    l, hop = link_figures(t)
    B = T * 1000
    assert ex.total_cycles == math.ceil(B / (4 * l)) + hop + t.global_sync_cycles == 365 + 20 + 40


@pytest.mark.parametrize("topology", ["ladder", "torus"])
def test_cross_replica_ring_of_four(topology):
    """4 replicas of 1 IPU, the ring {0: 1, 1: 2, 2: 3, 3: 0}, B bytes each.

    Routes: 0 -> 1 and 2 -> 3 cross a rung; 1 -> 2 crosses the rung 1 -> 0 then goes up
    the even rail 0 -> 2; 3 -> 0 crosses 3 -> 2 then goes down 2 -> 0 (on the torus of
    2 rungs, 2 -> 0 is the wrap-around "up", the same pair). Each directed pair carries
    B: the rungs over 4 links; the rail pairs (0, 2) and (2, 0) over 2 links on the
    ladder, but 4 on a torus of 2 rungs (both rail groups of IPU 0 reach IPU 2).
    Longest route: 2 hops. Ladder: ceil(B / 2l) + 2 hop = 729 + 40; torus: 365 + 40."""
    T = LINK_TILES
    device = ipu_model(4, T, topology)
    t = device.target
    g = new_graph(device, replication_factor=4)
    a, b = spread(g, "a", 0, 250, T), spread(g, "b", 0, 250, T)
    data = np.arange(4 * T * 250, dtype=np.float32).reshape(4, -1)
    ex = copy_and_check(g, device, CrossReplicaCopy(a, b, {0: 1, 1: 2, 2: 3, 3: 0}), a, b, data,
                        data[[3, 0, 1, 2]])   # replica k's b is replica k - 1's a
    l, hop = link_figures(t)
    B = T * 1000
    rail_links = 2 if topology == "ladder" else 4
    loads = {(0, 1): B, (1, 0): B, (0, 2): B, (2, 3): B, (3, 2): B, (2, 0): B}
    topo = IpuLinkTopology.of(t)
    assert topo.link_loads([(0, 1, B), (1, 2, B), (2, 3, B), (3, 0, B)]) == loads
    assert topo.links(0, 2) == rail_links
    expected = max(math.ceil(B / (4 * l)), math.ceil(B / (rail_links * l))) + 2 * hop + t.global_sync_cycles
    assert ex.total_cycles == expected == {"ladder": 729, "torus": 365}[topology] + 40 + 80
