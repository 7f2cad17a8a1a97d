"""The order a tensor's elements follow in memory, for ops that treat every element alike.

A convolution's output is ``[N, C, H, W]`` to its callers but channels-innermost in memory,
in groups of G channels (``[N, C/G, H, W, G]``). Taken in the caller's order, a tile's
share of it is a region per channel and row, each element G apart from the next: an
element-wise op over it gets a 2D vertex per worker, an edge per region and field, and
exchange buffers to gather every field that is not contiguous. PopLibs' element-wise ops
instead flatten their operands, reorder them all alike so that the output's elements
follow memory (Graph::reorderToSimplify) and give each vertex the output's contiguous
regions (getSortedContiguousRegions): one region a tile, one MultiVertex, one edge a
field. And the output they create is a clone, which keeps the order its model has in
memory, so the ops that follow a convolution all see that one order.

``memory_order(graph, t)`` finds the dimension ``t`` holds in groups of G at its first
position (PopLibs' detectInnermostGrouping) and, when moving that group innermost gives
fewer tile regions, returns a ``MemoryOrder``: ``view`` lays any tensor of ``t``'s shape
out flat in that order (every operand alike, so the op computes the same thing element
for element) and ``restore`` takes such a flat tensor back to the caller's shape.
"""
from typing import NamedTuple, Optional, Tuple

import numpy as np

__all__ = ["MemoryOrder", "memory_order", "dim_grouping"]


class MemoryOrder(NamedTuple):
    shape: Tuple[int, ...]     # the caller's shape
    split: Tuple[int, ...]     # it, with the grouped dimension split into (size / G, G)
    perm: Tuple[int, ...]      # the split shape's dimensions with G moved innermost

    def view(self, t):
        """``t`` (of ``shape``) as a flat view in memory order."""
        return t.reshape(self.split).dim_shuffle(list(self.perm)).flatten()

    def restore(self, flat):
        """The flat ``flat`` (``view``'s order) back in the caller's shape."""
        inverse = [int(i) for i in np.argsort(self.perm)]
        return flat.reshape(tuple(self.split[p] for p in self.perm)).dim_shuffle(inverse).reshape(self.shape)


def dim_grouping(t, dim: int) -> int:
    """The most elements along ``dim`` (a divisor of its size) that ``t`` holds one after
    another in memory at its first position; 1 when there is no such run."""
    size = int(t.shape[dim])
    if size <= 1 or t.num_elements() == 0:
        return 1
    begin = [0] * t.rank
    end = [1] * t.rank
    end[dim] = size
    first = t.slice(begin, end).flatten()
    for g in range(size, 1, -1):
        if size % g == 0 and first.slice(0, g).is_contiguous():
            return g
    return 1


def _regions(graph, t) -> int:
    return sum(len(m) for m in graph.get_tile_mapping(t, require_complete=False))


def memory_order(graph, t) -> Optional[MemoryOrder]:
    """The order in which ``t``'s elements follow memory, when it is not the caller's own
    and has fewer tile regions; None otherwise (the caller's order is as good)."""
    shape = tuple(int(d) for d in t.shape)
    if len(shape) < 2 or t.num_elements() == 0 or dim_grouping(t, len(shape) - 1) > 1:
        return None   # the innermost dimension already runs along memory
    groupings = [dim_grouping(t, d) for d in range(len(shape) - 1)]
    dim = int(np.argmax(groupings))
    g = groupings[dim]
    if g <= 1:
        return None
    split = shape[:dim] + (shape[dim] // g, g) + shape[dim + 1:]
    perm = tuple(d for d in range(len(split)) if d != dim + 1) + (dim + 1,)
    order = MemoryOrder(shape, split, perm)
    return order if _regions(graph, order.view(t)) < _regions(graph, t.flatten()) else None
