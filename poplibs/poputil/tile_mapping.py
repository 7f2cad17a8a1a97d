"""Linear tile mapping (PopLibs' poputil/TileMapping.hpp): a tensor's flat elements spread
evenly over the graph's tiles in order, in grains, with a minimum per used tile.

The algorithm itself is popsim's ``Graph.linear_mapping`` (PopLibs' calcLinearTileMapping,
which is ``split_regions`` of the one region [0, n) with partition v on tile v); these
functions add PopLibs' argument handling and the rotation by an offset.

``min_elements_per_tile`` and ``grain_size`` left out (or 0, popsim's API's spelling of the
defaults) take PopLibs' type-based defaults (what ``mapTensorLinearly(graph, t)`` uses):
grain = the target's vector width for the type, minimum = ceil(128 bytes / type size).
With a grain of 1 or more they mean what PopLibs' four-argument overload means: a
minimum of 0 is then no minimum.
"""
from typing import List, Optional, Tuple

import popsim

from .checks import check_count, check_graph, check_tensor

Interval = Tuple[int, int]
Mapping = List[List[Interval]]


def _check_sizes(what: str, min_elements_per_tile, grain_size):
    if grain_size is not None:
        grain_size = check_count(grain_size, what, "grain_size (0 or left out: the type's vector width)", low=0)
    if min_elements_per_tile is not None:
        min_elements_per_tile = check_count(min_elements_per_tile, what, "min_elements_per_tile", low=0)
    if not grain_size:  # popsim's API's spelled defaults (0, 0) are PopLibs' type-based defaults
        grain_size = None
        if min_elements_per_tile == 0:
            min_elements_per_tile = None
    return min_elements_per_tile, grain_size


def _rotate(mapping: Mapping, offset: int) -> Mapping:
    """PopLibs' remapWithOffset (ascending order): what tile v held goes to (v + offset) % tiles."""
    n = len(mapping)
    if offset % n == 0:
        return mapping
    rotated: Mapping = [[] for _ in range(n)]
    for tile, intervals in enumerate(mapping):
        rotated[(tile + offset) % n] = intervals
    return rotated


def _linear(graph, t, min_elements_per_tile, grain_size, offset, what: str) -> Mapping:
    check_graph(graph, what)
    if not isinstance(t, popsim.Tensor):
        raise popsim.TypeError(f"{what}: expected a popsim.Tensor, found {type(t).__name__}")
    min_elements_per_tile, grain_size = _check_sizes(what, min_elements_per_tile, grain_size)
    offset = check_count(offset, what, "offset", low=0)
    return _rotate(graph.linear_mapping(t, min_elements_per_tile, grain_size), offset)


def calc_linear_tile_mapping(graph, t, min_elements_per_tile: Optional[int] = None,
                             grain_size: Optional[int] = None, offset: int = 0) -> Mapping:
    """``mapping[tile] = [(begin, end)]``: the linear mapping of ``t``'s flat elements over
    the graph's tiles, in the form ``Graph.get_tile_mapping`` returns and
    ``Graph.set_tile_mapping`` takes (PopLibs' calcLinearTileMapping). Only ``t``'s shape
    and type are used; ``offset`` rotates the mapping by that many tiles."""
    return _linear(graph, t, min_elements_per_tile, grain_size, offset, "calc_linear_tile_mapping")


def calc_linear_tile_mapping_and_new_offset(graph, t, offset: int, *, min_elements_per_tile: Optional[int] = None,
                                            grain_size: Optional[int] = None) -> Tuple[Mapping, int]:
    """(mapping, next offset): the linear mapping of ``t`` rotated by ``offset`` tiles, and
    ``(offset + tiles used) % tiles``, where the next tensor can start so that a run of
    small tensors spreads over the tiles instead of piling onto tile 0."""
    what = "calc_linear_tile_mapping_and_new_offset"
    mapping = _linear(graph, t, min_elements_per_tile, grain_size, offset, what)
    used = sum(1 for intervals in mapping if intervals)
    return mapping, (offset + used) % len(mapping)


def map_tensor_linearly(graph, t, min_elements_per_tile: Optional[int] = None,
                        grain_size: Optional[int] = None) -> None:
    """Map ``t`` (a tensor of ``graph``) linearly over the graph's tiles (PopLibs'
    mapTensorLinearly)."""
    what = "map_tensor_linearly"
    check_tensor(graph, t, what)
    graph.set_tile_mapping(t, _linear(graph, t, min_elements_per_tile, grain_size, 0, what))


def map_tensor_linearly_with_offset(graph, t, offset: int, *, min_elements_per_tile: Optional[int] = None,
                                    grain_size: Optional[int] = None) -> None:
    """Map ``t`` linearly, starting at tile ``offset`` and wrapping round (PopLibs'
    mapTensorLinearlyWithOffset; the sizes are keyword-only here, so that PopLibs'
    (min, grain, offset) argument order cannot be mistaken for (offset, ...))."""
    what = "map_tensor_linearly_with_offset"
    check_tensor(graph, t, what)
    graph.set_tile_mapping(t, _linear(graph, t, min_elements_per_tile, grain_size, offset, what))
