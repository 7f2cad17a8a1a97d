"""IPU-Link topology (popsim.topology): ladder and torus geometry, routes, link counts,
and the cycles of a phase of inter-IPU transfers, worked out by hand; the Target and
IPUModel field that picks the topology."""
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import popsim
from popsim import codec
from popsim.errors import InvalidMachineModelError, PopsimError
from popsim.target import IpuLinkTopologyType
from popsim.topology import RAIL_LINKS, RUNG_LINKS, IpuLinkTopology

# ipu2 figures, from the constants of docs/cost_model.md (not from the code under test):
# one IPU-Link carries 128 Gibit/s x 0.85 per direction; the tile clock is 1.33 GHz.
LINK = 128 * 2**30 / 8 * 0.85 / 1.33e9  # 10.98 bytes per cycle per link
HOP = 20                                # ceil(15 ns x 1.33 GHz) = ceil(19.95)
RUNG = 4 * LINK                         # card partners: 4 links, 43.92 bytes/cycle
RAIL = 2 * LINK                         # rail neighbours: 2 links, 21.96 bytes/cycle
MB = 10_000                             # the bytes of one flow in the cases below


def ipu2(num_ipus=8, kind="ladder"):
    return IpuLinkTopology.of(popsim.Target.create_ipu_target(num_ipus).with_changes(ipu_link_topology=kind))


# -- building it from a target -------------------------------------------------------------
@pytest.mark.parametrize("version,clock,hop", [("ipu1", 1.6e9, 24), ("ipu2", 1.33e9, 20), ("ipu21", 1.85e9, 28)])
def test_of_takes_one_link_and_one_hop_from_the_target(version, clock, hop):
    target = popsim.Target.create_ipu_target(4, version=version)
    topo = IpuLinkTopology.of(target)
    assert topo.kind == "ladder" and type(topo.kind) is str and topo.num_ipus == 4
    assert topo.link_bytes_per_cycle == pytest.approx(128 * 2**30 / 8 * 0.85 / clock)
    assert topo.hop_latency_cycles == hop  # ceil(15 ns x clock): 24.0, 19.95, 27.75 rounded up
    # the whole device can have more IPUs than the target (a replicated graph's target is one replica)
    assert IpuLinkTopology.of(target, num_ipus=16).num_ipus == 16
    # the existing whole-IPU figures are untouched: 4 links, and the hops of the sync model
    assert target.ipu_link_bytes_per_cycle == pytest.approx(4 * 128 * 2**30 / 8 * 0.85 / clock)


def test_of_follows_the_targets_topology():
    target = popsim.Target.create_ipu_target(8).with_changes(ipu_link_topology="torus")
    assert IpuLinkTopology.of(target).kind == "torus"


# -- link counts -----------------------------------------------------------------------------
def test_link_counts_on_a_ladder():
    topo = ipu2(8)
    assert (RUNG_LINKS, RAIL_LINKS) == (4, 2)  # PopLibs' IPUModel: 4 intra-card links, 2 up, 2 down
    for i in range(8):
        assert topo.links(i, i ^ 1) == 4  # card partners, both directions
        assert topo.links(i, i) == 0
    for i in range(6):
        assert topo.links(i, i + 2) == topo.links(i + 2, i) == 2  # rail neighbours
    assert topo.links(0, 3) == topo.links(1, 2) == 0  # diagonals are not joined
    assert topo.links(0, 4) == 0                      # nor rungs two apart
    assert topo.links(0, 6) == topo.links(7, 1) == 0  # a ladder's rails end


def test_link_counts_on_a_torus():
    topo = ipu2(8, "torus")
    assert topo.links(0, 6) == topo.links(6, 0) == 2  # the even rail wraps around
    assert topo.links(7, 1) == topo.links(1, 7) == 2  # and so does the odd one
    assert topo.links(0, 2) == 2 and topo.links(0, 1) == 4
    assert topo.links(0, 4) == topo.links(0, 7) == 0
    # two rungs: the up links and the wrap-around both join 0 and 2
    assert ipu2(4, "torus").links(0, 2) == 4
    # one rung: only the card partners are joined
    assert ipu2(2, "torus").links(0, 1) == 4


# -- routes ----------------------------------------------------------------------------------
@pytest.mark.parametrize("src,dst,ladder,torus", [
    (0, 7, [(0, 1), (1, 3), (3, 5), (5, 7)], [(0, 1), (1, 7)]),   # torus wraps down from rung 0 to rung 3
    (7, 0, [(7, 6), (6, 4), (4, 2), (2, 0)], [(7, 6), (6, 0)]),   # and up from rung 3 to rung 0
    (1, 6, [(1, 0), (0, 2), (2, 4), (4, 6)], [(1, 0), (0, 6)]),
    (6, 1, [(6, 7), (7, 5), (5, 3), (3, 1)], [(6, 7), (7, 1)]),
    (0, 1, [(0, 1)], [(0, 1)]),                                   # card partners: one hop over the rung
    (2, 4, [(2, 4)], [(2, 4)]),
    (0, 4, [(0, 2), (2, 4)], [(0, 2), (2, 4)]),                   # a tie on the torus goes up
    (4, 0, [(4, 2), (2, 0)], [(4, 6), (6, 0)]),
    (3, 3, [], []),
])
def test_routes_on_eight_ipus(src, dst, ladder, torus):
    assert ipu2(8).route(src, dst) == ladder
    assert ipu2(8, "torus").route(src, dst) == torus
    assert ipu2(8).hops(src, dst) == len(ladder)
    assert ipu2(8, "torus").hops(src, dst) == len(torus)


def test_an_odd_count_leaves_the_last_ipu_without_a_partner():
    topo = ipu2(5)  # IPU 4 is half a card: it walks its rail first, then crosses
    assert topo.route(4, 1) == [(4, 2), (2, 0), (0, 1)]
    assert topo.route(1, 4) == [(1, 0), (0, 2), (2, 4)]
    assert topo.route(4, 3) == [(4, 2), (2, 3)]
    assert topo.links(4, 3) == 0 and topo.links(4, 2) == 2


# -- errors ----------------------------------------------------------------------------------
def test_ipu_indices_out_of_range_are_refused():
    topo = ipu2(8)
    with pytest.raises(PopsimError, match=r"destination IPU 8 is out of range: the device has 8 IPUs \(0\.\.7\)"):
        topo.route(0, 8)
    with pytest.raises(PopsimError, match=r"source IPU -1 is out of range: the device has 8 IPUs"):
        topo.hops(-1, 0)
    with pytest.raises(PopsimError, match=r"IPU 9 is out of range: the device has 8 IPUs"):
        topo.links(9, 1)
    with pytest.raises(PopsimError, match=r"IPU 1 is out of range: the device has 1 IPU \(0\.\.0\)"):
        ipu2(1).links(0, 1)
    with pytest.raises(PopsimError, match=r"source IPU 12 is out of range"):
        topo.transfer_cycles([(0, 1, 8), (12, 1, 8)])
    with pytest.raises(PopsimError, match=r"IPU must be an integer, found float 1.0"):
        topo.route(0, 1.0)


def test_unknown_kinds_and_bad_flows_are_refused():
    with pytest.raises(PopsimError, match=r"unknown IPU-Link topology 'mesh': expected one of 'ladder', 'torus'"):
        IpuLinkTopology("mesh", 8, LINK, HOP)
    with pytest.raises(PopsimError, match=r"IpuLinkTopology.num_ipus must be an integer >= 1, found 0"):
        IpuLinkTopology("ladder", 0, LINK, HOP)
    with pytest.raises(PopsimError, match=r"the bytes of flow 1 must be a non-negative integer, found -4"):
        ipu2().transfer_cycles([(0, 1, 4), (0, 1, -4)])
    with pytest.raises(PopsimError, match=r"flow 0 must be \(source IPU, destination IPU, bytes\)"):
        ipu2().transfer_cycles([(0, 1)])


# -- transfer cycles, worked out by hand -----------------------------------------------------
def test_nothing_crossing_a_link_costs_nothing():
    topo = ipu2()
    assert topo.transfer_cycles([]) == 0
    assert topo.transfer_cycles([(3, 3, MB), (0, 1, 0)]) == 0  # same IPU, zero bytes: no latency either
    assert topo.link_loads([(3, 3, MB)]) == {}


def test_one_flow_over_one_hop():
    topo = ipu2()
    # over the rung: ceil(10,000 / 43.92) = ceil(227.7) = 228, + 1 hop x 20 = 248
    assert topo.transfer_cycles([(0, 1, MB)]) == math.ceil(MB / RUNG) + HOP == 248
    # along the rail, half the links: ceil(10,000 / 21.96) = ceil(455.4) = 456, + 20 = 476
    assert topo.transfer_cycles([(0, 2, MB)]) == math.ceil(MB / RAIL) + HOP == 476


def test_two_flows_sharing_a_link_take_twice_as_long():
    topo = ipu2()
    # 1 -> 2 crosses the rung to 0, then takes the rail pair (0, 2) that 0 -> 2 uses too:
    # (0, 2) carries 20,000 bytes: ceil(20,000 / 21.96) = ceil(910.8) = 911, + 2 hops x 20 = 951
    flows = [(0, 2, MB), (1, 2, MB)]
    assert topo.link_loads(flows) == {(0, 2): 2 * MB, (1, 0): MB}
    assert topo.transfer_cycles(flows) == math.ceil(2 * MB / RAIL) + 2 * HOP == 951
    # two flows of the same pair share its links just the same
    assert topo.transfer_cycles([(0, 2, MB), (0, 2, MB)]) == math.ceil(2 * MB / RAIL) + HOP == 931


def test_flows_on_disjoint_links_do_not_slow_each_other():
    topo = ipu2()
    # (0, 2), (2, 0) (the other direction is links of its own), (1, 3) and (5, 4): 456 + 20 = 476,
    # as for 0 -> 2 alone
    flows = [(0, 2, MB), (2, 0, MB), (1, 3, MB), (5, 4, MB)]
    assert topo.transfer_cycles(flows) == math.ceil(MB / RAIL) + HOP == 476
    assert topo.transfer_cycles(iter(flows)) == 476  # any iterable, read once


def test_a_multi_hop_flow_pays_the_latency_of_each_hop():
    # 0 -> 7 on the ladder: rung (0, 1), then rails (1, 3), (3, 5), (5, 7): the rails are the
    # bottleneck, ceil(10,000 / 21.96) = 456, + 4 hops x 20 = 536
    assert ipu2().transfer_cycles([(0, 7, MB)]) == math.ceil(MB / RAIL) + 4 * HOP == 536
    # on the torus: (0, 1), then (1, 7) round the wrap: 456 + 2 x 20 = 496
    assert ipu2(kind="torus").transfer_cycles([(0, 7, MB)]) == math.ceil(MB / RAIL) + 2 * HOP == 496


def test_a_ring_of_neighbours_on_a_ladder():
    topo = ipu2(4)
    # 0 -> 1 -> 3 -> 2 -> 0 goes round the square of 4 IPUs, one hop each on its own pair:
    # the rungs take 228 cycles, the rails (1, 3) and (2, 0) 456: 456 + 1 hop x 20 = 476
    ring = [(0, 1, MB), (1, 3, MB), (3, 2, MB), (2, 0, MB)]
    assert topo.link_loads(ring) == {(0, 1): MB, (1, 3): MB, (3, 2): MB, (2, 0): MB}
    assert topo.transfer_cycles(ring) == math.ceil(MB / RAIL) + HOP == 476
    # 0 -> 1 -> 2 -> 3 -> 0 in IPU order: 1 -> 2 and 3 -> 0 cross a rung and then a rail, so
    # the longest route has 2 hops: 456 + 2 x 20 = 496
    naive = [(0, 1, MB), (1, 2, MB), (2, 3, MB), (3, 0, MB)]
    assert topo.link_loads(naive) == {(0, 1): MB, (1, 0): MB, (0, 2): MB, (2, 3): MB, (3, 2): MB, (2, 0): MB}
    assert topo.transfer_cycles(naive) == math.ceil(MB / RAIL) + 2 * HOP == 496


def test_an_all_to_all_on_a_ladder_is_paced_by_its_busiest_rail():
    topo = ipu2(4)
    # every IPU sends 10,000 bytes to each of the 3 others (12 flows). Crossing the rung first,
    # each directed pair carries 2 flows: e.g. (0, 1) has 0 -> 1 and 0 -> 3 (on to 3 by (1, 3)),
    # (0, 2) has 0 -> 2 and 1 -> 2 (which came over (1, 0)). A rail pair's 20,000 bytes take
    # ceil(20,000 / 21.96) = ceil(910.8) = 911 (a rung's 456), + 2 hops x 20 = 951
    flows = [(s, d, MB) for s in range(4) for d in range(4) if s != d]
    loads = topo.link_loads(flows)
    assert loads[0, 2] == loads[2, 0] == loads[1, 3] == loads[3, 1] == 2 * MB
    assert loads[0, 1] == loads[1, 0] == loads[2, 3] == loads[3, 2] == 2 * MB
    assert topo.transfer_cycles(flows) == math.ceil(2 * MB / RAIL) + 2 * HOP == 951


def _distance(topo, src, dst):
    """Fewest hops from src to dst over joined pairs (breadth first). With an even count
    every neighbour of a is its partner or 2 away round the rail (the wrap included)."""
    n, seen, frontier, steps = topo.num_ipus, {src}, [src], 0
    while dst not in seen:
        frontier = [b for a in frontier for b in {a ^ 1, (a + 2) % n, (a - 2) % n}
                    if b not in seen and topo.links(a, b) > 0]
        seen.update(frontier)
        steps += 1
    return steps


# -- properties ------------------------------------------------------------------------------
@settings(max_examples=200, deadline=None)
@given(st.integers(1, 64).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n - 1), st.integers(0, n - 1))))
def test_routes_are_chains_of_neighbours_and_the_torus_is_never_longer(case):
    n, src, dst = case
    ladder, torus = IpuLinkTopology("ladder", n, LINK, HOP), IpuLinkTopology("torus", n, LINK, HOP)
    for topo in (ladder, torus):
        path = topo.route(src, dst)
        assert topo.hops(src, dst) == len(path)
        visited = [src] + [b for _, b in path]
        assert visited[-1] == dst
        assert len(set(visited)) == len(visited)  # no IPU twice
        for (a, b), nxt in zip(path, visited[1:]):
            assert b == nxt and topo.links(a, b) > 0  # each hop joins neighbours, in order
        assert path == [] or path[0][0] == src
    assert torus.hops(src, dst) <= ladder.hops(src, dst)
    if n % 2 == 0:  # whole cards: every route is a shortest path of the link graph
        for topo in (ladder, torus):
            assert topo.hops(src, dst) == _distance(topo, src, dst)
    # on a ladder the route is the rung (if the rails differ) plus one hop per rung in between
    assert ladder.hops(src, dst) == abs(src // 2 - dst // 2) + (src % 2 != dst % 2)


# -- the Target and IPUModel field ------------------------------------------------------------
def test_targets_are_ladders_unless_told_otherwise():
    assert popsim.Target().ipu_link_topology == "ladder"
    assert popsim.Target.create_ipu_target(16).ipu_link_topology is IpuLinkTopologyType.LADDER
    torus = popsim.Target.create_ipu_target(16).with_changes(ipu_link_topology="torus")
    assert torus.ipu_link_topology == "torus" and torus.ipu_link_topology is IpuLinkTopologyType.TORUS
    assert str(torus.ipu_link_topology) == "torus"
    assert torus.with_changes(ipu_link_topology=IpuLinkTopologyType.TORUS) == torus
    assert torus != popsim.Target.create_ipu_target(16)  # a different machine (and cache key)


def test_the_topology_is_saved_with_the_target():
    torus = popsim.Target.create_ipu_target(8).with_changes(ipu_link_topology="torus")
    header, arrays = codec.encode(torus)
    assert header["ipu_link_topology"] == "torus"
    assert codec.decode(popsim.Target, header, arrays) == torus


@pytest.mark.parametrize("value,found", [("mesh", "str 'mesh'"), ("Torus", "str 'Torus'"), (None, "NoneType None"),
                                         (2, "int 2")])
def test_a_target_refuses_an_unknown_topology(value, found):
    with pytest.raises(InvalidMachineModelError) as info:
        popsim.Target(ipu_link_topology=value)
    assert str(info.value) == f"Target.ipu_link_topology must be one of 'ladder', 'torus', found {found}"


def test_the_ipu_model_field_reaches_the_target():
    model = popsim.IPUModel("ipu2")
    assert model.ipu_link_topology == "ladder"
    assert model.create_device().target.ipu_link_topology == "ladder"
    model.ipu_link_topology = IpuLinkTopologyType.TORUS  # the enum, or its name
    assert model.create_device().target.ipu_link_topology is IpuLinkTopologyType.TORUS
    model.num_ipus = 8
    model.ipu_link_topology = "torus"
    target = model.create_device().target
    assert target.ipu_link_topology == "torus"
    assert IpuLinkTopology.of(target).route(0, 6) == [(0, 6)]


def test_the_ipu_model_refuses_an_unknown_topology():
    model = popsim.IPUModel("ipu2")
    with pytest.raises(InvalidMachineModelError) as info:
        model.ipu_link_topology = "ring"
    assert str(info.value) == "IPUModel.ipu_link_topology must be one of 'ladder', 'torus', found str 'ring'"
    assert model.ipu_link_topology == "ladder"  # a refused value leaves the field as it was
    # popsim's own field: no Poplar spelling, and the near miss is pointed at it
    with pytest.raises(popsim.UnknownAttributeError, match="did you mean 'ipu_link_topology'"):
        model.ipuLinkTopology = "torus"
