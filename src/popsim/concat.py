"""concat and append: tensors joined along a dimension. Views stay strided when the
pieces continue one another in one variable; otherwise the result is an indexed view."""
from __future__ import annotations

from typing import List, Optional, Sequence, Tuple, Union

import numpy as np

from . import errors, views
from .arguments import found
from .errors import TensorCreationError
from .tensor import Tensor

__all__ = ["concat", "append"]


def _check_concat(tensors: Sequence[Tensor], dim: int) -> Tuple[List[Tensor], int]:
    if isinstance(tensors, (str, bytes, dict)) or not hasattr(tensors, "__iter__"):
        raise errors.TypeError(f"concat takes a list of Tensors, found {found(tensors)}; write concat([a, b], dim) "
                               "or concat(a, b, dim)")
    tensors = list(tensors)
    if not tensors:
        raise TensorCreationError("concat needs at least one tensor")
    first = tensors[0]
    table, dtype = getattr(first, "_table", None), getattr(first, "_dtype", None)
    if type(first) is Tensor and len(first._shape) == 1 and dim == 0 and all(
            type(t) is Tensor and t._table is table and t._dtype is dtype and len(t._shape) == 1 for t in tensors):
        return tensors, 0   # 1-D views of one graph and type (thousands of slices): nothing more to check
    for t in tensors:
        if not isinstance(t, Tensor):
            raise errors.TypeError(f"concat takes Tensors, found {type(t).__name__}")
    dim = first._check_dim(dim, "concat")
    for t in tensors[1:]:
        if t._table is not first._table:
            raise TensorCreationError(f"concat: {t._describe()} belongs to a different graph than "
                                      f"{first._describe()}")
        if t._dtype is not first._dtype:
            raise TensorCreationError(f"concat: {t._describe()} has type {t._dtype.name} but {first._describe()} "
                                      f"has {first._dtype.name}; reinterpret or copy to one type first")
        if t.rank != first.rank or any(a != b for d, (a, b) in enumerate(zip(t._shape, first._shape)) if d != dim):
            raise TensorCreationError(f"concat along dimension {dim}: {t._describe()} does not match "
                                      f"{first._describe()} in the other dimensions")
    return tensors, dim


def _try_join_strided(a: Tensor, b: Tensor, dim: int) -> Optional[Tensor]:
    """a and b as one strided view when b continues a along dim."""
    if a._ids is not None or b._ids is not None or a._var is not b._var:
        return None
    if a._shape[dim] == 0:
        return b
    if b._shape[dim] == 0:
        return a
    sa, sb = a._strides, b._strides
    if any(x != y for d, (x, y) in enumerate(zip(sa, sb)) if d != dim and a._shape[d] != 1):
        return None
    step = sa[dim] if a._shape[dim] > 1 else (sb[dim] if b._shape[dim] > 1 else b._offset - a._offset)
    if (a._shape[dim] > 1 and sa[dim] != step) or (b._shape[dim] > 1 and sb[dim] != step):
        return None
    if step == 0 or b._offset != a._offset + a._shape[dim] * step:
        return None
    shape = list(a._shape)
    shape[dim] += b._shape[dim]
    strides = list(sa)
    strides[dim] = step
    return a._like(tuple(shape), a._offset, tuple(strides))


def concat(tensors: Union[Tensor, Sequence[Tensor]], second: Union[Tensor, int, None] = None,
           dim: Optional[int] = None) -> Tensor:
    """Join tensors along ``dim`` (default 0); all other dimensions must match.

    Both of Poplar's forms: ``concat([a, b, c], dim)`` and ``concat(a, b, dim)``.
    """
    if isinstance(tensors, Tensor):  # Poplar's concat(A, B, dim)
        if not isinstance(second, Tensor):
            raise TensorCreationError(f"concat(a, b, dim) joins two tensors, but the second argument is "
                                      f"{type(second).__name__}; to join a list, write concat([a, b, ...], dim)")
        tensors = [tensors, second]
    elif second is not None:  # concat(list, dim)
        if dim is not None:
            raise TensorCreationError("concat(tensors, dim): dim given twice")
        if isinstance(second, Tensor):
            raise TensorCreationError("concat: the first argument is a list of tensors, so the second must be the "
                                      "dimension; write concat([a, b], dim) or concat(a, b, dim)")
        dim = second
    tensors, dim = _check_concat(tensors, 0 if dim is None else dim)
    joined = tensors[0]
    if len(tensors) == 1:
        return joined
    var = joined._var
    one_var = var is not None and all(t._var is var for t in tensors)   # (only such views can join into one)
    flat = dim == 0 and all(len(t._shape) == 1 for t in tensors)
    if one_var and not flat:
        for t in tensors[1:]:
            merged = _try_join_strided(joined, t, dim)
            if merged is None:
                break
            joined = merged
        else:
            return joined
    ids = views.listed(lambda: _joined_ids_1d(tensors) if flat else np.concatenate([t._id_array() for t in tensors],
                                                                                    axis=dim),
                       sum(t.num_elements() for t in tensors), f"concat of {len(tensors)} tensors")
    if one_var and flat:
        # what joining the views pair by pair gives (_try_join_strided), from their ids at once:
        # one strided view when the ids step evenly (not by 0); empty views join as nothing
        filled = [t for t in tensors if t._shape[0]]
        if len(filled) <= 1:
            return filled[0] if filled else tensors[-1]
        step = int(ids[1] - ids[0])
        if step and (ids.size == 2 or bool((np.diff(ids) == step).all())):
            return filled[0]._like((int(ids.size),), filled[0]._offset, (step,))
    return Tensor._indexed(tensors[0]._table, tensors[0]._dtype, ids)


def _joined_ids_1d(tensors: List[Tensor]) -> np.ndarray:
    """The element ids of 1-D views joined: the strided ones listed in one numpy pass. A flat
    view reordered to follow memory (PopLibs' element-wise ops) is thousands of slices, and
    an arange per slice cost more than the op's vertices."""
    n = len(tensors)
    lengths = np.fromiter((t._shape[0] for t in tensors), np.int64, n)
    starts = np.zeros(n, np.int64)
    steps = np.zeros(n, np.int64)
    listed = []
    for k, t in enumerate(tensors):
        if t._var is not None:  # a strided view (its _ids is None)
            starts[k] = t._var.base + t._offset
            steps[k] = t._strides[0]
        else:
            listed.append(k)
    first = np.cumsum(lengths) - lengths
    part = np.repeat(np.arange(n), lengths)
    ids = starts[part] + (np.arange(part.size, dtype=np.int64) - first[part]) * steps[part]
    for k in listed:
        ids[first[k]:first[k] + lengths[k]] = tensors[k]._ids
    return ids


def append(first: Tensor, second: Tensor, dim: int = 0) -> Tensor:
    """``second`` (rank one less) added as one more slice of ``first`` along ``dim``."""
    for role, t in (("first", first), ("second", second)):
        if not isinstance(t, Tensor):
            raise errors.TypeError(f"append: the {role} argument must be a Tensor, found {type(t).__name__}")
    if second.rank + 1 != first.rank:
        raise TensorCreationError(f"append: {second._describe()} must have rank {first.rank - 1} to be appended "
                                  f"to {first._describe()}")
    return concat([first, second.expand([dim])], dim)

