"""popops pad (PopLibs' popops/Pad.hpp).

``pad(graph, t, lower, upper, value=0.0, mapping=MappingMethod.ZERO)``: a view of ``t``
with constant padding, ``lower[d]``/``upper[d]`` elements before/after dimension ``d``
(negative values truncate), made of ``t`` and new constants of ``t``'s type, mapped as
PopLibs' padding::MappingMethod says: ZERO (its default) on tile 0, EDGE each padding
slice like the edge slice of the tensor it pads (so the padding spreads over the tiles
holding the edge), NONE not at all (the caller maps it). No program: a view.
"""
import enum
import numbers

import popsim

from ..poputil import PoplibsError
from ..poputil.checks import check_tensor, check_whole_numbers
from .fill import _fill_value
from .op_checks import describe

__all__ = ["pad", "MappingMethod"]


class MappingMethod(enum.Enum):
    """PopLibs' popops::padding::MappingMethod: where ``pad`` maps its padding constants."""
    NONE = 0   # not mapped: the caller maps them
    ZERO = 1   # all on tile 0 (PopLibs' default)
    EDGE = 2   # each padding slice like the nearest edge slice of the tensor being padded


def pad(graph, t, lower, upper, value=0.0, name: str = "", mapping: MappingMethod = MappingMethod.ZERO):
    """``t`` padded with constants ``value`` (PopLibs' pad): ``lower``/``upper`` list one
    count per dimension; negative counts truncate. ``mapping`` places the padding
    (``MappingMethod``: ZERO on tile 0, EDGE like the edge it extends, NONE unmapped)."""
    what = "popops.pad"
    check_tensor(graph, t, what)
    lower, upper = (list(check_whole_numbers(p, what, n)) for p, n in ((lower, "lower"), (upper, "upper")))
    if len(lower) != t.rank or len(upper) != t.rank:
        raise PoplibsError(f"{what}: lower {lower} and upper {upper} must have one entry per dimension of "
                           f"{describe(t)}")
    for pads in (lower, upper):
        if not all(isinstance(p, numbers.Integral) and not isinstance(p, bool) for p in pads):
            raise PoplibsError(f"{what}: padding must be whole numbers, found {pads}")
    if not isinstance(mapping, MappingMethod):
        raise PoplibsError(f"{what}: mapping must be a popops.MappingMethod (NONE, ZERO or EDGE), found "
                           f"{type(mapping).__name__} {mapping!r}")
    value = _fill_value(value, t.dtype, what, t)
    for d, (lo, hi) in enumerate(zip(lower, upper)):
        size = t.shape[d]
        begin, end = max(0, -lo), size - max(0, -hi)
        if begin > end:
            raise PoplibsError(f"{what}: truncating {-min(lo, 0)} + {-min(hi, 0)} elements of dimension {d} of "
                               f"{describe(t)} leaves fewer than none")
        t = t.slice(begin, end, d)
        parts = [t]
        for count, at_end in ((max(lo, 0), False), (max(hi, 0), True)):
            if count:
                shape = list(t.shape)
                shape[d] = count
                constant = graph.add_constant(t.dtype, tuple(shape), value, f"{name or what}/padding")
                _map_padding(graph, constant, t, d, at_end, mapping, what)
                parts.insert(len(parts) if at_end else 0, constant)
        t = popsim.concat(parts, d) if len(parts) > 1 else t
    return t


def _map_padding(graph, padding, t, d, at_end, mapping, what) -> None:
    """Map ``padding`` (added along dimension ``d`` of ``t``) as ``mapping`` says."""
    if mapping is MappingMethod.ZERO:
        graph.set_tile_mapping(padding, 0)
    elif mapping is MappingMethod.EDGE and padding.num_elements():
        if t.shape[d] == 0:
            raise PoplibsError(f"{what}: EDGE mapping copies the mapping of the edge of the tensor being padded, "
                               f"but dimension {d} of {describe(t)} has no elements there; pad with "
                               "MappingMethod.ZERO or NONE")
        edge_index = t.shape[d] - 1 if at_end else 0
        edge = t.slice(edge_index, edge_index + 1, d)
        edge_mapping = graph.get_tile_mapping(edge, require_complete=False)
        if sum(e - b for row in edge_mapping for b, e in row) != edge.num_elements():
            raise PoplibsError(f"{what}: EDGE mapping needs the edge of {describe(t)} in dimension {d} mapped to "
                               "tiles, found elements on no tile; map the tensor first (e.g. "
                               "poputil.map_tensor_linearly) or pad with MappingMethod.ZERO")
        for i in range(padding.shape[d]):
            graph.set_tile_mapping(padding.slice(i, i + 1, d), edge_mapping)
