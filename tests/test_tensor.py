"""Tensor views: every element of the Tensor API (Poplar's Tensor), checked against numpy: queries,
indexing, index / slice, the runs the lowering uses, views through the engine (shape
operations: test_tensor_shape.py; concat: test_tensor_concat.py; predicates:
test_tensor_predicates.py).

A view's element ids (``t._element_ids()``) are global element ids in row-major view
order; the first variable of a fresh graph has base 0, so for views of it the ids are
flat indices into the variable and a view must equal ``np.arange(n).reshape(shape)[...]``
with the same numpy operation applied.
"""
import builtins

import numpy as np
import pytest

import popsim
from popsim import FLOAT, HALF, INT
from popsim.program import Copy, Sequence

from tensor_helpers import check


def test_shape_rank_dtype_num_elements_name(graph):
    t = graph.add_variable(FLOAT, (3, 4, 5), "alpha")
    assert t.shape == (3, 4, 5) and isinstance(t.shape, tuple)
    assert t.rank == 3
    assert t.dtype is FLOAT
    assert t.num_elements() == 60
    assert t.name == "alpha"
    s = graph.add_variable(HALF, (), "scalar")
    assert (s.shape, s.rank, s.num_elements(), s.dtype) == ((), 0, 1, HALF)
    e = graph.add_variable(INT, (2, 0, 3), "empty")
    assert (e.shape, e.rank, e.num_elements()) == ((2, 0, 3), 3, 0)


def test_views_keep_dtype_and_name(v34):
    t, _ = v34
    for view in (t[1], t[:, 2], t.transpose(), t.reshape((12,)), t.broadcast(2, 0), t.reverse(1),
                 t.expand([0]), t.upsample(2, 1), t.subsample(2, 1)):
        assert view.dtype is FLOAT
        assert view.name == "v34"


def test_name_of_a_view_over_two_variables(graph):
    a = graph.add_variable(FLOAT, (2,), "a")
    b = graph.add_variable(FLOAT, (3,), "b")
    c = popsim.concat([a, b])
    assert "a" in c.name and "b" in c.name
    assert c.name != a.name and c.name != b.name


def test_dim_len_and_iteration(v234):
    t, a = v234
    assert [t.dim(i) for i in range(3)] == [2, 3, 4]
    assert len(t) == 2 and len(t[0]) == 3 and len(t[0][0]) == 4
    rows = list(t)
    assert len(rows) == 2
    for r, ra in zip(rows, a):
        check(r, ra)
    check(popsim.concat(list(t[1]), 0), a[1].reshape(-1))
    with pytest.raises(builtins.IndexError):
        t.dim(3)


def test_len_of_rank0_raises(graph):
    """popsim.TypeError: a PopsimError, and the TypeError Python's len() raises."""
    s = graph.add_variable(FLOAT, (), "s")
    with pytest.raises(popsim.TypeError):
        len(s)
    with pytest.raises(popsim.TypeError):
        list(s)


def test_repr_mentions_name_and_shape(v34):
    t, _ = v34
    r = repr(t[1:])
    assert "v34" in r and "2" in r and "4" in r


BASIC_KEYS = [
    1, -1, -2, slice(1, 3), slice(None), slice(None, None, 2), slice(None, None, -1), slice(-2, None),
    slice(3, 0, -2), slice(5, 10), slice(2, 2), slice(-100, 100), slice(None, None, -3),
    (1, 2), (-1, -2), (0, 1, 3), (slice(None), 2), (slice(None), slice(None), 2), (1, slice(None, None, -1)),
    (Ellipsis, 2), (Ellipsis,), (1, Ellipsis), (0, Ellipsis, 1), (Ellipsis, 1, 2), (Ellipsis, 0, 1, 2),
    (None,), (None, 1), (1, None), (slice(None), None, 2), (None, Ellipsis, None), (Ellipsis, None),
    (None, None, 1, None, slice(1, None, 2)), (slice(None, None, -2), Ellipsis, slice(3, None, -3)),
    (np.int64(1), np.int32(-1)), (),
]


@pytest.mark.parametrize("key", BASIC_KEYS, ids=[repr(k) for k in BASIC_KEYS])
def test_basic_indexing_matches_numpy(v234, key):
    t, a = v234
    check(t[key], a[key])


def test_chained_indexing(v234):
    t, a = v234
    check(t[1][2], a[1][2])
    check(t[1][2][3], a[1][2][3])
    check(t[:, 1:][::-1][0], a[:, 1:][::-1][0])
    check(t[..., ::-1][:, ::2][1, :, 1:], a[..., ::-1][:, ::2][1, :, 1:])
    check(t[None][0], a[None][0])


def test_indexing_a_rank0_view(v34):
    t, a = v34
    s = t[1, 2]
    check(s, a[1, 2])
    check(s[()], a[1, 2][()])
    check(s[None], a[1, 2][None])
    check(s[...], a[1, 2][...])
    with pytest.raises(builtins.IndexError):
        s[0]


@pytest.mark.parametrize("key", [3, -4, (0, 4), (0, -5), (0, 0, 0)])
def test_index_out_of_range_raises(v34, key):
    t, _ = v34
    with pytest.raises(popsim.IndexError):
        t[key]
    with pytest.raises(builtins.IndexError):  # also a builtin IndexError
        t[key]


@pytest.mark.parametrize("key", [[0, 1], 1.0, "a", (Ellipsis, Ellipsis), True, np.array([0, 1])])
def test_unsupported_keys_raise(v34, key):
    t, _ = v34
    with pytest.raises((builtins.IndexError, TypeError)):
        t[key]


def test_indexing_views_of_views_that_are_not_strided(v34):
    # broadcast of a non-singleton dimension and concat produce views with explicit ids;
    # indexing must behave the same on them
    t, a = v34
    b = t.broadcast(2, 1)
    ab = np.concatenate([a, a], 1)
    for key in [(1,), (slice(None), -1), (slice(None, None, -1), slice(1, None, 3)), (None, Ellipsis, 0), (-2, 5)]:
        check(b[key], ab[key])
    c = popsim.concat([t[2], t[0]])
    ac = np.concatenate([a[2], a[0]])
    check(c[::-3], ac[::-3])
    check(c[None, 5], ac[None, 5])
    with pytest.raises(builtins.IndexError):
        c[8]


def test_index(v234):
    t, a = v234
    check(t.index([1, 2]), a[1][2])
    check(t.index([1, 2, 3]), a[1, 2, 3])
    check(t.index([1]), a[1])
    check(t.index([]), a)
    check(t.index(np.array([0, 1])), a[0, 1])
    with pytest.raises(builtins.IndexError):
        t.index([2])
    with pytest.raises(builtins.IndexError):
        t.index([0, 0, 0, 0])


@pytest.mark.parametrize("dim", [0, 1, 2])
def test_slice_along_each_dim(v234, dim):
    t, a = v234
    n = a.shape[dim]
    for b in range(n + 1):
        for e in range(b, n + 1):
            key = [slice(None)] * 3
            key[dim] = slice(b, e)
            check(t.slice(b, e, dim), a[tuple(key)])


def test_slice_default_dim_is_0(v234):
    t, a = v234
    check(t.slice(1, 2), a[1:2])


def test_slice_with_lists(v234):
    t, a = v234
    check(t.slice([0, 1, 1], [2, 3, 3]), a[0:2, 1:3, 1:3])
    check(t.slice((1, 0, 0), (2, 3, 4)), a[1:2])
    check(t.slice([1, 2, 3], [1, 2, 3]), a[1:1, 2:2, 3:3])
    check(t.slice(np.array([0, 0, 2]), np.array([1, 3, 4])), a[0:1, :, 2:4])
    with pytest.raises(builtins.IndexError):
        t.slice([0, 0], [1, 1])  # not one entry per dimension


@pytest.mark.parametrize("b,e,dim", [(2, 1, 0), (0, 3, 0), (-1, 1, 0), (0, 5, 2), (0, 1, 3)])
def test_slice_out_of_range_raises(v234, b, e, dim):
    t, _ = v234
    with pytest.raises(builtins.IndexError):
        t.slice(b, e, dim)


def test_slices(v34):
    t, a = v34
    parts = t.slices([(0, 1), (1, 3), (2, 2), (0, 4)], 1)
    assert len(parts) == 4
    for p, (b, e) in zip(parts, [(0, 1), (1, 3), (2, 2), (0, 4)]):
        check(p, a[:, b:e])
    parts = t.slices([(0, 2), (2, 3)])
    check(parts[0], a[0:2])
    check(parts[1], a[2:3])


@pytest.mark.parametrize("make", [
    lambda t: t, lambda t: t[:, 1:3], lambda t: t.transpose(), lambda t: t.reverse(1), lambda t: t[1:2].broadcast(3, 0),
    lambda t: t.upsample(2, 1), lambda t: popsim.concat([t[2], t[0], t[1]]), lambda t: t[::2, ::-1],
    lambda t: t[0:0], lambda t: popsim.concat([t, t]),
])
def test_runs_reconstruct_the_ids(v34, make):
    t, _ = v34
    view = make(t)
    firsts, lengths = view._runs()
    assert (lengths > 0).all()
    rebuilt = np.concatenate([np.arange(f, f + n) for f, n in zip(firsts, lengths)] or [np.empty(0, np.int64)])
    np.testing.assert_array_equal(rebuilt, view._element_ids())
    # maximal: no run continues where the previous one ended
    assert not np.any(firsts[1:] == firsts[:-1] + lengths[:-1])


def test_views_never_create_state(graph):
    t = graph.add_variable(FLOAT, (3, 4), "t")
    u = graph.add_variable(FLOAT, (4,), "u")
    n_vars = len(graph._state.table)
    next_base = graph._state.table.next_base
    views = [
        t[1], t[1][2], t[1:3], t[:, 2], t[1, 2], t[-1, ::-2], t[..., None], t.slice(0, 2, 1), t.slice([0, 1], [2, 3]),
        t.index([1, 1]), t.reshape((2, 6)), t.reshape((-1,)), t.transpose().reshape((12,)), t.flatten(),
        t.flatten(0, 2), t.transpose(), t.dim_shuffle([1, 0]), t.dim_roll(1), t.expand([0, 2]), t[None].squeeze([0]),
        t.broadcast(3, 1), t.upsample(2, 0), t.reverse(0), t.subsample(2, 1), t.reinterpret(INT),
        popsim.concat([t[0], u]), popsim.append(t, u), t.reshape_partial(0, 1, [3]), t.dim_shuffle_partial([0], [1]),
        *t.slices([(0, 1), (1, 3)]), *list(t),
    ]
    for v in views:
        v.is_contiguous(), v.contains_aliases(), v.intersects_with(t), v._element_ids(), v._runs(), v.name
    assert len(graph._state.table) == n_vars == 2
    assert graph._state.table.next_base == next_base == 16
    # and the source views are untouched
    assert t.shape == (3, 4) and t.dtype is FLOAT and u.shape == (4,)
    check(t, np.arange(12).reshape(3, 4))


def test_host_reads_of_views_match_numpy(device):
    g = popsim.Graph(device)
    t = g.add_variable(FLOAT, (3, 4), "t")
    g.set_tile_mapping(t, 0)
    g.set_tile_mapping(t[1:], 1)
    a = np.arange(12, dtype=np.float32).reshape(3, 4) * 1.5
    g.set_initial_value(t, a)
    cases = {
        "T": (t.transpose(), a.T), "rev": (t.reverse(1)[::2], np.flip(a, 1)[::2]),
        "bc": (t.broadcast(2, 1), np.concatenate([a, a], 1)), "up": (t.upsample(3, 0), np.repeat(a, 3, 0)),
        "ex": (t.expand([1, 1]), a.reshape(3, 1, 1, 4)), "cat": (popsim.concat([t[2], t[0, ::-1]]),
                                                                 np.concatenate([a[2], a[0, ::-1]])),
        "roll": (t.dim_roll(1, 0), np.moveaxis(a, 1, 0)), "int": (t.reinterpret(INT), a.view(np.int32)),
    }
    for name, (view, _) in cases.items():
        g.create_host_read(name, view)
    e = popsim.Engine(g, Sequence())
    e.load(device)
    for name, (view, expected) in cases.items():
        out = e.read_tensor(name)
        assert out.shape == expected.shape and out.dtype == expected.dtype, name
        np.testing.assert_array_equal(out, expected, err_msg=name)


def test_copy_between_views_matches_numpy(device):
    g = popsim.Graph(device)
    s = g.add_variable(FLOAT, (3, 4), "s")
    d = g.add_variable(FLOAT, (4, 3), "d")
    g.set_tile_mapping(s, 0)
    g.set_tile_mapping(d, 2)
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    g.set_initial_value(s, a)
    g.create_host_read("d", d)
    e = popsim.Engine(g, Sequence(Copy(s.transpose()[:, ::-1], d[::-1])))  # shapes (4, 3) and (4, 3)
    e.load(device)
    e.run()
    expected = np.zeros((4, 3), np.float32)
    expected[::-1] = a.T[:, ::-1]
    np.testing.assert_array_equal(e.read_tensor("d"), expected)
