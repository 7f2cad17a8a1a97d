"""How a collective cuts its data into fragments: per tile, so that every step of a ring
is tile-local.

Each tile's elements of a tensor (in the tensor's order) are cut into pieces, one per
fragment, of near-equal length: fragment j is the union over tiles of the tiles' piece
j (as GCL's all-reduce reorders its data so that every fragment is spread over all the
tiles). A ring step then sends one piece from each tile to the same tile of the next
replica, and the vertex that reduces or stores it runs where the piece lives. The
buffers a ring sends and receives hold, on each tile, as many elements as the tile's
longest piece.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Sequence, Tuple

import popsim

__all__ = ["TileElements", "tile_elements", "per_tile_buffer"]


@dataclass
class TileElements:
    """A tensor's elements on each tile that holds some: ``views[i]`` (in the tensor's
    flat order) on ``tiles[i]``."""
    tiles: List[int]
    intervals: List[List[Tuple[int, int]]]
    flat: popsim.Tensor

    def count(self, i: int) -> int:
        return sum(b - a for a, b in self.intervals[i])

    def view(self, i: int, begin: int = 0, end: int = -1) -> popsim.Tensor:
        """Elements [begin, end) of tile i's elements (end -1: all)."""
        end = self.count(i) if end < 0 else end
        parts, at = [], 0
        for a, b in self.intervals[i]:
            lo, hi = max(a, a + begin - at), min(b, a + end - at)
            if lo < hi:
                parts.append(self.flat[lo:hi])
            at += b - a
        if not parts:
            return self.flat[0:0]
        return popsim.concat(parts) if len(parts) > 1 else parts[0]

    def pieces(self, i: int, n: int, first: int = 0, of: int = 0) -> List[popsim.Tensor]:
        """Tile i's elements cut into ``of`` (default n) near-equal pieces; pieces
        ``first .. first + n - 1`` of them."""
        of = of or n
        c = self.count(i)
        bounds = [c * k // of for k in range(of + 1)]
        return [self.view(i, bounds[k], bounds[k + 1]) for k in range(first, first + n)]

    def width(self, i: int, of: int) -> int:
        """The longest of tile i's ``of`` pieces."""
        return -(-self.count(i) // of)

    def like(self, other: popsim.Tensor) -> "TileElements":
        """The same cut of ``other``, a tensor of this one's shape and tile mapping."""
        return TileElements(self.tiles, self.intervals, other.flatten())


def tile_elements(graph, tensor: popsim.Tensor) -> TileElements:
    """The tiles holding ``tensor`` (every element must be mapped; the error names it)."""
    mapping = graph.get_tile_mapping(tensor)
    tiles = [t for t, intervals in enumerate(mapping) if intervals]
    return TileElements(tiles, [mapping[t] for t in tiles], tensor.flatten())


def per_tile_buffer(graph, dtype, tiles: Sequence[int], widths: Sequence[int], name: str):
    """A variable of sum(widths) elements, ``widths[i]`` of them on ``tiles[i]``; it and
    its slice on each tile."""
    buffer = graph.add_variable(dtype, (max(1, sum(widths)),), name)
    slices, at = [], 0
    for tile, w in zip(tiles, widths):
        if w:
            graph.set_tile_mapping(buffer[at:at + w], tile)
        slices.append(buffer[at:at + w])
        at += w
    if at == 0:  # nothing to hold: one element on the first tile keeps the variable mapped
        graph.set_tile_mapping(buffer, tiles[0] if tiles else 0)
    return buffer, slices
