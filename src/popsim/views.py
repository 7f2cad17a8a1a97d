"""Strided view algebra: how a view of one variable is described and transformed.

A strided view is (offset, shape, strides) in elements of its variable, like a numpy
view. Most view operations stay strided and cost O(rank); the ones that cannot (a
concat of unrelated pieces, a broadcast or upsample of a non-singleton dimension, a
reshape numpy would copy for) fall back to an explicit array of element ids (see
tensor.py). Nothing here creates device state.
"""
from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

import numpy as np

Shape = Tuple[int, ...]


def c_strides(shape: Sequence[int]) -> Shape:
    """Row-major element strides."""
    strides = []
    step = 1
    for n in reversed(shape):
        strides.append(step)
        step *= n
    return tuple(reversed(strides))


_ROW_MAJOR: dict = {}  # shape -> c_strides(shape), for the shapes a program uses


def row_major_strides(shape: Shape) -> Shape:
    """c_strides of a tuple of ints, remembered (reshape and flatten ask for the same few)."""
    strides = _ROW_MAJOR.get(shape)
    if strides is None:
        if len(_ROW_MAJOR) >= 4096:
            _ROW_MAJOR.clear()
        strides = _ROW_MAJOR[shape] = c_strides(shape)
    return strides


def num_elements(shape: Sequence[int]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def reshape_strides(shape: Shape, strides: Shape, new_shape: Shape) -> Optional[Shape]:
    """Strides giving ``new_shape`` over the same elements in row-major order without
    copying, or None when the view cannot be reshaped in place (numpy's rule)."""
    if num_elements(shape) == 0:
        return c_strides(new_shape)
    old = [(n, s) for n, s in zip(shape, strides) if n != 1]
    new_strides = [1] * len(new_shape)
    oi, oj, ni, nj = 0, 1, 0, 1
    while ni < len(new_shape) and oi < len(old):
        np_ = new_shape[ni]
        op = old[oi][0]
        while np_ != op:
            if np_ < op:
                np_ *= new_shape[nj]
                nj += 1
            else:
                op *= old[oj][0]
                oj += 1
        # The old dimensions merged here must be contiguous with one another.
        for k in range(oi, oj - 1):
            if old[k][1] != old[k + 1][0] * old[k + 1][1]:
                return None
        new_strides[nj - 1] = old[oj - 1][1]
        for k in range(nj - 1, ni, -1):
            new_strides[k - 1] = new_strides[k] * new_shape[k]
        ni, nj = nj, nj + 1
        oi, oj = oj, oj + 1
    return tuple(new_strides)


def strided_ids(start: int, shape: Shape, strides: Shape) -> np.ndarray:
    """The element ids of a strided view, as an int64 array of its shape."""
    ids = np.full((), start, dtype=np.int64)
    rank = len(shape)
    for k, (n, s) in enumerate(zip(shape, strides)):
        axis = np.arange(n, dtype=np.int64) * s
        ids = ids + axis.reshape((1,) * k + (n,) + (1,) * (rank - k - 1))
    return np.ascontiguousarray(np.broadcast_to(ids, shape))


def contiguous_inner(shape: Shape, strides: Shape) -> Tuple[int, int]:
    """(k, L): dims k.. of the view form row-major contiguous blocks of L elements."""
    block = 1
    k = len(shape)
    while k > 0:
        n, s = shape[k - 1], strides[k - 1]
        if n != 1 and s != block:
            break
        block *= n
        k -= 1
    return k, block


def strided_runs(start: int, shape: Shape, strides: Shape) -> Tuple[np.ndarray, np.ndarray]:
    """(first id, length) of each maximal run of consecutive ids, in view order."""
    total = num_elements(shape)
    if total == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    k, block = contiguous_inner(shape, strides)
    if k == 0:
        return np.array([start], np.int64), np.array([total], np.int64)
    starts = strided_ids(start, shape[:k], strides[:k]).reshape(-1)
    return merge_runs(starts, np.full(starts.shape, block, np.int64))


def merge_runs(starts: np.ndarray, lengths: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Join runs where one ends exactly where the next (in order) begins."""
    if starts.size <= 1:
        return starts, lengths
    joins = starts[1:] == starts[:-1] + lengths[:-1]
    if not joins.any():
        return starts, lengths
    first = np.concatenate(([True], ~joins))
    group = np.cumsum(first) - 1
    new_lengths = np.bincount(group, weights=lengths, minlength=group[-1] + 1).astype(np.int64)
    return starts[first], new_lengths


def ids_runs(ids: np.ndarray, breaks: Optional[np.ndarray] = None) -> Tuple[np.ndarray, np.ndarray]:
    """Runs of consecutive ids in a flat id array; ``breaks`` forces extra splits
    (True at i splits before element i)."""
    if ids.size == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    first = np.empty(ids.size, dtype=bool)
    first[0] = True
    np.not_equal(ids[1:], ids[:-1] + 1, out=first[1:])
    if breaks is not None:
        first |= breaks
    starts_at = np.flatnonzero(first)
    lengths = np.diff(np.append(starts_at, ids.size))
    return ids[starts_at], lengths.astype(np.int64)


def runs_self_overlap(start: np.ndarray, length: np.ndarray) -> bool:
    """Whether some id lies in two of the runs [start, start + length) (empty runs aside)."""
    keep = length > 0
    start, length = start[keep], length[keep]
    if start.size < 2:
        return False
    order = np.argsort(start, kind="stable")
    start = start[order]
    reach = np.maximum.accumulate(start + length[order])
    return bool(np.any(start[1:] < reach[:-1]))


def runs_overlap(a: Tuple[np.ndarray, np.ndarray], b: Tuple[np.ndarray, np.ndarray]) -> bool:
    """Whether two sets of id runs share an id."""
    a_start, a_len = a
    b_start, b_len = b
    if a_start.size == 0 or b_start.size == 0:
        return False
    order = np.argsort(a_start, kind="stable")
    a_start = a_start[order]
    a_end = np.maximum.accumulate(a_start + a_len[order])
    # For each b run: the last a run starting before b ends must end after b starts.
    idx = np.searchsorted(a_start, b_start + b_len, side="left") - 1
    valid = idx >= 0
    return bool(np.any(a_end[idx[valid]] > b_start[valid]))


def expanded_shape(shape: Shape, strides: Shape, dims: Sequence[int]) -> Tuple[Shape, Shape]:
    """Poplar's expand: a singleton dimension before each listed source dimension
    (repeat an index to insert several)."""
    dims = sorted(dims)
    new_shape: List[int] = []
    new_strides: List[int] = []
    i = 0
    for d in range(len(shape) + 1):
        while i < len(dims) and dims[i] == d:
            new_shape.append(1)
            new_strides.append(0)
            i += 1
        if d < len(shape):
            new_shape.append(shape[d])
            new_strides.append(strides[d])
    return tuple(new_shape), tuple(new_strides)
