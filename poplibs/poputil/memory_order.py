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

A concatenation is not one variable: a tile's share of it is a region per source tensor
and channel group in any order. Poplar stores a tile's share of a variable contiguously,
so its clone of such a view is one region a tile; ``tile_grouped_clone`` makes that clone
(a variable laid out tile by tile, viewed in the input's order), and ``element_order``
goes one step past ``memory_order``: where the output's flat view in memory order still
holds several regions on a tile, every operand is reordered alike to follow the output's
element ids (Graph::reorderToSimplify), so that a tile's share of a tile-grouped output is
one region again.
"""
from typing import List, NamedTuple, Optional, Tuple, Union

import numpy as np

import popsim

__all__ = ["MemoryOrder", "IdOrder", "memory_order", "memory_order_and_mapping", "grouped_order", "element_order",
           "flat_view", "tile_grouped_clone", "dim_grouping"]


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
    return memory_order_and_mapping(graph, t)[0]


def memory_order_and_mapping(graph, t):
    """``(memory_order(graph, t), mapping)``: ``mapping`` is the tile mapping of ``t``'s
    flat view in that order (get_tile_mapping, require_complete=False) when working the
    order out needed it, else None: the callers that go on to map that view take it."""
    order = grouped_order(t)
    if order is None:
        return None, None
    ordered = graph.get_tile_mapping(order.view(t), require_complete=False)
    plain = graph.get_tile_mapping(t.flatten(), require_complete=False)
    if sum(len(m) for m in ordered) < sum(len(m) for m in plain):
        return order, ordered
    return None, plain


def grouped_order(t) -> Optional[MemoryOrder]:
    """The order that moves the dimension ``t`` holds in the largest groups at its first
    position innermost (PopLibs' detectInnermostGrouping); None when the innermost one
    already runs along memory or none is grouped. ``memory_order`` takes it only where it
    gives fewer tile regions; a host array given in it (``array.reshape(split)
    .transpose(perm)``) meets ``t``'s memory in runs of a group each."""
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
    return MemoryOrder(shape, split, perm)


class IdOrder(NamedTuple):
    """Flat views reordered alike so that the output's elements follow its element ids."""
    base: Optional[MemoryOrder]                # the memory order taken first (None: row-major)
    intervals: Tuple[Tuple[int, int], ...]     # base's flat intervals, in the output's id order

    def view(self, t):
        """``t`` (of the output's shape) flat, in the output's id order: one slice a
        stretch of consecutive output ids, joined in one concat (no per-element loop)."""
        return self.of_flat(self.base.view(t) if self.base is not None else t.flatten())

    def of_flat(self, flat):
        """``flat`` (``base``'s flat view of a tensor) in the output's id order."""
        parts = flat.slices(list(self.intervals))
        return parts[0] if len(parts) == 1 else popsim.concat(parts)

    def restore(self, flat, shape):
        """The flat ``flat`` (``view``'s order) back in the caller's ``shape``."""
        lengths = np.array([e - b for b, e in self.intervals], np.int64)
        offsets = np.concatenate(([0], np.cumsum(lengths)[:-1]))
        by_start = np.argsort([b for b, _ in self.intervals], kind="stable")
        parts = flat.slices([(int(offsets[k]), int(offsets[k] + lengths[k])) for k in by_start])
        base_flat = parts[0] if len(parts) == 1 else popsim.concat(parts)
        return self.base.restore(base_flat) if self.base is not None else base_flat.reshape(shape)


def flat_view(order, t):
    """``t`` flat in ``order`` (a MemoryOrder or IdOrder), or row-major when ``order`` is None."""
    return order.view(t) if order is not None else t.flatten()


def _one_region_a_tile(mapping) -> bool:
    return all(len(m) <= 1 for m in mapping)


def _one_variable(flat) -> bool:
    return len({r.var for r in flat.get_var_regions()}) <= 1


def _simpler_id_order(graph, base, flat, mapping):
    """``(IdOrder, flat in it)`` when following ``flat``'s element ids (``flat``: ``base``'s
    flat view, ``mapping`` its tile mapping) gives fewer tile regions; None otherwise."""
    groups = graph.get_sorted_contiguous_regions(flat, [(0, flat.num_elements())])
    order = IdOrder(base, tuple(r for group in groups for r in group))
    ordered = order.of_flat(flat)
    return (order, ordered) if _regions(graph, ordered) < sum(len(m) for m in mapping) else None


def element_order(graph, t) -> Union[MemoryOrder, IdOrder, None]:
    """``memory_order``'s order; or, where ``t``'s flat view in that order still holds more
    than one region on some tile and following ``t``'s element ids gives fewer, an
    ``IdOrder`` (both have ``view``). None: the caller's row-major order is best."""
    base, mapping = memory_order_and_mapping(graph, t)
    flat = flat_view(base, t)
    if mapping is None:
        mapping = graph.get_tile_mapping(flat, require_complete=False)
    if _one_region_a_tile(mapping) or flat.num_elements() == 0:
        return base   # a convolution's output, a linear mapping: memory order is already simplest
    simpler = _simpler_id_order(graph, base, flat, mapping)
    return simpler[0] if simpler is not None else base


def tile_grouped_clone(graph, flat, dtype, name: str, mapping=None):
    """Poplar's clone of the 1-D view ``flat`` (every element mapped, more than one region
    on some tile), which keeps a tile's share of the new variable together, returned as
    its view in ``flat``'s order, element for element mapped as ``flat`` is:
    - ``flat`` joins several variables (a concatenation): a new variable whose elements
      for tile k are one contiguous block on tile k (tiles in order, each block in
      ``flat``'s order);
    - ``flat`` is of one variable whose element order holds fewer regions (an output
      made tile by tile, above): the clone follows that order.
    None otherwise (one region a tile, one variable in its own order, unmapped elements):
    a plain clone in ``flat``'s order is then what Poplar's is. ``mapping``: ``flat``'s tile
    mapping (require_complete=False) when the caller has it."""
    if mapping is None:
        mapping = graph.get_tile_mapping(flat, require_complete=False)
    n = flat.num_elements()
    sizes = np.array([sum(e - b for b, e in m) for m in mapping], np.int64)
    if _one_region_a_tile(mapping) or int(sizes.sum()) != n:
        return None
    if _one_variable(flat):
        simpler = _simpler_id_order(graph, None, flat, mapping)
        if simpler is None:
            return None   # its own order is as simple: ResNet-50's residual additions
        order, ordered = simpler
        return order.restore(graph.clone(ordered, name, dtype), (n,))
    starts = np.concatenate(([0], np.cumsum(sizes)))
    metadata = flat.metadata if dtype == flat.dtype else None
    var = graph.add_variable(dtype, (n,), name, metadata=metadata)
    graph.set_tile_mapping(var, [[(int(starts[k]), int(starts[k + 1]))] if sizes[k] else []
                                 for k in range(len(mapping))])
    pieces: List[Tuple[int, int, int]] = []   # (position in flat, offset in var, length)
    for tile, regions in enumerate(mapping):
        offset = int(starts[tile])
        for b, e in regions:
            pieces.append((b, offset, e - b))
            offset += e - b
    pieces.sort()
    parts = var.slices([(o, o + length) for _, o, length in pieces])
    return parts[0] if len(parts) == 1 else popsim.concat(parts)
