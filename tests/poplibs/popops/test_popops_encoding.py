"""popops.encode_one_hot, popops.gather and popops.iota on the engine against numpy
(masked labels, custom on/off values, tensors over several tiles, hypothesis over gather
shapes and axes with out-of-range indices clamped), the EncodeOneHot and Iota estimates,
and bad arguments."""
import re

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import popsim
from popsim import FLOAT, HALF, INT, UNSIGNED_INT, popops, poputil
from popsim.popops.encoding import encode_one_hot_cycles, iota_cycles
from popsim.program import Sequence

from popops_harness import mapped, run, scattered_mapping


def small_device():
    model = popsim.IPUModel("ipu2")
    model.tiles_per_ipu = 4
    return model.create_device()


def one_hot(indices, classes, on=1, off=0):
    out = np.full((len(indices), classes), off)
    for i, k in enumerate(indices):
        if 0 <= k < classes:
            out[i, k] = on
    return out


@pytest.mark.parametrize("index_type", [UNSIGNED_INT, INT], ids=lambda t: t.name)
@pytest.mark.parametrize("out_type", [FLOAT, HALF, INT], ids=lambda t: t.name)
def test_encode_one_hot(index_type, out_type):
    device = small_device()
    g = popsim.Graph(device)
    rng = np.random.default_rng(3)
    encoded = g.add_variable(out_type, (9, 7), "encoded")
    g.set_tile_mapping(encoded, scattered_mapping(63, 4, rng))
    custom = g.add_variable(out_type, (9, 7), "custom")
    g.set_tile_mapping(custom, scattered_mapping(63, 4, rng))
    indices = g.add_variable(index_type, (9,), "indices")
    g.set_tile_mapping(indices, [[(0, 4)], [(4, 9)], [], []])
    prog = Sequence()
    popops.encode_one_hot(g, indices, encoded, prog)
    popops.encode_one_hot(g, indices, custom, prog, on=5, off=-2 if out_type != UNSIGNED_INT else 2)
    labels = np.array([0, 6, 3, 3, 1, 2, 5, 4, 0], dtype=np.int64)
    labels[4] = popops.MASKED_LABEL_CODE  # an all-off row
    host = labels.astype(np.uint32).astype(index_type.numpy)
    _, (got, got_custom) = run(g, device, prog, [encoded, custom], {indices: host})
    np.testing.assert_array_equal(got, one_hot(labels, 7))
    np.testing.assert_array_equal(got_custom, one_hot(labels, 7, 5, -2))
    assert not got[4].any()


@pytest.mark.parametrize("out_type", [FLOAT, HALF, INT, UNSIGNED_INT], ids=lambda t: t.name)
def test_encode_one_hot_tensor_on_off(out_type):
    """PopLibs' overload with on/off Tensors: the vertices read them at run time (written
    from the host before the run), a tensor on with a number off too."""
    device = small_device()
    g = popsim.Graph(device)
    encoded = g.add_variable(out_type, (5, 4), "encoded")
    g.set_tile_mapping(encoded, scattered_mapping(20, 4, np.random.default_rng(1)))
    mixed = g.add_variable(out_type, (5, 4), "mixed")
    g.set_tile_mapping(mixed, 2)
    indices = g.add_variable(UNSIGNED_INT, (5,), "indices")
    g.set_tile_mapping(indices, 1)
    on, off = g.add_variable(out_type, (), "on"), g.add_variable(out_type, (1,), "off")  # one element: any shape
    g.set_tile_mapping(on, 3)
    g.set_tile_mapping(off, 0)
    prog = Sequence()
    popops.encode_one_hot(g, indices, encoded, prog, on, off)
    popops.encode_one_hot(g, indices, mixed, prog, on=on)
    labels = [3, 0, popops.MASKED_LABEL_CODE, 1, 3]
    _, (got, got_mixed) = run(g, device, prog, [encoded, mixed], {indices: labels, on: 7, off: [2]})
    np.testing.assert_array_equal(got, one_hot(labels, 4, 7, 2))
    np.testing.assert_array_equal(got_mixed, one_hot(labels, 4, 7, 0))


def test_encode_one_hot_tensor_on_off_errors():
    g = popsim.Graph(small_device())
    enc, idx = g.add_variable(FLOAT, (4, 3), "enc"), g.add_variable(UNSIGNED_INT, (4,), "idx")
    with pytest.raises(poputil.PoplibsError, match=re.escape(
            "popops.encode_one_hot: on must be a scalar (one element) of the encoded tensor's type FLOAT, found "
            "tensor 'h' (HALF, shape ())")):
        popops.encode_one_hot(g, idx, enc, Sequence(), g.add_variable(HALF, (), "h"), 0.0)
    with pytest.raises(poputil.PoplibsError, match=r"off must be a scalar .* 'two' \(FLOAT, shape \(2,\)\)"):
        popops.encode_one_hot(g, idx, enc, Sequence(), 1.0, g.add_variable(FLOAT, (2,), "two"))
    with pytest.raises(poputil.PoplibsError, match="off 'x' belongs to another graph"):
        popops.encode_one_hot(g, idx, enc, Sequence(), 1.0, popsim.Graph(small_device()).add_variable(FLOAT, (), "x"))


def test_masked_label_code_is_poplibs_constant():
    assert popops.MASKED_LABEL_CODE == 0xFFFFFFFF


def test_encode_estimate():
    # 20 + ceil(n / vector width) + 10 per row: 9 float elements over 2 rows
    target = popsim.Target.create_ipu_target()
    assert encode_one_hot_cycles(target.vector_width(FLOAT), 9, 2) == 20 + 5 + 20
    assert encode_one_hot_cycles(target.vector_width(HALF), 9, 2) == 20 + 3 + 20


@st.composite
def gather_cases(draw):
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=rank, max_size=rank)))
    axis = draw(st.integers(0, rank - 1))
    index_shape = tuple(draw(st.lists(st.integers(1, 3), min_size=1, max_size=2)))
    return shape, axis, index_shape, draw(st.booleans()), draw(st.integers(0, 2**16))


@settings(max_examples=15, deadline=None)
@given(gather_cases())
def test_gather_against_numpy_take(case):
    shape, axis, index_shape, signed, seed = case
    device = small_device()
    g = popsim.Graph(device)
    rng = np.random.default_rng(seed)
    t = g.add_variable(FLOAT, shape, "t")
    g.set_tile_mapping(t, scattered_mapping(t.num_elements(), 4, rng))
    index_type = INT if signed else UNSIGNED_INT
    indices = g.add_variable(index_type, index_shape, "indices")
    g.set_tile_mapping(indices, 1)
    prog = Sequence()
    out = popops.gather(g, t, indices, axis, prog)
    x = rng.uniform(-5, 5, shape).astype(np.float32)
    low = -2 if signed else 0
    idx = rng.integers(low, shape[axis] + 2, index_shape)  # some out of range: clamped
    _, (got,) = run(g, device, prog, [out], {t: x, indices: idx.astype(index_type.numpy)})
    np.testing.assert_array_equal(got, np.take(x, np.clip(idx, 0, shape[axis] - 1), axis))


def test_errors():
    device = small_device()
    g = popsim.Graph(device)
    enc = g.add_variable(FLOAT, (4, 3), "enc")
    idx = g.add_variable(UNSIGNED_INT, (4,), "idx")
    prog = Sequence()
    with pytest.raises(poputil.PoplibsError, match=re.escape(
            "popops.encode_one_hot: the encoded tensor must be 2-D with one row per index (5 rows for tensor 'i5' "
            "(UNSIGNED_INT, shape (5,))), found tensor 'enc' (FLOAT, shape (4, 3))")):
        popops.encode_one_hot(g, g.add_variable(UNSIGNED_INT, (5,), "i5"), enc, prog)
    with pytest.raises(poputil.PoplibsError, match=r"the indices must be a 1-D INT or UNSIGNED_INT tensor, found "
                                                   r"tensor 'f' \(FLOAT"):
        popops.encode_one_hot(g, g.add_variable(FLOAT, (4,), "f"), enc, prog)
    with pytest.raises(poputil.PoplibsError, match="encoded 'other' belongs to another graph"):
        popops.encode_one_hot(g, idx, popsim.Graph(device).add_variable(FLOAT, (4, 3), "other"), prog)
    with pytest.raises(poputil.PoplibsError, match="on 1.5 does not fit the encoded tensor's type INT"):
        popops.encode_one_hot(g, idx, g.add_variable(INT, (4, 3), "ienc"), prog, on=1.5)
    with pytest.raises(poputil.PoplibsError, match=r"axis must be a dimension of tensor 'enc' \(FLOAT, shape "
                                                   r"\(4, 3\)\) \(0 to 1\), found 2"):
        popops.gather(g, enc, idx, 2, prog)
    with pytest.raises(poputil.PoplibsError, match=r"the indices must be INT or UNSIGNED_INT, found tensor 'h'"):
        popops.gather(g, enc, g.add_variable(HALF, (2,), "h"), 0, prog)


@pytest.mark.parametrize("on", [np.zeros((2, 2)), "1", None])
def test_on_and_off_are_numbers(on):
    """An array was numpy's ValueError (the truth value of comparing (on, off) with (1, 0))."""
    g = popsim.Graph(small_device())
    enc, idx = g.add_variable(FLOAT, (4, 3), "enc"), g.add_variable(UNSIGNED_INT, (4,), "idx")
    with pytest.raises(poputil.PoplibsError,
                       match="popops.encode_one_hot: on must be a number or a scalar tensor, found"):
        popops.encode_one_hot(g, idx, enc, Sequence(), on=on)


@pytest.mark.parametrize("dtype,start", [(INT, -5), (UNSIGNED_INT, 7)], ids=["INT", "UNSIGNED_INT"])
def test_iota(dtype, start):
    device = small_device()
    g = popsim.Graph(device)
    t = mapped(g, dtype, "t", (24,))
    prog = Sequence()
    popops.iota(g, t, start, prog)
    engine, (got,) = run(g, device, prog, [t], {})
    np.testing.assert_array_equal(got, np.arange(start, start + 24).astype(dtype.numpy))
    kinds = {v["name"]: v for v in engine.get_report().to_dict()["execution"]["vertex_types"]}
    assert kinds[f"popops::Iota<{dtype.cpp}>"]["instances"] >= 4
    assert iota_cycles([4, 5], g.target.vector_width(INT)) == 10 + (4 + 3 * 2) + (4 + 3 * 3)


def test_iota_errors():
    g = popsim.Graph(small_device())
    prog = Sequence()
    with pytest.raises(poputil.PoplibsError, match="popops.iota: tensor 'm'.*must be a 1-D INT or UNSIGNED_INT"):
        popops.iota(g, mapped(g, INT, "m"), 0, prog)
    with pytest.raises(poputil.PoplibsError, match="popops.iota: start -1 .*does not fit tensor 'u'"):
        popops.iota(g, mapped(g, UNSIGNED_INT, "u", (24,)), -1, prog)
    assert g.num_vertices == 0
