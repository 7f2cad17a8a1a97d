"""popops.sort / sort_key_value / top_k_with_permutation on the engine against numpy
(hypothesis over shapes and the sorted dimension, tensors over several tiles), the
bitonic network on its own, the vertex names and estimate, and bad arguments."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import popsim
from popsim import FLOAT, HALF, INT, UNSIGNED_INT, popops, poputil
from popsim.popops.sort import compare_and_swap_cycles, network_stages
from popsim.program import Sequence

from popops_harness import run, scattered_mapping


def small_device():
    model = popsim.IPUModel("ipu2")
    model.tiles_per_ipu = 4
    return model.create_device()


@pytest.mark.parametrize("n", list(range(1, 40)))
def test_network_sorts_every_length(n):
    rng = np.random.default_rng(n)
    for _ in range(20):
        x = rng.integers(0, 4, n)
        for stage in network_stages(n):
            touched = []
            for lo, hi, length, flipped in stage:
                for i in range(length):
                    a, b = lo + i, (hi - i if flipped else hi + i)
                    assert a < b < n
                    touched += [a, b]
                    if x[b] < x[a]:
                        x[a], x[b] = x[b], x[a]
            assert len(touched) == len(set(touched))  # a stage touches each element once at most
        assert (np.diff(x) >= 0).all()


@st.composite
def sort_cases(draw):
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(1, 9), min_size=rank, max_size=rank)))
    return shape, draw(st.integers(0, rank - 1)), draw(st.integers(0, 2**16))


@settings(max_examples=15, deadline=None)
@given(sort_cases())
def test_sort_and_sort_key_value_against_numpy(case):
    shape, dim, seed = case
    device = small_device()
    g = popsim.Graph(device)
    rng = np.random.default_rng(seed)
    t = g.add_variable(FLOAT, shape, "t")
    g.set_tile_mapping(t, scattered_mapping(t.num_elements(), 4, rng))
    v = g.add_variable(INT, shape, "v")
    g.set_tile_mapping(v, scattered_mapping(v.num_elements(), 4, rng))
    prog = Sequence()
    s = popops.sort(g, t, dim, prog)
    sv = popops.sort_key_value(g, t, v, dim, prog)
    x = rng.permutation(np.arange(np.prod(shape))).reshape(shape).astype(np.float32)  # distinct keys
    y = rng.integers(-100, 100, shape).astype(np.int32)
    _, (got, got_v, got_t) = run(g, device, prog, [s, sv, t], {t: x, v: y})
    np.testing.assert_array_equal(got, np.sort(x, axis=dim))
    np.testing.assert_array_equal(got_v, np.take_along_axis(y, np.argsort(x, axis=dim), axis=dim))
    np.testing.assert_array_equal(got_t, x)  # the input is left as it was


@pytest.mark.parametrize("dtype", [HALF, INT, UNSIGNED_INT], ids=lambda t: t.name)
def test_sort_types_with_repeats(dtype):
    device = small_device()
    g = popsim.Graph(device)
    t = g.add_variable(dtype, (3, 13), "t")
    g.set_tile_mapping(t, scattered_mapping(39, 4, np.random.default_rng(5)))
    prog = Sequence()
    s = popops.sort(g, t, 1, prog)
    x = np.random.default_rng(6).integers(0, 6, (3, 13)).astype(dtype.numpy)
    engine, (got,) = run(g, device, prog, [s], {t: x})
    np.testing.assert_array_equal(got, np.sort(x, axis=1))
    kinds = {k["name"] for k in engine.get_report().to_dict()["execution"]["vertex_types"]}
    element = {HALF: 'half', INT: 'int', UNSIGNED_INT: 'unsigned int'}[dtype]
    assert f"popops::CompareAndSwapAtDistance<{element},false>" in kinds


@pytest.mark.parametrize("largest,order", [(True, popops.SortOrder.DESCENDING), (True, popops.SortOrder.ASCENDING),
                                           (False, popops.SortOrder.ASCENDING), (False, popops.SortOrder.DESCENDING),
                                           (True, popops.SortOrder.NONE)])
def test_top_k_with_permutation(largest, order):
    device = small_device()
    g = popsim.Graph(device)
    t = g.add_variable(FLOAT, (4, 11), "t")
    g.set_tile_mapping(t, scattered_mapping(44, 4, np.random.default_rng(8)))
    prog = Sequence()
    values, indices = popops.top_k_with_permutation(g, prog, t, popops.TopKParams(4, largest=largest,
                                                                                  sort_order=order))
    assert values.shape == (4, 4) and indices.shape == (4, 4) and indices.dtype == UNSIGNED_INT
    x = np.random.default_rng(9).permutation(44).reshape(4, 11).astype(np.float32)
    _, (got_v, got_i) = run(g, device, prog, [values, indices], {t: x})
    ranked = np.sort(x, axis=1)[:, ::-1] if largest else np.sort(x, axis=1)
    expected = ranked[:, :4]
    if order is popops.SortOrder.ASCENDING and largest or order is popops.SortOrder.DESCENDING and not largest:
        expected = expected[:, ::-1]
    np.testing.assert_array_equal(got_v, expected)
    np.testing.assert_array_equal(np.take_along_axis(x, got_i.astype(np.int64), axis=1), got_v)


def test_estimate_by_hand():
    # the busiest worker's: 10 + 4 per entry + 3 per piece + 4 per pair (key-value 6)
    # worker 0 from position 0: 1 piece of 3 pairs, 2 of 1; worker 1 from 10: 1 piece of 4
    two_workers = [2, 0, 2, 3, 1, 1, 2, 10, 1, 4, 1]
    assert compare_and_swap_cycles(two_workers, False) == max(10 + 8 + 9 + 20, 10 + 4 + 3 + 16)
    assert compare_and_swap_cycles([1, 0, 1, 3, 2], True) == 10 + 4 + 6 + 36


def test_errors():
    device = small_device()
    g = popsim.Graph(device)
    t = g.add_variable(FLOAT, (4, 6), "t")
    prog = Sequence()
    with pytest.raises(poputil.PoplibsError, match=r"popops.sort: dim must be a dimension of the tensor tensor 't' "
                                                   r"\(FLOAT, shape \(4, 6\)\) \(0 to 1\), found 2"):
        popops.sort(g, t, 2, prog)
    with pytest.raises(poputil.PoplibsError, match=r"keys tensor 't' .* and values tensor 'w' \(FLOAT, shape "
                                                   r"\(4, 5\)\) must have the same shape"):
        popops.sort_key_value(g, t, g.add_variable(FLOAT, (4, 5), "w"), 1, prog)
    with pytest.raises(poputil.PoplibsError, match="tensor 'x' belongs to another graph"):
        popops.sort(g, popsim.Graph(device).add_variable(FLOAT, (3,), "x"), 0, prog)
    with pytest.raises(poputil.PoplibsError, match=r"k=7 is larger than the innermost dimension of tensor 't'.*\(6\)"):
        popops.top_k_with_permutation(g, prog, t, popops.TopKParams(7))
    with pytest.raises(poputil.PoplibsError, match="stable_sort=True is not supported"):
        popops.TopKParams(2, stable_sort=True)
    with pytest.raises(poputil.PoplibsError, match="must be one of FLOAT, HALF, INT, UNSIGNED_INT"):
        popops.sort(g, g.add_variable(popsim.BOOL, (3,), "b"), 0, prog)


@pytest.mark.parametrize("kw", [{"largest": np.zeros(2)}, {"largest": "yes"}, {"stable_sort": np.zeros(2)}])
def test_top_k_flags_are_true_or_false(kw):
    """An array was a ValueError (its truth value is ambiguous); "yes" was taken as True."""
    with pytest.raises(poputil.PoplibsError, match=f"{next(iter(kw))} must be True or False"):
        popops.TopKParams(2, **kw)


@settings(max_examples=10, deadline=None)
@given(sort_cases())
def test_sort_in_place_and_sort_key_value_in_place_against_numpy(case):
    """PopLibs' sortInPlace and sortKeyValueInPlace: ``t`` and the keys end up as
    np.sort's; with distinct keys the values as argsort permutes them."""
    shape, dim, seed = case
    device = small_device()
    g = popsim.Graph(device)
    rng = np.random.default_rng(seed)
    tensors = {}
    for name, dtype in (("t", INT), ("k", FLOAT), ("v", UNSIGNED_INT)):
        tensors[name] = g.add_variable(dtype, shape, name)
        g.set_tile_mapping(tensors[name], scattered_mapping(tensors[name].num_elements(), 4, rng))
    t, k, v = tensors["t"], tensors["k"], tensors["v"]
    prog = Sequence()
    popops.sort_in_place(g, t, dim, prog)
    popops.sort_key_value_in_place(g, k, v, dim, prog, "kv")
    x = rng.integers(-5, 5, shape).astype(np.int32)  # repeats
    keys = (rng.permutation(np.prod(shape)).reshape(shape) - 7.5).astype(np.float32)  # distinct keys
    vals = rng.integers(0, 1000, shape).astype(np.uint32)
    _, (got_t, got_k, got_v) = run(g, device, prog, [t, k, v], {t: x, k: keys, v: vals})
    np.testing.assert_array_equal(got_t, np.sort(x, axis=dim))
    np.testing.assert_array_equal(got_k, np.sort(keys, axis=dim))
    np.testing.assert_array_equal(got_v, np.take_along_axis(vals, np.argsort(keys, axis=dim), axis=dim))


def test_sort_key_value_in_place_with_equal_keys():
    """Equal keys: PopLibs' sort is not stable, so only the keys' order and each row's
    (key, value) pairs are defined."""
    device = small_device()
    g = popsim.Graph(device)
    rng = np.random.default_rng(21)
    k, v = g.add_variable(HALF, (4, 29), "k"), g.add_variable(INT, (4, 29), "v")
    for t in (k, v):
        g.set_tile_mapping(t, scattered_mapping(t.num_elements(), 4, rng))
    prog = Sequence()
    popops.sort_key_value_in_place(g, k.transpose(), v.transpose(), 0, prog)  # views, sorted along dim 0
    keys = rng.integers(0, 4, (4, 29)).astype(np.float16)
    vals = np.arange(4 * 29, dtype=np.int32).reshape(4, 29)
    _, (got_k, got_v) = run(g, device, prog, [k, v], {k: keys, v: vals})
    np.testing.assert_array_equal(got_k, np.sort(keys, axis=1))
    for row in range(4):
        assert sorted(zip(got_k[row], got_v[row])) == sorted(zip(keys[row], vals[row]))


def test_in_place_errors():
    device = small_device()
    g = popsim.Graph(device)
    t = g.add_variable(FLOAT, (4, 6), "t")
    w = g.add_variable(INT, (4, 5), "w")
    prog = Sequence()
    with pytest.raises(poputil.PoplibsError, match=r"popops.sort_in_place: dim must be a dimension of the tensor "
                                                   r"tensor 't' \(FLOAT, shape \(4, 6\)\) \(0 to 1\), found 3"):
        popops.sort_in_place(g, t, 3, prog)
    with pytest.raises(poputil.PoplibsError, match=r"sort_key_value_in_place: the keys tensor 't' .* and values "
                                                   r"tensor 'w' \(INT, shape \(4, 5\)\) must have the same shape"):
        popops.sort_key_value_in_place(g, t, w, 1, prog)
    with pytest.raises(poputil.PoplibsError, match=r"sort_key_value_in_place: dim must be a dimension of the keys "
                                                   r"tensor 't' \(FLOAT, shape \(4,\)\) \(0 to 0\), found 1"):
        popops.sort_key_value_in_place(g, t[:, :1].reshape((4,)), w[:, 0], 1, prog)
    c = g.add_constant(FLOAT, (4, 6), np.zeros((4, 6)), "c")
    with pytest.raises(poputil.PoplibsError, match=r"sort_in_place: the tensor .*'c'.* is sorted in place, so it "
                                                   r"must not hold constants"):
        popops.sort_in_place(g, c, 0, prog)
    with pytest.raises(poputil.PoplibsError, match="must not refer to any element twice"):
        popops.sort_in_place(g, t[0].broadcast(3, 0), 0, prog)
    with pytest.raises(poputil.PoplibsError, match=r"keys tensor 't' .* and values .* share elements"):
        popops.sort_key_value_in_place(g, t, t.reverse(1), 1, prog)
    with pytest.raises(poputil.PoplibsError, match="must be one of FLOAT, HALF, INT, UNSIGNED_INT"):
        popops.sort_key_value_in_place(g, t, g.add_variable(popsim.BOOL, (4, 6), "b"), 1, prog)
    with pytest.raises(popsim.TypeError, match="name must be a str"):
        popops.sort_in_place(g, t, 0, prog, name=3)
    assert len(prog) == 0  # nothing was added by the calls that failed
