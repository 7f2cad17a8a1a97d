"""poputil: the helpers every PopLibs library leans on (PopLibs' include/poputil).

Tile mapping (map_tensor_linearly and friends), splitting regions between tiles and
workers, vertex template names, and PoplibsError, the error every PopLibs op raises
unless a core error fits better.
"""
from .errors import PoplibsError

__all__ = ["PoplibsError"]
