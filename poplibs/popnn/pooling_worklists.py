"""The geometry of pooling: which input positions each output position reads, as the
worklists popnn's pooling vertices walk (PopLibs' Pooling.cpp / PoolVertices.cpp build the
same kind of lists: per row of positions, per kernel position, a run of positions).

A *plane* is one (channel group, batch) slice of a field tensor held as [*field, chansPerGroup]
(channels innermost, as PopLibs holds pooling tensors). A *row* is the positions of a plane
that share every field index but the innermost. Work is given per destination row: a list
of entries (outOffset, inOffset, numElements): for f < numElements the destination position
``rowStart + outOffset + f * outStride`` combines the source position
``inOffset + f * inStride`` (inOffset counted from the plane's start). The forward pass's
destination is the pooled field (outStride 1, inStride the innermost stride); the backward
pass's is the input field (outStride the stride, inStride 1). Kernel positions that fall on
padding are in no entry (padding is never materialised); negative padding (truncation)
simply moves the window, as ConvParams' input truncation does.

Entries of a row follow the kernel positions in row-major order, so every destination
element combines its sources in the same order whatever the tile mapping.

The two passes are the two entries of PASSES (a Pass each: which field is the destination,
the source index of a destination index and kernel index in an outer dimension, an entry's
layout and the strides); plane_work builds either from them.
"""
import itertools
from dataclasses import dataclass
from typing import Callable, List, Optional, Sequence, Tuple

import numpy as np


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def inner_range(out_size: int, field: int, stride: int, pad_lower: int, k: int) -> Tuple[int, int]:
    """The output positions ``o`` whose window's element ``k`` is a real input: 0 <= o*s + k - pl < field."""
    lo = max(0, _ceil_div(pad_lower - k, stride))
    hi = min(out_size, (field - 1 + pad_lower - k) // stride + 1)
    return lo, max(lo, hi)


def valid_counts(out_size: int, field: int, kernel: int, stride: int, pad_lower: int) -> np.ndarray:
    """Per output position of one dimension: how many of its kernel elements are real inputs."""
    o = np.arange(out_size)[:, None] * stride + np.arange(kernel)[None, :] - pad_lower
    return ((o >= 0) & (o < field)).sum(axis=1)


@dataclass(frozen=True)
class PlaneWork:
    """The worklist of one plane, per destination row: ``entries[r]`` an int64 array [n, 3]
    (outOffset within the row, inOffset within the plane, numElements); ``src_rows[r]`` the
    (first, last + 1) source rows its entries read (0, 0 when none)."""
    dest_row_size: int
    src_row_size: int
    dest_rows: int
    src_rows_total: int
    out_stride: int
    in_stride: int
    entries: Tuple[np.ndarray, ...]
    src_rows: Tuple[Tuple[int, int], ...]


def _row_major(index: Sequence[int], shape: Sequence[int]) -> int:
    flat = 0
    for i, n in zip(index, shape):
        flat = flat * n + i
    return flat


def _output_of(i: int, k: int, stride: int, pad_lower: int, out_size: int) -> Optional[int]:
    """The output position whose window's element ``k`` is input position ``i``:
    o = (i + pl - k) / s, when whole and in range."""
    num = i + pad_lower - k
    return num // stride if num % stride == 0 and 0 <= num // stride < out_size else None


def _input_of(o: int, k: int, stride: int, pad_lower: int, in_size: int) -> Optional[int]:
    """The input position element ``k`` of output position ``o``'s window reads:
    i = o*s + k - pl, when inside the field."""
    i = o * stride + k - pad_lower
    return i if 0 <= i < in_size else None


@dataclass(frozen=True)
class Pass:
    """A pass's worklists: ``fields(in_field, out_field)`` its (destination, source) fields;
    ``source(dest index, kernel index, stride, pad_lower, source size)`` the source index in
    an outer dimension (None: padding, no entry); ``entry(lo, hi, first_in, base)`` the
    entry of the output positions [lo, hi) of a row reading input positions from
    ``first_in`` (``base``: the source row's start); ``strides(stride)`` (outStride, inStride)."""
    fields: Callable
    source: Callable
    entry: Callable
    strides: Callable


#: plane_work's ``backward`` -> its pass: forward the pooled field is the destination,
#: backward (the gradients) the input field
PASSES = {
    False: Pass(lambda i, o: (o, i), _input_of, lambda lo, hi, first_in, base: (lo, base + first_in, hi - lo),
                lambda s: (1, s)),
    True: Pass(lambda i, o: (i, o), _output_of, lambda lo, hi, first_in, base: (first_in, base + lo, hi - lo),
               lambda s: (s, 1)),
}


def plane_work(in_field: Sequence[int], out_field: Sequence[int], kernel: Sequence[int], stride: Sequence[int],
               pad_lower: Sequence[int], backward: bool) -> PlaneWork:
    """The per-row worklists of a plane (module docstring); ``backward`` makes the input field
    the destination (PASSES)."""
    pass_ = PASSES[bool(backward)]
    rank = len(in_field)
    kernel_outer = list(itertools.product(*[range(k) for k in kernel[:-1]]))
    inner = [(k, *inner_range(out_field[-1], in_field[-1], stride[-1], pad_lower[-1], k)) for k in range(kernel[-1])]
    inner = [(k, lo, hi) for k, lo, hi in inner if lo < hi]
    s_last, pl_last = stride[-1], pad_lower[-1]
    dest_field, src_field = pass_.fields(in_field, out_field)
    out_stride, in_stride = pass_.strides(s_last)
    entries, src_rows = [], []
    for dest_outer in itertools.product(*[range(n) for n in dest_field[:-1]]):
        rows = []
        for k_outer in kernel_outer:
            src_outer = []
            for d in range(rank - 1):
                index = pass_.source(dest_outer[d], k_outer[d], stride[d], pad_lower[d], src_field[d])
                if index is None:
                    break
                src_outer.append(index)
            else:
                base = _row_major(src_outer, src_field[:-1]) * src_field[-1]
                rows.extend(pass_.entry(lo, hi, lo * s_last + k - pl_last, base) for k, lo, hi in inner)
        work = np.array(rows, dtype=np.int64).reshape(-1, 3)
        entries.append(work)
        if len(work):
            first_row = int(work[:, 1].min()) // src_field[-1]
            last_row = int((work[:, 1] + (work[:, 2] - 1) * in_stride).max()) // src_field[-1]
            src_rows.append((first_row, last_row + 1))
        else:
            src_rows.append((0, 0))
    return PlaneWork(dest_field[-1], src_field[-1], len(entries), int(np.prod(src_field[:-1], dtype=np.int64)),
                     out_stride, in_stride, tuple(entries), tuple(src_rows))


@dataclass(frozen=True)
class TileWork:
    """One vertex's share: destination rows [first_row, last_row) of the flattened planes;
    the source pieces it reads as (plane, first source row, last source row) in order; the
    worklist as PopLibs-style flat arrays: ``row_starts`` (rows + 1 offsets into the entries)
    and ``work_list`` (entries as triples, inOffset counted from the start of the pieces)."""
    first_row: int
    last_row: int
    pieces: Tuple[Tuple[int, int, int], ...]
    row_starts: np.ndarray
    work_list: np.ndarray


def tile_work(work: PlaneWork, first_row: int, last_row: int) -> TileWork:
    """The worklist of destination rows [first_row, last_row) (global: plane * rows + row)."""
    rows_per_plane = work.dest_rows
    pieces: List[Tuple[int, int, int]] = []
    piece_base = {}
    base = 0
    for plane in range(first_row // rows_per_plane, _ceil_div(last_row, rows_per_plane)):
        r0 = max(first_row, plane * rows_per_plane) - plane * rows_per_plane
        r1 = min(last_row, (plane + 1) * rows_per_plane) - plane * rows_per_plane
        used = [work.src_rows[r] for r in range(r0, r1) if work.src_rows[r][1] > work.src_rows[r][0]]
        if not used:
            continue
        lo, hi = min(u[0] for u in used), max(u[1] for u in used)
        pieces.append((plane, lo, hi))
        piece_base[plane] = base - lo * work.src_row_size
        base += (hi - lo) * work.src_row_size
    lists, starts = [], [0]
    for row in range(first_row, last_row):
        plane, r = divmod(row, rows_per_plane)
        e = work.entries[r]
        if len(e):
            e = e.copy()
            e[:, 1] += piece_base[plane]
            lists.append(e)
        starts.append(starts[-1] + len(e))
    flat = np.concatenate(lists).reshape(-1) if lists else np.zeros(0, np.int64)
    return TileWork(first_row, last_row, tuple(pieces), np.array(starts, np.uint32), flat.astype(np.uint32))


def split_rows(total_rows: int, row_elements: int, num_tiles: int, min_elements: int = 64) -> List[Tuple[int, int]]:
    """Contiguous row ranges, one per tile used: about total/tiles rows each, at least
    ``min_elements`` elements' worth of rows (so that small outputs are not spread thin)."""
    if total_rows == 0:
        return []
    per_tile = max(_ceil_div(total_rows, num_tiles), _ceil_div(min_elements, max(1, row_elements)))
    return [(r, min(total_rows, r + per_tile)) for r in range(0, total_rows, per_tile)]


def scale_runs(counts: np.ndarray, first_row: int, last_row: int) -> np.ndarray:
    """SelectiveScaling's worklist for global rows [first_row, last_row) of pooled planes
    whose per-position divisors are ``counts`` ([rows per plane, row size], the same for
    every plane): triples (position, numPositions, divisor) for runs of equal divisor within
    a row, positions counted from first_row's start; divisors 0 and 1 need no scaling and
    are left out."""
    rows_per_plane, row_size = counts.shape
    flat = counts[np.arange(first_row, last_row) % rows_per_plane].reshape(-1)
    out = []
    start = 0
    for i in range(1, len(flat) + 1):
        if i == len(flat) or flat[i] != flat[start] or i % row_size == 0:
            if flat[start] > 1:
                out.append((start, i - start, int(flat[start])))
            start = i
    return np.array(out, dtype=np.uint32).reshape(-1)


__all__ = ["PASSES", "Pass", "PlaneWork", "TileWork", "inner_range", "plane_work", "scale_runs", "split_rows",
           "tile_work", "valid_counts"]
