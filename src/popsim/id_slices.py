"""Slices of a 1-D indexed view, made strided where they can be.

A flattened view of a tensor in a blocked layout (a convolution's output read in NCHW
order, say) is indexed: its element ids are listed. PopLibs' element-wise ops slice such
a view into the regions each tile holds, one slice per region and per vertex. Most of
those regions are rows whose ids step by one constant (the layout's inner stride) within
one variable: ids a strided view describes exactly. ``slices`` returns such a region as
that strided view (the same elements in the same order, so the same semantics), which
add_vertex connects on its lean path and lowering reads by shape and strides, rather than
as a new id array checked and searched sub-edge by sub-edge. Other regions stay indexed.

The per-element facts a region needs (where the id step changes, which variable owns each
id) are found once per view in one numpy pass and kept on it (views never change), so
each region then costs O(1) however many calls slice the view.
"""
from __future__ import annotations

from typing import List, Sequence, Tuple

import numpy as np

__all__ = ["slices", "plain_pairs", "strided_slices"]


class _Steps:
    """A 1-D id array's step facts: ``changes[k]``: how many times the step between
    neighbouring ids changed among the first k+1 steps (0 before any); ``owner``: each id's
    variable index."""

    __slots__ = ("changes", "owner")

    def __init__(self, table, ids: np.ndarray):
        step = np.diff(ids)
        changes = np.zeros(max(step.size, 1), np.int64)
        if step.size > 1:
            np.cumsum(step[1:] != step[:-1], out=changes[1:])
        self.changes = changes
        self.owner = table.index_of(ids)


def slices(t, pairs: Sequence[Tuple[int, int]], make) -> List:
    """One view per (begin, end) pair of the 1-D indexed view ``t`` (every pair checked:
    ints with 0 <= begin <= end <= len(t)): a strided view (``make(table, var, dtype,
    (length,), offset, (step,))``) where the region's ids step by one constant within one
    variable, else ``t``'s ids sliced."""
    ids = t._ids
    facts = getattr(t, "_steps", None)
    if facts is None:
        facts = t._steps = _Steps(t._table, ids)
    changes, owner, variables = facts.changes, facts.owner, t._table.variables
    table, dtype = t._table, t._dtype
    out = []
    for b, e in pairs:
        n = e - b
        if n > 0 and owner[b] == owner[e - 1] and (n < 3 or changes[e - 2] == changes[b]):
            first = int(ids[b])
            var = variables[int(owner[b])]
            out.append(make(table, var, dtype, (n,), first - var.base, (int(ids[b + 1]) - first if n > 1 else 1,)))
        else:
            out.append(t._with_ids(ids[b:e]))
    return out


def plain_pairs(pairs: Sequence, n: int) -> bool:
    """Whether every pair is a (begin, end) tuple or list of plain ints with 0 <= begin <=
    end <= n (one loop: a tile's regions are checked for every vertex)."""
    for k in pairs:
        if (type(k) is not tuple and type(k) is not list) or len(k) != 2:
            return False
        b, e = k
        if type(b) is not int or type(e) is not int or not 0 <= b <= e <= n:
            return False
    return True


def strided_slices(t, pairs: Sequence[Tuple[int, int]], make) -> List:
    """``t.slice(b, e)`` for each checked pair of the 1-D strided view ``t``, made directly
    (``make(table, var, dtype, shape, offset, strides)``): the views slice() makes."""
    table, var, dtype, offset, strides = t._table, t._var, t._dtype, t._offset, t._strides
    step = strides[0]
    return [make(table, var, dtype, (e - b,), offset + b * step if e > b else offset, strides) for b, e in pairs]
