"""The fast paths of tensor view operations against their general paths.

Graph building indexes, slices, reshapes and shuffles views hundreds of thousands of
times, so each of those operations answers the common cases (plain ints and slices of a
strided view) on a lean path and hands everything else to a general path. These
properties check, on random strided and indexed views and random arguments (invalid ones
included), that the public operation and its general path give the same outcome: views
with identical fields (variable, offset, shape, strides, or element ids), or the same
error type and message.
"""
import numpy as np
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from popsim import FLOAT
from popsim.tensor import Tensor

from view_chains import Ctx, draw_basic_key, new_graph, run_chain, shapes

PROPS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def outcome(fn):
    """("view", fields) or ("error", type, message) of calling ``fn``."""
    try:
        t = fn()
    except Exception as e:  # noqa: BLE001 - the error itself is what is compared
        return ("error", type(e), str(e))
    assert type(t) is Tensor
    assert type(t._shape) is tuple and all(type(n) is int for n in t._shape)
    if t._ids is None:
        assert type(t._strides) is tuple and all(type(s) is int for s in t._strides)
        assert type(t._offset) is int
        return ("view", t._table, t._dtype, t._shape, "strided", t._var, t._offset, t._strides)
    return ("view", t._table, t._dtype, t._shape, "indexed", t._ids.tolist())


def outcome_list(fn):
    """("views", the list) or ("error", type, message) of calling ``fn``."""
    try:
        return ("views", fn())
    except Exception as e:  # noqa: BLE001 - the error itself is what is compared
        return ("error", type(e), str(e))


def assert_same(fast, general):
    a, b = outcome(fast), outcome(general)
    note(f"fast: {a[:3]}... general: {b[:3]}...")
    assert a == b


def random_view(data):
    """A view of a fresh variable after a short random chain of view operations (mostly strided)."""
    graph, _ = new_graph()
    shape = data.draw(shapes, label="shape")
    v = graph.add_variable(FLOAT, shape, "v")
    a = np.arange(int(np.prod(shape, dtype=np.int64)), dtype=np.int64).reshape(shape)
    if data.draw(st.booleans(), label="chain"):
        v, a, _ = run_chain(data, v, a, Ctx(alias_free=data.draw(st.booleans())), min_len=1, max_len=3)
    return v


def draw_index(data, n):
    """An index for a dimension of size n: usually in range, sometimes not, sometimes numpy's."""
    i = data.draw(st.integers(-n - 2, n + 2), label="index")
    return np.int64(i) if data.draw(st.integers(0, 9), label="numpy int") == 0 else i


@PROPS
@given(st.data())
def test_indexing_fast_path_matches_general(data):
    t = random_view(data)
    kind = data.draw(st.sampled_from(["basic", "int", "ints", "bad"]), label="key kind")
    if kind == "basic":
        key = draw_basic_key(data, t.shape)
    elif kind == "int":
        key = draw_index(data, t.shape[0] if t.rank else 1)
    elif kind == "ints":
        k = data.draw(st.integers(0, t.rank + 1), label="ints given")
        key = tuple(draw_index(data, t.shape[d] if d < t.rank else 1) for d in range(k))
    else:
        key = data.draw(st.sampled_from([1.5, True, "x", (0, 0.5), [0], slice(0, 1, 0), (slice(None), ...)]))
    note(f"t{list(t.shape)}[{key!r}]")
    assert_same(lambda: t[key], lambda: t._index_general(key))


@PROPS
@given(st.data())
def test_slice_fast_path_matches_general(data):
    t = random_view(data)
    dim = data.draw(st.integers(-1, t.rank), label="dim")
    n = t.shape[dim] if 0 <= dim < t.rank else 3
    b = data.draw(st.integers(-1, n + 1), label="begin")
    e = data.draw(st.integers(-1, n + 1), label="end")
    if data.draw(st.integers(0, 9), label="numpy ints") == 0:
        b, e = np.int32(b), np.int64(e)
    note(f"t{list(t.shape)}.slice({b}, {e}, {dim})")
    assert_same(lambda: t.slice(b, e, dim), lambda: t._slice_general(b, e, dim))
    if dim == 0:
        assert_same(lambda: t.slice(b, e), lambda: t._slice_general(b, e, 0))


@PROPS
@given(st.data())
def test_box_slice_fast_path_matches_slicing_dimension_by_dimension(data):
    """slice(begin list, end list) of plain ints in range takes views.int_box's one step; with
    numpy ints the same box is sliced dimension by dimension (the general path)."""
    t = random_view(data)
    rank = data.draw(st.sampled_from([t.rank] * 4 + [max(t.rank - 1, 0), t.rank + 1]), label="entries")
    begin, end = [], []
    for d in range(rank):
        n = t.shape[d] if d < t.rank else 2
        begin.append(data.draw(st.integers(-1, n + 1), label="begin"))
        end.append(data.draw(st.integers(-1, n + 1), label="end"))
    fast = (tuple(begin), tuple(end)) if data.draw(st.booleans(), label="tuples") else (begin, end)
    note(f"t{list(t.shape)}.slice({fast[0]}, {fast[1]})")
    assert_same(lambda: t.slice(*fast), lambda: t._slice_general([np.int64(b) for b in begin],
                                                                  [np.int64(e) for e in end]))


@PROPS
@given(st.data())
def test_slices_of_flat_views_match_slicing_each_interval(data):
    """slices() of a 1-D view by plain int pairs (id_slices.plain_pairs) makes the views
    itself; each must be the elements slice() gives (strided views the same fields), and
    any other pairs take the general path's outcome."""
    t = random_view(data).flatten()
    n = t.shape[0]
    pairs = data.draw(st.lists(st.tuples(st.integers(-1, n + 1), st.integers(-1, n + 1)), max_size=6), label="pairs")
    if data.draw(st.booleans(), label="lists"):
        pairs = [list(p) for p in pairs]
    note(f"t{list(t.shape)}.slices({pairs})")
    got, want = outcome_list(lambda: t.slices(pairs)), outcome_list(lambda: [t.slice(b, e) for b, e in pairs])
    if got[0] == "error" or want[0] == "error":
        assert got == want
        return
    got = got[1]
    assert len(got) == len(pairs)
    for view, (b, e) in zip(got, pairs):
        want = t.slice(b, e)
        assert view._id_array().tolist() == want._id_array().tolist()
        if t._ids is None:
            assert outcome(lambda: view) == outcome(lambda: want)


@PROPS
@given(st.data())
def test_reshape_and_flatten_fast_paths_match_general(data):
    t = random_view(data)
    n = t.num_elements()
    kind = data.draw(st.sampled_from(["same size", "wrong size", "odd entries"]), label="shape kind")
    if kind == "same size":
        dims = []
        rest = n
        for _ in range(data.draw(st.integers(0 if n == 1 else 1, 4), label="rank")):
            d = data.draw(st.sampled_from([k for k in range(1, rest + 1) if rest % k == 0] or [0]))
            dims.append(d)
            rest = rest // d if d else rest
        if n == 0:
            dims = (dims or [1]) + [0]
        elif rest != 1 or not dims:
            dims.append(rest)
        shape = dims
    elif kind == "wrong size":
        shape = [n + 1]
    else:
        shape = data.draw(st.sampled_from([[n, 1.0], [-1], [n, True], [-n - 1], (np.int64(n),)]))
    shape = tuple(shape) if data.draw(st.booleans(), label="as tuple") else list(shape)
    note(f"t{list(t.shape)}.reshape({shape!r})")
    assert_same(lambda: t.reshape(shape), lambda: t._reshape_general(shape))
    assert_same(lambda: t.flatten(), lambda: t._reshape_general([n]))


@PROPS
@given(st.data())
def test_dim_shuffle_and_transpose_fast_paths_match_general(data):
    t = random_view(data)
    perm = list(data.draw(st.permutations(range(t.rank)), label="permutation"))
    spoil = data.draw(st.sampled_from(["none", "none", "repeat", "out of range", "short", "float"]), label="spoil")
    if spoil == "repeat" and t.rank >= 2:
        perm[0] = perm[1]
    elif spoil == "out of range" and t.rank:
        perm[0] = t.rank
    elif spoil == "short" and t.rank:
        perm = perm[:-1]
    elif spoil == "float" and t.rank:
        perm[0] = float(perm[0])
    perm = tuple(perm) if data.draw(st.booleans(), label="as tuple") else perm
    note(f"t{list(t.shape)}.dim_shuffle({perm!r})")
    assert_same(lambda: t.dim_shuffle(perm), lambda: t._dim_shuffle_general(perm))
    if t.rank == 2:
        assert_same(lambda: t.transpose(), lambda: t._dim_shuffle_general([1, 0]))


def test_dim_fast_path_matches_checks():
    graph, _ = new_graph()
    t = graph.add_variable(FLOAT, [3, 4], "t")
    assert (t.dim(0), t.dim(1), t.dim(np.int64(1))) == (3, 4, 4)
    for bad in (-1, 2, True, 1.0):
        try:
            t.dim(bad)
        except Exception as e:  # noqa: BLE001
            fast = (type(e), str(e))
        try:
            t._shape[t._check_dim(bad, "dim")]
        except Exception as e:  # noqa: BLE001
            general = (type(e), str(e))
        assert fast == general
