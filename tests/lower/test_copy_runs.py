"""lower/copy_runs.py: a table's segments made into strided run rows copy exactly the
segments, in order; the rows stay within the core's 32-bit bounds; patterns compress.
The expansion here is written from the columns' meaning (native/core/executable.hpp,
CopyRun), independently of runs_to_segments, which is checked against it."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from copy_run_helpers import expand

from popsim.contract import COLUMNS, COPY_RUN_LIMIT
from popsim.lower import copy_runs
from popsim.lower.copy_runs import RunBuilder, run_extents, runs_to_segments, segments_to_runs

C = COLUMNS["copy_runs"]


def meaning(segs):
    """The segments a table copies, as the runs must: empty ones dropped, longer ones than
    the bound cut into pieces of at most COPY_RUN_LIMIT bytes."""
    out = []
    for s, d, n in np.asarray(segs).reshape(-1, 3).tolist():
        for k in range(0, n, COPY_RUN_LIMIT):
            out.append((s + k, d + k, min(COPY_RUN_LIMIT, n - k)))
    return out


def by_byte(segs):
    """(source, destination) of every byte segments copy, in order."""
    return [(s + k, d + k) for s, d, n in segs for k in range(n)]


def within_bounds(runs):
    sizes = runs[:, [C["len"], C["count"], C["outer"]]]
    strides = runs[:, [C["src_stride"], C["dst_stride"], C["outer_src"], C["outer_dst"]]]
    return runs.size == 0 or (sizes.min() >= 1 and sizes.max() <= COPY_RUN_LIMIT and
                              np.abs(strides).max() <= COPY_RUN_LIMIT)


def patterned(draw):
    """Segments with the structure real tables have: stretches stepping by constants,
    repeated at constant offsets, with irregular ones between."""
    segs = []
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["random", "strided", "grid"]))
        if kind == "random":
            n = draw(st.integers(1, 12))
            segs += [(draw(st.integers(0, 300)), draw(st.integers(0, 300)), draw(st.integers(0, 6))) for _ in range(n)]
            continue
        s0, d0, n = draw(st.integers(0, 200)), draw(st.integers(0, 200)), draw(st.integers(1, 8))
        ss, ds = draw(st.integers(-16, 16)), draw(st.integers(-16, 16))
        rows, os_, od = (1, 0, 0) if kind == "strided" else (draw(st.integers(1, 6)), draw(st.integers(-64, 64)),
                                                             draw(st.integers(-64, 64)))
        for o in range(rows):
            segs += [(s0 + 500 + o * os_ + i * ss, d0 + 500 + o * od + i * ds, n)
                     for i in range(draw(st.integers(1, 9)))]
    return np.array(segs, np.int64).reshape(-1, 3)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_runs_expand_to_exactly_the_segments(data):
    segs = patterned(data.draw)
    runs = segments_to_runs(segs)
    assert runs.dtype == np.int64 and runs.shape[1] == len(C)
    assert expand(runs) == meaning(segs)
    assert [tuple(s) for s in runs_to_segments(runs).tolist()] == meaning(segs)
    assert within_bounds(runs) and runs.shape[0] <= max(1, len(meaning(segs)))


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_batches_cut_anywhere_make_the_rows_of_one_pass(data):
    """RunBuilder: the rows depend on the segments' sequence only (edge_buffers.py feeds a
    compute set's exchange in batches), here with chunks of a few segments."""
    segs = patterned(data.draw)
    chunk = data.draw(st.integers(1, 7))
    cuts = sorted(data.draw(st.lists(st.integers(0, segs.shape[0]), max_size=5)))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(copy_runs, "CHUNK", chunk)
        whole = RunBuilder()
        whole.append(segs)
        want = whole.finish()
        batched = RunBuilder()
        for a, b in zip([0] + cuts, cuts + [segs.shape[0]]):
            batched.append(segs[a:b])
        np.testing.assert_array_equal(batched.finish(), want)
    assert expand(want) == meaning(segs)


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_a_grouped_builder_makes_rows_of_one_group_each(data):
    """Gathers are cut into each tile's rows (compute_sets.py): with a group per segment,
    no row joins two groups, each row is its first segment's group, and the rows still
    copy exactly the segments, in order, however they came in batches."""
    segs = patterned(data.draw)
    n = segs.shape[0]
    group = np.cumsum(np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)), np.int64))
    b = RunBuilder(grouped=True)
    cuts = sorted(data.draw(st.lists(st.integers(0, n), max_size=4)))
    for i, (lo, hi) in enumerate(zip([0] + cuts, cuts + [n])):
        b.add(segs[lo:hi, 0], segs[lo:hi, 1], segs[lo:hi, 2], group[lo:hi], join=i > 0)
    runs, row_group = b.finish_grouped()
    assert by_byte(expand(runs)) == by_byte(meaning(segs))   # add() joins segments that continue
    assert row_group.shape == (runs.shape[0],)
    # The rows copy the segments' bytes in order: every segment a row's bytes come from
    # (by position in that byte stream) is of the row's group.
    seg_end = np.cumsum(segs[:, 2])
    row_bytes = runs[:, C["len"]] * runs[:, C["count"]] * runs[:, C["outer"]]
    row_end = np.cumsum(row_bytes)
    for r in range(runs.shape[0]):
        lo, hi = row_end[r] - row_bytes[r], row_end[r]
        first, last = np.searchsorted(seg_end, lo, side="right"), np.searchsorted(seg_end, hi - 1, side="right")
        assert set(group[first:last + 1][segs[first:last + 1, 2] > 0].tolist()) == {row_group[r]}


def test_grouped_segments_never_merge_across_groups():
    b = RunBuilder(grouped=True)
    b.add(np.array([0, 4, 8]), np.array([100, 104, 108]), np.array([4, 4, 4]), np.array([0, 0, 1]))
    runs, groups = b.finish_grouped()
    assert expand(runs) == [(0, 100, 8), (8, 108, 4)]
    assert groups.tolist() == [0, 1]
    with pytest.raises(ValueError, match="grouped"):
        b.add(np.array([0]), np.array([1]), np.array([1]))


def test_joining_across_batches_merges_a_segment_continued_on_both_sides():
    b = RunBuilder()
    b.append(np.array([[0, 100, 4], [8, 200, 4]]))
    b.append(np.array([[12, 204, 4], [40, 300, 2]]), join=True)
    assert expand(b.finish()) == [(0, 100, 4), (8, 200, 8), (40, 300, 2)]


def test_a_transpose_is_one_two_dimensional_run():
    c, p = 6, 10   # [c, p] floats read column by column
    o, i = np.divmod(np.arange(c * p), c)
    segs = np.stack([i * 4 * p + o * 4, 1000 + np.arange(c * p) * 4, np.full(c * p, 4)], axis=1)
    runs = segments_to_runs(segs)
    assert runs.shape[0] == 1
    r = runs[0]
    assert (r[C["count"]], r[C["src_stride"]], r[C["dst_stride"]]) == (c, 4 * p, 4)
    assert (r[C["outer"]], r[C["outer_src"]], r[C["outer_dst"]]) == (p, 4, 4 * c)


def test_the_greedy_takes_pairs_where_steps_change():
    # Steps 4, 4, 9, 9, 2: [0 4 8] then [17 26], then 28 starts anew (its step to 30 is 2).
    src = np.array([0, 4, 8, 17, 26, 28, 30])
    runs = segments_to_runs(np.stack([src, src + 1000, np.ones_like(src)], axis=1))
    assert runs[:, C["count"]].tolist() == [3, 2, 2]
    assert runs[:, C["src_stride"]].tolist() == [4, 9, 2]


def test_segments_past_32_bits_are_cut_and_strides_past_them_start_new_runs():
    big = 5 * (1 << 30) + 3
    runs = segments_to_runs(np.array([[0, 1 << 40, big], [1 << 35, 0, 4], [1 << 36, 4, 4]]))
    assert within_bounds(runs)
    assert expand(runs) == meaning(np.array([[0, 1 << 40, big], [1 << 35, 0, 4], [1 << 36, 4, 4]]))
    low, high = run_extents(runs, "src")
    assert low.min() == 0 and high.max() == (1 << 36) + 4


def test_an_empty_table_has_no_rows():
    assert segments_to_runs(np.zeros((0, 3), np.int64)).shape == (0, len(C))
    assert segments_to_runs(np.array([[5, 6, 0]])).shape == (0, len(C))
