"""The matmul executor under explicit, hand-made plans: the numbers must not depend on the
plan (parallel splits of every dimension, serial splits of each kind, swapOperands, K=1,
long K, groups, zero-sized dimensions, half inputs with float and half partials)."""
import numpy as np
import pytest

import popsim
from popsim import FLOAT, HALF
from popsim.poplin import mat_mul_execute, mat_mul_layout
from popsim.poplin.plan import ConvTransform, Method, Partition, Plan, Split
from popsim.poputil import PoplibsError, map_tensor_linearly
from popsim.program import Sequence


def _plan(gs=1, ms=1, ns=1, ks=1, n_serial=1, k_serial=1, swap=False, partials=FLOAT, k_grain=8, n_grain=8,
          in_type=FLOAT):
    # the 8-unit AMP vertex with 64-bit loads of the input type (one the executor has)
    return Plan(Partition((1,), ms, Split(n_serial, ns), (1,), Split(k_serial, ks), gs),
                Method("AMP", 8, 4 if in_type == HALF else 2), (ConvTransform(swap_operands=swap), ConvTransform()),
                in_chans_per_group=k_grain, partial_chans_per_group=n_grain, partials_type=partials)


def _device(tiles=16):
    model = popsim.IPUModel("ipu2")
    model.tiles_per_ipu = tiles
    return model.create_device()


def _matmul(plan, groups, m, k, n, in_type=FLOAT, out_type=None, layout="plan", scale=None, seed=0):
    device = _device()
    g = popsim.Graph(device)
    out_type = out_type or in_type
    blocks = mat_mul_execute.blocking_for(g, plan, groups, m, k, n)
    if layout == "plan" and not plan.transforms[0].swap_operands:
        a = mat_mul_layout.create_lhs(g, in_type, blocks, "a")
        b = mat_mul_layout.create_rhs(g, in_type, blocks, "b")
        c = mat_mul_layout.create_output(g, out_type, blocks, "c")
    else:
        a, b, c = (g.add_variable(t, s, nm) for t, s, nm in ((in_type, (groups, m, k), "a"),
                                                                (in_type, (groups, k, n), "b"),
                                                                (out_type, (groups, m, n), "c")))
        for t in (a, b, c):
            map_tensor_linearly(g, t)
    prog = Sequence()
    mat_mul_execute.execute_mat_mul(g, a, b, c, plan, prog, "mm", scale=scale)
    for handle, t in (("a", a), ("b", b), ("c", c)):
        g.create_host_write(handle, t)
    g.create_host_read("out", c)
    engine = popsim.Engine(g, prog)
    engine.load(device)
    rng = np.random.default_rng(seed)
    ha, hb, hc = (rng.standard_normal(s).astype(t.numpy) for s, t in (((groups, m, k), in_type),
                                                                      ((groups, k, n), in_type),
                                                                      ((groups, m, n), out_type)))
    engine.write_tensor("a", ha)
    engine.write_tensor("b", hb)
    engine.write_tensor("c", hc)
    engine.run(0)
    product = np.matmul(ha.astype(np.float64), hb.astype(np.float64))
    expected = product if scale is None else hc.astype(np.float64) + scale * product
    return engine.read_tensor("out"), expected


PLANS = {
    "one tile": _plan(),
    "batch split": _plan(ms=4),
    "out-chan split": _plan(ns=3),
    "in-chan split": _plan(ks=4),
    "all parallel": _plan(ms=2, ns=2, ks=2),
    "out-chan serial": _plan(ms=2, n_serial=3),
    "in-chan serial": _plan(ns=2, k_serial=3),
    "both serial with in-chan parallel": _plan(ks=2, n_serial=2, k_serial=2),
    "swap operands": _plan(ms=3, ns=2, swap=True),
    "fine grains": _plan(ms=2, ns=3, ks=2, k_grain=1, n_grain=1),
}


@pytest.mark.parametrize("plan", PLANS.values(), ids=list(PLANS))
def test_plans_agree_with_numpy(plan):
    got, expected = _matmul(plan, 1, 21, 50, 35)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("plan", [PLANS["one tile"], PLANS["all parallel"], PLANS["in-chan serial"]],
                         ids=["one tile", "all parallel", "in-chan serial"])
def test_scattered_operands(plan):
    got, expected = _matmul(plan, 1, 13, 30, 19, layout="linear")
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape", [(1, 9, 1, 11), (1, 3, 700, 5), (3, 7, 20, 9), (2, 1, 16, 1)],
                         ids=["K=1", "long K", "groups", "vectors"])
def test_shapes(shape):
    plan = _plan(gs=min(shape[0], 2), ms=2, ns=2, ks=2, k_serial=2)
    got, expected = _matmul(plan, *shape)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("shape", [(1, 0, 5, 4), (1, 4, 5, 0), (0, 4, 5, 4), (1, 4, 0, 6)])
def test_zero_sized_dimensions(shape):
    got, expected = _matmul(_plan(ms=2, ns=2, ks=2), *shape)
    assert got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("partials,out_type", [(FLOAT, HALF), (HALF, HALF), (FLOAT, FLOAT)])
def test_half_inputs(partials, out_type):
    got, expected = _matmul(_plan(ms=2, ns=2, ks=2, partials=partials, in_type=HALF), 1, 10, 24, 12, HALF, out_type)
    np.testing.assert_allclose(got, expected, rtol=2e-2, atol=5e-2)


@pytest.mark.parametrize("plan", [PLANS["one tile"], PLANS["in-chan serial"], PLANS["all parallel"]],
                         ids=["one tile", "in-chan serial", "all parallel"])
def test_accumulate(plan):
    got, expected = _matmul(plan, 1, 11, 20, 13, scale=-0.5)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


def test_plan_too_big_for_the_target():
    with pytest.raises(PoplibsError, match="over 32 tiles but the target has 16"):
        _matmul(_plan(ms=4, ns=8), 1, 8, 8, 64)


def test_reduction_output_shared_by_the_tiles_holding_partials():
    """PopLibs' ConvReduce: each output block is shared, in whole grains, by the tiles that
    hold its partials, and each tile's ReduceAdd writes only its own piece (no output block
    is left on the first in-channel part's tile alone)."""
    plan = _plan(ms=2, ks=4, n_grain=8)
    g = popsim.Graph(_device())
    made = []
    add_cs = g.add_compute_set
    g.add_compute_set = lambda name: made.append(add_cs(name)) or made[-1]
    blocks = mat_mul_execute.blocking_for(g, plan, 1, 6, 64, 16)
    grain = mat_mul_execute.output_grain(g, plan, FLOAT)
    assert grain == 8
    a = mat_mul_layout.create_lhs(g, FLOAT, blocks, "a")
    b = mat_mul_layout.create_rhs(g, FLOAT, blocks, "b")
    c = mat_mul_layout.create_output(g, FLOAT, blocks, "c", grain)
    for mi in range(2):   # block mi (3 rows x 16 = 48 elements, 6 grains) over its 4 in-channel parts' tiles
        block = c[0].slice([3 * mi, 0], [3 * mi + 3, 16]).flatten()
        mapping = g.get_tile_mapping(block)
        held = {t: sum(e - s for s, e in r) for t, r in enumerate(mapping) if r}
        assert held == {blocks.tile(0, mi, 0, ki): n for ki, n in enumerate((8, 16, 8, 16))}
    mat_mul_execute.execute_mat_mul(g, a, b, c, plan, Sequence(), "mm")
    reduce_cs = [cs for cs in made if cs.name == "mm/Reduce"]
    assert len(reduce_cs) == 1
    vertices = list(reduce_cs[0].vertices)
    assert len(vertices) == 8   # one ReduceAdd per tile holding partials (PopLibs' one vertex a tile)
    for v in vertices:
        out = v.conn[[f.name for f in v.type.fields].index("out")]
        assert {t for t, r in enumerate(g.get_tile_mapping(out)) if r} == {v.tile}
