"""Tensor.slices of a 1-D indexed view (id_slices.py): each slice lists the same element
ids as ``t.slice(b, e)``, and is a strided view exactly when those ids step by one
constant within one variable (what PopLibs' element-wise ops get from a blocked layout
read in NCHW order: rows stepping by the block size)."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from popsim import FLOAT
from popsim.tensor import Tensor

from view_chains import new_graph

SIZES = (40, 30)   # two variables: ids 0..39 and 40..69


@pytest.fixture(scope="module")
def graph():
    g, _ = new_graph()
    for k, n in enumerate(SIZES):
        g.add_variable(FLOAT, (n,), f"v{k}")
    return g


@st.composite
def id_lists(draw):
    """Segments of arithmetic progressions (steps -3..8, 0 included) anywhere in the two
    variables, so that some cross from one variable into the other."""
    ids = []
    for _ in range(draw(st.integers(1, 6))):
        n, step = draw(st.integers(1, 8)), draw(st.integers(-3, 8))
        lo, hi = (0, 69) if step == 0 else (max(0, -step * (n - 1)), 69 - max(0, step * (n - 1)))
        start = draw(st.integers(lo, hi))
        ids += [start + step * k for k in range(n)]
    return ids


def one_progression_in_one_variable(ids):
    if not ids:
        return False
    owner = [int(i >= SIZES[0]) for i in ids]
    steps = {b - a for a, b in zip(ids, ids[1:])}
    return len(set(owner)) == 1 and len(steps) <= 1


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), ids=id_lists())
def test_slices_of_an_indexed_view_match_slice(graph, data, ids):
    t = Tensor._indexed(graph._state.table, FLOAT, np.asarray(ids, np.int64))
    n = len(ids)
    pairs = [tuple(sorted(data.draw(st.tuples(st.integers(0, n), st.integers(0, n)))))
             for _ in range(data.draw(st.integers(1, 6)))]
    for _ in range(2):   # the second call reads the step facts kept on the view
        for (b, e), part in zip(pairs, t.slices(pairs)):
            assert part.shape == (e - b,) and part.dtype == FLOAT
            assert part._element_ids().tolist() == ids[b:e] == t.slice(b, e)._element_ids().tolist()
            assert (part._ids is None) == one_progression_in_one_variable(ids[b:e])
            if part._ids is None:
                assert part._var is graph._state.table.variables[int(ids[b] >= SIZES[0])]


def test_a_blocked_layout_read_in_nchw_order_slices_into_strided_rows(graph):
    g, _ = new_graph()
    v = g.add_variable(FLOAT, (1, 2, 3, 5, 4), "x")   # [N][C/4][H][W][4]
    flat = v.dim_shuffle([0, 1, 4, 2, 3]).reshape([1, 8, 3, 5]).flatten()
    assert flat._ids is not None
    rows = [(k * 5, k * 5 + 5) for k in range(24)]
    parts = flat.slices(rows)
    assert all(p._ids is None and p._strides == (4,) and p._var is v._var for p in parts)
    assert np.concatenate([p._element_ids() for p in parts]).tolist() == flat._element_ids().tolist()
    across = flat.slices([(13, 17)])[0]   # the end of one channel and the start of the next: ids listed
    assert across._ids is not None and across._element_ids().tolist() == flat._element_ids()[13:17].tolist()


def test_bad_pairs_raise_as_slice_does(graph):
    t = Tensor._indexed(graph._state.table, FLOAT, np.arange(10, dtype=np.int64))
    with pytest.raises(IndexError):
        t.slices([(0, 11)])
    with pytest.raises(IndexError):
        t.slices([(5, 2)])
