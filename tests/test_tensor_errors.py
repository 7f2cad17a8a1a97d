"""Tensor view errors (popsim/tensor.py): indices, slices and dimensions out of range,
wrong element counts and sizes; each names the tensor and the valid range. An index
error is a popsim.IndexError, which is also the builtin IndexError."""
import builtins

import pytest

import popsim
from popsim import FLOAT, HALF, INT

from graph_helpers import mapped


def _index_error(fn):
    with pytest.raises(popsim.IndexError) as info:
        fn()
    assert isinstance(info.value, builtins.IndexError)
    return str(info.value)


def test_index_out_of_range(views_graph):
    _, t, m = views_graph
    msg = _index_error(lambda: t[5])
    assert "index 5" in msg and "'t'" in msg and "-4..3" in msg
    msg = _index_error(lambda: t[-5])
    assert "index -5" in msg and "-4..3" in msg
    msg = _index_error(lambda: m[:, 9])
    assert "index 9" in msg and "dimension 1" in msg and "'m'" in msg and "-4..3" in msg
    msg = _index_error(lambda: m[1][4])
    assert "index 4" in msg and "'m'" in msg
    msg = _index_error(lambda: m.index([1, 7]))
    assert "index 7" in msg and "'m'" in msg


def test_builtin_except_clause_catches_index_errors(views_graph):
    _, t, _ = views_graph
    try:
        t[5]
    except IndexError as e:  # the builtin
        assert "'t'" in str(e)
    else:
        pytest.fail("t[5] did not raise")


def test_too_many_indices(views_graph):
    _, t, m = views_graph
    msg = _index_error(lambda: t[1, 2])
    assert "too many indices" in msg and "'t'" in msg and "rank 1" in msg
    msg = _index_error(lambda: m[0, 1, 2])
    assert "3 given for rank 2" in msg and "'m'" in msg


def test_index_of_wrong_kind(views_graph):
    _, t, _ = views_graph
    msg = _index_error(lambda: t[1.5])
    assert "'t'" in msg and "float" in msg


@pytest.mark.parametrize("begin,end", [(3, 9), (3, 1), (-1, 2), (5, 5)])
def test_slice_out_of_range(views_graph, begin, end):
    _, t, _ = views_graph
    msg = _index_error(lambda: t.slice(begin, end))
    assert f"slice [{begin}, {end})" in msg
    assert "'t'" in msg
    assert "0 <= begin <= end <= 4" in msg


def test_multi_dim_slice_out_of_range(views_graph):
    _, _, m = views_graph
    msg = _index_error(lambda: m.slice([0, 0], [2, 9]))
    assert "[0, 9)" in msg and "dimension 1" in msg and "'m'" in msg and "<= 4" in msg
    msg = _index_error(lambda: m.slice([0], [2]))
    assert "one entry per dimension" in msg and "'m'" in msg


def test_slice_of_an_indexed_view_out_of_range(views_graph):
    g, t, _ = views_graph
    u = mapped(g, FLOAT, (4,), "u")
    joined = popsim.concat([t, u[::-1]])
    msg = _index_error(lambda: joined.slice(2, 10))
    assert "[2, 10)" in msg and "'t+u'" in msg and "<= 8" in msg
    msg = _index_error(lambda: joined[8])
    assert "-8..7" in msg


@pytest.mark.parametrize("op,call", [
    ("slice", lambda m: m.slice(0, 1, 2)),
    ("reverse", lambda m: m.reverse(2)),
    ("subsample", lambda m: m.subsample(2, 2)),
    ("broadcast", lambda m: m.broadcast(2, 3)),
    ("upsample", lambda m: m.upsample(2, 5)),
    ("dim_roll", lambda m: m.dim_roll(2)),
    ("squeeze", lambda m: m.squeeze([2])),
    ("dim", lambda m: m.dim(2)),
])
def test_dimension_out_of_range(views_graph, op, call):
    _, _, m = views_graph
    msg = _index_error(lambda: call(m))
    assert msg.startswith(f"{op}: dimension")
    assert "out of range" in msg
    assert "'m'" in msg and "valid dimensions are 0..1" in msg


def test_other_dimension_errors(views_graph):
    _, _, m = views_graph
    msg = _index_error(lambda: m.flatten(1, 3))
    assert "flatten" in msg and "[1, 3)" in msg and "'m'" in msg
    msg = _index_error(lambda: m.expand([3]))
    assert "position 3" in msg and "'m'" in msg and "0..2" in msg
    msg = _index_error(lambda: m.dim_shuffle([0, 0]))
    assert "[0, 0]" in msg and "permutation" in msg and "'m'" in msg
    msg = _index_error(lambda: popsim.concat([m, m], 2))
    assert "concat" in msg and "dimension 2" in msg


def test_squeeze_of_non_singleton(views_graph):
    _, _, m = views_graph
    with pytest.raises(popsim.TensorCreationError, match=r"squeeze: dimension 1 of tensor 'm'.*size 4, not 1"):
        m.squeeze([1])


def test_reshape_wrong_element_count(views_graph):
    _, t, m = views_graph
    with pytest.raises(popsim.TensorCreationError) as info:
        t.reshape((3,))
    msg = str(info.value)
    assert "'t'" in msg and "4 elements" in msg and "3 elements" in msg
    with pytest.raises(popsim.TensorCreationError, match=r"'m'.*\[3, -1\].*16 elements"):
        m.reshape((3, -1))
    with pytest.raises(popsim.TensorCreationError, match="only one dimension may be -1"):
        m.reshape((-1, -1))


def test_reinterpret_to_a_different_size(views_graph):
    _, t, _ = views_graph
    with pytest.raises(popsim.TensorCreationError) as info:
        t.reinterpret(HALF)
    msg = str(info.value)
    assert "'t'" in msg and "FLOAT (4 bytes)" in msg and "HALF (2 bytes)" in msg
    assert t.reinterpret(INT).dtype is INT


def test_transpose_needs_rank_2(views_graph):
    _, t, _ = views_graph
    with pytest.raises(popsim.TensorCreationError, match="'t'.*rank 1.*dim_shuffle"):
        t.transpose()


def test_dimension_out_of_range_names_valid_dimensions(small_device):
    g = popsim.Graph(small_device)
    v = g.add_variable(FLOAT, (2, 3), "v")
    with pytest.raises(popsim.IndexError, match=r"reverse: dimension 2 .*'v'.*valid dimensions are 0\.\.1"):
        v.reverse(2)


@pytest.mark.parametrize("other", [None, 3, "t"])
def test_intersects_with_needs_a_tensor(small_device, other):
    g = popsim.Graph(small_device)
    t = mapped(g, FLOAT, (4,), "t")
    with pytest.raises(popsim.TypeError, match="intersects_with needs a Tensor"):
        t.intersects_with(other)


@pytest.mark.parametrize("call, message", [
    (lambda m: m.reshape(1.5), r"reshape: the shape must be a list of integers, found float 1\.5"),
    (lambda m: m.reshape(["²"]), "reshape: dimension size must be an integer, found str '²'"),
    (lambda m: m.dim_shuffle(3), "dim_shuffle: the permutation must be a list of integers, found int 3"),
    (lambda m: m.dim_shuffle_partial(8, [1]), "dim_shuffle_partial: source must be a list of integers"),
    (lambda m: m.expand(3), "expand: dims must be a list of integers, found int 3"),
    (lambda m: m.squeeze(FLOAT), "squeeze: dims must be a list of integers, found Type"),
    (lambda m: m.index(-4), "index: indices must be a list of integers, found int -4"),
    (lambda m: m.slices(3), r"slices: intervals must be a list of \(begin, end\) pairs, found int 3"),
    (lambda m: m.slices([(0, 1, 2)]), r"slices: intervals must be a list of \(begin, end\) pairs"),
    (lambda m: m.slice([0, 0], 2), r"slice: end \(a list, as begin is\) must be a list of integers, found int 2"),
    (lambda m: m.reshape_partial(None, 1, [4]), "reshape_partial: begin_dim must be an integer, found NoneType"),
    (lambda m: m.flatten(0, m), "flatten: end_dim must be an integer, found Tensor"),
    (lambda m: m.same_elements([1]), "same_elements needs a Tensor, found list"),
    (lambda m: m[0:1.5], r"cannot slice dimension 0 of tensor 'm' .* must be integers or None, found float"),
    (lambda m: m[::"x"], "slice bounds and steps must be integers or None, found str"),
    (lambda m: len(m[0, 0]), r"len\(\) of a rank-0 tensor"),
])
def test_arguments_of_the_wrong_kind_are_popsim_type_errors(views_graph, call, message):
    """Found by the API fuzz test (tests/test_api_fuzz.py): each was Python's TypeError or
    ValueError from deep inside ('float' object is not iterable, '<' not supported...)."""
    _, _, m = views_graph
    with pytest.raises(popsim.TypeError, match=message):
        call(m)


def test_a_slice_step_of_zero_is_an_index_error(views_graph):
    _, t, m = views_graph
    for view in (t, m[:, 1:3].transpose()):  # a strided view and one of another shape: every path
        assert "the step must not be 0" in _index_error(lambda: view[::0])


@pytest.mark.parametrize("view, what", [
    (lambda t: t.broadcast(2 ** 31, 0), "broadcast of tensor 't' of shape \\[4\\] 2147483648 times"),
    (lambda t: t.upsample(2 ** 62, 0), "upsample of tensor 't'"),
    (lambda t: t.broadcast(2 ** 64, 0), "broadcast"),
    (lambda t: t[:1].broadcast(2 ** 62, 0).reshape([2 ** 61, 2])[:, :1], "a view of shape"),
])
def test_a_view_too_big_to_list_is_refused_not_allocated(views_graph, view, what):
    """A view that lists its element ids (a broadcast of a dimension longer than 1, an
    upsample, a strided view whose runs are asked for) over MAX_LISTED_IDS is a
    TensorCreationError, never a MemoryError, an OverflowError or gigabytes allocated."""
    g, t, _ = views_graph
    with pytest.raises(popsim.TensorCreationError, match=f"{what}.*element ids one by one.*Use fewer elements"):
        g.set_tile_mapping(view(t), 1)


def test_a_broadcast_of_a_size_one_dimension_stays_a_strided_view(views_graph):
    """Only listing is limited: a huge broadcast that keeps a stride is a view like any other."""
    _, t, _ = views_graph
    big = t[:1].broadcast(2 ** 62, 0)
    assert big.shape == (2 ** 62,) and big[2 ** 62 - 1].same_elements(t[0])


def test_a_view_with_no_elements_but_a_dimension_past_64_bits(views_graph):
    """No ids to list, but numpy cannot hold the shape: was an OverflowError."""
    _, t, m = views_graph
    for view in (lambda: m[:, :0].broadcast(2 ** 67, 0), lambda: m[:, :0].upsample(2 ** 67, 0)):
        with pytest.raises(popsim.TensorCreationError, match="the view's shape is too large for popsim to list"):
            view()
    assert m[:, :0].broadcast(5, 0).shape == (20, 0) and t.broadcast(0, 0).shape == (0,)
