"""popops.multi_slice / multi_update / multi_update_add / multi_update_max on the engine against numpy
(hypothesis over shapes, the sliced dimension and offsets, some out of range; tensors
over several tiles), the MultiSlice estimator by hand, and bad arguments."""
import re

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import popsim
from popsim import FLOAT, HALF, INT, UNSIGNED_INT, popops, poputil
from popsim.popops.slice_vertices import multi_slice_cycles, multi_update_op_cycles
from popsim.program import Sequence

from popops_harness import run, scattered_mapping


def small_device():
    model = popsim.IPUModel("ipu2")
    model.tiles_per_ipu = 4
    return model.create_device()


@st.composite
def cases(draw):
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(1, 5), min_size=rank, max_size=rank)))
    dim = draw(st.integers(0, rank - 1))
    # offsets up to 2 past the end: those rows are skipped, never wrapped
    offsets = draw(st.lists(st.integers(0, shape[dim] + 1), min_size=1, max_size=6))
    return shape, dim, offsets, draw(st.booleans()), draw(st.integers(0, 2**16))


@settings(max_examples=20, deadline=None)
@given(cases())
def test_against_numpy(case):
    shape, dim, offsets, sliceable, seed = case
    device = small_device()
    g = popsim.Graph(device)
    rng = np.random.default_rng(seed)
    if sliceable:
        t = popops.create_sliceable_tensor(g, FLOAT, shape, [dim], [1], "t")
    else:
        t = g.add_variable(FLOAT, shape, "t")
        g.set_tile_mapping(t, scattered_mapping(t.num_elements(), 4, rng))
    t2, t3 = g.clone(t, "t2"), g.clone(t, "t3")
    off = g.add_variable(UNSIGNED_INT, (len(offsets), 1), "off")
    g.set_tile_mapping(off, 2)
    slice_shape = (len(offsets),) + tuple(1 if d == dim else n for d, n in enumerate(shape))
    u = g.add_variable(FLOAT, slice_shape, "u")
    g.set_tile_mapping(u, scattered_mapping(u.num_elements(), 4, rng))
    prog = Sequence()
    s = popops.multi_slice(g, t, off, [dim], [1], prog)
    assert s.shape == slice_shape
    popops.multi_update(g, t, u, off, [dim], [1], prog)
    popops.multi_update_add(g, t2, u, off, 0.5, [dim], [1], prog)
    popops.multi_update_max(g, t3, u, off, [dim], [1], prog)
    x = rng.integers(-50, 50, shape).astype(np.float32)
    y = rng.integers(-50, 50, slice_shape).astype(np.float32)
    _, (got_s, got_t, got_t2, got_t3) = run(g, device, prog, [s, t, t2, t3],
                                            {t: x, t2: x, t3: x, off: np.array(offsets)[:, None], u: y})
    xm, ym = np.moveaxis(x, dim, 0), np.moveaxis(y[:, :, ...], dim + 1, 1)[:, 0]
    expected_t, expected_t2, expected_t3 = xm.copy(), xm.copy(), xm.copy()
    for i, o in enumerate(offsets):
        got_row = np.moveaxis(got_s[i], dim, 0)[0]
        if o < shape[dim]:
            np.testing.assert_array_equal(got_row, xm[o])
            expected_t[o] = ym[i]           # the last of repeated offsets wins
            expected_t2[o] += 0.5 * ym[i]   # repeated offsets all add
            expected_t3[o] = np.maximum(expected_t3[o], ym[i])  # the maximum of them all
        # out-of-range rows are skipped by the vertices: their contents are undefined, as in PopLibs
    np.testing.assert_array_equal(np.moveaxis(got_t, dim, 0), expected_t)
    np.testing.assert_array_equal(np.moveaxis(got_t2, dim, 0), expected_t2)
    np.testing.assert_array_equal(np.moveaxis(got_t3, dim, 0), expected_t3)


@pytest.mark.parametrize("dtype", [HALF, INT, UNSIGNED_INT], ids=lambda t: t.name)
def test_types_and_tensor_scale(dtype):
    device = small_device()
    g = popsim.Graph(device)
    t = popops.create_sliceable_tensor(g, dtype, (5, 6), [0], [1], "emb")
    off = g.add_variable(UNSIGNED_INT, (3, 1), "off")
    g.set_tile_mapping(off, 0)
    scale = g.add_variable(dtype, (), "scale")
    g.set_tile_mapping(scale, 1)
    u = g.add_variable(dtype, (3, 1, 6), "u")
    g.set_tile_mapping(u, 3)
    prog = Sequence()
    s = popops.multi_slice(g, t, off, [0], [1], prog)
    popops.multi_update_add(g, t, u, off, scale, [0], [1], prog)
    x = np.arange(30).reshape(5, 6).astype(dtype.numpy)
    y = np.arange(18).reshape(3, 1, 6).astype(dtype.numpy)
    _, (got_s, got_t) = run(g, device, prog, [s, t], {t: x, off: [[1], [4], [1]], u: y, scale: 3})
    np.testing.assert_array_equal(got_s[:, 0], x[[1, 4, 1]])
    expected = x.copy()
    expected[1] += 3 * (y[0, 0] + y[2, 0])
    expected[4] += 3 * y[1, 0]
    np.testing.assert_array_equal(got_t, expected)


@pytest.mark.parametrize("dtype", [FLOAT, HALF, INT, UNSIGNED_INT], ids=lambda t: t.name)
def test_update_max_types_repeats_and_out_of_range(dtype):
    device = small_device()
    g = popsim.Graph(device)
    t = popops.create_sliceable_tensor(g, dtype, (2, 4, 3), [1], [1], "t")
    off = g.add_variable(UNSIGNED_INT, (5, 1), "off")
    g.set_tile_mapping(off, 0)
    u = g.add_variable(dtype, (5, 2, 1, 3), "u")
    g.set_tile_mapping(u, 3)
    prog = Sequence()
    popops.multi_update_max(g, t, u, off, [1], [1], prog)
    x = np.arange(24).reshape(2, 4, 3).astype(dtype.numpy)
    y = (np.arange(30).reshape(5, 2, 1, 3)[::-1] % 17).astype(dtype.numpy)
    offsets = [2, 0, 2, 4, 7]  # a repeat and two out of range (ignored)
    engine, (got,) = run(g, device, prog, [t], {t: x, off: np.array(offsets)[:, None], u: y})
    expected = x.copy()
    for i, o in enumerate(offsets):
        if o < 4:
            expected[:, o] = np.maximum(expected[:, o], y[i, :, 0])
    np.testing.assert_array_equal(got, expected)
    name = f"popops::MultiUpdateOp<{dtype.cpp},false,popops::Operation::MAX>"
    assert name in {v["name"] for v in engine.get_report().to_dict()["execution"]["vertex_types"]}


def test_update_max_nan_is_taken():
    """PopLibs' updateOp is ``t > s ? t : s``: a NaN in s replaces t, a NaN in t is replaced."""
    device = small_device()
    g = popsim.Graph(device)
    t = popops.create_sliceable_tensor(g, FLOAT, (2, 2), [0], [1], "t")
    off = g.add_variable(UNSIGNED_INT, (1, 1), "off")
    g.set_tile_mapping(off, 0)
    u = g.add_variable(FLOAT, (1, 1, 2), "u")
    g.set_tile_mapping(u, 1)
    prog = Sequence()
    popops.multi_update_max(g, t, u, off, [0], [1], prog)
    _, (got,) = run(g, device, prog, [t], {t: [[np.nan, 5], [1, 2]], off: [[0]], u: [[[3, np.nan]]]})
    np.testing.assert_array_equal(got, [[3, np.nan], [1, 2]])


def test_vertices_and_estimate():
    device = small_device()
    g = popsim.Graph(device)
    t = popops.create_sliceable_tensor(g, FLOAT, (10, 8), [0], [1], "emb")
    off = g.add_variable(UNSIGNED_INT, (7, 1), "off")
    g.set_tile_mapping(off, 0)
    prog = Sequence()
    popops.multi_slice(g, t, off, [0], [1], prog, "Lookup")
    engine, _ = run(g, device, prog, [], {off: np.arange(7)[:, None]})
    kinds = {v["name"]: v for v in engine.get_report().to_dict()["execution"]["vertex_types"]}
    assert kinds["popops::MultiSlice<float>"]["instances"] == 4  # one per tile of the sliceable tensor
    # PopLibs' cycle estimators: W (30 + inRange (19 + ceil(2/2) 2)), 7 offsets over 6 workers: 2 each
    assert multi_slice_cycles(FLOAT, 7, 2, False, 6) == 6 * (30 + 2 * (19 + 1 * 2))
    assert multi_slice_cycles(popsim.CHAR, 7, 9, True, 6, in_range=5) == 6 * (29 + 1 * (19 + 3 * 3) + 1 * 8)
    assert kinds["popops::MultiSlice<float>"]["cycles"] == 4 * 6 * -(-multi_slice_cycles(FLOAT, 7, 2, False, 6) // 6)
    # MultiUpdateOp (PopLibs' getMultiUpdateOpCycleEstimate): W (3 + 29 + offsets (11 + (2 - 1) 3)); HALF
    # 30 and 12, two elements per 4-byte atom; no offsets: 3 + 29, not per worker
    assert multi_update_op_cycles(FLOAT, 7, 2, 6) == 6 * (3 + 29 + 7 * (11 + 1 * 3))
    assert multi_update_op_cycles(HALF, 5, 6, 6) == 6 * (3 + 30 + 5 * (12 + 2 * 3))
    assert multi_update_op_cycles(INT, 0, 4, 6) == 3 + 29


def test_update_max_estimate_in_the_report():
    device = small_device()
    g = popsim.Graph(device)
    t = popops.create_sliceable_tensor(g, FLOAT, (10, 8), [0], [1], "emb")
    off = g.add_variable(UNSIGNED_INT, (7, 1), "off")
    g.set_tile_mapping(off, 0)
    u = g.add_variable(FLOAT, (7, 1, 8), "u")
    g.set_tile_mapping(u, 1)
    prog = Sequence()
    popops.multi_update_max(g, t, u, off, [0], [1], prog)
    engine, _ = run(g, device, prog, [], {off: np.arange(7)[:, None]})
    kinds = {v["name"]: v for v in engine.get_report().to_dict()["execution"]["vertex_types"]}
    kind = kinds["popops::MultiUpdateOp<float,false,popops::Operation::MAX>"]
    assert kind["instances"] == 4 and kind["cycles"] == 4 * 6 * -(-multi_update_op_cycles(FLOAT, 7, 2, 6) // 6)


def test_errors():
    device = small_device()
    g = popsim.Graph(device)
    t = g.add_variable(FLOAT, (4, 6), "t")
    off = g.add_variable(UNSIGNED_INT, (3, 1), "off")
    prog = Sequence()
    with pytest.raises(poputil.PoplibsError, match=re.escape(
            "popops.multi_slice: the offsets must be an UNSIGNED_INT tensor of shape [numIndices, 1] (one row per "
            "slice, one column per dim of [0]), found tensor 'o' (INT, shape (3, 1))")):
        popops.multi_slice(g, t, g.add_variable(INT, (3, 1), "o"), [0], [1], prog)
    with pytest.raises(poputil.PoplibsError, match=r"found tensor 'flat' \(UNSIGNED_INT, shape \(3,\)\)"):
        popops.multi_slice(g, t, g.add_variable(UNSIGNED_INT, (3,), "flat"), [0], [1], prog)
    with pytest.raises(poputil.PoplibsError, match=r"dims \[d\] and sizes \[1\], found dims \[0\] and sizes \[2\]"):
        popops.multi_slice(g, t, off, [0], [2], prog)
    with pytest.raises(poputil.PoplibsError, match=r"dimension 3 in dims \[3\] is out of range for tensor 't'"):
        popops.multi_slice(g, t, off, [3], [1], prog)
    with pytest.raises(poputil.PoplibsError, match="sliced tensor 'x' belongs to another graph"):
        popops.multi_slice(g, popsim.Graph(device).add_variable(FLOAT, (4, 6), "x"), off, [0], [1], prog)
    with pytest.raises(poputil.PoplibsError, match=re.escape(
            "popops.multi_update: the slices tensor 'u' (FLOAT, shape (3, 6)) must be FLOAT of shape (3, 1, 6)")):
        popops.multi_update(g, t, g.add_variable(FLOAT, (3, 6), "u"), off, [0], [1], prog)
    u = g.add_variable(FLOAT, (3, 1, 6), "u2")
    with pytest.raises(poputil.PoplibsError, match=r"the scale must be one element of FLOAT .* found tensor 'k' "
                                                   r"\(INT"):
        popops.multi_update_add(g, t, u, off, g.add_variable(INT, (), "k"), [0], [1], prog)
    with pytest.raises(poputil.PoplibsError, match="the vertices do not take"):
        popops.multi_update_add(g, g.add_variable(popsim.BOOL, (4, 6), "b"), u, off, 1.0, [0], [1], prog)
    with pytest.raises(poputil.PoplibsError, match=r"popops.multi_update_max: tensor 'c' \(CHAR, shape \(4, 6\)\) "
                                                   "has a type the vertices do not take"):
        popops.multi_update_max(g, g.add_variable(popsim.CHAR, (4, 6), "c"), u, off, [0], [1], prog)
    with pytest.raises(poputil.PoplibsError, match="popops.multi_update_max: the slices tensor 'u3'"):
        popops.multi_update_max(g, t, g.add_variable(FLOAT, (2, 1, 6), "u3"), off, [0], [1], prog)
