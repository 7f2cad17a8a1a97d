"""Adjacent independent CrossReplicaCopy programs in one Sequence are lowered as one
exchange (programs.py: _sequence_children, _independent_copies), as Poplar merges
them: one report step, the data of both moved, the IPU-Links and each tile's port
shared (transfers.py: cross_replica_copies, tile traffic per replica). Dependent
copies stay apart. Costs worked by hand from the topology (see test_ipu_link_copies.py)."""
import math

import numpy as np
import pytest

import popsim
from popsim.program import Copy, CrossReplicaCopy, Sequence
from popsim.topology import IpuLinkTopology

from ipu_clock_helpers import ipu_model, link_figures, new_graph, spread

pytestmark = pytest.mark.compiler  # the Python vertices of ipu_clock_helpers are compiled to C

R = 4
CW = {0: 1, 1: 2, 2: 3, 3: 0}    # replica k sends to k + 1
ACW = {0: 3, 1: 0, 2: 1, 3: 2}   # replica k sends to k - 1


def _setup(tiles, names):
    """R replicas of one IPU (a ladder); a FLOAT variable per name, 250 elements (1000 bytes) on each
    tile; host writes and reads of each."""
    device = ipu_model(R, tiles)
    g = new_graph(device, replication_factor=R)
    vs = {n: spread(g, n, 0, 250, tiles) for n in names}
    for n, v in vs.items():
        g.create_host_write(f"w{n}", v)
        g.create_host_read(f"r{n}", v)
    return device, g, vs


def _run(device, g, vs, program):
    """Run with replica k's variable number j holding 1000 j + 100 k + its index (mod 100);
    returns (execution report, initial values {name: [R, N]}, final values)."""
    e = popsim.Engine(g, program)
    e.load(device)
    init = {}
    for j, (n, v) in enumerate(vs.items()):
        N = v.num_elements()
        init[n] = (1000 * j + 100 * np.arange(R)[:, None] + np.arange(N)[None, :] % 100).astype(np.float32)
        e.write_tensor(f"w{n}", init[n])
    e.run()
    return e.get_report().execution, init, {n: e.read_tensor(f"r{n}") for n in vs}


def _moved(before, replica_map, src):
    """``before`` (per replica) after replica k's ``src`` is copied to replica map[k]."""
    out = before.copy()
    for k, d in replica_map.items():
        out[d] = src[k]
    return out


def _copy_steps(ex):
    return [s for s in ex.steps if s.kind == "CrossReplicaCopy"]


def _link_phase(t, flows, per_tile_bytes):
    """Link phase of a global exchange (cost_model._global_exchange): the busiest link
    pair, or the busiest tile's port plus the longest route's hops."""
    topo = IpuLinkTopology.of(t)
    hops = max(topo.hops(a, b) for a, b, _ in flows)
    port = math.ceil(per_tile_bytes / t.exchange_bytes_per_cycle) + topo.hop_latency_cycles * hops
    return max(topo.transfer_cycles(flows), port)


def test_two_rings_merge_into_one_exchange():
    """Clockwise a -> b and anticlockwise c -> d, adjacent in one Sequence: one step
    named "<a -> b> + <c -> d>", both moved on every replica.

    Each ring alone (B = 16 x 1000 bytes per replica): the rungs (0,1), (1,0), (2,3),
    (3,2) carry B over 4 links, the rails B over 2 links: ceil(B / 2l) + 2 hops. Both
    rings at once: each rung pair carries 2B (over 4 links), each rail pair B (the
    clockwise ring uses (0,2) and (2,0), the anticlockwise (1,3) and (3,1)): the same
    ceil(B / 2l) + 2 hops: links are per direction, so opposite rings do not compete.
    Each tile's port carries 2000 bytes each way: 500 + 40 < 769, the links rule."""
    T = 16
    device, g, vs = _setup(T, "abcd")
    a, b, c, d = vs.values()
    cw, acw = CrossReplicaCopy(a, b, CW), CrossReplicaCopy(c, d, ACW)
    ex, x, got = _run(device, g, vs, Sequence([cw, acw]))
    (step,) = _copy_steps(ex)
    assert step.name == "CrossReplicaCopy a -> b + CrossReplicaCopy c -> d"
    np.testing.assert_array_equal(got["b"], _moved(x["b"], CW, x["a"]))
    np.testing.assert_array_equal(got["d"], _moved(x["d"], ACW, x["c"]))
    np.testing.assert_array_equal(got["a"], x["a"])
    np.testing.assert_array_equal(got["c"], x["c"])

    t = device.target
    l, hop = link_figures(t)
    B = T * 1000
    cw_flows = [(k, v, B) for k, v in CW.items()]
    acw_flows = [(k, v, B) for k, v in ACW.items()]
    topo = IpuLinkTopology.of(t)
    loads = topo.link_loads(cw_flows + acw_flows)
    assert loads == {(0, 1): 2 * B, (1, 0): 2 * B, (2, 3): 2 * B, (3, 2): 2 * B,
                     (0, 2): B, (2, 0): B, (1, 3): B, (3, 1): B}
    one_ring = math.ceil(B / (2 * l)) + 2 * hop
    assert topo.transfer_cycles(cw_flows) == topo.transfer_cycles(acw_flows) == one_ring == 729 + 40
    merged = _link_phase(t, cw_flows + acw_flows, 2000) + t.global_sync_cycles
    assert merged == one_ring + t.global_sync_cycles   # both rings cost what one does
    assert step.cycles == merged
    assert ex.total_cycles == merged

    # Apart (each in a Sequence of its own, or with a program between them): two
    # exchanges, each one ring's cost.
    single = _link_phase(t, cw_flows, 1000) + t.global_sync_cycles
    assert single == merged
    layouts = (lambda cw, acw, a: Sequence([Sequence([cw]), Sequence([acw])]),   # nested Sequences
               lambda cw, acw, a: Sequence([cw, Copy(a[:10], a[10:20]), acw]))   # a program between them
    for layout in layouts:
        device, g, vs = _setup(T, "abcd")
        a, b, c, d = vs.values()
        prog = layout(CrossReplicaCopy(a, b, CW), CrossReplicaCopy(c, d, ACW), a)
        ex2, x2, got2 = _run(device, g, vs, prog)
        steps = _copy_steps(ex2)
        assert [s.name for s in steps] == ["CrossReplicaCopy a -> b", "CrossReplicaCopy c -> d"]
        assert [s.cycles for s in steps] == [single, single]
        assert sum(s.cycles for s in steps) > step.cycles
        np.testing.assert_array_equal(got2["b"], _moved(x2["b"], CW, x2["a"]))
        np.testing.assert_array_equal(got2["d"], _moved(x2["d"], ACW, x2["c"]))


def test_dependent_copies_are_not_merged():
    """{0: 1} a -> b, then {1: 2} b -> c: replica 1 sends the b that the first copy
    wrote there, so they run one after the other: two steps, and replica 2's c ends up
    with replica 0's a (merged, it would get replica 1's old b)."""
    device, g, vs = _setup(4, "abc")
    a, b, c = vs.values()
    first, second = {0: 1}, {1: 2}
    ex, x, got = _run(device, g, vs, Sequence([CrossReplicaCopy(a, b, first), CrossReplicaCopy(b, c, second)]))
    assert [s.name for s in _copy_steps(ex)] == ["CrossReplicaCopy a -> b", "CrossReplicaCopy b -> c"]
    b_after = _moved(x["b"], first, x["a"])
    np.testing.assert_array_equal(got["b"], b_after)
    np.testing.assert_array_equal(got["c"], _moved(x["c"], second, b_after))
    np.testing.assert_array_equal(got["c"][2], x["a"][0])


def test_pair_copies_to_one_region_on_different_replicas_merge():
    """{0: 1} a -> b and {1: 2} c -> b write the same region of b, but on different
    replicas, and replica 1 reads c, not b: independent (replica-aware), one step.

    4 tiles x 1000 bytes per replica (B = 4000): port-bound. The merged exchange's tile
    traffic is taken per replica: replica 1 sends 1000 bytes per tile (c) and receives
    1000 (b), replica 0 only sends, replica 2 only receives: each tile's port carries
    1000 bytes, 250 cycles, as for one copy alone; summed over the copies it would be
    500. Links: 0 -> 1 over the rung (0, 1), 1 -> 2 over (1, 0) then the rail (0, 2):
    ceil(B / 2l) + 2 hops = 183 + 40 < the port's 250 + 40."""
    T = 4
    device, g, vs = _setup(T, "abc")
    a, b, c = vs.values()
    ex, x, got = _run(device, g, vs, Sequence([CrossReplicaCopy(a, b, {0: 1}), CrossReplicaCopy(c, b, {1: 2})]))
    (step,) = _copy_steps(ex)
    assert step.name == "CrossReplicaCopy a -> b + CrossReplicaCopy c -> b"
    want = x["b"].copy()
    want[1], want[2] = x["a"][0], x["c"][1]
    np.testing.assert_array_equal(got["b"], want)

    t = device.target
    B = T * 1000
    flows = [(0, 1, B), (1, 2, B)]
    topo = IpuLinkTopology.of(t)
    assert topo.transfer_cycles(flows) < math.ceil(1000 / t.exchange_bytes_per_cycle)
    expected = _link_phase(t, flows, 1000) + t.global_sync_cycles
    assert expected == 250 + 2 * link_figures(t)[1] + t.global_sync_cycles
    assert step.cycles == expected
    assert step.cycles < _link_phase(t, flows, 2000) + t.global_sync_cycles   # not twice the bytes per tile

    # One copy of that size alone ({1: 2} c -> b, the same route) costs the same.
    device, g, vs = _setup(T, "abc")
    ex1, _, _ = _run(device, g, vs, Sequence([CrossReplicaCopy(vs["c"], vs["b"], {1: 2})]))
    assert _copy_steps(ex1)[0].cycles == step.cycles


def test_copy_onto_itself_from_another_replica():
    """{0: 1} of t -> t: src and dst overlap, but no replica both sends and receives:
    replica 1's t becomes replica 0's, the others keep theirs."""
    device, g, vs = _setup(4, "t")
    (t,) = vs.values()
    ex, x, got = _run(device, g, vs, Sequence([CrossReplicaCopy(t, t, {0: 1})]))
    assert len(_copy_steps(ex)) == 1
    np.testing.assert_array_equal(got["t"], _moved(x["t"], {0: 1}, x["t"]))
    assert (got["t"][1] != x["t"][1]).all()
