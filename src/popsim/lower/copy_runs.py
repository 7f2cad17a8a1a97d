"""Copy tables as strided runs: what the lowering hands the core, and the core runs in place.

A copy table means a list of byte segments (src, dst, len) copied one after another. Most
of a big table's segments repeat one pattern: a transpose or a strided view moves one
element per segment, its sources and destinations each stepping by a constant. Such a
stretch is one *run* row (native/core/executable.hpp, CopyRun; its columns are
``COLUMNS["copy_runs"]``): ``outer`` rows of ``count`` elements of ``len`` bytes, element
i of row o copied from ``src + o * outer_src + i * src_stride`` to ``dst + o * outer_dst
+ i * dst_stride``, rows in order and each row's elements in order: the segments' order.
A ResNet-50's exchanges have tens of millions of segments and far fewer runs, so the
lowering makes runs as soon as it has a table's segments (``segments_to_runs``), and the
segments of one table at most are alive at a time.

The rows are made greedily, left to right, as the core once made them at load time: a run
starts at a segment and takes the next one whenever it has the same length and its source
and destination are the run's strides further on (the first pair sets the strides); then
consecutive runs that repeat one run (the same len, count > 1 and strides) at constant
offsets become one two-dimensional run. Lengths, counts, strides and outer counts are kept
within 32 bits (the core's validation refuses anything else): a longer segment is split
into pieces of at most ``LIMIT`` bytes, and segments are taken ``CHUNK`` at a time, so
no run counts more (a run never continues across a chunk's end). Segments of no bytes copy
nothing and are dropped.

A grouped builder's segments carry a fourth number, their group (the tile whose buffer a
gather fills): a run never joins segments of two groups, so each row belongs to one group,
and a compute set's gathers can be cut at row boundaries into each tile's share
(compute_sets.py, run by the core just before that tile's vertices).
"""
from __future__ import annotations

from typing import List, Optional, Tuple

import numpy as np

from ..contract import COLUMNS, COPY_RUN_LIMIT, ROW_WIDTHS

__all__ = ["LIMIT", "CHUNK", "RunBuilder", "merge_segments", "segments_to_runs", "runs_to_segments", "run_extents",
           "empty_runs", "table_bytes"]

LIMIT = COPY_RUN_LIMIT  # the core's bound on lengths, counts, outer counts and stride magnitudes
#: Segments made into runs at a time: bounds the temporaries (a few hundred bytes a
#: segment) and every run's count below 32 bits.
CHUNK = 1 << 18

_C = COLUMNS["copy_runs"]
_WIDTH = ROW_WIDTHS["copy_runs"]


def empty_runs() -> np.ndarray:
    return np.zeros((0, _WIDTH), np.int64)


def _fits(v: np.ndarray) -> np.ndarray:
    return np.abs(v) <= LIMIT


def _joins(valid: np.ndarray, same: np.ndarray) -> np.ndarray:
    """Whether item k joins item k - 1's run, the greedy way: ``valid[k - 1]``: link k - 1
    (from item k - 1 to k) may continue a run; ``same[k - 1]``: it repeats link k - 2.
    Item k joins when link k - 1 is valid and either item k - 1 started a run (which then
    takes link k - 1's step) or joined one by an equal link: join[k] = valid[k - 1] &
    (~join[k - 1] | same[k - 1]). A link that repeats its predecessor forces a join, an
    invalid one a start, and in between joins alternate (each pair of items with a new
    step is a run of two): so join[k] is the value at the last forced item, flipped once
    per item after it."""
    n = valid.size + 1
    forced = np.ones(n, bool)
    np.logical_or(same, ~valid, out=forced[1:])
    value = np.zeros(n, bool)
    value[1:] = same
    idx = np.arange(n)
    last = np.maximum.accumulate(np.where(forced, idx, 0))
    flips = ((idx - last) & 1).astype(bool)
    return value[last] ^ flips


def _runs_of_links(first: np.ndarray, second: np.ndarray, valid: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Greedy runs of items whose offsets ``first`` and ``second`` step by constants
    (where ``valid`` allows a link): the start of each run, and its length in items."""
    n = first.size
    if n == 1:
        return np.zeros(1, np.int64), np.ones(1, np.int64)
    d1, d2 = np.diff(first), np.diff(second)
    valid &= _fits(d1) & _fits(d2)
    same = np.zeros(n - 1, bool)
    same[1:] = valid[1:] & valid[:-1] & (d1[1:] == d1[:-1]) & (d2[1:] == d2[:-1])
    starts = np.flatnonzero(~_joins(valid, same))
    counts = np.diff(np.append(starts, n))
    return starts, counts


def _steps(offsets: np.ndarray, starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Each run's step (0 for a run of one item)."""
    nxt = np.minimum(starts + 1, offsets.size - 1)
    return np.where(counts > 1, offsets[nxt] - offsets[starts], 0)


def _chunk_runs(src: np.ndarray, dst: np.ndarray, length: np.ndarray,
                group: Optional[np.ndarray] = None) -> Tuple[np.ndarray, Optional[np.ndarray]]:
    """The runs of segments (all of 1 to LIMIT bytes, at most CHUNK of them), and with
    ``group`` (one per segment), the group of each run (runs never join two groups)."""
    valid = length[1:] == length[:-1]
    if group is not None:
        valid &= group[1:] == group[:-1]
    s, count = _runs_of_links(src, dst, valid)
    rs, rd, rl = src[s], dst[s], length[s]
    ss, ds = _steps(src, s, count), _steps(dst, s, count)
    rg = group[s] if group is not None else None
    del s
    # Runs repeating one run at constant offsets: one two-dimensional run.
    valid = ((rl[1:] == rl[:-1]) & (count[1:] == count[:-1]) & (count[:-1] > 1) & (ss[1:] == ss[:-1]) &
             (ds[1:] == ds[:-1]))
    if rg is not None:
        valid &= rg[1:] == rg[:-1]
    o, outer = _runs_of_links(rs, rd, valid)
    out = np.empty((o.size, _WIDTH), np.int64)
    out[:, _C["src"]], out[:, _C["dst"]], out[:, _C["len"]] = rs[o], rd[o], rl[o]
    out[:, _C["count"]], out[:, _C["src_stride"]], out[:, _C["dst_stride"]] = count[o], ss[o], ds[o]
    out[:, _C["outer"]] = outer
    out[:, _C["outer_src"]], out[:, _C["outer_dst"]] = _steps(rs, o, outer), _steps(rd, o, outer)
    return out, (rg[o] if rg is not None else None)


def _split_long(segs: np.ndarray) -> np.ndarray:
    """Segments longer than LIMIT bytes as consecutive pieces of at most that many (each
    keeps its segment's group, when there is one)."""
    length = segs[:, 2]
    pieces = -(-length // LIMIT)
    owner = np.repeat(np.arange(length.size), pieces)
    first = np.cumsum(pieces) - pieces
    offset = (np.arange(owner.size) - first[owner]) * LIMIT
    out = segs[owner]
    out[:, 0] += offset
    out[:, 1] += offset
    out[:, 2] = np.minimum(length[owner] - offset, LIMIT)
    return out


class RunBuilder:
    """A table's segments arriving in batches, made into runs CHUNK segments at a time:
    the rows depend only on the sequence of segments, not on how it was cut into batches
    (edge_buffers.py makes a compute set's exchange a bounded number of views at a time),
    and only the runs and one chunk of segments are held. ``grouped``: segments are (src,
    dst, len, group) and finish() also returns each row's group."""

    def __init__(self, grouped: bool = False):
        self.grouped = grouped
        self._width = 4 if grouped else 3
        self._pending: List[np.ndarray] = []  # segments not yet made into runs, in order
        self._held = 0
        self._runs: List[np.ndarray] = []
        self._groups: List[np.ndarray] = []

    def add(self, src: np.ndarray, dst: np.ndarray, length: np.ndarray, group: Optional[np.ndarray] = None,
            join: bool = False) -> None:
        """Append segments (merge_segments joins those that continue each other, within a
        group); ``group`` is required exactly when the builder is grouped."""
        if (group is not None) != self.grouped:
            raise ValueError("RunBuilder.add: a group per segment is required exactly when the builder is grouped")
        self.append(merge_segments(src, dst, length, group), join=join)

    def append(self, segs: np.ndarray, join: bool = False) -> None:
        """Append (n, 3) segments ((n, 4) when grouped); with ``join``, the first is merged
        into the last one held when it continues it on both sides (as merge_segments would
        have, had the two batches been one): that changes the last row of an array
        appended before."""
        segs = np.asarray(segs, np.int64).reshape(-1, self._width)
        if not (segs[:, 2] > 0).all():
            segs = segs[segs[:, 2] > 0]
        if not segs.shape[0]:
            return
        if join and self._pending:
            last = self._pending[-1][-1]
            if segs[0, 0] == last[0] + last[2] and segs[0, 1] == last[1] + last[2] and \
                    (not self.grouped or segs[0, 3] == last[3]):
                last[2] += segs[0, 2]
                segs = segs[1:]
        if segs.shape[0]:
            self._pending.append(segs)
            self._held += segs.shape[0]
        if self._held <= CHUNK:  # the last segment stays held: the next batch may continue it
            return
        held = np.concatenate(self._pending) if len(self._pending) > 1 else self._pending[0]
        done = 0
        for done in range(0, held.shape[0] - CHUNK, CHUNK):
            self._make_runs(held[done:done + CHUNK])
        done += CHUNK
        self._pending, self._held = [held[done:].copy()], held.shape[0] - done

    def _make_runs(self, segs: np.ndarray) -> None:
        for runs, groups in _runs_of_segments(segs, self.grouped):
            self._runs.append(runs)
            self._groups.append(groups)

    def finish(self) -> np.ndarray:
        """The table's run rows; the builder is empty afterwards."""
        return self.finish_grouped()[0]

    def finish_grouped(self) -> Tuple[np.ndarray, np.ndarray]:
        """The table's run rows and each row's group (empty unless grouped); the builder
        is empty afterwards."""
        if self._pending:
            self._make_runs(np.concatenate(self._pending))
        runs, groups = self._runs, self._groups
        self._runs, self._groups, self._pending, self._held = [], [], [], 0
        if not runs:
            return empty_runs(), np.zeros(0, np.int64)
        row_groups = np.concatenate(groups) if self.grouped else np.zeros(0, np.int64)
        return (runs[0] if len(runs) == 1 else np.concatenate(runs)), row_groups


def _runs_of_segments(segs: np.ndarray, grouped: bool = False):
    """The runs (and each run's group, or None) of at most CHUNK segments of at least
    one byte each, as a list of (runs, groups) parts."""
    if segs[:, 2].max() > LIMIT:
        segs = _split_long(segs)
    parts = []
    for c in range(0, segs.shape[0], CHUNK):
        part = segs[c:c + CHUNK]
        parts.append(_chunk_runs(part[:, 0], part[:, 1], part[:, 2], part[:, 3] if grouped else None))
    return parts


def merge_segments(src: np.ndarray, dst: np.ndarray, length: np.ndarray,
                   group: Optional[np.ndarray] = None) -> np.ndarray:
    """Join segments that continue each other on both sides (and, given ``group``, are of
    one group); returns an (n, 3) array, or (n, 4) with the group."""
    if src.size > 1:
        joins = (src[1:] == src[:-1] + length[:-1]) & (dst[1:] == dst[:-1] + length[:-1])
        if group is not None:
            joins &= group[1:] == group[:-1]
        if joins.any():
            first = np.concatenate(([True], ~joins))
            run = np.cumsum(first) - 1
            length = np.bincount(run, weights=length).astype(np.int64)
            src, dst = src[first], dst[first]
            if group is not None:
                group = group[first]
    columns = [src, dst, length] if group is None else [src, dst, length, group]
    return np.stack(columns, axis=1)


def segments_to_runs(segs: np.ndarray) -> np.ndarray:
    """The run rows (columns ``COLUMNS["copy_runs"]``) of a table's (n, 3) segments (src,
    dst, len), in order: they copy exactly the segments' bytes in the segments' order."""
    builder = RunBuilder()
    builder.append(segs)
    return builder.finish()


def runs_to_segments(runs: np.ndarray) -> np.ndarray:
    """The (n, 3) segments (src, dst, len) ``runs`` copy, one element each, in order."""
    runs = np.asarray(runs, np.int64).reshape(-1, _WIDTH)
    count, outer = runs[:, _C["count"]], runs[:, _C["outer"]]
    per = count * outer
    owner = np.repeat(np.arange(runs.shape[0]), per)
    k = np.arange(owner.size) - np.repeat(np.cumsum(per) - per, per)
    o, i = np.divmod(k, count[owner])
    r = runs[owner]
    out = np.empty((owner.size, 3), np.int64)
    out[:, 0] = r[:, _C["src"]] + o * r[:, _C["outer_src"]] + i * r[:, _C["src_stride"]]
    out[:, 1] = r[:, _C["dst"]] + o * r[:, _C["outer_dst"]] + i * r[:, _C["dst_stride"]]
    out[:, 2] = r[:, _C["len"]]
    return out


def run_extents(runs: np.ndarray, side: str) -> Tuple[np.ndarray, np.ndarray]:
    """Per run, the lowest offset and one past the highest byte it touches on ``side``
    ("src" or "dst")."""
    runs = np.asarray(runs, np.int64).reshape(-1, _WIDTH)
    base, length = runs[:, _C[side]], runs[:, _C["len"]]
    inner = (runs[:, _C["count"]] - 1) * runs[:, _C[f"{side}_stride"]]
    outer = (runs[:, _C["outer"]] - 1) * runs[:, _C[f"outer_{side}"]]
    low = base + np.minimum(inner, 0) + np.minimum(outer, 0)
    return low, base + np.maximum(inner, 0) + np.maximum(outer, 0) + length


def table_bytes(runs: np.ndarray) -> int:
    """The bytes ``runs`` copy."""
    runs = np.asarray(runs, np.int64).reshape(-1, _WIDTH)
    return int((runs[:, _C["len"]] * runs[:, _C["count"]] * runs[:, _C["outer"]]).sum())
