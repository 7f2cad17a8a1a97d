"""popops scaled add and subtract (PopLibs' popops/ScaledAdd.hpp).

``scaled_add_to(graph, a, b, scale, prog)``: ``a += scale * b``;
``scaled_add_to(graph, a, scale_a, b, scale_b, prog)``: ``a = scale_a * a + scale_b * b``;
``scaled_subtract_from(graph, a, b, scale, prog)``: ``a -= scale * b``;
``scaled_subtract_from(graph, a, scale_a, b, scale_b, prog)``: ``a = scale_a * a - scale_b * b``.

The scales are Python numbers (``isConstant`` vertices, the value in plain state) or
scalar tensors (one element, read by the vertices through an edge); the two scales of
one call are both numbers or both tensors, as PopLibs' overloads are. ``b`` has ``a``'s
shape (no broadcasting) and is cast to ``a``'s type first when it differs (one Cast
compute set), as PopLibs does. How PopLibs' ScaledAdd.cpp picks the vertex:

- one scale: ``ScaledAdd`` with the scale (a number is negated for a subtraction), or
  ``ScaledSubtract`` for a subtraction by a tensor;
- two scales: FLOAT and integer data first multiply ``a`` by ``scale_a`` in place
  (popops.mul_in_place; PopLibs has no float aXPlusbY vertex), then as with one scale;
  HALF data use ``aXPlusbY`` / ``aXMinusbY``.

Scale types: integer data take integral scales; HALF data with number scales use a HALF
scale when the scales round to half within the relative tolerance 1e-6 (PopLibs'
scaleFloatToHalfTolerance), else FLOAT (one-scale form; the two-scale HALF vertices take
the scales rounded to HALF); a scale tensor of another type is cast to the data type,
except a FLOAT scale with HALF data in the one-scale form, which the vertex reads as is.

On each tile holding elements of ``a``: one Supervisor (MultiVertex) when they are one
contiguous region, else one 2D vertex per worker (regions split in grains of the vector
width, at least two grains each). One compute set, appended to ``prog``.
"""
import numbers

import numpy as np

import popsim
from popsim import FLOAT, HALF, INT, UNSIGNED_INT
from popsim.program import Execute, Sequence

from ..poputil import PoplibsError, per_tile
from ..poputil.checks import as_float, check_graph, check_name, check_tensor
from .elementwise import apply
from .op_checks import check_prog, check_writable, describe
from .elementwise_ops import OPS
from .cast import cast
from .scaled_add_vertices import DATA_TYPES, ensure_vertex

__all__ = ["scaled_add_to", "scaled_subtract_from"]

HALF_TOLERANCE = 1e-6  # PopLibs' scaleFloatToHalfTolerance default


def _is_number(x) -> bool:
    return isinstance(x, (numbers.Real, np.integer, np.floating)) and not isinstance(x, (bool, np.bool_))


def _check_scale(graph, scale, dtype, what: str, role: str):
    if isinstance(scale, popsim.Tensor):
        check_tensor(graph, scale, what, role)
        if scale.num_elements() != 1:
            raise PoplibsError(f"{what}: the {role} must be a scalar tensor (one element), found {describe(scale)}")
        if scale.dtype not in (FLOAT, HALF, INT, UNSIGNED_INT):
            raise PoplibsError(f"{what}: the {role} {describe(scale)} must be FLOAT, HALF, INT or UNSIGNED_INT")
        return scale
    if not _is_number(scale):
        raise popsim.TypeError(f"{what}: the {role} must be a number or a scalar tensor, found {type(scale).__name__}")
    if dtype in (INT, UNSIGNED_INT) and not isinstance(scale, numbers.Integral) \
            and not as_float(scale, what, f"the {role}").is_integer():
        raise PoplibsError(f"{what}: the {role} {scale!r} is not a whole number, which {dtype.name} data cannot use; "
                           "cast the tensors to FLOAT or pass an integral scale")
    if dtype in (FLOAT, HALF):
        return as_float(scale, what, f"the {role}")
    if not -2 ** 31 <= int(scale) < 2 ** 32:
        raise PoplibsError(f"{what}: the {role} {scale!r} does not fit 32 bits")
    return int(scale)


def _wrap(value: int, dtype) -> int:
    """An integer scale as the 32-bit value the vertex multiplies by (arithmetic wraps,
    so a - s*b is a + wrap(-s)*b)."""
    value %= 2 ** 32
    return value - 2 ** 32 if dtype == INT and value >= 2 ** 31 else value


def _half_exact(values) -> bool:
    """PopLibs' checkAccuracyWhenCast: each value rounds to half within the tolerance."""
    return all(abs(float(np.float16(v)) - v) <= HALF_TOLERANCE * abs(v) for v in values)


def _scaled(graph, a, scale_a, b, scale_b, prog, subtract: bool, name: str, what: str) -> None:
    check_graph(graph, what)
    check_tensor(graph, a, what, "tensor a")
    check_tensor(graph, b, what, "tensor b")
    check_prog(prog, what)
    check_name(name, what)
    if a.dtype not in DATA_TYPES:
        raise PoplibsError(f"{what}: {describe(a)} must be FLOAT, HALF, INT or UNSIGNED_INT")
    if tuple(a.shape) != tuple(b.shape):
        raise PoplibsError(f"{what}: {describe(a)} and {describe(b)} must have the same shape (scaled "
                           "arithmetic does not broadcast; use poputil.broadcast_to_match on b)")
    check_writable(a, what, "accumulated tensor a")
    dtype = a.dtype
    scale_b = _check_scale(graph, scale_b, dtype, what, "scale of b")
    if scale_a is not None:
        scale_a = _check_scale(graph, scale_a, dtype, what, "scale of a")
        if isinstance(scale_a, popsim.Tensor) != isinstance(scale_b, popsim.Tensor):
            raise PoplibsError(f"{what}: the scales must both be numbers or both be scalar tensors, found "
                               f"{type(scale_a).__name__} and {type(scale_b).__name__}")
    if b.dtype != dtype:
        b = cast(graph, b, dtype, prog, f"{name or what}/castB")
    is_constant = not isinstance(scale_b, popsim.Tensor)
    if scale_a is not None and dtype != HALF and not (is_constant and scale_a == 1):
        # PopLibs has no FLOAT (or integer) aXPlusbY vertex: a *= scale_a, then one scale
        if isinstance(scale_a, popsim.Tensor):
            scale_a = _scale_tensor(graph, scale_a, dtype, prog, f"{name or what}/castScaleA")
        apply(graph, OPS["mul"], [a, scale_a], prog, f"{name or what}/scaleA", in_place=True)
        scale_a = None
    if is_constant:
        if scale_a == 1:
            scale_a = None
        if subtract and scale_a is None:
            kind, scale_b = "add", -scale_b
        else:
            kind = ("axmby" if subtract else "axpby") if scale_a is not None else "add"
        scale_type = dtype
        if dtype in (INT, UNSIGNED_INT):
            scale_b = _wrap(scale_b, dtype)
            scale_a = None if scale_a is None else _wrap(scale_a, dtype)
        if dtype == HALF and scale_a is None and not _half_exact([scale_b]):
            scale_type = FLOAT
    else:
        kind = ("axmby" if subtract else "axpby") if scale_a is not None else ("subtract" if subtract else "add")
        keep_float = dtype == HALF and scale_a is None and scale_b.dtype == FLOAT
        scale_type = FLOAT if keep_float else dtype
        scale_b = _scale_tensor(graph, scale_b, scale_type, prog, f"{name or what}/castScaleB")
        if scale_a is not None:
            scale_a = _scale_tensor(graph, scale_a, scale_type, prog, f"{name or what}/castScaleA")
    _add_vertices(graph, a, b, scale_a, scale_b, kind, scale_type, is_constant, prog, name or what)


def _scale_tensor(graph, scale, scale_type, prog, name):
    scale = scale.reshape(())
    return scale if scale.dtype == scale_type else cast(graph, scale, scale_type, prog, name)


def _add_vertices(graph, a, b, scale_a, scale_b, kind, scale_type, is_constant, prog, name) -> None:
    flat_a, flat_b = a.flatten(), b.flatten()
    regions_on = dict(per_tile.tile_regions(graph, flat_a))
    width = graph.target.vector_width(a.dtype)
    cs = graph.add_compute_set(name)
    for tile, regions in regions_on.items():
        supervisor = len(regions) == 1
        for group in per_tile.group_regions(graph.target, regions, "auto", width, 2 * width):
            vertex_type = ensure_vertex(graph, kind, a.dtype, scale_type, is_constant, supervisor)
            view = per_tile.regions_view if supervisor else per_tile.region_views
            fields = {"A": view(flat_a, group), "B": view(flat_b, group)}
            if not is_constant:
                fields["scaleB"] = scale_b
                if scale_a is not None:
                    fields["scaleA"] = scale_a
            vertex = graph.add_vertex(cs, vertex_type, fields)
            if is_constant:
                graph.set_initial_value(vertex["scaleB"], scale_b)
                if scale_a is not None:
                    graph.set_initial_value(vertex["scaleA"], scale_a)
            graph.set_tile_mapping(vertex, tile)
    prog.add(Execute(cs))


def _forms(args, what: str):
    """(scale_a, b, scale_b, prog, name) from ``(b, scale, prog[, name])`` or
    ``(scale_a, b, scale_b, prog[, name])``."""
    if len(args) >= 3 and isinstance(args[2], Sequence) and len(args) <= 4:
        b, scale_b, prog, *rest = args
        return None, b, scale_b, prog, (rest[0] if rest else "")
    if len(args) in (4, 5):
        scale_a, b, scale_b, prog, *rest = args
        return scale_a, b, scale_b, prog, (rest[0] if rest else "")
    raise popsim.TypeError(f"{what}: expected (graph, a, b, scale, prog[, name]) or (graph, a, scale_a, b, scale_b, "
                           f"prog[, name]), found {len(args) + 2} arguments")


def scaled_add_to(graph, a, *args, name: str = "") -> None:
    """``scaled_add_to(graph, a, b, scale, prog)``: ``a += scale * b``;
    ``scaled_add_to(graph, a, scale_a, b, scale_b, prog)``: ``a = scale_a * a + scale_b *
    b`` (PopLibs' scaledAddTo). Scales: numbers or scalar tensors."""
    what = "popops.scaled_add_to"
    scale_a, b, scale_b, prog, positional_name = _forms(args, what)
    _scaled(graph, a, scale_a, b, scale_b, prog, False, name or positional_name, what)


def scaled_subtract_from(graph, a, *args, name: str = "") -> None:
    """``scaled_subtract_from(graph, a, b, scale, prog)``: ``a -= scale * b``;
    ``scaled_subtract_from(graph, a, scale_a, b, scale_b, prog)``: ``a = scale_a * a -
    scale_b * b`` (PopLibs' scaledSubtractFrom)."""
    what = "popops.scaled_subtract_from"
    scale_a, b, scale_b, prog, positional_name = _forms(args, what)
    _scaled(graph, a, scale_a, b, scale_b, prog, True, name or positional_name, what)
