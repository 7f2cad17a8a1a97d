"""PopLibs' linear tile mapping: a tensor's flat elements spread evenly over tiles
in order, in grains of one vector, with at least 128 bytes per used tile."""
from __future__ import annotations

from typing import List, Optional, Tuple

Interval = Tuple[int, int]


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def linear_tile_mapping(num_elements: int, type_size: int, vector_width: int, num_tiles: int,
                        min_elements_per_tile: Optional[int] = None,
                        grain_size: Optional[int] = None) -> List[List[Interval]]:
    """mapping[tile] = [(begin, end)] for each of ``num_tiles`` tiles (poputil's
    ``calcLinearTileMapping``: partition v of the grains goes to tile v)."""
    mapping: List[List[Interval]] = [[] for _ in range(num_tiles)]
    if num_elements == 0:
        return mapping
    grain = grain_size or vector_width
    min_elements = min_elements_per_tile if min_elements_per_tile is not None else _ceil_div(128, type_size)
    num_grains = _ceil_div(num_elements, grain)
    grains_per_part = _ceil_div(num_grains, num_tiles)
    if min_elements:
        min_grains = _ceil_div(min_elements, grain)
        max_parts = max(1, num_grains // min_grains)
        grains_per_part = max(grains_per_part, _ceil_div(num_grains, max_parts))
    parts = _ceil_div(num_grains, grains_per_part)
    for v in range(parts):
        g_begin = v * num_grains // parts
        g_end = (v + 1) * num_grains // parts
        begin, end = g_begin * grain, min(num_elements, g_end * grain)
        if end > begin:
            mapping[v].append((begin, end))
    return mapping
