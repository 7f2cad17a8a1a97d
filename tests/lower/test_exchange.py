"""Exchange buffers of a compute set: the vertices on a tile that only read the same remote
elements share one buffer, while the traffic is each reading field's
(src/popsim/lower/exchange.py)."""
import math

import numpy as np
import pytest

import popsim
from popsim import FLOAT, InOut, Input, Output, Vector, Vertex
from popsim.lower import cost_model as cm
from popsim.lower.exchange import merge_overlapping_runs
from popsim.program import Execute

pytestmark = pytest.mark.compiler


class WeightedSum(Vertex):
    """out = sum((i + 1) * a[i]): the result depends on which elements the field sees, in order."""

    a: Input[Vector[float]]
    out: Output[float]

    def compute(self):
        s = 0.0
        for i in range(len(self.a)):
            s += (i + 1) * self.a[i]
        self.out = s


class DoubleInPlace(Vertex):
    data: InOut[Vector[float]]

    def compute(self):
        for i in range(len(self.data)):
            self.data[i] = 2 * self.data[i]


X = np.arange(1, 9, dtype=np.float32)  # x: 8 floats on tile 0


def weighted(values):
    return float(np.sum(np.arange(1, len(values) + 1) * np.asarray(values, np.float64)))


def build(device, reads, tiles):
    """x (8 floats on tile 0); one WeightedSum per (view of x, tile) with its out on that tile."""
    g = popsim.Graph(device)
    g.add_codelets([WeightedSum, DoubleInPlace])
    x = g.add_variable(FLOAT, [8], "x")
    g.set_tile_mapping(x, 0)
    out = g.add_variable(FLOAT, [len(reads)], "out")
    cs = g.add_compute_set("readers")
    for k, (view, tile) in enumerate(zip(reads, tiles)):
        v = g.add_vertex(cs, "WeightedSum", {"a": view(x), "out": out[k]})
        g.set_tile_mapping(v, tile)
        g.set_tile_mapping(out[k], tile)
    return g, x, out, cs


def run(g, device, x, out, prog, options=None):
    g.create_host_write("x", x)
    g.create_host_read("x_back", x)
    g.create_host_read("out", out)
    engine = popsim.Engine(g, prog, options)
    engine.load(device)
    engine.write_tensor("x", X)
    engine.run()
    return engine, engine.read_tensor("out"), engine.read_tensor("x_back")


def field_offsets(g, prog, field=0):
    """Arena offset of field ``field`` of every vertex, in vertex order."""
    vt = popsim.compile_graph(g, prog).lowered.vertices
    rows = sorted(range(len(vt.row_index)), key=lambda r: int(vt.row_index[r]))
    return [vt.field_views(r)[field][0] for r in rows]


def exchange_step(engine):
    (step,) = [s for s in engine.get_report().execution.steps if s.kind == "Execute"]
    return step


def test_two_readers_of_one_remote_slice_on_one_tile_share_one_buffer(small_device):
    g, x, out, cs = build(small_device, [lambda x: x, lambda x: x], [1, 1])
    a, b = field_offsets(g, Execute(cs))
    assert a == b
    engine, result, _ = run(g, small_device, x, out, Execute(cs))
    np.testing.assert_allclose(result, [weighted(X)] * 2)
    memory = engine.get_report().memory
    assert memory.by_category["exchange_buffers"] == [0, 32, 0, 0]   # one 32-byte buffer
    assert memory.exchange_buffers_shared == 32                       # the second would have been 32 more
    # Stored once, but delivered to each reading field (as Poplar's tutorial-6 profiles
    # show): tile 0 sends 2 x 32 bytes, tile 1 receives 2 x 32.
    per_reader = math.ceil(64 / 4) + cm.EXCHANGE_OVERHEAD_CYCLES
    assert exchange_step(engine).tile_exchange[:2] == [per_reader, per_reader]


def test_readers_on_different_tiles_get_a_buffer_each(small_device):
    g, x, out, cs = build(small_device, [lambda x: x, lambda x: x], [1, 2])
    engine, result, _ = run(g, small_device, x, out, Execute(cs))
    np.testing.assert_allclose(result, [weighted(X)] * 2)
    memory = engine.get_report().memory
    assert memory.by_category["exchange_buffers"] == [0, 32, 32, 0]
    assert memory.exchange_buffers_shared == 0
    step = exchange_step(engine)
    assert step.tile_exchange[0] == math.ceil(64 / 4) + cm.EXCHANGE_OVERHEAD_CYCLES  # sent to both
    assert step.tile_exchange[1] == step.tile_exchange[2] == math.ceil(32 / 4) + cm.EXCHANGE_OVERHEAD_CYCLES


def test_overlapping_slices_share_the_buffer_of_their_union(small_device):
    g, x, out, cs = build(small_device, [lambda x: x[0:6], lambda x: x[2:8], lambda x: x[3:5]], [1, 1, 1])
    a, b, c = field_offsets(g, Execute(cs))
    assert (b - a, c - a) == (2 * 4, 3 * 4)  # positions inside one buffer holding x[0:8]
    engine, result, _ = run(g, small_device, x, out, Execute(cs))
    np.testing.assert_allclose(result, [weighted(X[0:6]), weighted(X[2:8]), weighted(X[3:5])])
    memory = engine.get_report().memory
    assert memory.by_category["exchange_buffers"][1] == 32
    assert memory.exchange_buffers_shared == 24 + 24 + 8 - 32
    # traffic: what each reading field receives
    assert exchange_step(engine).tile_exchange[1] == math.ceil((24 + 24 + 8) / 4) + cm.EXCHANGE_OVERHEAD_CYCLES


def test_touching_slices_keep_separate_buffers(small_device):
    g, x, out, cs = build(small_device, [lambda x: x[0:4], lambda x: x[4:8]], [1, 1])
    engine, result, _ = run(g, small_device, x, out, Execute(cs))
    np.testing.assert_allclose(result, [weighted(X[0:4]), weighted(X[4:8])])
    assert engine.get_report().memory.by_category["exchange_buffers"][1] == 16 + 16
    assert engine.get_report().memory.exchange_buffers_shared == 0


def test_identical_scattered_views_share_a_buffer(small_device):
    g, x, out, cs = build(small_device, [lambda x: x[::2], lambda x: x[::2], lambda x: x[1::2]], [1, 1, 1])
    a, b, c = field_offsets(g, Execute(cs))
    assert a == b != c
    engine, result, _ = run(g, small_device, x, out, Execute(cs))
    np.testing.assert_allclose(result, [weighted(X[::2]), weighted(X[::2]), weighted(X[1::2])])
    memory = engine.get_report().memory
    assert memory.by_category["exchange_buffers"][1] == 16 + 16
    assert memory.exchange_buffers_shared == 16
    assert exchange_step(engine).tile_exchange[1] == math.ceil(48 / 4) + cm.EXCHANGE_OVERHEAD_CYCLES


def test_a_writer_keeps_its_own_buffer(small_device, monkeypatch):
    """An InOut field reading the elements another vertex reads is not shared: with the
    race check off, the reader sees the values from before the compute set."""
    monkeypatch.setenv("POPSIM_CHECK_RACES", "false")
    g, x, out, cs = build(small_device, [lambda x: x[0:4]], [1])
    v = g.add_vertex(cs, "DoubleInPlace", {"data": x[0:4]})
    g.set_tile_mapping(v, 1)
    engine, result, x_back = run(g, small_device, x, out, Execute(cs))
    np.testing.assert_allclose(result, [weighted(X[0:4])])
    np.testing.assert_allclose(x_back, np.concatenate([2 * X[0:4], X[4:]]))
    memory = engine.get_report().memory
    assert memory.by_category["exchange_buffers"][1] == 16 + 16
    assert memory.exchange_buffers_shared == 0


def test_summary_says_what_sharing_saved(small_device):
    g, x, out, cs = build(small_device, [lambda x: x] * 3, [1] * 3)
    engine, _, _ = run(g, small_device, x, out, Execute(cs))
    summary = engine.get_report().summary()
    assert "    Exchange buffers:                                    32 B\n" in summary
    assert "      Saved by sharing received data:                    64 B\n" in summary


def test_exchange_across_ipus_is_global(tmp_path):
    """A vertex on IPU 1 reading x on IPU 0: its input crosses the IPU-Links."""
    model = popsim.IPUModel("ipu2")
    model.num_ipus, model.tiles_per_ipu = 2, 4
    device = model.create_device()
    g, x, out, cs = build(device, [lambda x: x, lambda x: x], [5, 5])
    engine, result, _ = run(g, device, x, out, Execute(cs))
    np.testing.assert_allclose(result, [weighted(X)] * 2)
    step = exchange_step(engine)
    t = device.target
    # two readers of 32 bytes each: the tile port (16) beats the link (2)
    phase = math.ceil(64 / 4) + t.ipu_link_latency_cycles
    assert step.tile_exchange[0] == step.tile_exchange[5] == phase
    assert step.categories["global_exchange"] == pytest.approx(2 * phase / t.num_tiles)
    assert step.categories["ipu_exchange"] == 0


def brute_force_regions(tile, start, length):
    """Union of overlapping intervals per tile, by repeated merging (the reference)."""
    groups = [{k} for k in range(len(start))]
    merged = True
    while merged:
        merged = False
        for i in range(len(groups)):
            for j in range(i + 1, len(groups)):
                if any(tile[a] == tile[b] and start[a] < start[b] + length[b] and start[b] < start[a] + length[a]
                       for a in groups[i] for b in groups[j]):
                    groups[i] |= groups.pop(j)
                    merged = True
                    break
            if merged:
                break
    return {frozenset(gr) for gr in groups}


@pytest.mark.parametrize("seed", range(20))
def test_merge_overlapping_runs_matches_brute_force(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 30))
    tile = rng.integers(0, 3, n)
    start = rng.integers(0, 40, n)
    length = rng.integers(1, 8, n)
    region, r_tile, r_start, r_length, member = merge_overlapping_runs(tile, start, length)
    groups = {}
    for k, r in enumerate(region.tolist()):
        groups.setdefault(r, set()).add(k)
    assert {frozenset(g) for g in groups.values()} == brute_force_regions(tile, start, length)
    for r, members in groups.items():
        m = sorted(members)
        assert r_tile[r] == tile[m[0]] and member[r] in members
        assert r_start[r] == start[m].min() and r_start[r] + r_length[r] == (start[m] + length[m]).max()


def test_a_run_spread_over_two_ipus_is_split_between_the_exchanges():
    """x[0:4] on tile 0 (IPU 0), x[4:8] on tile 4 (IPU 1); the reader on tile 5 (IPU 1)
    writes its result to tile 1 (IPU 0): 16 bytes come on chip, 16 over the links, and
    the 4-byte result goes back over the links after the compute phase."""
    model = popsim.IPUModel("ipu2")
    model.num_ipus, model.tiles_per_ipu = 2, 4
    device = model.create_device()
    g = popsim.Graph(device)
    g.add_codelets([WeightedSum])
    x = g.add_variable(FLOAT, [8], "x")
    g.set_tile_mapping(x[:4], 0)
    g.set_tile_mapping(x[4:], 4)
    out = g.add_variable(FLOAT, [1], "out")
    g.set_tile_mapping(out, 1)
    cs = g.add_compute_set("split")
    g.set_tile_mapping(g.add_vertex(cs, "WeightedSum", {"a": x, "out": out[0]}), 5)
    engine, result, _ = run(g, device, x, out, Execute(cs))
    np.testing.assert_allclose(result, [weighted(X)])
    step = exchange_step(engine)
    latency = device.target.ipu_link_latency_cycles
    onchip_in = math.ceil(16 / 4) + cm.EXCHANGE_OVERHEAD_CYCLES
    global_in, global_out = math.ceil(16 / 4) + latency, math.ceil(4 / 4) + latency
    assert step.tile_exchange == [global_in, global_out, 0, 0, onchip_in, onchip_in + global_in + global_out, 0, 0]
    assert step.categories["global_exchange"] == pytest.approx((2 * global_in + 2 * global_out) / 8)
    assert step.categories["ipu_exchange"] == pytest.approx(2 * onchip_in / 8)


def test_saved_bytes_survive_serialize(small_device, tmp_path):
    g, x, out, cs = build(small_device, [lambda x: x] * 2, [1] * 2)
    g.create_host_write("x", x)
    path = tmp_path / "exe.popsimexe"
    popsim.compile_graph(g, Execute(cs)).serialize(path)
    engine = popsim.Engine(popsim.Executable.deserialize(path))
    engine.load(small_device)
    engine.write_tensor("x", X)
    engine.run()
    assert engine.get_report().memory.exchange_buffers_shared == 32


def test_a_view_partly_on_its_tile_is_exchanged_whole(small_device):
    """x[::2] with x[0:4] on the reader's tile 1 and x[4:8] on tile 0: x[0], x[2] travel
    as self-sends beside x[4], x[6] (docs/cost_model.md), no on-tile rearrangement."""
    g = popsim.Graph(small_device)
    g.add_codelets([WeightedSum])
    x = g.add_variable(FLOAT, [8], "x")
    g.set_tile_mapping(x[:4], 1)
    g.set_tile_mapping(x[4:], 0)
    out = g.add_variable(FLOAT, [1], "out")
    g.set_tile_mapping(out, 1)
    cs = g.add_compute_set("half_here")
    g.set_tile_mapping(g.add_vertex(cs, "WeightedSum", {"a": x[::2], "out": out[0]}), 1)
    engine, result, _ = run(g, small_device, x, out, Execute(cs))
    np.testing.assert_allclose(result, [weighted(X[::2])])
    step = exchange_step(engine)
    assert step.tile_exchange[:2] == [math.ceil(8 / 4) + cm.EXCHANGE_OVERHEAD_CYCLES,    # tile 0 sends 8
                                      math.ceil(16 / 4) + cm.EXCHANGE_OVERHEAD_CYCLES]   # tile 1 receives 16


@pytest.mark.parametrize("seed", range(20))
def test_bytes_per_interval_and_by_tile_match_counting_each_element(seed):
    from popsim.lower.exchange import bytes_by_tile, bytes_per_interval
    from popsim.runs import MappingIndex
    rng = np.random.default_rng(seed)
    cuts = np.unique(rng.integers(0, 200, 12))
    mapped = rng.random(cuts.size - 1) < 0.8  # some gaps: elements no interval holds
    index = MappingIndex(cuts[:-1][mapped], cuts[1:][mapped], rng.integers(0, 4, cuts.size - 1)[mapped])
    count = int(rng.integers(0, 30))
    starts = rng.integers(0, 200, count)
    lengths = rng.integers(0, 40, count)
    itemsize = rng.choice([2, 4, 8], count)
    want = np.zeros(index.begins.size, np.int64)
    for s, n, w in zip(starts, lengths, itemsize):
        for x in range(s, s + n):
            k = np.flatnonzero((index.begins <= x) & (x < index.ends))
            want[k] += w
    assert np.array_equal(bytes_per_interval(starts, lengths, itemsize, index), want)
    by_tile = np.bincount(index.tiles, weights=want, minlength=4)
    assert np.array_equal(bytes_by_tile(starts, lengths, itemsize, index, 4), by_tile)


def test_a_tile_holds_the_largest_of_its_compute_sets_buffers_not_their_sum(small_device):
    # Buffers live only while their compute set runs, so compute sets one after another
    # reuse a tile's buffer memory (Poplar's liveness does the same with its temporaries).
    g, x, out, first = build(small_device, [lambda x: x], [1])
    second = g.add_compute_set("later")
    out2 = g.add_variable(FLOAT, [2], "out2")
    for k, (view, tile) in enumerate([(x.slice(0, 4), 1), (x, 2)]):
        v = g.add_vertex(second, "WeightedSum", {"a": view, "out": out2[k]})
        g.set_tile_mapping(v, tile)
        g.set_tile_mapping(out2[k], tile)
    g.create_host_read("out2", out2)
    engine, result, _ = run(g, small_device, x, out, popsim.program.Sequence([Execute(first), Execute(second)]))
    np.testing.assert_allclose(result, [weighted(X)])
    np.testing.assert_allclose(engine.read_tensor("out2"), [weighted(X[:4]), weighted(X)])
    memory = engine.get_report().memory
    assert memory.by_category["exchange_buffers"] == [0, 32, 32, 0]  # tile 1: max(32, 16), not 48
    assert [live - memory.always_live for live in memory.liveness] == [32, 48]  # each step: its own buffers
