"""norm_stat_ops._runs (a NormStatisticOp vertex's regionRuns, runLengths and runStat, in
one numpy pass over its regions) against a region-by-region reference."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from popsim.popnn.norm_stat_ops import _runs


def reference(stat_index, group):
    runs, lengths, stats = [], [], []
    for b, e in group:
        ids = list(stat_index[b:e])
        cuts = [0] + [k for k in range(1, len(ids)) if ids[k] != ids[k - 1]] + [len(ids)]
        runs.append(len(cuts) - 1)
        lengths += [y - x for x, y in zip(cuts, cuts[1:])]
        stats += [ids[c] for c in cuts[:-1]]
    return runs, lengths, stats


@settings(max_examples=80, deadline=None)
@given(data=st.data(), stat_index=st.lists(st.integers(0, 3), min_size=1, max_size=40))
def test_runs_match_region_by_region(data, stat_index):
    n = len(stat_index)
    group = [(b, data.draw(st.integers(b + 1, n))) for b in
             data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=5))]   # regions hold elements
    got = _runs(np.asarray(stat_index, np.int64), group)
    want = reference(stat_index, group)
    assert [a.tolist() for a in got] == [list(w) for w in want]
    assert all(a.dtype == np.int64 for a in got)
