"""Views resolved to runs: where each stretch of a view lives.

A ``Runs`` holds, for each maximal stretch of a view whose elements are consecutive
elements of one variable, its position in the view's flat order (``pos``), its first
global element id (``gid``) and its ``length``. Splitting runs at view positions or at
global-id boundaries (tile intervals) is how mappings, copies and host transfers are
resolved; everything here is vectorised numpy.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, List, NamedTuple, Tuple

import numpy as np

if TYPE_CHECKING:
    from .variables import VariableTable


class Runs(NamedTuple):
    pos: np.ndarray
    gid: np.ndarray
    length: np.ndarray

    @property
    def size(self) -> int:
        return int(self.pos.size)


def distinct(values: np.ndarray) -> np.ndarray:
    """The distinct values, sorted (np.unique without its first-call import of numpy.ma,
    tens of milliseconds on the first Engine of a process)."""
    values = np.sort(np.asarray(values).reshape(-1))
    if values.size > 1:
        values = values[np.concatenate(([True], values[1:] != values[:-1]))]
    return values


# Below this many values a sorted array stays in the CPU's caches: searching it in the
# queries' own order is fastest. Above, queries in no order miss the cache on every probe.
CACHED_VALUES = 1 << 18
# MappingIndex.boundaries_up_to reads a table per id for this many queries or more, when the
# ids end below DENSE_IDS (the table's int32s take 4 bytes an id: 512 MB at most).
DENSE_QUERIES = 1 << 16
DENSE_IDS = 1 << 27
# Past DENSE_IDS (up to 2**31 ids), it reads a count of boundaries per block of 2**BLOCK_BITS
# ids (4 bytes a block) and only looks further in the queries' blocks that hold a boundary.
BLOCK_BITS = 6
BLOCKED_IDS = 1 << 31


def search(sorted_values: np.ndarray, queries: np.ndarray, side: str = "left") -> np.ndarray:
    """np.searchsorted, for many queries in no particular order. A large array is searched
    in the queries' sorted order, which keeps the search in cache (numpy starts each
    search from the last one's answer): about four times as fast for millions of
    queries into millions of values, the sort included. Queries already in order, and
    small arrays, are searched as they are. The answers are np.searchsorted's."""
    queries = np.asarray(queries)
    if queries.size < 4096 or sorted_values.size < CACHED_VALUES:
        return np.searchsorted(sorted_values, queries, side=side)
    flat = queries.reshape(-1)
    descents = np.count_nonzero(flat[1:] < flat[:-1])
    if descents == 0:
        return np.searchsorted(sorted_values, queries, side=side)
    order = sort_order(flat, descents)   # equal queries get equal answers in any order
    out = np.empty(flat.size, np.int64)
    out[order] = np.searchsorted(sorted_values, flat[order], side=side)
    return out.reshape(queries.shape)


def block_counts(values: np.ndarray) -> np.ndarray:
    """For sorted non-negative ``values``: ``counts[b]``, how many are below block b's first id
    (block b: ids [b, b + 1) << BLOCK_BITS), for each block up to the last value's and two more."""
    blocks = (int(values[-1]) >> BLOCK_BITS) + 1
    counts = np.zeros(blocks + 2, np.int32 if values.size < 1 << 31 else np.int64)
    np.cumsum(np.bincount(values >> BLOCK_BITS, minlength=blocks), out=counts[1:blocks + 1])
    counts[blocks + 1] = counts[blocks]
    return counts


def blocked_search(values: np.ndarray, counts: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """np.searchsorted(values, queries, side="right") for non-negative queries, by
    ``block_counts(values)``: a query's answer is its block's count plus the values of its
    block at or below it, and most blocks hold none (millions of queries into millions of
    values: a few times as fast as sorting them to search)."""
    block = np.minimum(queries >> BLOCK_BITS, counts.size - 2)
    out = counts[block].astype(np.int64)
    end = counts[block + 1]
    active = np.flatnonzero(end != out)   # blocks holding values: count those at or below the query
    while active.size:
        at = out[active]
        below = values[at] <= queries[active]
        out[active[below]] += 1
        active = active[below & (at + 1 < end[active])]
    return out


def sort_order(values: np.ndarray, descents: int = -1) -> np.ndarray:
    """np.argsort(values, kind="stable") for 1-D ``values``, faster. Values made of a few
    long ascending stretches (a channels-last tensor read channel by channel) are merged
    by timsort, several times faster than quicksort there; ``descents``, the count of
    values below the one before, when known."""
    if descents < 0:
        descents = np.count_nonzero(values[1:] < values[:-1])
    n = values.size
    if descents * 1024 <= n:
        return np.argsort(values, kind="stable")
    # Otherwise each value with its index packed below it in one int64, sorted as values:
    # numpy's vectorised sort is several times faster than its argsort.
    bits = max(int(n - 1).bit_length(), 1)
    if values.dtype.kind in "iu" and values.min() >= 0 and int(values.max()) < 1 << (63 - bits):
        key = (values.astype(np.int64) << bits) | np.arange(n, dtype=np.int64)
        key.sort()
        return key & ((1 << bits) - 1)
    return np.argsort(values, kind="stable")


def runs_of(tensor) -> Runs:
    gid, length = tensor._runs()
    pos = np.zeros(gid.size, np.int64)
    if gid.size > 1:
        np.cumsum(length[:-1], out=pos[1:])
    return Runs(pos, gid, length)


def split_at_positions(r: Runs, cuts: np.ndarray) -> Runs:
    """Split runs so that no run straddles a view position in ``cuts``."""
    return _split(r, r.pos, cuts)


def split_at_gids(r: Runs, cuts: np.ndarray, cuts_sorted: bool = False) -> Runs:
    """Split runs so that no run straddles a global element id in ``cuts``."""
    return _split(r, r.gid, cuts, cuts_sorted)


def _split(r: Runs, coord: np.ndarray, cuts: np.ndarray, cuts_sorted: bool = False) -> Runs:
    if r.size == 0 or cuts.size == 0:
        return r
    if not cuts_sorted:
        cuts = distinct(cuts)
    lo = search(cuts, coord, side="right")
    if r.length.min() > 0:   # the end is searched for only where the next cut falls inside the run
        inside = lo < cuts.size
        inside[inside] = cuts[lo[inside]] < coord[inside] + r.length[inside]
        at = np.flatnonzero(inside)
        extra = np.zeros(r.size, np.int64)
        extra[at] = search(cuts, coord[at] + r.length[at], side="left") - lo[at]
    else:
        extra = search(cuts, coord + r.length, side="left") - lo
    # extra: cut points strictly inside each run
    if not extra.any():
        return r
    pieces = extra + 1
    owner = np.repeat(np.arange(r.size), pieces)
    # The k-th piece of run i starts at cut lo[i] + k - 1 (k >= 1), or at the run start.
    k = np.arange(owner.size) - np.repeat(np.cumsum(pieces) - pieces, pieces)
    start = np.where(k == 0, coord[owner], cuts[np.minimum(lo[owner] + k - 1, cuts.size - 1)])
    end_coord = coord + r.length
    nxt = np.where(k == pieces[owner] - 1, end_coord[owner], cuts[np.minimum(lo[owner] + k, cuts.size - 1)])
    delta = start - coord[owner]
    return Runs(r.pos[owner] + delta, r.gid[owner] + delta, nxt - start)


def tile_intervals(pieces: Runs, tiles: np.ndarray, num_tiles: int) -> List[List[Tuple[int, int]]]:
    """``mapping[tile]``: the [begin, end) view positions of ``pieces`` (disjoint) on each
    tile (-1: none, left out), in order, neighbours on one tile joined."""
    result: List[List[Tuple[int, int]]] = [[] for _ in range(num_tiles)]
    order = np.argsort(pieces.pos, kind="stable")
    pos, length, tiles = pieces.pos[order], pieces.length[order], tiles[order]
    if length.size and length.min() > 0:
        # Pieces are disjoint, so a piece extends its tile's last interval exactly when the
        # piece before it (of a tile, the unmapped skipped) is on that tile and ends where it starts.
        mapped = tiles >= 0
        pos, length, tiles = pos[mapped], length[mapped], tiles[mapped]
        new = np.ones(pos.size, bool)
        new[1:] = (tiles[1:] != tiles[:-1]) | (pos[:-1] + length[:-1] != pos[1:])
        heads = np.flatnonzero(new)
        ends = np.append(heads[1:], pos.size)[:heads.size] - 1
        # the intervals by tile (a stable sort keeps each tile's in position order), each
        # tile's list one slice of them: no Python per interval
        by_tile = np.argsort(tiles[heads], kind="stable")
        pairs = list(zip(pos[heads][by_tile].tolist(), (pos[ends] + length[ends])[by_tile].tolist()))
        bounds = np.concatenate(([0], np.cumsum(np.bincount(tiles[heads], minlength=num_tiles)))).tolist()
        for t in np.flatnonzero(np.diff(bounds)).tolist():
            result[t] = pairs[bounds[t]:bounds[t + 1]]
        return result
    return join_piece_by_piece(pos, length, tiles, result)   # with empty pieces: one by one


def join_piece_by_piece(pos: np.ndarray, length: np.ndarray, tiles: np.ndarray,
                        result: List[List[Tuple[int, int]]]) -> List[List[Tuple[int, int]]]:
    """``tile_intervals``' rule one piece at a time, pieces in position order: a piece extends
    its tile's last interval when that ends where it starts; unmapped pieces (-1) are left out."""
    for p, n, t in zip(pos.tolist(), length.tolist(), tiles.tolist()):
        if t < 0:
            continue
        row = result[t]
        if row and row[-1][1] == p:
            row[-1] = (row[-1][0], p + n)
        else:
            row.append((p, p + n))
    return result


class MappingIndex:
    """Tile lookup by global element id, over the variables it was built from."""

    __slots__ = ("begins", "ends", "tiles", "_cuts", "_segments", "_dense", "_blocks")

    def __init__(self, begins: np.ndarray, ends: np.ndarray, tiles: np.ndarray):
        if begins.size > 1 and not (begins[1:] >= begins[:-1]).all():  # usually in order already
            order = np.argsort(begins, kind="stable")
            begins, ends, tiles = begins[order], ends[order], tiles[order]
        self.begins, self.ends, self.tiles = begins, ends, tiles
        self._cuts = self._segments = self._dense = self._blocks = None

    @classmethod
    def for_variables(cls, variables: Iterable) -> "MappingIndex":
        bs, es, ts = [], [], []
        for v in variables:
            b, e, t = v.mapping.resolved()
            if b.size:
                bs.append(b + v.base)
                es.append(e + v.base)
                ts.append(t)
        if not bs:
            empty = np.empty(0, np.int64)
            return cls(empty, empty, empty)
        return cls(np.concatenate(bs), np.concatenate(es), np.concatenate(ts))

    @classmethod
    def for_tensor(cls, tensor) -> "MappingIndex":
        return cls.for_variables(tensor._variables())

    def boundaries(self) -> np.ndarray:
        """Every interval boundary, sorted and unique (computed once)."""
        if self._cuts is None:
            self._cuts = distinct(np.concatenate([self.begins, self.ends]))
        return self._cuts

    def tile_at(self, gids: np.ndarray) -> np.ndarray:
        """Tile holding each global id (-1 when unmapped)."""
        idx = search(self.begins, gids, side="right") - 1
        out = np.full(gids.shape, -1, np.int64)
        ok = idx >= 0
        ok[ok] = gids[ok] < self.ends[idx[ok]]
        out[ok] = self.tiles[idx[ok]]
        return out

    def split(self, r: Runs) -> Tuple[Runs, np.ndarray]:
        """Runs split at tile boundaries, and the tile of each (-1 when unmapped): what
        ``split_at_gids`` at ``boundaries()`` then ``tile_at`` give, with one search of
        the boundaries for most runs instead of three. Between two neighbouring
        boundaries every id has one tile, so a piece's tile follows from the boundary
        before it; only runs that some boundary cuts are searched again for their end."""
        cuts = self.boundaries()
        if r.size == 0 or cuts.size == 0 or r.length.min() <= 0:   # (empty runs: split_at_gids' rule)
            pieces = split_at_gids(r, cuts, cuts_sorted=True)
            return pieces, self.tile_at(pieces.gid)
        seg = self.boundaries_up_to(r.gid)   # boundaries at or before each run's first id
        end = r.gid + r.length
        cut = seg < cuts.size
        cut[cut] = cuts[seg[cut]] < end[cut]   # the next boundary falls strictly inside the run
        if not cut.any():
            return r, self._segment_tiles()[seg]
        extra = np.zeros(r.size, np.int64)
        at = np.flatnonzero(cut)
        extra[at] = search(cuts, end[at], side="left") - seg[at]
        pieces = extra + 1
        owner = np.repeat(np.arange(r.size), pieces)
        # The k-th piece of run i starts at boundary seg[i] + k - 1 (k >= 1), or at the run start.
        k = np.arange(owner.size) - np.repeat(np.cumsum(pieces) - pieces, pieces)
        piece_seg = seg[owner] + k
        gid = r.gid[owner]
        start = np.where(k == 0, gid, cuts[np.minimum(piece_seg - 1, cuts.size - 1)])
        nxt = np.where(k == pieces[owner] - 1, end[owner], cuts[np.minimum(piece_seg, cuts.size - 1)])
        delta = start - gid
        return Runs(r.pos[owner] + delta, gid + delta, nxt - start), self._segment_tiles()[piece_seg]

    def boundaries_up_to(self, gids: np.ndarray) -> np.ndarray:
        """How many boundaries are at or before each (non-negative) id: search(boundaries(),
        gids, side="right"). Many queries read a table of the answer per id instead (made
        once, 4 bytes an id up to the last boundary): millions of ids in no order cost a
        sort to search, a few times what the look-ups cost."""
        cuts = self.boundaries()
        if gids.size < DENSE_QUERIES or cuts.size == 0 or cuts[0] < 0 or cuts.size >= 1 << 31:
            return search(cuts, gids, side="right")
        if cuts[-1] >= DENSE_IDS:
            if cuts[-1] >= BLOCKED_IDS or cuts.size < CACHED_VALUES:   # (a cached search is as fast)
                return search(cuts, gids, side="right")
            if self._blocks is None:
                self._blocks = block_counts(cuts)
            return blocked_search(cuts, self._blocks, gids)
        if self._dense is None:
            last = int(cuts[-1])
            table = np.zeros(last + 1, np.int32)
            table[int(cuts[0]):last] = np.repeat(np.arange(1, cuts.size, dtype=np.int32), np.diff(cuts))
            table[last] = cuts.size
            self._dense = table
        return self._dense[np.minimum(gids, cuts[-1])].astype(np.int64)

    def _segment_tiles(self) -> np.ndarray:
        """``out[i]``: the tile of the ids from boundary i - 1 up to boundary i (-1 when
        unmapped; i = 0 is before the first boundary, the last entry after the last)."""
        if self._segments is None:
            cuts = self.boundaries()
            out = np.full(cuts.size + 1, -1, np.int64)
            out[1:-1] = self.tile_at(cuts[:-1])
            self._segments = out
        return self._segments


def variable_offsets(table: "VariableTable", gid: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """(variable index, element offset within it) of each global id."""
    var = table.index_of(gid)
    return var, gid - table.bases()[var]
