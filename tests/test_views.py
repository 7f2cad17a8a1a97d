"""popsim.views' run arithmetic against counting ids one by one."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from popsim import views
@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 40), st.integers(0, 6)), min_size=0, max_size=8))
def test_runs_self_overlap_agrees_with_counting_ids(runs):
    """views.runs_self_overlap (Tensor.contains_aliases' test) against counting every id."""
    start = np.array([s for s, _ in runs], np.int64)
    length = np.array([n for _, n in runs], np.int64)
    ids = np.concatenate([np.arange(s, s + n) for s, n in runs]) if runs else np.empty(0, np.int64)
    assert views.runs_self_overlap(start, length) == (np.unique(ids).size != ids.size)
