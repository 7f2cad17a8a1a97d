"""popops reductions on the engine against numpy: every Operation over random dims
(hypothesis), FLOAT/HALF/INT/BOOL, inputs spread over many tiles in small pieces so that
there are several stages, update and scale, reduce_many, all dims and no dims, errors."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import popsim
from popsim import BOOL, FLOAT, HALF, INT, popops
from popsim.popops import Operation, ReduceParams, SingleReduceOp
from popsim.poputil import PoplibsError
from popsim.program import Sequence

from popops_harness import run

OPS = list(Operation)
TYPES = {Operation.LOGICAL_AND: [BOOL], Operation.LOGICAL_OR: [BOOL], Operation.LOG_ADD: [FLOAT, HALF]}


def reference(op, x, axes):
    axes = tuple(axes)
    if op is Operation.LOGICAL_AND:
        return np.logical_and.reduce(x, axis=axes) if axes else x
    if op is Operation.LOGICAL_OR:
        return np.logical_or.reduce(x, axis=axes) if axes else x
    wide = x.astype(np.float64) if x.dtype.kind == "f" else x.astype(np.int64)
    if op is Operation.SQUARE_ADD:
        wide = wide * wide
        op = Operation.ADD
    fn = {Operation.ADD: np.sum, Operation.MUL: np.prod, Operation.MIN: np.min, Operation.MAX: np.max,
          Operation.LOG_ADD: lambda a, axis: np.logaddexp.reduce(a, axis=axis)}[op]
    result = fn(wide, axis=axes) if axes else wide
    return np.asarray(result).astype(x.dtype) if x.dtype.kind in "iu" else np.asarray(result)


def data(op, dtype, shape, rng):
    if dtype == BOOL:
        p = 0.9 if op is Operation.LOGICAL_AND else 0.1
        return rng.random(shape) < p
    if dtype == INT:
        if op is Operation.MUL:
            return rng.choice([-1, 1, 2], shape).astype(np.int32)
        return rng.integers(-50, 50, shape).astype(np.int32)
    if op is Operation.MUL:
        return rng.uniform(0.8, 1.25, shape).astype(dtype.numpy)
    return (rng.integers(-16, 16, shape) / 8).astype(dtype.numpy)


def scattered(g, t, tiles):
    """Map ``t`` in small pieces dealt round the tiles (many partials per output)."""
    n = t.num_elements()
    pieces = [[] for _ in range(tiles)]
    for i, begin in enumerate(range(0, n, 3)):
        pieces[i % tiles].append((begin, min(n, begin + 3)))
    g.set_tile_mapping(t, pieces)


@pytest.fixture
def device16():
    model = popsim.IPUModel("ipu2")
    model.tiles_per_ipu = 16
    return model.create_device()


def check(op, dtype, got, expected):
    if dtype == HALF:
        np.testing.assert_allclose(got.astype(np.float64), expected, rtol=2e-3, atol=2e-2)
    elif dtype == FLOAT:
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    else:
        np.testing.assert_array_equal(got, expected)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(op=st.sampled_from(OPS), shape=st.lists(st.integers(1, 7), min_size=1, max_size=3), data_=st.data())
def test_every_operation_against_numpy(device16, op, shape, data_):
    dtype = data_.draw(st.sampled_from(TYPES.get(op, [FLOAT, HALF, INT])))
    dims = sorted(data_.draw(st.sets(st.integers(0, len(shape) - 1))))
    g = popsim.Graph(device16)
    t = g.add_variable(dtype, shape, "t")
    scattered(g, t, 16)
    prog = Sequence()
    out = popops.reduce(g, t, dims, ReduceParams(op), prog)
    x = data(op, dtype, shape, np.random.default_rng(len(shape) * 7 + len(dims)))
    _, (got,) = run(g, device16, prog, [out], {t: x})
    assert got.shape == tuple(n for d, n in enumerate(shape) if d not in dims)
    assert out.dtype == dtype
    check(op, dtype, got, reference(op, x, dims))


@pytest.mark.parametrize("dims", [[0], [1], [0, 1], [], [2], [0, 2]])
def test_large_float_sum_over_many_tiles(device16, dims):
    g = popsim.Graph(device16)
    t = g.add_variable(FLOAT, (40, 30, 6), "t")
    scattered(g, t, 16)
    prog = Sequence()
    out = popops.reduce(g, t, dims, ReduceParams(Operation.ADD), prog, "sum")
    x = data(Operation.ADD, FLOAT, (40, 30, 6), np.random.default_rng(1))
    _, (got,) = run(g, device16, prog, [out], {t: x})
    check(Operation.ADD, FLOAT, got, reference(Operation.ADD, x, dims))


def test_half_accumulates_in_float(device16):
    g = popsim.Graph(device16)
    t = g.add_variable(HALF, (2048,), "t")
    scattered(g, t, 16)
    prog = Sequence()
    out = popops.reduce(g, t, [0], ReduceParams(Operation.ADD), prog)
    as_float = popops.reduce(g, t, [0], ReduceParams(Operation.ADD), prog, out_type=FLOAT)
    x = np.full(2048, 1.0 + 2 ** -10, np.float16)  # a half accumulator would stall at 2048
    _, (got, got_float) = run(g, device16, prog, [out, as_float], {t: x})
    assert out.dtype == HALF and as_float.dtype == FLOAT
    assert got_float == pytest.approx(2048 * (1 + 2 ** -10))
    assert got == np.float16(2048 * (1 + 2 ** -10))


@pytest.mark.parametrize("op", [Operation.ADD, Operation.SQUARE_ADD, Operation.LOG_ADD])
@pytest.mark.parametrize("scale_kind", ["number", "tensor"])
def test_update_and_scale(device16, op, scale_kind):
    g = popsim.Graph(device16)
    t = g.add_variable(FLOAT, (12, 10), "t")
    scattered(g, t, 16)
    out = g.add_variable(FLOAT, (10,), "out")
    g.set_tile_mapping(out, [[(0, 10)]] + [[] for _ in range(15)])
    scale = 0.5
    if scale_kind == "tensor":
        scale = g.add_variable(FLOAT, (), "k")
        g.set_tile_mapping(scale, 3)
    prog = Sequence()
    popops.reduce_with_output(g, t, out, [0], ReduceParams(op, update=True, scale=scale), prog)
    x = data(op, FLOAT, (12, 10), np.random.default_rng(2))
    initial = np.linspace(-1, 1, 10).astype(np.float32)
    writes = {t: x, out: initial}
    if scale_kind == "tensor":
        writes[scale] = np.float32(0.5)
    _, (got,) = run(g, device16, prog, [out], writes)
    result = reference(op, x, [0])
    expected = np.logaddexp(initial, result + 0.5) if op is Operation.LOG_ADD else initial + 0.5 * result
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_with_output_balanced_and_at_destination(device16):
    """An output on one tile is reduced balanced and copied; spread out, at its tiles."""
    g = popsim.Graph(device16)
    t = g.add_variable(FLOAT, (64, 256), "t")
    scattered(g, t, 16)
    one_tile = g.add_variable(FLOAT, (256,), "one_tile")
    g.set_tile_mapping(one_tile, 5)
    spread = g.add_variable(FLOAT, (256,), "spread")
    g.set_tile_mapping(spread, g.linear_mapping(spread))
    prog = Sequence()
    popops.reduce_with_output(g, t, one_tile, [0], ReduceParams(Operation.MAX), prog)
    popops.reduce_with_output(g, t, spread, [0], ReduceParams(Operation.MIN), prog)
    x = data(Operation.MAX, FLOAT, (64, 256), np.random.default_rng(3))
    _, (a, b) = run(g, device16, prog, [one_tile, spread], {t: x})
    np.testing.assert_array_equal(a, x.max(axis=0))
    np.testing.assert_array_equal(b, x.min(axis=0))


def test_reduce_many_shares_compute_sets(device16):
    g = popsim.Graph(device16)
    a = g.add_variable(FLOAT, (30, 8), "a")
    b = g.add_variable(INT, (5, 6, 7), "b")
    scattered(g, a, 16)
    scattered(g, b, 16)
    prog = Sequence()
    outs = popops.reduce_many(g, [SingleReduceOp(a, [0], ReduceParams(Operation.ADD)),
                                  SingleReduceOp(b, [1, 2], ReduceParams(Operation.MAX))], prog)
    xa = data(Operation.ADD, FLOAT, (30, 8), np.random.default_rng(4))
    xb = data(Operation.MAX, INT, (5, 6, 7), np.random.default_rng(5))
    _, (ga, gb) = run(g, device16, prog, outs, {a: xa, b: xb})
    np.testing.assert_allclose(ga, xa.sum(axis=0), rtol=1e-5)
    np.testing.assert_array_equal(gb, xb.max(axis=(1, 2)))


def test_all_dims_gives_a_scalar_and_no_dims_a_copy(device16):
    g = popsim.Graph(device16)
    t = g.add_variable(INT, (6, 5), "t")
    scattered(g, t, 16)
    prog = Sequence()
    total = popops.reduce(g, t, [0, 1], ReduceParams(Operation.ADD), prog)
    squares = popops.reduce(g, t, [], ReduceParams(Operation.SQUARE_ADD), prog)
    x = data(Operation.ADD, INT, (6, 5), np.random.default_rng(6))
    _, (gt, gs) = run(g, device16, prog, [total, squares], {t: x})
    assert total.shape == () and gt == x.sum()
    np.testing.assert_array_equal(gs, x * x)


def test_empty_input_gives_the_identity(device16):
    g = popsim.Graph(device16)
    t = g.add_variable(FLOAT, (0, 4), "t")
    prog = Sequence()
    out = popops.reduce(g, t, [0], ReduceParams(Operation.MUL), prog)
    _, (got,) = run(g, device16, prog, [out], {})
    np.testing.assert_array_equal(got, np.ones(4, np.float32))


def test_errors(device16):
    g = popsim.Graph(device16)
    t = g.add_variable(FLOAT, (4, 5), "tens")
    g.set_tile_mapping(t, 0)
    prog = Sequence()
    add = ReduceParams(Operation.ADD)
    with pytest.raises(PoplibsError, match=r"dims \[0, 0\].*'tens'"):
        popops.reduce(g, t, [0, 0], add, prog)
    with pytest.raises(PoplibsError, match=r"dims \[2\].*'tens'"):
        popops.reduce(g, t, [2], add, prog)
    with pytest.raises(PoplibsError, match="MAX cannot be used with update or scale"):
        ReduceParams(Operation.MAX, update=True)
    with pytest.raises(PoplibsError, match="LOGICAL_OR cannot be used with update or scale"):
        ReduceParams(Operation.LOGICAL_OR, scale=2.0)
    with pytest.raises(PoplibsError, match="LOGICAL_AND does not take tensor 'tens'"):
        popops.reduce(g, t, [0], ReduceParams(Operation.LOGICAL_AND), prog)
    with pytest.raises(PoplibsError, match="reduce_with_output"):
        popops.reduce(g, t, [0], ReduceParams(Operation.ADD, update=True), prog)
    out = g.add_variable(FLOAT, (4,), "wrong")
    g.set_tile_mapping(out, 0)
    with pytest.raises(PoplibsError, match=r"'wrong'.*must have shape \(5,\)"):
        popops.reduce_with_output(g, t, out, [0], add, prog)
    k = g.add_variable(INT, (), "k")
    with pytest.raises(PoplibsError, match="scale tensor 'k' must be a FLOAT scalar"):
        ReduceParams(Operation.ADD, scale=k)
    with pytest.raises(popsim.InvalidOptionError, match="accumType"):
        popops.reduce(g, t, [0], add, prog, options={"accumType.bogus": "float"})
    assert len(prog) == 0 if hasattr(prog, "__len__") else True


@pytest.mark.parametrize("n, tiles", [(16, 1), (16, 4), (1000, 4)])
@pytest.mark.parametrize("op, ref", [(Operation.ADD, np.sum), (Operation.MAX, np.max)])
def test_a_vector_reduced_to_a_scalar(small_device, n, tiles, op, ref):
    g = popsim.Graph(small_device)
    t = g.add_variable(FLOAT, (n,), "t")
    g.set_tile_mapping(t, [[(k * n // tiles, (k + 1) * n // tiles)] for k in range(tiles)])
    prog = Sequence()
    r = popops.reduce(g, t, [0], ReduceParams(op), prog)
    assert tuple(r.shape) == ()
    x = (np.arange(n, dtype=np.float32) % 97) - 40
    _, (got,) = run(g, small_device, prog, [r], {t: x})
    assert got == ref(x)


@pytest.mark.parametrize("options", [-8.5, np.zeros(2), ["accumType.interTile"]])
def test_options_that_are_not_a_dict(device16, options):
    """A float was Python's TypeError, an array numpy's ValueError (truth value)."""
    g = popsim.Graph(device16)
    t = g.add_variable(FLOAT, (4, 5), "tens")
    g.set_tile_mapping(t, 0)
    with pytest.raises(popsim.InvalidOptionError, match="options must be a dict of option names to values"):
        popops.reduce(g, t, [1], ReduceParams(Operation.ADD), Sequence(), options=options)
