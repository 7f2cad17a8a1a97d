"""popsim.concat in both of Poplar's forms: concat([a, b, ...], dim) and concat(a, b, dim)."""
import builtins
import re

import numpy as np
import pytest

import popsim
from popsim import FLOAT, INT
from popsim.program import Copy

from graph_helpers import mapped
from tensor_helpers import check


def constant(graph, values, name):
    values = np.asarray(values, np.float32)
    c = graph.add_constant(FLOAT, values.shape, values, name)
    graph.set_tile_mapping(c, 0)
    return c


def read(graph, device, run_and_read, view):
    out = graph.add_variable(view.dtype, view.shape, "out")
    graph.set_tile_mapping(out, 1)
    return run_and_read(graph, device, Copy(view, out), [out])[0]


def test_the_advanced_example_two_tensor_form(small_device, run_and_read):
    # Graphcore's advanced example: concat(a.reshape({4,1}), b.reshape({4,1}), 1) -> {4,2}.
    g = popsim.Graph(small_device)
    a_vals, b_vals = np.arange(4), 10 + np.arange(4)
    a, b = constant(g, a_vals, "a"), constant(g, b_vals, "b")
    joined = popsim.concat(a.reshape([4, 1]), b.reshape([4, 1]), 1)
    assert joined.shape == (4, 2)
    expected = np.concatenate([a_vals.reshape(4, 1), b_vals.reshape(4, 1)], 1)
    np.testing.assert_array_equal(read(g, small_device, run_and_read, joined), expected)


@pytest.mark.parametrize("call", [
    lambda a, b: popsim.concat(a, b),
    lambda a, b: popsim.concat(a, b, 0),
    lambda a, b: popsim.concat(a, b, dim=0),
    lambda a, b: popsim.concat([a, b]),
    lambda a, b: popsim.concat([a, b], 0),
    lambda a, b: popsim.concat([a, b], dim=0),
    lambda a, b: popsim.concat((a, b), np.int64(0)),
])
def test_every_spelling_joins_along_dim_0(small_device, run_and_read, call):
    g = popsim.Graph(small_device)
    a_vals, b_vals = np.arange(6).reshape(2, 3), 10 + np.arange(3).reshape(1, 3)
    joined = call(constant(g, a_vals, "a"), constant(g, b_vals, "b"))
    np.testing.assert_array_equal(read(g, small_device, run_and_read, joined), np.concatenate([a_vals, b_vals]))


def test_two_tensor_form_along_the_last_dim_of_views(small_device, run_and_read):
    g = popsim.Graph(small_device)
    m_vals = np.arange(12).reshape(3, 4)
    m = constant(g, m_vals, "m")
    joined = popsim.concat(m.transpose(), m[:, 1:3].transpose(), 0)
    expected = np.concatenate([m_vals.T, m_vals[:, 1:3].T], 0)
    np.testing.assert_array_equal(read(g, small_device, run_and_read, joined), expected)


def test_misuse_says_which_form_to_write(small_device):
    g = popsim.Graph(small_device)
    a = g.add_variable(FLOAT, [2], "a")
    with pytest.raises(popsim.TensorCreationError, match=r"concat\(a, b, dim\) joins two tensors, but the second "
                                                         r"argument is int"):
        popsim.concat(a, 1)
    with pytest.raises(popsim.TensorCreationError, match="the second must be the dimension"):
        popsim.concat([a, a], a)
    with pytest.raises(popsim.TensorCreationError, match="dim given twice"):
        popsim.concat([a, a], 0, dim=0)
    with pytest.raises(popsim.TensorCreationError, match="type INT but"):
        popsim.concat(a, g.add_variable(INT, [2], "i"))


def test_concat_type_mismatch(views_graph):
    g, t, _ = views_graph
    i = mapped(g, INT, (4,), "ints")
    with pytest.raises(popsim.TensorCreationError) as info:
        popsim.concat([t, i])
    msg = str(info.value)
    assert "'ints'" in msg and "'t'" in msg and "INT" in msg and "FLOAT" in msg


def test_concat_shape_mismatch(views_graph):
    g, t, m = views_graph
    w = mapped(g, FLOAT, (4, 3), "w")
    with pytest.raises(popsim.TensorCreationError) as info:
        popsim.concat([m, w], 0)
    msg = str(info.value)
    assert "'w'" in msg and "[4, 3]" in msg and "'m'" in msg and "[4, 4]" in msg
    popsim.concat([m, w], 1)  # fine along the differing dimension
    with pytest.raises(popsim.TensorCreationError, match=r"'t' of shape \[4\].*'m' of shape \[4, 4\]"):
        popsim.concat([m, t])
    with pytest.raises(popsim.TensorCreationError, match="at least one tensor"):
        popsim.concat([])


def test_concat_across_graphs(small_device):
    a = mapped(popsim.Graph(small_device), FLOAT, (2,), "a")
    b = mapped(popsim.Graph(small_device), FLOAT, (2,), "b")
    with pytest.raises(popsim.TensorCreationError, match="different graph"):
        popsim.concat([a, b])


def test_append_rank_mismatch(views_graph):
    _, t, m = views_graph
    with pytest.raises(popsim.TensorCreationError, match=r"append:.*'m'.*rank 0"):
        popsim.append(t, m)


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


@pytest.mark.parametrize("call, message", [
    (lambda t: popsim.concat(float("-inf"), 0), "concat takes a list of Tensors, found float -inf"),
    (lambda t: popsim.concat([t, None], 0), "concat takes Tensors, found NoneType"),
    (lambda t: popsim.append(t, [None]), "append: the second argument must be a Tensor, found list"),
    (lambda t: popsim.append(3, t), "append: the first argument must be a Tensor, found int"),
])
def test_concat_of_what_is_not_a_tensor(views_graph, call, message):
    """Was Python's TypeError ('float' object is not iterable) or AttributeError (a list
    has no rank): a popsim.TypeError naming what was found."""
    _, t, _ = views_graph
    with pytest.raises(popsim.TypeError, match=re.escape(message)):
        call(t)


def test_a_concat_too_big_to_list_is_refused(views_graph):
    _, t, m = views_graph
    huge = t[:1].broadcast(2 ** 40, 0)  # a strided view; joined with another variable it must be listed
    with pytest.raises(popsim.TensorCreationError, match="concat of 2 tensors: the view would list 1,099,511,627,780 "
                                                         "element ids"):
        popsim.concat([huge, m[0]])


def test_many_1d_views_strided_reversed_indexed_and_empty_join_in_order(graph):
    # The 1-D join lists strided pieces in one numpy pass: every kind of piece, in order.
    v = graph.add_variable(FLOAT, (40,), "v")
    w = graph.add_variable(FLOAT, (6, 5), "w")
    e = np.arange(40)
    ew = 40 + np.arange(30).reshape(6, 5)
    pieces = [v.slice(3, 9), v.slice(0, 0), v.reverse(0).slice(2, 7), w[:, 1], v.subsample(4, 0),
              popsim.concat([v.slice(30, 32), w[2, 1:3]]), w.flatten().slice(7, 8)]
    want = [e[3:9], e[:0], e[::-1][2:7], ew[:, 1], e[::4], np.r_[e[30:32], ew[2, 1:3]], ew.ravel()[7:8]]
    check(popsim.concat(pieces), np.concatenate(want))
    check(popsim.concat(pieces[::-1]), np.concatenate(want[::-1]))


def test_get_var_regions_lists_the_runs_in_view_order(views_graph):
    g = views_graph[0]
    a = g.add_variable(FLOAT, [2, 3], "a")
    b = g.add_variable(FLOAT, [4], "b")
    joined = popsim.concat([a.flatten()[4:], b[::-1], a.flatten()[:2]])
    regions = joined.get_var_regions()
    assert [(r.name, r.begin, r.end) for r in regions] == [("a", 4, 6), ("b", 3, 4), ("b", 2, 3), ("b", 1, 2),
                                                         ("b", 0, 1), ("a", 0, 2)]
    assert regions[0].var == regions[-1].var != regions[1].var
    assert [(r.begin, r.end) for r in a.get_var_regions()] == [(0, 6)]
    assert a.transpose().get_var_regions()[0][1:] == ("a", 0, 1) and len(a.transpose().get_var_regions()) == 6


def test_pieces_of_one_variable_that_continue_each_other_join_into_one_strided_view(graph):
    v = graph.add_variable(FLOAT, (40,), "v")
    w = graph.add_variable(FLOAT, (40,), "w")
    joined = popsim.concat([v.slice(0, 5), v.slice(5, 5), v.slice(5, 12), v.slice(12, 20)])
    assert joined._var is v._var and (joined._offset, joined._shape, joined._strides) == (0, (20,), (1,))
    listed = popsim.concat([v.slice(0, 5), w.slice(5, 12)])            # two variables: the ids listed
    assert listed._var is None and listed._id_array().tolist() == list(range(5)) + list(range(45, 52))
    one = popsim.concat([v.slice(0, 5), v.slice(6, 9)])               # a gap: the ids listed
    assert one._var is None and one._id_array().tolist() == [0, 1, 2, 3, 4, 6, 7, 8]
    single = listed[2:]
    assert popsim.concat([single]) is single                           # one view: itself


@pytest.mark.parametrize("seed", range(40))
def test_1d_views_of_one_variable_join_as_pair_by_pair_joining_does(graph, seed):
    """concat of 1-D strided views of one variable decides from their ids at once whether
    they are one strided view: the same view joining them pair by pair gives."""
    from popsim.concat import _try_join_strided
    rng = np.random.default_rng(seed)
    v = graph.add_variable(FLOAT, (60,), "v")
    pieces, at = [], int(rng.integers(0, 10))
    step = int(rng.choice([1, 2, -1, 3]))
    for _ in range(int(rng.integers(2, 6))):
        n = int(rng.choice([0, 1, 1, 2, 4]))
        if rng.integers(0, 6) == 0:
            at += int(rng.integers(1, 3))            # a gap: not one view
        lo, hi = (at, at + n * step) if step > 0 else (at + n * step + 1, at + 1)
        if 0 <= min(lo, hi) and max(lo, hi) <= 60:
            piece = v.slice(min(lo, hi), max(lo, hi)).subsample(abs(step), 0) if step > 0 else \
                v.slice(lo, hi).reverse(0).subsample(abs(step), 0)
            if piece.shape[0] == n:
                pieces.append(piece)
                at += n * step
    if len(pieces) < 2:
        return
    joined = pieces[0]
    for t in pieces[1:]:
        joined = _try_join_strided(joined, t, 0) if joined is not None else None
    got = popsim.concat(pieces)
    assert got._id_array().tolist() == np.concatenate([p._id_array() for p in pieces]).tolist()
    if joined is None:
        assert got._var is None
    else:
        assert (got._var, got._offset, got._shape, got._strides) == (joined._var, joined._offset, joined._shape,
                                                                      joined._strides)
