"""Tensor views that change shape, checked against numpy: reshape, flatten, transpose,
dim_shuffle, dim_roll, expand, squeeze, broadcast, upsample, subsample, reverse,
reinterpret (see test_tensor.py for how element ids serve as the reference)."""
import builtins
import itertools

import numpy as np
import pytest

import popsim
from popsim import FLOAT, HALF, INT

from tensor_helpers import check


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
