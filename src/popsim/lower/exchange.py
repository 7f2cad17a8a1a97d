"""The exchange of a compute set: shared receive buffers and the traffic they cause.

A tile receives a remote region once per compute set. Fields of vertices on one tile
that only read the same elements share one exchange buffer, filled by one gather: the
same or overlapping contiguous runs of a variable share the buffer of their union, and
identical scattered views share one buffer. Fields that write keep a buffer each (two
writers of one element are a GraphCycleError anyway).

Traffic is counted per tile and phase (inputs before the compute phase, outputs after
it), split into exchange inside an IPU and exchange over IPU-Links between the IPUs of
a multi-IPU target. Everything here is vectorised over all the runs of a compute set.
"""
from __future__ import annotations

from typing import Tuple

import numpy as np

from ..runs import MappingIndex, Runs, distinct, search, split_at_gids
from .cost_model import CostModel, StepCost


class Traffic:
    """Bytes one exchange phase of a compute set moves, per tile."""

    def __init__(self, num_tiles: int, num_ipus: int = 1):
        self.onchip = np.zeros(num_tiles)       # on-tile rearrangement bytes
        self.onchip_runs = np.zeros(num_tiles, np.int64)
        self.sent = np.zeros(num_tiles)
        self.received = np.zeros(num_tiles)
        self.global_sent = np.zeros(num_tiles)  # over IPU-Links
        self.global_received = np.zeros(num_tiles)
        self.flows = np.zeros((num_ipus, num_ipus))  # bytes from IPU a to IPU b

    def cost(self, cost: CostModel) -> StepCost:
        return cost.copy(self.onchip, self.onchip_runs, self.sent, self.received, self.global_sent,
                         self.global_received, self.flows)

    def add_runs(self, index: MappingIndex, tiles_per_ipu: int, multi_ipu: bool, tile: np.ndarray,
                 gid: np.ndarray, length: np.ndarray, itemsize: np.ndarray, incoming: bool) -> None:
        """Runs [gid, gid + length) exchanged with ``tile`` (one per run): brought to it
        when ``incoming``, else taken from it back to where the elements live."""
        if multi_ipu:
            owner, gid, length, ipu = split_runs_by_ipu(index, tiles_per_ipu, gid, length)
            tile, itemsize = tile[owner], itemsize[owner]
            remote = ipu != tile // tiles_per_ipu
            if remote.any():
                mine = tile[remote] // tiles_per_ipu
                pair = (ipu[remote], mine) if incoming else (mine, ipu[remote])
                np.add.at(self.flows, pair, length[remote] * itemsize[remote])
                self._add(index, tile[remote], gid[remote], length[remote], itemsize[remote], incoming,
                          self.global_sent, self.global_received)
                local = ~remote
                tile, gid, length, itemsize = tile[local], gid[local], length[local], itemsize[local]
        self._add(index, tile, gid, length, itemsize, incoming, self.sent, self.received)

    @staticmethod
    def _add(index, tile, gid, length, itemsize, incoming, sent, received) -> None:
        if not gid.size:
            return
        n = sent.size
        mine = np.bincount(tile, weights=length * itemsize, minlength=n)
        theirs = bytes_by_tile(gid, length, itemsize, index, n)
        if incoming:
            received += mine
            sent += theirs
        else:
            sent += mine
            received += theirs


def bytes_by_tile(starts: np.ndarray, lengths: np.ndarray, itemsize: np.ndarray, index: MappingIndex,
                  num_tiles: int) -> np.ndarray:
    """Bytes of the runs [starts, starts + lengths) per tile holding them. A run inside
    one interval of the mapping (the common case) is counted on its tile directly; the
    others are integrated over the intervals (bytes_per_interval)."""
    k = search(index.begins, starts, side="right") - 1
    safe = np.maximum(k, 0)
    inside = (k >= 0) & (starts + lengths <= index.ends[safe]) if index.begins.size else np.zeros(starts.size, bool)
    out = np.zeros(num_tiles)
    out += np.bincount(index.tiles[safe[inside]], weights=lengths[inside] * itemsize[inside], minlength=num_tiles)
    across = ~inside
    if across.any():
        out += np.bincount(index.tiles, minlength=num_tiles,
                           weights=bytes_per_interval(starts[across], lengths[across], itemsize[across], index))
    return out


def bytes_per_interval(starts: np.ndarray, lengths: np.ndarray, itemsize: np.ndarray,
                       index: MappingIndex) -> np.ndarray:
    """For each interval of the mapping ``index``: the bytes of the runs [starts,
    starts + lengths) (global ids, elements of ``itemsize`` bytes) that fall in it.

    Integrates the runs' coverage instead of splitting them at every tile boundary,
    which matters when many runs each cross many tiles: below x, the runs cover
    sum(x - start) over the starts below x less sum(x - end) over the ends below x."""
    out = np.zeros(index.begins.size, np.int64)
    for size in distinct(itemsize).tolist():
        mine = itemsize == size
        s = np.sort(starts[mine])
        e = np.sort(starts[mine] + lengths[mine])
        s_sum = np.concatenate(([0], np.cumsum(s)))
        e_sum = np.concatenate(([0], np.cumsum(e)))

        def integral(x):  # elements of the runs below each x (ascending: the intervals are disjoint)
            below_s = _count_at_most(s, x)
            below_e = _count_at_most(e, x)
            return x * (below_s - below_e) - s_sum[below_s] + e_sum[below_e]
        at_end = integral(index.ends)
        # Intervals usually follow one another: where one begins as the previous ends, reuse that.
        at_begin = np.empty_like(at_end)
        follows = np.zeros(at_end.size, bool)
        follows[1:] = index.begins[1:] == index.ends[:-1]
        at_begin[follows] = at_end[:-1][follows[1:]]
        at_begin[~follows] = integral(index.begins[~follows])
        out += size * (at_end - at_begin)
    return out


def _count_at_most(values: np.ndarray, x: np.ndarray) -> np.ndarray:
    """For each of the ascending ``x``: how many of the ascending ``values`` are <= it.
    Searches with whichever of the two is shorter."""
    if x.size <= values.size:
        return np.searchsorted(values, x, side="right")
    first = np.searchsorted(x, values, side="left")  # each value counts from the first x >= it on
    return np.cumsum(np.bincount(first, minlength=x.size + 1)[:x.size])


def split_runs_by_ipu(index: MappingIndex, tiles_per_ipu: int, gid: np.ndarray,
                      length: np.ndarray) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Runs cut where their elements change IPU: (run each piece comes from, piece gid,
    piece length, IPU holding the piece)."""
    ipu = index.tiles // tiles_per_ipu
    cuts = index.begins[np.flatnonzero(ipu[1:] != ipu[:-1]) + 1]
    base = np.zeros(gid.size, np.int64)
    if gid.size > 1:
        np.cumsum(length[:-1], out=base[1:])
    pieces = split_at_gids(Runs(base, gid, length), cuts, cuts_sorted=True)
    owner = np.searchsorted(base, pieces.pos, side="right") - 1
    where = np.maximum(np.searchsorted(index.begins, pieces.gid, side="right") - 1, 0)
    return owner, pieces.gid, pieces.length, ipu[where] if ipu.size else np.zeros(owner.size, np.int64)


def merge_overlapping_runs(tile: np.ndarray, start: np.ndarray,
                           length: np.ndarray) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Group runs [start, start + length) of one tile that overlap (directly or through
    others) into regions, the union of their runs. Returns the region of each run and,
    per region: its tile, first element, length and one run in it. Runs that only touch
    stay apart (they may belong to different variables)."""
    if not start.size:
        empty = np.empty(0, np.int64)
        return empty, empty, empty, empty, empty
    order = np.lexsort((start, tile))
    t, s = tile[order], start[order]
    e = s + length[order]
    # Lift each tile's runs above the previous tile's so one running maximum serves all tiles.
    group = np.cumsum(np.concatenate(([0], t[1:] != t[:-1])))
    lift = group * (int(e.max()) + 1)
    reach = np.maximum.accumulate(e + lift)
    first = np.concatenate(([True], s[1:] + lift[1:] >= reach[:-1]))
    heads = np.flatnonzero(first)
    region = np.empty(start.size, np.int64)
    region[order] = np.cumsum(first) - 1
    ends = np.maximum.reduceat(e, heads)
    return region, t[heads], s[heads], ends - s[heads], order[heads]
