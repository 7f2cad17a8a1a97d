"""popops select and clamp (and their in-place and with-output forms) on the engine
against numpy, with broadcasting and number operands; vertex names and estimators."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import popsim
from popsim import BOOL, FLOAT, HALF, INT, UNSIGNED_INT, popops, poputil
from popsim.popops import ternary
from popsim.program import Sequence

from popops_harness import mapped, run


RNG = np.random.default_rng(3)
PRED = RNG.integers(0, 2, (4, 6)).astype(bool)


def values(dtype, low=-20, high=20):
    if dtype == BOOL:
        return RNG.integers(0, 2, (4, 6)).astype(bool)
    if dtype == UNSIGNED_INT:
        low = 0
    return (RNG.integers(low, high, (4, 6)) / (4 if dtype in (FLOAT, HALF) else 1)).astype(dtype.numpy)


@pytest.mark.parametrize("dtype", [FLOAT, HALF, INT, UNSIGNED_INT, BOOL], ids=lambda t: t.name)
def test_select_forms_against_numpy(g, small_device, dtype):
    a, b, p = mapped(g, dtype, "a"), mapped(g, dtype, "b"), mapped(g, BOOL, "p")
    a2, out = mapped(g, dtype, "a2"), mapped(g, dtype, "out")
    prog = Sequence()
    new = popops.select(g, a, b, p, prog)
    popops.select_in_place(g, a2, b, p, prog)
    popops.select_with_output(g, a, b, p, out, prog)
    va, vb = values(dtype), values(dtype)
    engine, got = run(g, small_device, prog, [new, a2, out], {a: va, a2: va, b: vb, p: PRED})
    for result in got:
        np.testing.assert_array_equal(result, np.where(PRED, va, vb))
    kinds = {v["name"] for v in engine.get_report().to_dict()["execution"]["vertex_types"]}
    assert {f"popops::Select<{dtype.cpp}>", f"popops::SelectInPlace<{dtype.cpp}>"} <= kinds


@pytest.mark.parametrize("dtype", [FLOAT, HALF, INT], ids=lambda t: t.name)
def test_clamp_forms_against_numpy(g, small_device, dtype):
    x, lo, hi = mapped(g, dtype, "x"), mapped(g, dtype, "lo"), mapped(g, dtype, "hi")
    x2, out = mapped(g, dtype, "x2"), mapped(g, dtype, "out")
    prog = Sequence()
    new = popops.clamp(g, x, lo, hi, prog)
    popops.clamp_in_place(g, x2, lo, hi, prog)
    popops.clamp_with_output(g, x, lo, hi, out, prog)
    numbers = popops.clamp(g, x, -2, 3, prog)
    vx, vlo = values(dtype), values(dtype, -10, 0)
    vhi = vlo + values(dtype, 0, 10).astype(dtype.numpy)
    engine, got = run(g, small_device, prog, [new, x2, out, numbers], {x: vx, x2: vx, lo: vlo, hi: vhi})
    for result in got[:3]:
        np.testing.assert_array_equal(result, np.minimum(np.maximum(vx, vlo), vhi))
    np.testing.assert_array_equal(got[3], np.clip(vx, -2, 3))
    kinds = {v["name"] for v in engine.get_report().to_dict()["execution"]["vertex_types"]}
    assert {f"popops::Clamp<{dtype.cpp}>", f"popops::ClampInPlace<{dtype.cpp}>"} <= kinds


@settings(max_examples=10, deadline=None)
@given(st.sampled_from([((3, 4), (4,), (3, 1)), ((2, 3, 4), (1, 4), (3, 4)), ((5,), (1,), (5,)),
                        ((1, 6), (4, 1), (4, 6))]), st.integers(0, 2 ** 31))
def test_select_broadcasts_like_numpy(shapes, seed):
    model = popsim.IPUModel("ipu2")
    model.tiles_per_ipu = 4
    device = model.create_device()
    graph = popsim.Graph(device)
    tensors = []
    for name, shape, dtype in zip("abp", shapes, (FLOAT, FLOAT, BOOL)):
        t = graph.add_variable(dtype, shape, name)
        poputil.map_tensor_linearly(graph, t, 1, 1)
        tensors.append(t)
    prog = Sequence()
    out = popops.select(graph, *tensors, prog)
    rng = np.random.default_rng(seed)
    data = [rng.normal(size=shapes[0]).astype(np.float32), rng.normal(size=shapes[1]).astype(np.float32),
            rng.integers(0, 2, shapes[2]).astype(bool)]
    _, (got,) = run(graph, device, prog, [out], dict(zip(tensors, data)))
    np.testing.assert_array_equal(got, np.where(data[2], data[0], data[1]))


def test_estimators(g, small_device):
    assert ternary.select_cycles([3, 4]) == 5 + (6 + 15) + (6 + 20)
    assert ternary.clamp_cycles(FLOAT, [3]) == 5 + 6 + 2 * 2
    assert ternary.clamp_cycles(HALF, [9]) == 5 + 6 + 2 * 3
    assert ternary.clamp_cycles(INT, [2, 1]) == 5 + (6 + 14) + (6 + 7)
    x = g.add_variable(FLOAT, (3,), "x")
    g.set_tile_mapping(x, 0)
    prog = Sequence()
    popops.clamp(g, x, 0.0, 1.0, prog)
    engine, _ = run(g, small_device, prog, [], {})
    kinds = {v["name"]: v for v in engine.get_report().to_dict()["execution"]["vertex_types"]}
    assert kinds["popops::Clamp<float>"]["cycles"] == 5 + 6 + 4


def test_errors(g, small_device):
    a, p = mapped(g, FLOAT, "a"), mapped(g, BOOL, "p")
    prog = Sequence()
    with pytest.raises(poputil.PoplibsError, match="popops.select: the predicate tensor 'a'.*must be BOOL"):
        popops.select(g, a, a, a, prog)
    with pytest.raises(poputil.PoplibsError, match="popops.select: a, b must have one element type"):
        popops.select(g, a, mapped(g, INT, "i"), p, prog)
    with pytest.raises(poputil.PoplibsError, match="popops.clamp: CLAMP does not support UNSIGNED_INT"):
        popops.clamp(g, mapped(g, UNSIGNED_INT, "u"), 0, 1, prog)
    with pytest.raises(poputil.PoplibsError, match="popops.clamp_in_place: the in-place operand tensor 'r'.*"
                                                   r"broadcast shape \(4, 6\)"):
        popops.clamp_in_place(g, g.add_variable(FLOAT, (6,), "r"), a, 1.0, prog)
    with pytest.raises(poputil.PoplibsError, match="popops.select: cannot broadcast"):
        popops.select(g, a, g.add_variable(FLOAT, (5,), "w"), p, prog)
    with pytest.raises(poputil.PoplibsError, match="popops.select_with_output: the output tensor 'o'.*must be FLOAT"):
        popops.select_with_output(g, a, a, p, mapped(g, INT, "o"), prog)
    assert g.num_vertices == 0
