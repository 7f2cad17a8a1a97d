"""poputil's broadcasting helpers, against numpy's broadcasting rules and values."""
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import popsim
from popsim import INT, poputil
from popsim.program import Copy, Sequence


def _numbered(g, shape, name):
    t = g.add_variable(INT, shape, name)
    g.set_tile_mapping(t, 0)
    return t


def test_expand_to_match_ranks(small_device):
    g = popsim.Graph(small_device)
    a, b = _numbered(g, (3,), "a"), _numbered(g, (2, 1, 3), "b")
    a2, b2 = poputil.expand_to_match_ranks(a, b)
    assert a2.shape == (1, 1, 3) and b2.shape == (2, 1, 3) and b2.same_elements(b)
    assert [t.shape for t in poputil.expand_to_match_ranks(b, a)] == [(2, 1, 3), (1, 1, 3)]


def test_broadcast_values_match_numpy(small_device, run_and_read):
    g = popsim.Graph(small_device)
    a, b, c = _numbered(g, (3, 1), "a"), _numbered(g, (4,), "b"), _numbered(g, (2, 1, 1), "c")
    va, vb, vc = (np.arange(t.num_elements(), dtype=np.int32).reshape(t.shape) + 10 * i
                  for i, t in enumerate((a, b, c)))
    views = poputil.broadcast_to_match(a, b, c)
    expected = list(np.broadcast_arrays(va, vb, vc))
    assert [v.shape for v in views] == [(2, 3, 4)] * 3
    to_shape = poputil.broadcast_to_match(b, [5, 4])
    outs = [g.clone(v) for v in views] + [g.clone(to_shape)]
    prog = Sequence(*[Copy(v, o) for v, o in zip(list(views) + [to_shape], outs)])
    got = run_and_read(g, small_device, prog, outs, writes={a: va, b: vb, c: vc})
    for x, want in zip(got, expected + [np.broadcast_to(vb, (5, 4))]):
        np.testing.assert_array_equal(x, want)


_dims = st.lists(st.sampled_from([0, 1, 2, 3]), max_size=3)


@settings(max_examples=100, deadline=None)
@given(_dims, _dims)
def test_agrees_with_numpy_on_which_shapes_broadcast(sa, sb):
    g = popsim.Graph(popsim.Target.create_ipu_target(tiles_per_ipu=4))
    a, b = g.add_variable(INT, sa, "a"), g.add_variable(INT, sb, "b")
    try:
        want = np.broadcast_shapes(tuple(sa), tuple(sb))
    except ValueError:
        want = None
    assert poputil.can_broadcast_to_match(a, b) == (want is not None)
    if want is None:
        with pytest.raises(poputil.PoplibsError, match="NumPy rules"):
            poputil.broadcast_to_match(a, b)
    else:
        assert [t.shape for t in poputil.broadcast_to_match(a, b)] == [want, want]


def test_errors_name_both_shapes(small_device):
    g = popsim.Graph(small_device)
    a, b = _numbered(g, (2, 3), "a"), _numbered(g, (4,), "b")
    with pytest.raises(poputil.PoplibsError, match=re.escape(
            "broadcast_to_match: cannot broadcast tensor 'a' of shape (2, 3), tensor 'b' of shape (4,) together: "
            "dimension -1 (counted from the last) has sizes [3, 4]")):
        poputil.broadcast_to_match(a, b)
    with pytest.raises(poputil.PoplibsError, match=re.escape(
            "cannot broadcast tensor 'a' of shape (2, 3) to shape (2, 1): only dimensions of size 1 broadcast")):
        poputil.broadcast_to_match(a, (2, 1))
    with pytest.raises(poputil.PoplibsError, match="has more dimensions than the shape"):
        poputil.broadcast_to_match(a, (3,))
    with pytest.raises(poputil.PoplibsError, match="must be whole numbers >= 0"):
        poputil.broadcast_to_match(a, (2, -3))
    with pytest.raises(popsim.TypeError, match="expected a popsim.Tensor"):
        poputil.can_broadcast_to_match(a, np.zeros(3))
