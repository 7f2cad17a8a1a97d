"""Tile mappings: which tile holds each element of a variable.

A variable's mapping is built from ``set_tile_mapping`` calls, later calls winning
where they overlap (as in Poplar), and resolved lazily into sorted, disjoint
``(begin, end, tile)`` intervals of the variable's flat elements. Mapping a whole
variable to one tile, by far the commonest call, is kept as a plain int.
"""
from __future__ import annotations

from array import array
from typing import List, Optional, Tuple

import numpy as np

Intervals = Tuple[np.ndarray, np.ndarray, np.ndarray]  # begins, ends, tiles (int64)

_EMPTY = np.empty(0, np.int64)


class VariableMapping:
    """The tile mapping of one variable's ``size`` flat elements."""

    __slots__ = ("size", "whole_tile", "_paints", "_scalars", "_resolved")

    def __init__(self, size: int):
        self.size = size
        self.whole_tile: Optional[int] = None  # set while the whole variable is on one tile
        self._paints: List[Tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        # single-interval paints not yet in _paints, flat: begin, end, tile, begin, end, tile...
        # (an array, made on first use: nothing per call for the garbage collector to trace)
        self._scalars: Optional[array] = None
        self._resolved: Optional[Intervals] = None

    def paint_all(self, tile: int) -> None:
        """Map every element to ``tile``: earlier calls no longer matter."""
        self.whole_tile = tile
        self._paints = []
        self._scalars = None
        self._resolved = None

    def paint_one(self, begin: int, end: int, tile: int) -> None:
        """Map elements [begin, end) to ``tile``: the common call, kept free of numpy."""
        if 0 < end - begin < self.size and self.whole_tile is None:  # a part, on a part-mapped variable
            scalars = self._scalars
            if scalars is None:
                scalars = self._scalars = array("q")
            scalars.extend((begin, end, tile))
            self._resolved = None
            return
        if begin == 0 and end == self.size:  # first: mapping all of an empty variable still maps it
            self.paint_all(tile)
            return
        if end <= begin:
            return
        if self._scalars is None:
            self._scalars = array("q")
        if self.whole_tile is not None:
            self._scalars.extend((0, self.size, self.whole_tile))
            self.whole_tile = None
        self._scalars.extend((begin, end, tile))
        self._resolved = None

    def _flush(self) -> None:
        """Move pending single-interval paints into _paints, keeping call order."""
        if self._scalars:
            rows = np.array(self._scalars, np.int64).reshape(-1, 3)
            self._paints.append((rows[:, 0].copy(), rows[:, 1].copy(), rows[:, 2].copy()))
            self._scalars = None

    def paint(self, begins, ends, tiles) -> None:
        """Map elements [begins[i], ends[i]) to tiles[i] (scalars broadcast)."""
        self._flush()
        b = np.atleast_1d(np.asarray(begins, np.int64))
        e = np.atleast_1d(np.asarray(ends, np.int64))
        t = np.broadcast_to(np.asarray(tiles, np.int64), b.shape)
        keep = e > b
        if not keep.all():
            b, e, t = b[keep], e[keep], t[keep]
        if b.size == 0:
            return
        if b.size == 1 and b[0] == 0 and e[0] == self.size:
            self.paint_all(int(t[0]))
            return
        if self.whole_tile is not None:
            self._paints = [(np.zeros(1, np.int64), np.full(1, self.size, np.int64),
                             np.full(1, self.whole_tile, np.int64))]
            self.whole_tile = None
        self._paints.append((b, e, np.array(t)))
        self._resolved = None

    def paint_rows(self) -> List[np.ndarray]:
        """The calls that built the mapping, in order, as (n, 3) int64 rows (begin, end,
        tile), whether or not pending single-interval calls were flushed: what the
        executable-cache digest reads, without converting what is pending."""
        rows = [np.stack(p, axis=1) for p in self._paints]
        if self._scalars:
            rows.append(np.frombuffer(self._scalars, np.int64).reshape(-1, 3))
        return rows

    def paints(self) -> List[Tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """The calls that built the mapping, in order (cheaper to fingerprint than to resolve)."""
        self._flush()
        return list(self._paints)

    @property
    def is_empty(self) -> bool:
        return self.whole_tile is None and not self._paints and not self._scalars

    def resolved(self) -> Intervals:
        """Sorted disjoint intervals of mapped elements, adjacent same-tile intervals joined."""
        if self._resolved is None:
            self._flush()
            if self.whole_tile is not None:
                self._resolved = (np.zeros(1, np.int64), np.full(1, self.size, np.int64),
                                  np.full(1, self.whole_tile, np.int64))
            else:
                self._resolved = _resolve(self._paints)
        return self._resolved

    def first_unmapped(self) -> Optional[Tuple[int, int]]:
        """The first [begin, end) range of elements no call has mapped, if any."""
        if self.whole_tile is not None or self.size == 0:
            return None
        begins, ends, _ = self.resolved()  # sorted and disjoint
        if begins.size == 0:
            return 0, self.size
        if begins[0] > 0:
            return 0, int(begins[0])
        gaps = np.flatnonzero(begins[1:] > ends[:-1])
        if gaps.size:
            return int(ends[gaps[0]]), int(begins[gaps[0] + 1])
        return (int(ends[-1]), self.size) if ends[-1] < self.size else None


def _resolve(paints) -> Intervals:
    if not paints:
        return _EMPTY, _EMPTY, _EMPTY
    begins = np.concatenate([p[0] for p in paints])
    ends = np.concatenate([p[1] for p in paints])
    tiles = np.concatenate([p[2] for p in paints])
    order = np.argsort(begins, kind="stable")
    b, e, t = begins[order], ends[order], tiles[order]
    if b.size > 1 and np.any(b[1:] < e[:-1]):
        b, e, t = _paint_in_order(begins, ends, tiles)
    return join_adjacent(b, e, t)


def _paint_in_order(begins, ends, tiles) -> Intervals:
    """Overlapping calls: split at every boundary and let the later call win."""
    cuts = np.sort(np.concatenate([begins, ends]))
    cuts = cuts[np.concatenate(([True], cuts[1:] != cuts[:-1]))]
    owner = np.full(cuts.size - 1, -1, np.int64)
    lo = np.searchsorted(cuts, begins)
    hi = np.searchsorted(cuts, ends)
    for i in range(begins.size):  # in call order: later paints overwrite
        owner[lo[i]:hi[i]] = tiles[i]
    mapped = owner >= 0
    return cuts[:-1][mapped], cuts[1:][mapped], owner[mapped]


def join_adjacent(b: np.ndarray, e: np.ndarray, t: np.ndarray) -> Intervals:
    if b.size <= 1:
        return b, e, t
    joins = (b[1:] == e[:-1]) & (t[1:] == t[:-1])
    if not joins.any():
        return b, e, t
    first = np.concatenate(([True], ~joins))
    last = np.concatenate((~joins, [True]))
    return b[first], e[last], t[first]
