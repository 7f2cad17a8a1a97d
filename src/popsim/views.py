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

from . import errors
from .errors import TensorCreationError

Shape = Tuple[int, ...]

# A view whose strides cannot describe it lists its element ids one by one (int64, 8 bytes
# each). A listing longer than this is refused rather than allocated: 8 GiB of ids, more
# ids than an ipu2 has bytes of memory, so no copy or vertex could use such a view.
MAX_LISTED_IDS = 1 << 30


def check_listing(count: int, what: str) -> None:
    """Refuse (TensorCreationError) to list ``count`` element ids for ``what`` when that is
    more than MAX_LISTED_IDS."""
    if count > MAX_LISTED_IDS:
        raise TensorCreationError(
            f"{what}: the view would list {count:,} element ids one by one ({count * 8:,} bytes of host memory), "
            f"more than popsim lists for one view ({MAX_LISTED_IDS:,}): no copy or vertex could use it on a "
            "modelled IPU. Use fewer elements, or a view that keeps a stride (a slice, a broadcast of a "
            "dimension of size 1)")


def listed(make, count: int, what: str) -> np.ndarray:
    """``make()``, the array of ``count`` element ids of ``what``, after check_listing; a
    host that cannot allocate it, or a shape numpy cannot hold (a dimension of 2**63 or
    more, even with no elements), is a TensorCreationError too."""
    check_listing(count, what)
    try:
        return make()
    except MemoryError:
        raise TensorCreationError(f"{what}: the host cannot allocate the {count:,} element ids "
                                  f"({count * 8:,} bytes) of the view; use fewer elements") from None
    except (OverflowError, ValueError) as e:  # numpy's "maximum allowed dimension exceeded" and kin
        raise TensorCreationError(f"{what}: the view's shape is too large for popsim to list its elements ({e}); "
                                  "use smaller sizes") from None


def slice_bounds(k: slice, n: int, where) -> Tuple[int, int, int]:
    """``k.indices(n)``, refusing bounds that are not integers (popsim.TypeError) and a step
    of 0 (popsim.IndexError); ``where()`` names what is sliced."""
    for part in (k.start, k.stop, k.step):
        if part is not None and (isinstance(part, (bool, np.bool_)) or not isinstance(part, (int, np.integer))):
            raise errors.TypeError(f"cannot slice {where()} with {repr(k)[:60]}: slice bounds and steps must be "
                                   f"integers or None, found {type(part).__name__}")
    if k.step == 0:
        raise errors.IndexError(f"cannot slice {where()} with {k!r}: the step must not be 0")
    return k.indices(n)


def basic_index(shape: Shape, strides: Optional[Shape], offset: int, key, describe):
    """numpy basic indexing of a view (``strides`` None: one that lists its ids) by ``key``
    (integers, slices, ``...``, None), every key form and every error (popsim.IndexError,
    popsim.TypeError; ``describe()`` names the view): the result's (shape, strides, offset)
    and the key to index an id array with."""
    rank = len(shape)
    if not isinstance(key, tuple):
        key = (key,)
    n_real = sum(1 for k in key if k is not None and k is not Ellipsis)
    if sum(1 for k in key if k is Ellipsis) > 1:
        raise errors.IndexError(f"an index can only have a single ellipsis ('...'), indexing {describe()}")
    if n_real > rank:
        raise errors.IndexError(f"too many indices for {describe()}: {n_real} given for rank {rank}")
    expanded: List[object] = []
    for k in key:
        if k is Ellipsis:
            expanded.extend([slice(None)] * (rank - n_real))
        else:
            expanded.append(k)
    expanded.extend([slice(None)] * (rank - sum(1 for k in expanded if k is not None)))

    out_shape: List[int] = []
    out_strides: List[int] = []
    np_key: List[object] = []
    dim = 0
    for k in expanded:
        if k is None:
            out_shape.append(1)
            out_strides.append(0)
            np_key.append(None)
            continue
        n = shape[dim]
        s = strides[dim] if strides is not None else 0
        if isinstance(k, slice):
            start, stop, step = slice_bounds(k, n, lambda: f"dimension {dim} of {describe()}")
            length = len(range(start, stop, step))
            out_shape.append(length)
            out_strides.append(s * step)
            if length:
                offset += start * s
            np_key.append(k)
        elif isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_)):
            i = int(k)
            if not -n <= i < n:
                raise errors.IndexError(f"index {i} is out of range for dimension {dim} of {describe()}: "
                                        f"valid indices are {-n}..{n - 1}")
            offset += (i % n) * s
            np_key.append(i % n)
        else:
            raise errors.IndexError(f"cannot index {describe()} with {type(k).__name__} {repr(k)[:60]}: use "
                                    "integers, slices, ... or None (for element lists, concat the pieces)")
        dim += 1
    return tuple(out_shape), tuple(out_strides), offset, tuple(np_key)


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
    return listed(lambda: _strided_ids(start, shape, strides), num_elements(shape), f"a view of shape {list(shape)}")


def _strided_ids(start: int, shape: Shape, strides: Shape) -> np.ndarray:
    ids = np.full((), start, dtype=np.int64)
    rank = len(shape)
    for k, (n, s) in enumerate(zip(shape, strides)):
        axis = np.arange(n, dtype=np.int64) * s
        ids = ids + axis.reshape((1,) * k + (n,) + (1,) * (rank - k - 1))
    return np.ascontiguousarray(np.broadcast_to(ids, shape))


def int_box(begin, end, shape: Shape) -> Optional[Shape]:
    """The shape of the box [begin[d], end[d]) of a view of ``shape`` when the bounds are lists
    or tuples of plain ints, one per dimension, inside it; None for anything else (slicing
    dimension by dimension checks and converts it)."""
    if not ((type(begin) is list or type(begin) is tuple) and (type(end) is list or type(end) is tuple) and
            len(begin) == len(shape) and len(end) == len(shape)):
        return None
    sizes = []
    for b, e, n in zip(begin, end, shape):
        if type(b) is not int or type(e) is not int or not 0 <= b <= e <= n:
            return None
        sizes.append(e - b)
    return tuple(sizes)


def box_offset(offset: int, begin, end, strides: Shape) -> int:
    """The offset of that box of a strided view: slicing dimension by dimension moves it by
    begin x stride along each dimension the box does not leave empty."""
    for b, e, stride in zip(begin, end, strides):
        if e > b:
            offset += b * stride
    return offset


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
