"""GCL's closed forms on the cost model: a ring all-reduce over n replicas takes 2(n-1)
exchange steps and moves 2(n-1)/n of the data over each link of the ring; twice the
data takes about twice the exchange time; reduce-scatter and all-gather take n-1 steps
each, meet-in-the-middle n//2 each, the bidirectional ring pair halves the exchange
time of one ring, broadcast is one exchange; and what the ``auto`` method picks."""
import math

import numpy as np
import pytest

import popsim
from popsim import FLOAT, gcl
from popsim.gcl import CollectiveOperator as Op
from popsim.gcl.ring_programs import chains_for
from popsim.gcl.rings import pick_method
from popsim.program import CrossReplicaCopy, Sequence
from popsim.program_tree import iter_programs
from popsim.topology import IpuLinkTopology

from graph_helpers import small_model

pytestmark = pytest.mark.compiler  # the ring vertices are compiled to C

TILES = 16  # 16 tiles' ports (64 bytes/cycle) outrun a rail's 2 links (22 bytes/cycle): the links rule
RINGS = {2: [0, 1], 4: [0, 2, 3, 1], 8: [0, 2, 4, 6, 7, 5, 3, 1]}  # up the even replicas, down the odd
METHODS = ("clockwise_ring", "anticlockwise_ring", "bidirectional_ring_pair", "meet_in_middle_ring")


class Run:
    """One collective over n replicas of one IPU each (a ladder of n IPUs) on a FLOAT
    variable with ``per_tile`` elements on each of TILES tiles, run once and checked."""

    def __init__(self, n, per_tile, fn="all_reduce", method="clockwise_ring", options=None):
        model = small_model(TILES, num_ipus=n)
        self.device = model.create_device()
        g = popsim.Graph(self.device, replication_factor=n)
        x = g.add_variable(FLOAT, (TILES * per_tile,), "x")
        for k in range(TILES):
            g.set_tile_mapping(x[k * per_tile:(k + 1) * per_tile], k)
        self.prog = prog = Sequence()
        options = dict({"method": method} if method else {}, **(options or {}))
        if fn == "all_reduce":
            y = gcl.all_reduce_cross_replica(g, x, Op.ADD, prog, options=options)
        elif fn == "reduce_scatter":
            y = gcl.reduce_scatter_cross_replica(g, x, Op.ADD, prog, options=options)
        else:
            y = gcl.all_gather_cross_replica(g, x, prog, options=options)
        g.create_host_write("x", x)
        g.create_host_read("y", y)
        e = popsim.Engine(g, prog)
        e.load(self.device)
        data = np.random.default_rng(n).integers(-8, 8, (n, x.num_elements())).astype(np.float32)
        e.write_tensor("x", data)
        e.run()
        got, N = e.read_tensor("y"), x.num_elements()
        if fn == "all_reduce":
            np.testing.assert_array_equal(got, np.broadcast_to(data.sum(0), data.shape))
        elif fn == "reduce_scatter":
            np.testing.assert_array_equal(got, data.sum(0).reshape(n, N // n))
        else:
            np.testing.assert_array_equal(got, np.broadcast_to(data, (n, n, N)))
        self.n, self.S = n, N * 4  # S: the data's bytes per replica
        self.ex = e.get_report().execution
        self.steps = [s for s in self.ex.steps if s.kind == "CrossReplicaCopy"]

    @property
    def copies(self):
        """The CrossReplicaCopy programs the collective added to the Sequence."""
        return [p for p in iter_programs([self.prog]) if isinstance(p, CrossReplicaCopy)]

    def link_loads(self):
        """Bytes each directed link carries over all the copies (device IPU = replica)."""
        flows = [(k, v, c.src.num_elements() * c.src.dtype.size) for c in self.copies
                 for k, v in c.replica_map.items()]
        return IpuLinkTopology.of(self.device.target).link_loads(flows)

    @property
    def exchange_cycles(self):
        return sum(s.cycles for s in self.steps)


def _ring_links(n):
    ring = RINGS[n]
    return {(ring[q], ring[(q + 1) % n]) for q in range(n)}


@pytest.mark.parametrize("n", [2, 4, 8])
def test_ring_all_reduce_steps_and_bytes_per_link(n):
    """Clockwise ring all-reduce: 2(n-1) exchange steps, each ring link (and no other)
    carries 2(n-1)/n x S bytes; each step moves one fragment (S/n bytes) over every
    link of the ring at once, so it costs, by hand, the busiest link pair (a rail's 2
    links when n > 2, the rung's 4 when n = 2) or a tile's port, plus a hop, plus the
    device's global sync."""
    per_tile = 8 * 40
    r = Run(n, per_tile)
    assert len(r.steps) == 2 * (n - 1)
    assert all(s.count == 1 for s in r.steps)
    loads = r.link_loads()
    assert set(loads) == _ring_links(n)
    for link, nbytes in loads.items():
        assert nbytes * n == 2 * (n - 1) * r.S, link

    t = r.device.target
    topo = IpuLinkTopology.of(t)
    ring = RINGS[n]
    flows = [(ring[q], ring[(q + 1) % n], r.S // n) for q in range(n)]
    assert all(topo.hops(a, b) == 1 for a, b, _ in flows)
    port = math.ceil(per_tile // n * 4 / t.exchange_bytes_per_cycle) + topo.hop_latency_cycles
    links = topo.transfer_cycles(flows)
    assert links > port
    assert links == math.ceil(r.S / n / ((2 if n > 2 else 4) * topo.link_bytes_per_cycle)) + topo.hop_latency_cycles
    assert [s.cycles for s in r.steps] == [links + t.global_sync_cycles] * (2 * (n - 1))


@pytest.mark.parametrize("n", [2, 4, 8])
def test_twice_the_data_about_twice_the_exchange_time(n):
    """S large enough (each step ~2000 cycles on the links, against ~60-140 of hop and
    sync) that the exchange time is close to proportional to the data: 2S takes within
    10% of twice S's, and the whole all-reduce (the reduce steps scale too) alike."""
    small, large = Run(n, 2 * n * 360), Run(n, 4 * n * 360)
    assert large.S == 2 * small.S
    assert len(large.steps) == len(small.steps) == 2 * (n - 1)
    assert large.exchange_cycles == pytest.approx(2 * small.exchange_cycles, rel=0.1)
    assert large.ex.total_cycles == pytest.approx(2 * small.ex.total_cycles, rel=0.1)
    assert large.exchange_cycles < 2 * small.exchange_cycles   # the fixed hop and sync are paid once per step


@pytest.mark.parametrize("n", [2, 4, 8])
def test_reduce_scatter_and_all_gather_alone(n):
    """Reduce-scatter: n-1 steps, each ring link carries (n-1)/n x S; all-gather of S
    bytes: n-1 steps, each ring link carries (n-1) x S (every other replica's data)."""
    rs = Run(n, 8 * 20, fn="reduce_scatter")
    assert len(rs.steps) == n - 1
    assert set(rs.link_loads()) == _ring_links(n)
    assert all(b * n == (n - 1) * rs.S for b in rs.link_loads().values())
    ag = Run(n, 8 * 20, fn="all_gather")
    assert len(ag.steps) == n - 1
    assert set(ag.link_loads()) == _ring_links(n)
    assert all(b == (n - 1) * ag.S for b in ag.link_loads().values())


@pytest.mark.parametrize("n", [2, 4, 8])
def test_meet_in_middle_and_broadcast_steps(n):
    """Meet-in-the-middle: its chains reach n//2 positions (the longer one way), so the
    reduce-scatter and the all-gather take n//2 steps each; broadcast is one exchange
    (every replica sends to every other at once)."""
    for aligned in (True, False):
        (chains,) = chains_for("meet_in_middle_ring", n, aligned)
        assert max(c.length + c.delay for c in chains) == n // 2
    assert len(Run(n, 8 * 20, method="meet_in_middle_ring").steps) == 2 * (n // 2)
    assert len(Run(n, 8 * 20, method="broadcast").steps) == 1
    for method in METHODS:
        steps = max(c.length + c.delay for ring in chains_for(method, n) for c in ring)
        assert steps == (n // 2 if method == "meet_in_middle_ring" else n - 1)


@pytest.mark.parametrize("n", [4, 8])
def test_the_bidirectional_ring_pair_halves_the_exchange_time(n):
    """The ring pair sends half the data each way round: the same bytes in the same
    2(n-1) steps, each step one exchange using both directions of every ring link, each
    direction carrying half of what one ring's does; the links rule (16 tiles' ports
    outrun them), so its exchange time is about half the clockwise ring's."""
    per_tile = 4 * n * 360
    cw, pair = Run(n, per_tile), Run(n, per_tile, method="bidirectional_ring_pair")
    assert len(pair.steps) == len(cw.steps) == 2 * (n - 1)
    assert all(" + " in s.name for s in pair.steps)
    loads, links = pair.link_loads(), _ring_links(n)
    assert set(loads) == links | {(b, a) for a, b in links}
    assert all(b * n == (n - 1) * pair.S for b in loads.values())
    assert sum(loads.values()) == sum(cw.link_loads().values())
    assert pair.exchange_cycles == pytest.approx(cw.exchange_cycles / 2, rel=0.1)


def test_pair_gains_nothing_on_a_ring_of_two():
    """With n = 2 one ring already uses both directions of the rung (0 -> 1 and 1 -> 0):
    the pair moves the same bytes over the same links in the same time."""
    cw, pair = Run(2, 2 * 2 * 360), Run(2, 2 * 2 * 360, method="bidirectional_ring_pair")
    assert cw.link_loads() == pair.link_loads()
    assert cw.exchange_cycles == pair.exchange_cycles


MiB = 1 << 20


@pytest.mark.parametrize("kind", ["reduce_scatter", "all_gather"])
def test_pick_method_thresholds(kind):
    """rings.pick_method's documented choices."""
    assert pick_method(kind, 64 * MiB, 2, 1, "ladder") == "clockwise_ring"       # ranks <= 2
    assert pick_method(kind, 64 * MiB, 8, 2, "torus") == "meet_in_middle_ring"   # 2 IPUs a replica, torus
    assert pick_method(kind, 64 * MiB, 8, 2, "ladder") == "clockwise_ring"       # 2 IPUs a replica, ladder
    assert pick_method(kind, 64 * MiB, 8, 1, "ladder") == "bidirectional_ring_pair"
    assert pick_method(kind, 1 * MiB, 8, 1, "ladder") == "meet_in_middle_ring"   # small data
    assert pick_method(kind, MiB // 2, 4, 1, "ladder") == "meet_in_middle_ring"
    edge = {"all_gather": 2490368, "reduce_scatter": 4980736}[kind]   # GCL's bytes for 5..8 ranks
    assert pick_method(kind, edge - 1, 8, 1, "ladder") == "meet_in_middle_ring"
    assert pick_method(kind, edge, 8, 1, "ladder") == "bidirectional_ring_pair"
    assert pick_method(kind, 64 * MiB, 4, 1, "ladder") == "bidirectional_ring_pair"
    assert pick_method(kind, 1 << 30, 32, 1, "torus") == "meet_in_middle_ring"   # more than 16 ranks
    assert pick_method(kind, 1 << 30, 16, 1, "torus") == "bidirectional_ring_pair"


def test_auto_all_reduce_broadcasts_small_data():
    """auto all-reduces by broadcast (one exchange) while n x bytes <= 2048
    (syncful.maxBroadcastSize); above it, or with the option lowered, on rings
    (meet-in-the-middle for this little data: 4 steps over 4 replicas)."""
    n = 4
    assert len(Run(n, 8, method=None).steps) == 1                         # 4 x 512 bytes = 2048
    assert len(Run(n, 9, method=None).steps) == 2 * (n // 2)              # 4 x 576 bytes > 2048
    assert len(Run(n, 9, method=None, options={"syncful.maxBroadcastSize": 4096}).steps) == 1
    assert len(Run(n, 8, method=None, options={"syncful.maxBroadcastSize": 0}).steps) == 2 * (n // 2)
