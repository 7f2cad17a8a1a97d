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

    def pieces(self, i: int, n: int, begin: int = 0, end: int = -1) -> List[popsim.Tensor]:
        """Tile i's elements [begin, end) (end -1: to the last) cut into n near-equal
        pieces: element k of c goes to piece p when floor(cp/n) <= k < floor(c(p+1)/n)."""
        end = self.count(i) if end < 0 else end
        c = end - begin
        return [self.view(i, begin + c * k // n, begin + c * (k + 1) // n) for k in range(n)]

    def shares(self, parts: int) -> List[List[Tuple[int, int, int]]]:
        """The elements, taken tile after tile (each tile's in the tensor's order), cut
        into ``parts`` near-equal runs: for each run, the (tile index, begin, end) of
        its elements on each tile that holds some (a run may start or end inside a tile)."""
        counts = [self.count(i) for i in range(len(self.tiles))]
        total = sum(counts)
        bounds = [total * r // parts for r in range(parts + 1)]
        out: List[list] = [[] for _ in range(parts)]
        start = 0
        for i, c in enumerate(counts):
            for r in range(parts):
                lo, hi = max(bounds[r], start), min(bounds[r + 1], start + c)
                if lo < hi:
                    out[r].append((i, lo - start, hi - start))
            start += c
        return out

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
