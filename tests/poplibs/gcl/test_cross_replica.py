"""GCL's cross-replica collectives (poplibs/gcl/cross_replica.py): every operator, type,
method and group against gcl_reference.py's folds, bit for bit; reduce-scatter's chunks
and padding; all-gather and all-to-all; in place, to a destination, lists; one replica
and groups of one; several IPUs per replica and the torus; the engine against the
reference executor (vertices interpreted)."""
import numpy as np
import pytest

import popsim
from popsim import BOOL, FLOAT, HALF, INT, UNSIGNED_INT, gcl
from popsim.gcl import CollectiveOperator as Op, CommGroup, CommGroupType
from popsim.gcl.collective_types import OPERATOR_TYPES
from popsim.program import Sequence

import gcl_reference as ref
from graph_helpers import runner, small_model

pytestmark = pytest.mark.compiler  # the ring vertices are compiled to C

TILES = 4
RING_METHODS = ("clockwise_ring", "anticlockwise_ring", "bidirectional_ring_pair", "meet_in_middle_ring")
_CHAIN = {"clockwise_ring": "cw", "anticlockwise_ring": "acw", "meet_in_middle_ring": "mim"}


def _device(replicas, ipus=1, topology="ladder", tiles=TILES):
    model = small_model(tiles, num_ipus=replicas * ipus)
    model.ipu_link_topology = topology
    device = model.create_device()
    return device, popsim.Graph(device, replication_factor=replicas)


def _spread(g, dtype, shape, name, run=3):
    """A variable in runs of ``run`` elements dealt round the replica's tiles (several
    regions per tile); and each tile's flat elements."""
    t = g.add_variable(dtype, shape, name)
    n, tiles = t.num_elements(), g.target.num_tiles
    flat, per_tile = t.flatten(), [[] for _ in range(tiles)]
    for k, b in enumerate(range(0, n, run)):
        g.set_tile_mapping(flat[b:min(b + run, n)], k % tiles)
        per_tile[k % tiles].extend(range(b, min(b + run, n)))
    return t, [e for e in per_tile if e]


def _data(dtype, shape, rng):
    """Values whose fold order shows in the result's bits."""
    if dtype == BOOL:
        return rng.random(shape) < 0.6
    if dtype in (INT, UNSIGNED_INT):
        return rng.integers(0 if dtype == UNSIGNED_INT else -5, 6, size=shape).astype(dtype.numpy)
    if dtype == HALF:
        return (rng.standard_normal(shape) * 2.0 ** rng.integers(-5, 3, size=shape)).astype(np.float16)
    return (rng.standard_normal(shape) * 10.0 ** rng.integers(-4, 5, size=shape)).astype(np.float32)


def _run(g, device, prog, writes, reads, kind="engine"):
    """{name: [R, ...] array} read after writing ``writes`` {name: (tensor, [R, ...])}."""
    for name, (t, _) in writes.items():
        g.create_host_write(name, t)
    for name, t in reads.items():
        g.create_host_read(name, t)
    e = runner(kind, g, device, [prog])
    R = g.replication_factor
    for name, (_, data) in writes.items():
        e.write_tensor(name, data if R > 1 else data[0])
    e.run(0)
    return {name: (e.read_tensor(name) if R > 1 else e.read_tensor(name)[None]) for name in reads}


def _all_reduce_reference(x, op, method, groups, per_tile, ipus=1):
    """x: [R, N] -> [R, N]."""
    out = np.empty_like(x)
    n = len(groups[0])
    piece = ref.pieces_of(per_tile, n, 2 if method == "bidirectional_ring_pair" else 1)
    for members in groups:
        ring = ref.ring(members, ipus) if method != "broadcast" else members
        for e in range(x.shape[1]):
            if op is Op.LOCAL:
                value = None
            elif method == "broadcast":
                value = ref.fold(x[:, e], op, members)
            else:
                r, p = piece[e]
                chain = ("cw", "acw")[r] if method == "bidirectional_ring_pair" else _CHAIN[method]
                value = ref.reduce_fragment(x[:, e], op, ring, p, chain)
            for r in members:
                out[r, e] = x[r, e] if value is None else ref.finish(value, op, n)
    return out


_CASES = [(op, t) for op in Op for t in OPERATOR_TYPES[op]]


@pytest.mark.parametrize("op, dtype", _CASES, ids=[f"{o.name}-{t.name}" for o, t in _CASES])
def test_all_reduce_every_operator_type_and_method(op, dtype):
    """Four replicas (the ring 0, 2, 3, 1), one all-reduce per method on data spread
    over the tiles in several regions each; every result bit-exact."""
    R, N = 4, 29
    device, g = _device(R)
    prog = Sequence()
    rng = np.random.default_rng(hash((op.name, dtype.name)) % 2 ** 32)
    writes, reads, expected = {}, {}, {}
    for k, method in enumerate(RING_METHODS + ("broadcast",)):
        t, per_tile = _spread(g, dtype, (N,), f"x{k}")
        x = _data(dtype, (R, N), rng)
        y = gcl.all_reduce_cross_replica(g, t, op, prog, options={"method": method})
        assert y.shape == t.shape and y.dtype == dtype
        writes[f"x{k}"], reads[f"y{k}"] = (t, x), y
        expected[f"y{k}"] = _all_reduce_reference(x, op, method, [list(range(R))], per_tile)
    got = _run(g, device, prog, writes, reads)
    for name, want in expected.items():
        np.testing.assert_array_equal(got[name], want, err_msg=name)
        if op is not Op.LOCAL:
            assert (got[name] == got[name][0]).all(), "every replica holds the same result"


def test_the_fold_order_shows_in_the_bits():
    """The float data used above tells the documented orders apart: the clockwise ring,
    the anticlockwise ring and a plain left-to-right sum disagree somewhere."""
    rng = np.random.default_rng(3)
    x = _data(FLOAT, (4, 200), rng)
    ring = ref.ring([0, 1, 2, 3])
    cw = np.array([ref.reduce_fragment(x[:, e], Op.ADD, ring, 0, "cw") for e in range(200)])
    acw = np.array([ref.reduce_fragment(x[:, e], Op.ADD, ring, 0, "acw") for e in range(200)])
    plain = ((x[0] + x[1]) + x[2]) + x[3]
    assert (cw != acw).any() and (cw != plain).any()


@pytest.mark.parametrize("kind, size", [("CONSECUTIVE", 2), ("ORTHOGONAL", 2), ("CONSECUTIVE", 4),
                                        ("ORTHOGONAL", 4), ("ALL", 0), ("CONSECUTIVE", 1)])
@pytest.mark.parametrize("method", ["clockwise_ring", "meet_in_middle_ring", "broadcast"])
def test_all_reduce_in_groups(kind, size, method):
    """Eight replicas in groups: each group reduces its own members only."""
    R, N = 8, 22
    device, g = _device(R, tiles=2)
    t, per_tile = _spread(g, FLOAT, (N,), "x")
    prog = Sequence()
    group = CommGroup(CommGroupType[kind], size)
    y = gcl.all_reduce_cross_replica(g, t, Op.ADD, prog, group=group, options={"method": method})
    x = _data(FLOAT, (R, N), np.random.default_rng(size))
    got = _run(g, device, prog, {"x": (t, x)}, {"y": y})["y"]
    groups = ref.groups(kind, size or R, R)
    if len(groups[0]) == 1:
        np.testing.assert_array_equal(got, x)
    else:
        np.testing.assert_array_equal(got, _all_reduce_reference(x, Op.ADD, method, groups, per_tile))


@pytest.mark.parametrize("method", RING_METHODS)
@pytest.mark.parametrize("op", [Op.ADD, Op.MEAN, Op.MAX, Op.LOCAL])
def test_reduce_scatter_chunks_and_padding(method, op):
    """Replica of rank r gets chunk r (ceil(N / n) elements) of the reduced data; the
    last chunk's padding reads 0 (MEAN and MAX of zeros too)."""
    R, N = 4, 30  # chunks of 8: the last holds 6 and 2 zeros
    device, g = _device(R)
    t, _ = _spread(g, FLOAT, (N,), "x")
    prog = Sequence()
    y = gcl.reduce_scatter_cross_replica(g, t, op, prog, options={"method": method})
    assert y.shape == (8,)
    x = _data(FLOAT, (R, N), np.random.default_rng(7))
    got = _run(g, device, prog, {"x": (t, x)}, {"y": y})["y"]
    for r in range(R):
        lo, hi = 8 * r, min(N, 8 * r + 8)
        chunk = x[r, lo:hi] if op is Op.LOCAL else ref.finish(_NP_REDUCE[op](x[:, lo:hi]), op, R)
        np.testing.assert_allclose(got[r, :hi - lo], chunk, rtol=1e-6, atol=1e-6 * np.abs(x).max())
        np.testing.assert_array_equal(got[r, hi - lo:], 0)


def test_reduce_scatter_reads_any_shape_flattened():
    """A [3, 10] tensor scatters as its 30 flattened elements (docs/gcl.md: chunk r of the flattened result)."""
    R = 4
    device, g = _device(R)
    t, _ = _spread(g, FLOAT, (3, 10), "x")
    prog = Sequence()
    y = gcl.reduce_scatter_cross_replica(g, t, Op.ADD, prog, options={"method": "clockwise_ring"})
    x = _data(FLOAT, (R, 3, 10), np.random.default_rng(12))
    got = _run(g, device, prog, {"x": (t, x)}, {"y": y})["y"]
    flat = x.reshape(R, 30).sum(0)
    for r in range(R):
        np.testing.assert_allclose(got[r, :min(8, 30 - 8 * r)], flat[8 * r:8 * r + 8], rtol=1e-5, atol=1e-3)


_NP_REDUCE = {Op.ADD: lambda v: v.sum(0), Op.MEAN: lambda v: v.sum(0), Op.MAX: lambda v: v.max(0)}


@pytest.mark.parametrize("method", RING_METHODS + ("broadcast",))
@pytest.mark.parametrize("dtype", [FLOAT, HALF, INT, BOOL])
def test_all_gather(method, dtype):
    """Row r of the result is replica r's data, on every replica, mapped like the data."""
    R = 4
    device, g = _device(R)
    t, _ = _spread(g, dtype, (3, 5), "x")
    prog = Sequence()
    y = gcl.all_gather_cross_replica(g, t, prog, options={"method": method})
    assert y.shape == (R, 3, 5)
    assert g.get_tile_mapping(y[2]) == g.get_tile_mapping(t)
    x = _data(dtype, (R, 3, 5), np.random.default_rng(1))
    got = _run(g, device, prog, {"x": (t, x)}, {"y": y})["y"]
    for r in range(R):
        np.testing.assert_array_equal(got[r], x)


def test_all_to_all():
    """Row j of the result on replica r is row r of replica j's data."""
    R = 4
    device, g = _device(R)
    t, _ = _spread(g, INT, (R, 6), "x")
    prog = Sequence()
    y = gcl.all_to_all_cross_replica(g, t, prog)
    x = _data(INT, (R, R, 6), np.random.default_rng(2))
    got = _run(g, device, prog, {"x": (t, x)}, {"y": y})["y"]
    np.testing.assert_array_equal(got, x.transpose(1, 0, 2))


def test_in_place_to_destination_and_lists_agree():
    """The in-place, to-destination and list forms give the plain all-reduce's bits."""
    R, N = 4, 21
    device, g = _device(R)
    tensors = [_spread(g, FLOAT, (N,), f"x{k}")[0] for k in range(3)]
    dst = g.clone(tensors[1], "dst")
    prog = Sequence()
    plain = gcl.all_reduce_cross_replica(g, tensors[0], Op.ADD, prog)
    gcl.all_reduce_to_destination_cross_replica(g, tensors[1], dst, Op.ADD, prog)
    gcl.all_reduce_in_place_cross_replica(g, tensors[2], Op.ADD, prog)
    a, b = [_spread(g, FLOAT, (2, 3), f"l{k}")[0] for k in range(2)]
    la, lb = gcl.all_reduce_cross_replica(g, [a, b], Op.MAX, prog)
    x = _data(FLOAT, (R, N), np.random.default_rng(4))
    la_x, lb_x = _data(FLOAT, (R, 2, 3), np.random.default_rng(5)), _data(FLOAT, (R, 2, 3), np.random.default_rng(6))
    writes = {f"x{k}": (t, x) for k, t in enumerate(tensors)}
    writes.update(a=(a, la_x), b=(b, lb_x))
    got = _run(g, device, prog, writes, {"plain": plain, "dst": dst, "inplace": tensors[2], "la": la, "lb": lb})
    np.testing.assert_array_equal(got["dst"], got["plain"])
    np.testing.assert_array_equal(got["inplace"], got["plain"])
    np.testing.assert_array_equal(got["la"], np.broadcast_to(la_x.max(0), la_x.shape))
    np.testing.assert_array_equal(got["lb"], np.broadcast_to(lb_x.max(0), lb_x.shape))


def test_one_replica_is_the_identity():
    """R = 1 (as GCL): all-reduce copies (MEAN too), SQUARE_ADD squares, reduce-scatter
    returns the data, all-gather adds a leading 1."""
    device, g = _device(1)
    t, _ = _spread(g, FLOAT, (10,), "x")
    prog = Sequence()
    y = gcl.all_reduce_cross_replica(g, t, Op.MEAN, prog)
    sq = gcl.all_reduce_cross_replica(g, t, Op.SQUARE_ADD, prog)
    rs = gcl.reduce_scatter_cross_replica(g, t, Op.ADD, prog)
    ag = gcl.all_gather_cross_replica(g, t, prog)
    x = _data(FLOAT, (1, 10), np.random.default_rng(8))
    got = _run(g, device, prog, {"x": (t, x)}, {"y": y, "sq": sq, "rs": rs, "ag": ag})
    np.testing.assert_array_equal(got["y"], x)
    np.testing.assert_array_equal(got["sq"], x * x)
    np.testing.assert_array_equal(got["rs"], x)
    np.testing.assert_array_equal(got["ag"][0], x)


@pytest.mark.parametrize("topology", ["ladder", "torus"])
@pytest.mark.parametrize("method", RING_METHODS)
def test_two_ipus_per_replica(topology, method):
    """Four replicas of two IPUs (the data on both): the ring is the replicas in order."""
    R = 4
    device, g = _device(R, ipus=2, topology=topology, tiles=2)
    t, per_tile = _spread(g, FLOAT, (26,), "x")
    prog = Sequence()
    y = gcl.all_reduce_cross_replica(g, t, Op.ADD, prog, options={"method": method})
    x = _data(FLOAT, (R, 26), np.random.default_rng(9))
    got = _run(g, device, prog, {"x": (t, x)}, {"y": y})["y"]
    np.testing.assert_array_equal(got, _all_reduce_reference(x, Op.ADD, method, [list(range(R))], per_tile, ipus=2))


def test_engine_and_reference_executor_agree():
    """The compiled vertices and the reference executor's interpreted ones give the same
    bits for an all-reduce, a reduce-scatter and an all-gather."""
    results = []
    for kind in ("engine", "reference"):
        R = 4
        device, g = _device(R)
        t, _ = _spread(g, HALF, (19,), "x")
        prog = Sequence()
        y = gcl.all_reduce_cross_replica(g, t, Op.MEAN, prog, options={"method": "meet_in_middle_ring"})
        rs = gcl.reduce_scatter_cross_replica(g, t, Op.ADD, prog, options={"method": "bidirectional_ring_pair"})
        ag = gcl.all_gather_cross_replica(g, rs, prog)
        x = _data(HALF, (R, 19), np.random.default_rng(10))
        results.append(_run(g, device, prog, {"x": (t, x)}, {"y": y, "rs": rs, "ag": ag}, kind=kind))
    for name in results[0]:
        np.testing.assert_array_equal(results[0][name], results[1][name], err_msg=name)


def test_results_and_cycles_do_not_depend_on_threads():
    """One thread or three: the same bits and the same modelled cycles."""
    outcomes = []
    for threads in (1, 3):
        R = 4
        device, g = _device(R)
        t, _ = _spread(g, FLOAT, (40,), "x")
        prog = Sequence()
        y = gcl.all_reduce_cross_replica(g, t, Op.ADD, prog, options={"method": "bidirectional_ring_pair"})
        g.create_host_write("x", t)
        g.create_host_read("y", y)
        e = popsim.Engine(g, [prog], {"popsim.numThreads": threads})
        e.load(device)
        e.write_tensor("x", _data(FLOAT, (R, 40), np.random.default_rng(11)))
        e.run(0)
        outcomes.append((e.read_tensor("y"), e.get_report().execution.total_cycles))
    np.testing.assert_array_equal(outcomes[0][0], outcomes[1][0])
    assert outcomes[0][1] == outcomes[1][1]
