"""Tensor views: every element of API.md's Tensor section, checked against numpy.

A view's element ids (``t._element_ids()``) are global element ids in row-major view
order; the first variable of a fresh graph has base 0, so for views of it the ids are
flat indices into the variable and a view must equal ``np.arange(n).reshape(shape)[...]``
with the same numpy operation applied.
"""
import builtins
import itertools

import numpy as np
import pytest

import popsim
from popsim import FLOAT, HALF, INT
from popsim.program import Copy, Sequence


# -- helpers -----------------------------------------------------------------------------------

def ids(t):
    """The view's global element ids, in its shape."""
    flat = t._element_ids()
    assert flat.dtype == np.int64
    assert flat.size == t.num_elements()
    return flat.reshape(t.shape)


def check(t, expected):
    """The view has numpy's shape and numpy's elements."""
    expected = np.asarray(expected)
    assert t.shape == expected.shape, (t.shape, expected.shape)
    assert t.rank == expected.ndim
    assert t.num_elements() == expected.size
    np.testing.assert_array_equal(ids(t), expected)


@pytest.fixture
def graph(device):
    return popsim.Graph(device)


@pytest.fixture
def v34(graph):
    """A (3, 4) FLOAT variable, the first of its graph (ids 0..11), with its numpy twin."""
    return graph.add_variable(FLOAT, (3, 4), "v34"), np.arange(12).reshape(3, 4)


@pytest.fixture
def v234(graph):
    """A (2, 3, 4) INT variable, the first of its graph (ids 0..23), with its numpy twin."""
    return graph.add_variable(INT, (2, 3, 4), "v234"), np.arange(24).reshape(2, 3, 4)


# -- queries -----------------------------------------------------------------------------------

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
    s = graph.add_variable(FLOAT, (), "s")
    with pytest.raises(TypeError):
        len(s)
    with pytest.raises(TypeError):
        list(s)


def test_repr_mentions_name_and_shape(v34):
    t, _ = v34
    r = repr(t[1:])
    assert "v34" in r and "2" in r and "4" in r


# -- numpy basic indexing --------------------------------------------------------------------

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


# -- index / slice / slices ---------------------------------------------------------------------

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


# -- reshape / flatten ----------------------------------------------------------------------------

RESHAPES = [(24,), (4, 6), (2, 12), (6, 2, 2), (1, 24), (24, 1), (2, 3, 4), (4, 3, 2), (1, 2, 1, 12, 1),
            (-1,), (4, -1), (-1, 3, 2), (2, -1, 1)]


@pytest.mark.parametrize("shape", RESHAPES)
def test_reshape_matches_numpy(v234, shape):
    t, a = v234
    check(t.reshape(shape), a.reshape(shape))
    check(t.reshape(list(shape)), a.reshape(shape))


@pytest.mark.parametrize("shape", RESHAPES)
def test_reshape_of_non_contiguous_views(v234, shape):
    t, a = v234
    # a transposed view, a reversed one, and a strided one
    check(t.dim_shuffle([2, 0, 1]).reshape(shape), a.transpose(2, 0, 1).reshape(shape))
    check(t[::-1, :, ::-1].reshape(shape), a[::-1, :, ::-1].reshape(shape))
    check(t.upsample(2, 1)[:, ::2].reshape(shape), a.repeat(2, 1)[:, ::2].reshape(shape))


def test_reshape_scalar_and_int_argument(v34):
    t, a = v34
    check(t.reshape(12), a.reshape(12))
    s = t[1, 1]
    check(s.reshape((1, 1)), a[1, 1].reshape(1, 1))
    check(s.reshape(()), a[1, 1].reshape(()))
    check(t[1:2, 2:3].reshape(()), a[1:2, 2:3].reshape(()))


def test_reshape_empty(graph):
    e = graph.add_variable(FLOAT, (0, 3), "e")
    a = np.arange(0).reshape(0, 3)
    check(e.reshape((3, 0)), a.reshape(3, 0))
    check(e.reshape((-1, 3)), a.reshape(-1, 3))
    check(e.reshape((0,)), a.reshape(0))


@pytest.mark.parametrize("shape", [(5,), (5, -1), (-1, -1), (25,), (-1, 7), (2, -2, -6)])
def test_reshape_bad_shape_raises(v234, shape):
    t, _ = v234
    with pytest.raises(popsim.TensorCreationError):
        t.reshape(shape)


def test_reshape_partial(v234):
    t, a = v234
    check(t.reshape_partial(1, 3, [12]), a.reshape(2, 12))
    check(t.reshape_partial(0, 2, [3, 2]), a.reshape(3, 2, 4))
    check(t.reshape_partial(1, 1, [1]), a.reshape(2, 1, 3, 4))
    check(t.reshape_partial(2, 3, [2, 2]), a.reshape(2, 3, 2, 2))
    with pytest.raises(builtins.IndexError):
        t.reshape_partial(2, 1, [1])


def test_flatten(v234):
    t, a = v234
    check(t.flatten(), a.reshape(-1))
    check(t[:, ::-1].flatten(), a[:, ::-1].reshape(-1))
    check(t.flatten(0, 2), a.reshape(6, 4))
    check(t.flatten(1, 3), a.reshape(2, 12))
    check(t.flatten(0, 3), a.reshape(24))
    check(t.flatten(1, 2), a)
    check(t.flatten(1), a.reshape(2, 12))
    check(t.dim_shuffle([1, 2, 0]).flatten(0, 2), a.transpose(1, 2, 0).reshape(12, 2))
    s = t[0, 0, 0]
    check(s.flatten(), a[0, 0, 0].reshape(1))
    for b, e in [(1, 1), (2, 1), (0, 4), (-1, 2)]:
        with pytest.raises(builtins.IndexError):
            t.flatten(b, e)


# -- dimension permutations ------------------------------------------------------------------------

def test_transpose(v34):
    t, a = v34
    check(t.transpose(), a.T)
    check(t.transpose().transpose(), a)
    check(t[::2, 1:].transpose(), a[::2, 1:].T)


def test_transpose_needs_rank_2(v234):
    t, _ = v234
    with pytest.raises(popsim.TensorCreationError):
        t.transpose()
    with pytest.raises(popsim.TensorCreationError):
        t[0, 0].transpose()


@pytest.mark.parametrize("perm", list(itertools.permutations(range(3))))
def test_dim_shuffle(v234, perm):
    t, a = v234
    check(t.dim_shuffle(perm), a.transpose(perm))
    check(t.dim_shuffle(list(perm)), a.transpose(perm))
    check(t.broadcast(2, 2).dim_shuffle(perm), np.concatenate([a, a], 2).transpose(perm))


@pytest.mark.parametrize("perm", [[0, 1], [0, 1, 1], [0, 1, 3], [1, 2, 0, 3], []])
def test_dim_shuffle_bad_permutation_raises(v234, perm):
    t, _ = v234
    with pytest.raises(builtins.IndexError):
        t.dim_shuffle(perm)


def test_dim_shuffle_partial(graph):
    t = graph.add_variable(FLOAT, (2, 3, 4, 5), "t")
    a = np.arange(120).reshape(2, 3, 4, 5)
    for src, dst in [([0], [3]), ([3], [0]), ([0, 1], [2, 3]), ([1, 3], [0, 1]), ([2, 0], [0, 2]),
                     ([0, 1, 2, 3], [3, 2, 1, 0]), ([], [])]:
        check(t.dim_shuffle_partial(src, dst), np.moveaxis(a, src, dst))
    with pytest.raises(builtins.IndexError):
        t.dim_shuffle_partial([0, 0], [1, 2])
    with pytest.raises(builtins.IndexError):
        t.dim_shuffle_partial([0], [4])


@pytest.mark.parametrize("dim,new_pos", list(itertools.product(range(3), range(3))))
def test_dim_roll_is_moveaxis(v234, dim, new_pos):
    t, a = v234
    check(t.dim_roll(dim, new_pos), np.moveaxis(a, dim, new_pos))


def test_dim_roll_default_and_errors(v234):
    t, a = v234
    check(t.dim_roll(2), np.moveaxis(a, 2, 0))
    check(t.dim_roll(1), np.moveaxis(a, 1, 0))
    with pytest.raises(builtins.IndexError):
        t.dim_roll(3)
    with pytest.raises(builtins.IndexError):
        t.dim_roll(0, 3)


# -- expand / squeeze -------------------------------------------------------------------------------

@pytest.mark.parametrize("d", [0, 1, 2, 3])
def test_expand_single_dim_is_expand_dims(v234, d):
    t, a = v234
    check(t.expand([d]), np.expand_dims(a, d))


def test_expand_several_dims_inserts_before_source_dims(v34):
    t, a = v34
    check(t.expand([0, 1]), a.reshape(1, 3, 1, 4))
    assert t.expand([0, 1]).shape == (1, 3, 1, 4)
    check(t.expand([0, 0]), a.reshape(1, 1, 3, 4))
    check(t.expand([1, 1, 1]), a.reshape(3, 1, 1, 1, 4))
    check(t.expand([2, 0]), a.reshape(1, 3, 4, 1))
    check(t.expand([0, 1, 2]), a.reshape(1, 3, 1, 4, 1))
    check(t.expand([]), a)
    # the (2, 3) example from the contract
    u = t[:2, :3]
    assert u.expand([0, 1]).shape == (1, 2, 1, 3)
    assert u.expand([0, 0]).shape == (1, 1, 2, 3)
    check(u.expand([0, 1]), a[:2, :3].reshape(1, 2, 1, 3))


def test_expand_of_views_with_explicit_ids(v34):
    t, a = v34
    c = popsim.concat([t[2], t[0]])  # not strided
    ac = np.concatenate([a[2], a[0]])
    check(c.expand([0]), ac[None])
    check(c.expand([1]), ac[:, None])
    check(c.expand([1, 0, 1]), ac.reshape(1, 8, 1, 1))


def test_expand_rank0(v34):
    t, a = v34
    s = t[2, 3]
    check(s.expand([0]), a[2, 3].reshape(1))
    check(s.expand([0, 0]), a[2, 3].reshape(1, 1))


def test_expand_out_of_range_raises(v34):
    t, _ = v34
    with pytest.raises(builtins.IndexError):
        t.expand([3])
    with pytest.raises(builtins.IndexError):
        t.expand([-1])


def test_squeeze(graph):
    t = graph.add_variable(FLOAT, (1, 3, 1, 4, 1), "t")
    a = np.arange(12).reshape(1, 3, 1, 4, 1)
    for dims in ([0], [2], [4], [0, 2], [4, 0], [0, 2, 4]):
        check(t.squeeze(dims), np.squeeze(a, tuple(dims)))
    check(t.squeeze(), np.squeeze(a))
    check(t.squeeze([]), a)
    check(t[:, ::-1].squeeze([0, 4]), np.squeeze(a[:, ::-1], (0, 4)))
    with pytest.raises(popsim.TensorCreationError):
        t.squeeze([1])
    with pytest.raises(builtins.IndexError):
        t.squeeze([5])


def test_squeeze_undoes_expand(v234):
    t, a = v234
    for d in range(4):
        check(t.expand([d]).squeeze([d]), a)


def test_squeeze_of_views_with_explicit_ids(v34):
    t, a = v34
    c = popsim.concat([t[:, 3:], t[:, :1]], 1)[1:2]
    ac = np.concatenate([a[:, 3:], a[:, :1]], 1)[1:2]
    check(c.squeeze([0]), np.squeeze(ac, 0))
    check(c.squeeze(), np.squeeze(ac))


# -- broadcast / upsample / subsample / reverse ---------------------------------------------------------

@pytest.mark.parametrize("n", [0, 1, 2, 3])
@pytest.mark.parametrize("dim", [0, 1, 2])
def test_broadcast_is_concatenate_of_copies(v234, n, dim):
    t, a = v234
    check(t.broadcast(n, dim), np.concatenate([a] * n, dim) if n else np.take(a, [], dim))


@pytest.mark.parametrize("n", [0, 1, 3])
def test_broadcast_of_singleton_dim(v34, n):
    t, a = v34
    check(t[1:2].broadcast(n, 0), np.concatenate([a[1:2]] * n, 0) if n else a[1:1])
    check(t[None].broadcast(n, 0), np.concatenate([a[None]] * n, 0) if n else a[None][:0])
    check(t[:, 2:3].broadcast(n, 1), np.concatenate([a[:, 2:3]] * n, 1) if n else a[:, :0])


def test_broadcast_errors(v34):
    t, _ = v34
    with pytest.raises(popsim.TensorCreationError):
        t.broadcast(-1, 0)
    with pytest.raises(builtins.IndexError):
        t.broadcast(2, 2)


@pytest.mark.parametrize("scale", [0, 1, 2, 3])
@pytest.mark.parametrize("dim", [0, 1, 2])
def test_upsample_is_repeat(v234, scale, dim):
    t, a = v234
    check(t.upsample(scale, dim), np.repeat(a, scale, dim))
    check(t[:, ::-1].upsample(scale, dim), np.repeat(a[:, ::-1], scale, dim))


def test_upsample_example_from_poplar(graph):
    t = graph.add_variable(FLOAT, (2, 3), "t")
    check(t.upsample(2, 1), [[0, 0, 1, 1, 2, 2], [3, 3, 4, 4, 5, 5]])
    check(t[:1].upsample(3, 0), [[0, 1, 2]] * 3)
    with pytest.raises(popsim.TensorCreationError):
        t.upsample(-1, 0)
    with pytest.raises(builtins.IndexError):
        t.upsample(2, 2)


@pytest.mark.parametrize("stride", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("dim", [0, 1, 2])
def test_subsample_every_stride_th_from_0(v234, stride, dim):
    t, a = v234
    key = [slice(None)] * 3
    key[dim] = slice(0, None, stride)
    check(t.subsample(stride, dim), a[tuple(key)])
    check(t.reverse(dim).subsample(stride, dim), np.flip(a, dim)[tuple(key)])


def test_subsample_errors(v34):
    t, _ = v34
    with pytest.raises(popsim.TensorCreationError):
        t.subsample(0, 0)
    with pytest.raises(builtins.IndexError):
        t.subsample(1, 2)


@pytest.mark.parametrize("dim", [0, 1, 2])
def test_reverse(v234, dim):
    t, a = v234
    check(t.reverse(dim), np.flip(a, dim))
    check(t.reverse(dim).reverse(dim), a)
    check(t.broadcast(2, 1).reverse(dim), np.flip(np.concatenate([a, a], 1), dim))


def test_reverse_errors(v34):
    t, _ = v34
    with pytest.raises(builtins.IndexError):
        t.reverse(2)


# -- reinterpret -------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype, expected", [(INT, INT), (popsim.UNSIGNED_INT, popsim.UNSIGNED_INT),
                                             (FLOAT, FLOAT), (np.int32, INT), (np.uint32, popsim.UNSIGNED_INT),
                                             (float, FLOAT), ("INT", INT)])
def test_reinterpret_same_size(v34, dtype, expected):
    t, a = v34
    r = t[:, ::-1].reinterpret(dtype)
    assert r.dtype is expected
    check(r, a[:, ::-1])
    assert t.dtype is FLOAT  # the source view is unchanged


def test_reinterpret_two_byte_and_one_byte_types(graph):
    h = graph.add_variable(HALF, (4,), "h")
    check(h.reinterpret(popsim.SHORT), np.arange(4))
    assert h.reinterpret(popsim.UNSIGNED_SHORT).dtype is popsim.UNSIGNED_SHORT
    c = graph.add_variable(popsim.UNSIGNED_CHAR, (3,), "c")
    r = c.reinterpret(popsim.CHAR)
    assert r.dtype is popsim.CHAR
    check(r, np.arange(4, 7))
    assert c.reinterpret(popsim.BOOL).dtype is popsim.BOOL


def test_reinterpret_of_views_with_explicit_ids(v34):
    t, a = v34
    c = popsim.concat([t[2], t[0]]).reinterpret(INT)
    assert c.dtype is INT
    check(c, np.concatenate([a[2], a[0]]))


@pytest.mark.parametrize("dtype", [HALF, popsim.LONGLONG, popsim.CHAR, popsim.BOOL, np.int16])
def test_reinterpret_different_size_raises(v34, dtype):
    t, _ = v34
    with pytest.raises(popsim.TensorCreationError):
        t.reinterpret(dtype)


def test_reinterpret_to_a_non_type_raises(v34):
    t, _ = v34
    with pytest.raises(TypeError):
        t.reinterpret(np.float64)  # no popsim type


# -- concat / append ---------------------------------------------------------------------------------

@pytest.mark.parametrize("dim", [0, 1, 2])
def test_concat_pieces_of_one_variable(v234, dim):
    t, a = v234
    n = a.shape[dim]
    cut = n // 2
    lo, hi = t.slice(0, cut, dim), t.slice(cut, n, dim)
    check(popsim.concat([lo, hi], dim), a)
    check(popsim.concat([hi, lo], dim), np.concatenate([np.take(a, range(cut, n), dim),
                                                        np.take(a, range(cut), dim)], dim))
    check(popsim.concat([t, t.reverse(dim), t], dim), np.concatenate([a, np.flip(a, dim), a], dim))


def test_concat_default_dim_and_single_tensor(v34):
    t, a = v34
    check(popsim.concat([t[1:], t[:1]]), np.concatenate([a[1:], a[:1]]))
    check(popsim.concat([t[:, ::2]], 1), a[:, ::2])
    check(popsim.concat((t[0], t[2])), np.concatenate([a[0], a[2]]))


def test_concat_of_two_variables(graph):
    a_t = graph.add_variable(FLOAT, (2, 3), "a")
    b_t = graph.add_variable(FLOAT, (4, 3), "b")
    a = np.arange(6).reshape(2, 3)
    b = np.arange(6, 18).reshape(4, 3)  # the second variable's ids start after the first's
    check(b_t, b)
    check(popsim.concat([a_t, b_t]), np.concatenate([a, b]))
    check(popsim.concat([b_t[::-1], a_t], 0), np.concatenate([b[::-1], a]))
    check(popsim.concat([a_t.transpose(), b_t.transpose()], 1), np.concatenate([a.T, b.T], 1))
    check(popsim.concat([a_t[:, 1:], b_t[1:3, :2], a_t[:, :2]], 0),
          np.concatenate([a[:, 1:], b[1:3, :2], a[:, :2]]))


def test_concat_of_adjacent_variables_is_not_merged_into_one_run(graph):
    a_t = graph.add_variable(FLOAT, (3,), "a")
    b_t = graph.add_variable(FLOAT, (3,), "b")
    c = popsim.concat([a_t, b_t])
    check(c, np.arange(6))
    firsts, lengths = c._runs()
    np.testing.assert_array_equal(firsts, [0, 3])
    np.testing.assert_array_equal(lengths, [3, 3])
    assert not c.is_contiguous()
    assert c[:3].is_contiguous() and c[3:].is_contiguous()


def test_concat_errors(graph):
    a = graph.add_variable(FLOAT, (2, 3), "a")
    b = graph.add_variable(FLOAT, (2, 4), "b")
    i = graph.add_variable(INT, (2, 3), "i")
    with pytest.raises(popsim.TensorCreationError):
        popsim.concat([a, b], 0)
    with pytest.raises(popsim.TensorCreationError):
        popsim.concat([a, i], 0)
    with pytest.raises(popsim.TensorCreationError):
        popsim.concat([a, a[0]], 0)
    with pytest.raises(popsim.TensorCreationError):
        popsim.concat([])
    with pytest.raises(builtins.IndexError):
        popsim.concat([a, a], 2)
    other = popsim.Graph(popsim.IPUModel().create_device()).add_variable(FLOAT, (2, 3), "o")
    with pytest.raises(popsim.TensorCreationError):
        popsim.concat([a, other])
    # a reinterpreted view concatenates with views of its new type
    check(popsim.concat([i, a.reinterpret(INT)]), np.concatenate([np.arange(14, 20).reshape(2, 3),
                                                                  np.arange(6).reshape(2, 3)]))


@pytest.mark.parametrize("dim", [0, 1])
def test_append(v34, dim):
    t, a = v34
    row = t[2] if dim == 0 else t[:, 1]
    arow = a[2] if dim == 0 else a[:, 1]
    check(popsim.append(t, row, dim), np.concatenate([a, np.expand_dims(arow, dim)], dim))
    check(popsim.append(t[:0] if dim == 0 else t[:, :0], row, dim), np.expand_dims(arow, dim))


def test_append_default_dim_and_errors(v34):
    t, a = v34
    check(popsim.append(t, t[0]), np.concatenate([a, a[:1]]))
    with pytest.raises(popsim.TensorCreationError):
        popsim.append(t, t)
    with pytest.raises(popsim.TensorCreationError):
        popsim.append(t, t[0], 1)  # t[0] has 4 elements, a column needs 3


# -- is_contiguous / contains_aliases / intersects_with / same_elements -----------------------------------

def test_is_contiguous(v34, graph):
    t, _ = v34
    assert t.is_contiguous()
    assert t[1].is_contiguous() and t[1:].is_contiguous() and t[1, 1:3].is_contiguous()
    assert t.flatten()[3:9].is_contiguous()
    assert t[1, 2].is_contiguous()                  # one element
    assert t[:, 1:2][1:2].is_contiguous()
    assert t[None].is_contiguous() and t.expand([1, 2]).is_contiguous()
    assert t[1:2].broadcast(1, 0).is_contiguous()
    assert popsim.concat([t[0], t[1]]).is_contiguous()  # adjacent pieces join
    assert popsim.concat([t[0:1], t[1:3]]).is_contiguous()
    assert not t[:, 2].is_contiguous()
    assert not t[:, :2].is_contiguous()
    assert not t.transpose().is_contiguous()
    assert not t.reverse(1).is_contiguous()
    assert not t[::2].is_contiguous()
    assert not t[1:2].broadcast(2, 0).is_contiguous()
    assert not t.upsample(2, 1).is_contiguous()
    assert not popsim.concat([t[1], t[0]]).is_contiguous()
    assert not popsim.concat([t[0], t[2]]).is_contiguous()
    assert t.transpose().transpose().is_contiguous()
    assert t.reinterpret(INT).is_contiguous()


def test_is_contiguous_of_empty_views(v34):
    t, _ = v34
    assert t[1:1].is_contiguous()
    assert t[:0].broadcast(2, 0).is_contiguous()  # an empty view with explicit ids


def test_is_contiguous_of_empty_strided_views(v34):
    t, _ = v34
    assert t[0:0:2].is_contiguous()  # shape (0,) stride 2
    assert t[:, 2:2].transpose().is_contiguous()


def test_contains_aliases(v34):
    t, _ = v34
    assert not t.contains_aliases()
    for view in (t.transpose(), t[::-1, ::2], t[None], t.expand([0, 2]), t.reshape((2, 6)), t.broadcast(1, 0),
                 t[1:2].broadcast(1, 0), t.upsample(1, 1), popsim.concat([t[0], t[2]]), t[1, 1], t[1:2][None],
                 t.broadcast(0, 1), t.upsample(0, 0)):
        assert not view.contains_aliases(), view
    for view in (t.broadcast(2, 0), t[1:2].broadcast(2, 0), t.upsample(2, 1), popsim.concat([t, t]),
                 popsim.concat([t[0], t[::-1, 0]]), t[:, :1].broadcast(3, 1), t[None].broadcast(2, 0),
                 popsim.concat([t[1:], t[:2]])):
        assert view.contains_aliases(), view


@pytest.mark.parametrize("shape", [
    (0,), (0, 2), (1, 0), (0, 1), (0, 0), (0, 3, 2),
    (2, 0), (3, 0, 2),
    (2, 3, 0),
])
def test_empty_variables_have_no_aliases_and_are_contiguous(graph, shape):
    v = graph.add_variable(FLOAT, shape, "e")
    assert v.num_elements() == 0
    assert v.is_contiguous()
    assert not v.contains_aliases()


def test_contains_aliases_of_empty_views(v34):
    t, _ = v34
    assert not t[:0].reshape((2, 0)).contains_aliases()


def test_contains_aliases_of_empty_broadcast(v34):
    t, _ = v34
    e = t[:, 0:0][0:1].broadcast(3, 0)  # shape (3, 0): no elements
    assert e.num_elements() == 0
    assert not e.contains_aliases()


def test_set_initial_value_of_an_empty_2d_variable(graph):
    e = graph.add_variable(FLOAT, (2, 0), "e")
    graph.set_tile_mapping(e, 0)
    graph.set_initial_value(e, np.zeros((2, 0), np.float32))  # raises TensorCreationError (aliases)


def test_host_write_of_an_empty_2d_variable(graph):
    e = graph.add_variable(FLOAT, (2, 0), "e")
    graph.create_host_write("e", e)  # raises TensorCreationError (aliases)


def test_copy_into_an_empty_2d_view(graph):
    s = graph.add_variable(FLOAT, (4,), "s")
    Copy(s[0:0], s[2:2].reshape((3, 0)))  # raises ControlProgramError (aliases)


def test_intersects_with(graph):
    t = graph.add_variable(FLOAT, (4, 4), "t")
    u = graph.add_variable(FLOAT, (4, 4), "u")
    assert t.intersects_with(t)
    assert t[1].intersects_with(t[:, 2]) and t[:, 2].intersects_with(t[1])
    assert not t[1].intersects_with(t[2])
    assert not t[::2].intersects_with(t[1::2])
    assert not t[:, ::2].intersects_with(t[:, 1::2])
    assert t[:, ::2].intersects_with(t[1:2, 1:3])
    assert t.reverse(0).intersects_with(t[3])
    assert not t.intersects_with(u)
    assert not popsim.concat([t[0], u[0]]).intersects_with(popsim.concat([t[1], u[1]]))
    assert popsim.concat([t[0], u[0]]).intersects_with(u[:, 3])
    assert t[0, 0:1].broadcast(5, 0).intersects_with(t.flatten()[0:1])
    assert not t[0, 1:2].broadcast(5, 0).intersects_with(t.flatten()[0:1])
    assert not t[0:0].intersects_with(t)
    assert not t.intersects_with(t[:, 0:0])
    other = popsim.Graph(popsim.IPUModel().create_device()).add_variable(FLOAT, (4, 4), "o")
    assert not t.intersects_with(other)  # different graphs share nothing


def test_same_elements(v34):
    t, _ = v34
    assert t.same_elements(t)
    assert t.transpose().transpose().same_elements(t)
    assert t.reshape((12,)).reshape((3, 4)).same_elements(t)
    assert popsim.concat([t[:1], t[1:]]).same_elements(t)
    assert popsim.concat([t[:, 2:], t[:, :2]], 1).slice(2, 4, 1).same_elements(t[:, :2])
    assert not t.same_elements(t.reshape((4, 3)))   # same order, different shape
    assert not t.same_elements(t.reverse(0))
    assert not t[0].same_elements(t[1])


def test_contains_constant(graph):
    v = graph.add_variable(FLOAT, (3,), "v")
    c = graph.add_constant(FLOAT, (3,), [1, 2, 3], "c")
    assert not v.contains_constant()
    assert c[1:].contains_constant()
    assert popsim.concat([v, c]).contains_constant()
    assert not popsim.concat([v, c])[:3].contains_constant()


# -- _runs (used by the lowering) ------------------------------------------------------------------------------

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


# -- views never create state --------------------------------------------------------------------------------

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


# -- a few views through the engine: what the host reads is numpy's view ------------------------------

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
