"""GCL's within-replica collectives (poplibs/gcl/within_replica.py): all-reduce,
reduce-scatter and all-gather across the IPUs of one replica, on 1, 2 and 4 IPUs and on a
replicated graph, against a numpy reference that folds each chunk in the documented ring
order (chunk j: from IPU j+1 round to IPU j), bit for bit; the chunks and their padding;
the argument errors; and the ring's cost: 2(k-1) Copy steps over the IPU-Links."""
import numpy as np
import pytest

import popsim
from popsim import BOOL, FLOAT, HALF, INT
from popsim.errors import InvalidOptionError, PopsimError
from popsim.gcl.collective_types import OPERATOR_TYPES, CollectiveOperator as Op
from popsim.gcl.within_replica import (Chunk, Chunks, all_gather_within_replica, all_reduce_within_replica,
                                       reduce_scatter_within_replica)
from popsim.program import Sequence

from graph_helpers import replicated, small_model

pytestmark = pytest.mark.compiler  # popops' element-wise vertices are compiled C++ codelets

TILES = 4  # tiles per IPU
SHAPE = (3, 5)  # one shard: 15 elements, so chunks of 4 (k = 4: the last one holds 3 and a pad) or 8 (k = 2)


def _graph(k, replicas=1):
    """(device, graph): ``replicas`` replicas of ``k`` IPUs of TILES tiles."""
    if replicas > 1:
        return replicated(replicas, ipus_per_replica=k, tiles=TILES)
    device = small_model(TILES, num_ipus=k).create_device()
    return device, popsim.Graph(device)


def _shards(g, dtype, k, shape=SHAPE, name="t"):
    """A [k, *shape] variable, shard i spread over IPU i's tiles in runs of 2 elements
    (several regions per tile, chunks across tiles)."""
    t = g.add_variable(dtype, (k,) + tuple(shape), name)
    n = int(np.prod(shape))
    for i in range(k):
        mapping = [[] for _ in range(k * TILES)]
        for b in range(0, n, 2):
            mapping[i * TILES + (b // 2) % TILES].append((b, min(b + 2, n)))
        g.set_tile_mapping(t[i], mapping)
    return t


def _data(dtype, shape, rng):
    """Values where the order of a fold shows (floats over many magnitudes), kept small
    enough that no sum or product of 4 overflows."""
    if dtype == BOOL:
        return rng.random(shape) < 0.6
    if dtype == INT:
        return rng.integers(-20, 20, size=shape).astype(np.int32)
    if dtype == HALF:
        return (rng.standard_normal(shape) * 2.0 ** rng.integers(-6, 3, size=shape)).astype(np.float16)
    return (rng.standard_normal(shape) * 10.0 ** rng.integers(-4, 5, size=shape)).astype(np.float32)


_NP = {Op.ADD: np.add, Op.MEAN: np.add, Op.SQUARE_ADD: np.add, Op.MUL: np.multiply, Op.MIN: np.minimum,
       Op.MAX: np.maximum, Op.LOGICAL_AND: np.logical_and, Op.LOGICAL_OR: np.logical_or}


def fold(x, op):
    """The reference: ``x`` [k, ...] reduced over its first axis, each chunk j of the
    flattened shard folded from IPU j+1 round the ring to IPU j, in ``x``'s type:
    acc = x[j+1]; acc = x[j+2] op acc; ...; x[j] op acc. Then MEAN divides by k."""
    k = x.shape[0]
    flat = x.reshape(k, -1)
    if op is Op.SQUARE_ADD:
        flat = flat * flat
    if op is Op.LOCAL:
        return x.copy()
    n = flat.shape[1]
    c = -(-n // k)
    out = np.empty(n, x.dtype)
    for j in range(k):
        cols = slice(j * c, min((j + 1) * c, n))
        acc = flat[(j + 1) % k, cols]
        for m in range(2, k + 1):
            acc = _NP[op](flat[(j + m) % k, cols], acc).astype(x.dtype)
        out[cols] = acc
    if op is Op.MEAN:
        out = (out / np.array(k, x.dtype)).astype(x.dtype)
    return np.broadcast_to(out.reshape(x.shape[1:]), x.shape).copy()


def _run(device, g, prog, writes, reads):
    """Run ``prog`` after writing ``writes`` {tensor: array}: (engine, [read arrays])."""
    for i, t in enumerate(writes):
        g.create_host_write(f"w{i}", t)
    for i, t in enumerate(reads):
        g.create_host_read(f"r{i}", t)
    engine = popsim.Engine(g, prog)
    engine.load(device)
    for i, values in enumerate(writes.values()):
        engine.write_tensor(f"w{i}", values)
    engine.run()
    return engine, [engine.read_tensor(f"r{i}") for i in range(len(reads))]


def _bits(a):
    return a.view(np.uint8) if a.dtype != np.bool_ else a


# -- all-reduce: every operator, every type, 2 and 4 IPUs ------------------------------------------

@pytest.mark.parametrize("k", [2, 4])
@pytest.mark.parametrize("dtype", [FLOAT, HALF, INT, BOOL], ids=lambda d: d.name)
def test_all_reduce_every_operator_folds_in_ring_order(k, dtype):
    """Every operator the type takes, in one program: each result bit for bit the
    reference's fold, on every IPU."""
    ops = [op for op in Op if dtype in OPERATOR_TYPES[op]]
    device, g = _graph(k)
    t = _shards(g, dtype, k)
    prog = Sequence()
    outs = [all_reduce_within_replica(g, t, op, prog) for op in ops]
    x = _data(dtype, t.shape, np.random.default_rng(k))
    _, results = _run(device, g, prog, {t: x}, outs)
    for op, out, got in zip(ops, outs, results):
        assert got.shape == tuple(t.shape) and got.dtype == x.dtype
        assert np.array_equal(_bits(got), _bits(fold(x, op))), f"{op.name} on {dtype.name}"


def test_the_fold_order_is_visible_in_float_sums():
    """The data of the FLOAT tests tell orders apart: numpy's own sum over the IPUs
    differs from the ring fold somewhere, and the device agrees with the ring fold."""
    k = 4
    x = _data(FLOAT, (k,) + SHAPE, np.random.default_rng(k))
    assert not np.array_equal(fold(x, Op.ADD)[0], x.sum(axis=0, dtype=np.float32))
    backwards = fold(x[::-1].copy(), Op.ADD)[0]  # the ring run the other way
    assert not np.array_equal(fold(x, Op.ADD)[0], backwards)


@pytest.mark.parametrize("k", [2, 4])
def test_all_reduce_result_is_mapped_like_its_input(k):
    device, g = _graph(k)
    t = _shards(g, FLOAT, k)
    out = all_reduce_within_replica(g, t, "add", Sequence(), name="ar")
    assert tuple(out.shape) == tuple(t.shape)
    for i in range(k):
        assert g.get_tile_mapping(out[i]) == g.get_tile_mapping(t[i])


def test_all_reduce_on_a_replicated_graph_acts_inside_each_replica():
    """2 replicas of 2 IPUs, each replica with its own data: each reduces its own."""
    R, k = 2, 2
    device, g = _graph(k, replicas=R)
    assert g.target.num_ipus == k
    t = _shards(g, FLOAT, k)
    prog = Sequence()
    total = all_reduce_within_replica(g, t, Op.ADD, prog)
    largest = all_reduce_within_replica(g, t, Op.MAX, prog)
    x = _data(FLOAT, (R,) + tuple(t.shape), np.random.default_rng(7))
    _, (s, m) = _run(device, g, prog, {t: x}, [total, largest])
    assert s.shape == (R, k) + SHAPE
    for r in range(R):
        assert np.array_equal(s[r], fold(x[r], Op.ADD))
        assert np.array_equal(m[r], fold(x[r], Op.MAX))
    assert not np.array_equal(s[0], s[1])


def test_all_reduce_local_keeps_each_shard():
    device, g = _graph(2)
    t = _shards(g, INT, 2)
    prog = Sequence()
    out = all_reduce_within_replica(g, t, Op.LOCAL, prog)
    x = _data(INT, t.shape, np.random.default_rng(3))
    _, (got,) = _run(device, g, prog, {t: x}, [out])
    assert np.array_equal(got, x)


# -- reduce-scatter and all-gather -----------------------------------------------------------------

@pytest.mark.parametrize("op", [Op.ADD, Op.MUL, Op.MIN, Op.SQUARE_ADD, Op.MEAN, Op.LOCAL], ids=lambda o: o.name)
def test_reduce_scatter_chunks_and_their_padding(op):
    """4 IPUs, shards of 15: chunks of ceil(15 / 4) = 4 elements, chunk i on IPU i with
    index i and offset 4i; chunk 3 holds elements 12..14 and one padding zero."""
    k = 4
    device, g = _graph(k)
    t = _shards(g, FLOAT, k)
    prog = Sequence()
    chunks = reduce_scatter_within_replica(g, t, op, prog)
    assert isinstance(chunks, Chunks) and chunks.original_input is t
    assert [(c.index, c.offset, tuple(c.tensor.shape)) for c in chunks.chunks] == [(i, 4 * i, (4,)) for i in range(k)]
    for i, c in enumerate(chunks.chunks):
        tiles = {tile for tile, iv in enumerate(g.get_tile_mapping(c.tensor)) if iv}
        assert tiles and all(i * TILES <= tile < (i + 1) * TILES for tile in tiles)
    x = _data(FLOAT, t.shape, np.random.default_rng(11))
    _, got = _run(device, g, prog, {t: x}, [c.tensor for c in chunks.chunks])
    if op is Op.LOCAL:  # IPU i keeps chunk i of its own shard
        expected = np.stack([np.concatenate([x[i].reshape(-1), [0]])[4 * i:4 * i + 4] for i in range(k)])
    else:
        expected = np.concatenate([fold(x, op)[0].reshape(-1), [0]]).astype(np.float32).reshape(4, 4)
    assert np.array_equal(np.stack(got), expected)
    assert got[3][3] == 0  # the padding


def test_reduce_scatter_with_more_ipus_than_elements_pads_whole_chunks():
    """3 elements on 4 IPUs: chunks of 1, the last one all padding (zero)."""
    k = 4
    device, g = _graph(k)
    t = _shards(g, INT, k, shape=(3,))
    prog = Sequence()
    chunks = reduce_scatter_within_replica(g, t, Op.MAX, prog)
    back = all_gather_within_replica(g, chunks, prog)
    x = _data(INT, t.shape, np.random.default_rng(5))
    _, got = _run(device, g, prog, {t: x}, [c.tensor for c in chunks.chunks] + [back])
    assert [int(v[0]) for v in got[:4]] == list(x.max(axis=0)) + [0]
    assert np.array_equal(got[4], fold(x, Op.MAX))


@pytest.mark.parametrize("k", [2, 4])
@pytest.mark.parametrize("dtype", [FLOAT, HALF, BOOL], ids=lambda d: d.name)
def test_reduce_scatter_then_all_gather_is_the_all_reduce(k, dtype):
    """The round trip gives every IPU the whole reduced shard, without the padding,
    shaped and mapped like the input, bit for bit the all-reduce's."""
    op = Op.LOGICAL_OR if dtype == BOOL else Op.ADD
    device, g = _graph(k)
    t = _shards(g, dtype, k)
    prog = Sequence()
    gathered = all_gather_within_replica(g, reduce_scatter_within_replica(g, t, op, prog), prog, name="ag")
    reduced = all_reduce_within_replica(g, t, op, prog)
    assert tuple(gathered.shape) == tuple(t.shape)
    for i in range(k):
        assert g.get_tile_mapping(gathered[i]) == g.get_tile_mapping(t[i])
    x = _data(dtype, t.shape, np.random.default_rng(13))
    _, (a, b) = _run(device, g, prog, {t: x}, [gathered, reduced])
    assert np.array_equal(_bits(a), _bits(fold(x, op))) and np.array_equal(_bits(a), _bits(b))


def test_all_gather_of_local_chunks_assembles_each_ipus_own_chunk():
    """LOCAL scatters each IPU's own chunk; gathering them gives every IPU chunk j of
    shard j, in order: the data movement alone."""
    k = 4
    device, g = _graph(k)
    t = _shards(g, FLOAT, k)
    prog = Sequence()
    out = all_gather_within_replica(g, reduce_scatter_within_replica(g, t, Op.LOCAL, prog), prog)
    x = _data(FLOAT, t.shape, np.random.default_rng(17))
    _, (got,) = _run(device, g, prog, {t: x}, [out])
    flat = x.reshape(k, -1)
    expected = np.concatenate([flat[j, 4 * j:4 * j + 4] for j in range(k)]).reshape(SHAPE)
    assert np.array_equal(got, np.broadcast_to(expected, got.shape))


# -- one IPU -------------------------------------------------------------------------------------

def test_one_ipu_copies():
    device, g = _graph(1)
    t = _shards(g, FLOAT, 1)
    prog = Sequence()
    ops = [Op.ADD, Op.MEAN, Op.SQUARE_ADD, Op.MIN]
    outs = [all_reduce_within_replica(g, t, op, prog) for op in ops]
    chunks = reduce_scatter_within_replica(g, t, Op.SQUARE_ADD, prog)
    assert [(c.index, c.offset, tuple(c.tensor.shape)) for c in chunks.chunks] == [(0, 0, (15,))]
    back = all_gather_within_replica(g, chunks, prog)
    x = _data(FLOAT, t.shape, np.random.default_rng(19))
    _, got = _run(device, g, prog, {t: x}, outs + [chunks.chunks[0].tensor, back])
    for op, out in zip(ops, got):
        assert np.array_equal(out, x * x if op is Op.SQUARE_ADD else x), op.name
    assert np.array_equal(got[4], (x * x).reshape(-1)) and np.array_equal(got[5], x * x)


# -- errors --------------------------------------------------------------------------------------

@pytest.fixture
def two():
    """(graph, t): a graph of 2 IPUs and a FLOAT tensor of 2 shards, each on its IPU."""
    _, g = _graph(2)
    return g, _shards(g, FLOAT, 2)


def test_the_leading_dimension_must_be_the_ipu_count(two):
    g, _ = two
    t = _shards(g, FLOAT, 2, shape=(3, 5), name="u")
    with pytest.raises(PopsimError, match=r"tensor 'u' \(FLOAT, shape \(3, 5\)\) must have a leading dimension "
                                          r"of 2 .*found shape \(3, 5\)"):
        all_reduce_within_replica(g, t[0], Op.ADD, Sequence())


def test_a_shard_must_be_on_its_ipu(two):
    g, _ = two
    t = g.add_variable(FLOAT, (2, 4), "swapped")
    g.set_tile_mapping(t[0], 0)
    g.set_tile_mapping(t[1], 2)  # IPU 0's tile
    with pytest.raises(PopsimError, match=r"shard 1 of tensor 'swapped' .* must be mapped on IPU 1 \(tiles 4..7\), "
                                          r"found elements \[0, 4\) on tile 2 \(IPU 0\)"):
        reduce_scatter_within_replica(g, t, Op.ADD, Sequence())
    u = g.add_variable(FLOAT, (2, 4), "partial")
    g.set_tile_mapping(u[0], 0)
    g.set_tile_mapping(u[1, :2], 5)
    with pytest.raises(PopsimError, match=r"shard 1 of tensor 'partial' .*found 2 of its 4 elements unmapped"):
        all_reduce_within_replica(g, u, Op.ADD, Sequence())


@pytest.mark.parametrize("dtype, op, message", [
    (INT, Op.MEAN, "MEAN does not take INT tensors"),
    (FLOAT, Op.LOGICAL_AND, "LOGICAL_AND does not take FLOAT tensors; it takes BOOL"),
    (BOOL, Op.ADD, "ADD does not take BOOL tensors"),
    (FLOAT, "SUM", "the operator must be a gcl.CollectiveOperator"),
])
def test_unsupported_types_and_operators(two, dtype, op, message):
    g, _ = two
    t = _shards(g, dtype, 2, name="v")
    with pytest.raises(PopsimError, match=message):
        all_reduce_within_replica(g, t, op, Sequence())
    with pytest.raises(PopsimError, match="tensor 'v'"):
        reduce_scatter_within_replica(g, t, op, Sequence())


def test_all_gather_takes_only_a_reduce_scatters_chunks(two):
    g, t = two
    chunks = reduce_scatter_within_replica(g, t, Op.ADD, Sequence())
    with pytest.raises(PopsimError, match="expected the gcl Chunks that reduce_scatter_within_replica returns, "
                                          "found Tensor"):
        all_gather_within_replica(g, t, Sequence())
    with pytest.raises(PopsimError, match=r"must hold 2 chunks \(one per IPU\), found 1 chunks"):
        all_gather_within_replica(g, Chunks(t, chunks.chunks[:1]), Sequence())
    swapped = Chunks(t, chunks.chunks[::-1])
    with pytest.raises(PopsimError, match="chunk 0 .* must have index 0 and offset 0, found index 1 and offset 8"):
        all_gather_within_replica(g, swapped, Sequence())
    moved = Chunks(t, [chunks.chunks[0], Chunk(chunks.chunks[0].tensor, 1, 8)])
    with pytest.raises(PopsimError, match=r"chunk 1 .* must be mapped on IPU 1 \(tiles 4..7\)"):
        all_gather_within_replica(g, moved, Sequence())
    short = Chunks(t, [chunks.chunks[0], Chunk(chunks.chunks[1].tensor.slice(0, 4), 1, 8)])
    with pytest.raises(PopsimError, match=r"chunk 1 .* must be FLOAT with ceil\(15 / 2\) = 8 elements, found"):
        all_gather_within_replica(g, short, Sequence())


def test_bad_options_and_programs(two):
    g, t = two
    with pytest.raises(InvalidOptionError, match="unknown GCL option 'methd'"):
        all_reduce_within_replica(g, t, Op.ADD, Sequence(), options={"methd": "auto"})
    with pytest.raises(InvalidOptionError, match="method must be auto or clockwise_ring"):
        all_reduce_within_replica(g, t, Op.ADD, Sequence(), options={"method": "broadcast"})
    all_reduce_within_replica(g, t, Op.ADD, Sequence(), options={"method": "clockwise_ring"})
    with pytest.raises(PopsimError, match="prog must be a popsim.Sequence"):
        all_reduce_within_replica(g, t, Op.ADD, None)


# -- the cost: a ring of 2(k-1) steps over the IPU-Links ----------------------------------------

def _link_copies(engine):
    """The report's Copy steps whose data cross the IPU-Links."""
    return [s for s in engine.get_report().execution.steps
            if s.kind == "Copy" and s.categories.get("global_exchange", 0) > 0]


@pytest.mark.parametrize("k", [2, 4])
def test_the_ring_costs_2k_minus_2_link_copies(k):
    """All-reduce: k-1 reduce-scatter and k-1 all-gather steps, each one Copy with
    every IPU sending (all IPUs charged), and k-1 compute sets that stay on their tiles
    (no exchange): the chunks are reduced where they land."""
    device, g = _graph(k)
    t = _shards(g, FLOAT, k)
    prog = Sequence()
    all_reduce_within_replica(g, t, Op.ADD, prog)
    engine, _ = _run(device, g, prog, {t: np.ones(t.shape, np.float32)}, [])
    links = _link_copies(engine)
    assert len(links) == 2 * (k - 1)
    assert all(len(s.ipu_cycles) == k and min(s.ipu_cycles) > 0 for s in links)
    steps = engine.get_report().execution.steps
    folds = [s for s in steps if s.kind == "Execute"]
    assert len(folds) == k - 1
    assert all(s.categories.get("global_exchange", 0) == 0 and s.categories.get("ipu_exchange", 0) == 0
               for s in folds)
    assert len(steps) == len(links) + len(folds)  # nothing else: no host work, no extra copies


def test_reduce_scatter_and_all_gather_each_cost_k_minus_1_link_copies():
    k = 4
    device, g = _graph(k)
    t = _shards(g, FLOAT, k)
    scatter, gather = Sequence(), Sequence()
    chunks = reduce_scatter_within_replica(g, t, Op.MAX, scatter)
    all_gather_within_replica(g, chunks, gather)
    for prog in (scatter, gather):
        engine, _ = _run(device, g, prog, {}, [])
        assert len(_link_copies(engine)) == k - 1
