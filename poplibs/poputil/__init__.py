"""poputil: the helpers every PopLibs library leans on (PopLibs' include/poputil).

Tile mapping (map_tensor_linearly and friends), splitting regions between tiles and
workers, vertex template names, duplicate, NumPy-style broadcasting of tensors, the
per-tile vertex layout the element-wise ops share, and PoplibsError, the error every
PopLibs op raises unless a core error fits better.
"""
from .broadcast import broadcast_to_match, can_broadcast_to_match, expand_to_match_ranks
from .errors import PoplibsError
from .split_regions import split_regions, split_regions_between_workers
from .tile_mapping import (calc_linear_tile_mapping, calc_linear_tile_mapping_and_new_offset, map_tensor_linearly,
                           map_tensor_linearly_with_offset)
from .util import duplicate, template_vertex

__all__ = ["PoplibsError", "broadcast_to_match", "can_broadcast_to_match", "expand_to_match_ranks", "duplicate",
           "template_vertex", "calc_linear_tile_mapping", "calc_linear_tile_mapping_and_new_offset",
           "map_tensor_linearly", "map_tensor_linearly_with_offset", "split_regions", "split_regions_between_workers"]
