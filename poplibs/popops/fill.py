"""popops fill and zero (PopLibs' popops/Fill.hpp, Zero.hpp).

``fill(graph, t, value, prog)`` writes ``value`` into every element of ``t``;
``zero(graph, t, prog)`` is ``fill`` with 0. On each tile holding elements of ``t`` the
regions are split between the workers (grain: the vector width, at least two grains
each) and each worker gets a ``popops::Fill<T>`` over one region or a
``popops::Fill2d<T>`` over several, the value in their plain state field ``in``
(PopLibs' Fill.cpp). A tensor of 4 bytes or fewer is filled by a Copy from a constant,
as PopLibs does.
"""
import numbers

import numpy as np

import popsim
from popsim import (BOOL, CHAR, FLOAT, HALF, INT, LONGLONG, SHORT, SIGNED_CHAR, UNSIGNED_CHAR, UNSIGNED_INT,
                    UNSIGNED_LONGLONG, UNSIGNED_SHORT, Output, Vector, VectorList, Vertex)
from popsim.program import Copy, Execute

from ..poputil import PoplibsError, per_tile
from ..poputil.checks import check_name, check_tensor
from ..poputil.util import ensure_vertex
from .op_checks import check_prog, check_writable, describe

__all__ = ["fill", "zero"]

#: the types PopLibs' Fill vertices are instantiated for
FILL_TYPES = (FLOAT, HALF, INT, UNSIGNED_INT, SHORT, UNSIGNED_SHORT, BOOL, CHAR, SIGNED_CHAR, UNSIGNED_CHAR,
              LONGLONG, UNSIGNED_LONGLONG)
_LONG = (LONGLONG, UNSIGNED_LONGLONG)
_EIGHT_BIT = (BOOL, CHAR, SIGNED_CHAR, UNSIGNED_CHAR)


# -- vertices ------------------------------------------------------------------------------------
@popsim.vertex_template("popops::Fill", dtype=list(FILL_TYPES))
def Fill(dtype):  # noqa: N802 - Poplar's vertex name
    class Fill(Vertex):
        in_: dtype
        out: Output[Vector[dtype]]

        def compute(self):
            for i in range(len(self.out)):
                self.out[i] = self.in_
            return True
    return Fill


@popsim.vertex_template("popops::Fill2d", dtype=list(FILL_TYPES))
def Fill2d(dtype):  # noqa: N802 - Poplar's vertex name
    class Fill2d(Vertex):
        in_: dtype
        out: Output[VectorList[dtype]]

        def compute(self):
            for r in range(len(self.out)):
                for i in range(len(self.out[r])):
                    self.out[r][i] = self.in_
            return True
    return Fill2d


# -- cycle estimators (PopLibs' cycle estimators) ---------------------------------------------------
def fill_cycles(dtype, n: int) -> int:
    """PopLibs' _fillCycleEstimate: one Fill vertex over ``n`` elements."""
    if dtype in _LONG:
        return 5 + n
    if dtype in _EIGHT_BIT:
        return 28 + n // 4 if n < 64 else 39 + n // 8
    if dtype == HALF:
        return {1: 15, 2: 21}.get(n, 26 + n // 4)
    return 16 + n // 2 + 6 + (n % 2 == 1) + 1


def fill2d_cycles(dtype, sizes) -> int:
    """PopLibs' Fill2d estimate: 5 + sum of fill(n_i) + (not half) - (2 + (not half)) per
    region (64-bit types: - 2 per region)."""
    cycles = 5 + sum(fill_cycles(dtype, n) for n in sizes)
    if dtype in _LONG:
        return cycles - 2 * len(sizes)
    not_half = int(dtype != HALF)
    return cycles + not_half - (2 + not_half) * len(sizes)


def _fill_estimator(dtype, two_d: bool):
    if two_d:
        return lambda info, target: fill2d_cycles(dtype, info.field_sizes("out"))
    return lambda info, target: fill_cycles(dtype, info.field_size("out"))


# -- fill -------------------------------------------------------------------------------------------
def _fill_value(value, dtype, what: str, t):
    """``value`` as a number ``dtype`` holds exactly (floats: rounded to ``dtype``); pad.py
    checks its padding value with it too."""
    if isinstance(value, popsim.Tensor) or not isinstance(value, (numbers.Real, np.bool_)):  # complex: no type holds it
        raise popsim.TypeError(f"{what}: the fill value must be a number, found {type(value).__name__}"
                               + (" (no device type holds a complex number)" if isinstance(value, complex) else ""))
    if isinstance(value, (bool, np.bool_)) and dtype != BOOL:
        raise PoplibsError(f"{what}: a bool value goes with BOOL tensors, not {describe(t)}")
    if dtype in (FLOAT, HALF):
        return float(value)
    if isinstance(value, (float, np.floating)) and not float(value).is_integer():
        raise PoplibsError(f"{what}: the value {value!r} does not fit {describe(t)} exactly; pass a whole number")
    info = np.iinfo(dtype.numpy) if dtype != BOOL else None
    number = int(value)
    if (dtype == BOOL and number not in (0, 1)) or (info is not None and not info.min <= number <= info.max):
        raise PoplibsError(f"{what}: the value {value!r} is out of range for {describe(t)}")
    return bool(number) if dtype == BOOL else number


def _fill(graph, t, value, prog, name: str, what: str) -> None:
    check_tensor(graph, t, what)
    check_prog(prog, what)
    check_name(name, what)
    if t.dtype not in FILL_TYPES:
        raise PoplibsError(f"{what}: cannot fill {describe(t)}; Fill takes {', '.join(x.name for x in FILL_TYPES)}")
    value = _fill_value(value, t.dtype, what, t)
    check_writable(t, what, "tensor")
    if t.num_elements() == 0:
        return
    flat = t.flatten()
    if t.num_elements() * t.dtype.size <= 4:  # PopLibs: a Copy from a constant for tiny tensors
        constant = graph.add_constant(t.dtype, (1,), value, f"{name or what}/fillValue")
        graph.set_tile_mapping(constant, 0)
        prog.add(Copy(constant.broadcast(flat.num_elements(), 0), flat))
        return
    cs = graph.add_compute_set(name or "Fill")
    width = graph.target.vector_width(t.dtype)
    for tile, regions in per_tile.tile_regions(graph, flat):
        for group in per_tile.group_regions(graph.target, regions, "workers", width, 2 * width):
            if len(group) == 1:
                vertex_type = ensure_vertex(graph, Fill[t.dtype], _fill_estimator(t.dtype, False))
                out = per_tile.regions_view(flat, group)
            else:
                vertex_type = ensure_vertex(graph, Fill2d[t.dtype], _fill_estimator(t.dtype, True))
                out = per_tile.region_views(flat, group)
            vertex = graph.add_vertex(cs, vertex_type, {"out": out})
            graph.set_initial_value(vertex["in"], value)
            graph.set_tile_mapping(vertex, tile)
    prog.add(Execute(cs))


def fill(graph, t, value, prog, name: str = "") -> None:
    """Write ``value`` (a number ``t``'s type holds; FLOAT/HALF round it) into every
    element of ``t`` (PopLibs' fill; popsim's API's argument order: value before prog).
    Appends one compute set (or, for 4 bytes or fewer, a Copy) to ``prog``."""
    _fill(graph, t, value, prog, name, "popops.fill")


def zero(graph, t, prog, name: str = "") -> None:
    """Write 0 into every element of ``t`` (PopLibs' zero)."""
    _fill(graph, t, False if isinstance(t, popsim.Tensor) and t.dtype == BOOL else 0, prog, name, "popops.zero")
