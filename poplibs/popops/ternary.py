"""popops' ternary element-wise ops (PopLibs' TernaryOpType: SELECT, CLAMP; popops/ElementWise.hpp).

``select(graph, a, b, pred, prog)``: ``pred ? a : b`` element by element, ``pred`` BOOL;
``clamp(graph, x, lo, hi, prog)``: ``min(max(x, lo), hi)``; each with ``_in_place``
(into the first operand) and ``_with_output`` forms. The three operands broadcast by
NumPy's rules (``poputil.broadcast_to_match``); ``a``/``b`` and ``lo``/``hi`` may be
Python numbers (constants of the other operand's type). The output is mapped like the
first full-shape operand without aliases or constants (``per_tile.create_output``).

PopLibs has only worker ("2D") vertices for these: on each tile holding output
elements the regions are split between the workers (grain: the vector width, at least
two grains each), one ``popops::Select<T>`` / ``popops::Clamp<T>`` (VectorLists ``in1``,
``in2``, ``in3``, ``out``) or ``popops::SelectInPlace<T>`` / ``popops::ClampInPlace<T>``
(``in1Out``, ``in2``, ``in3``) per worker, with PopLibs' estimators (popopsCycleEstimators.cpp:
Select 5 + sum of (6 + 5 n_i); Clamp 5 + sum of (6 + basicOpLoopCycles(n_i, vw, c)),
FLOAT vw 2 c 2, HALF vw 4 c 2, INT vw 1 c 7).
"""
import numbers

import numpy as np

import popsim
from popsim import BOOL, FLOAT, HALF, INT, UNSIGNED_INT, InOut, Input, Output, VectorList, Vertex
from popsim.program import Execute

from .. import poputil
from ..poputil import PoplibsError, per_tile
from ..poputil.broadcast import common_shape
from ..poputil.checks import check_graph, check_name, check_tensor
from ..poputil.util import ensure_vertex
from .op_checks import check_prog, check_writable, describe, scalar_constant

__all__ = ["select", "select_in_place", "select_with_output", "clamp", "clamp_in_place", "clamp_with_output"]

SELECT_TYPES = [FLOAT, HALF, INT, UNSIGNED_INT, BOOL]
CLAMP_TYPES = [FLOAT, HALF, INT]


def _ternary_class(is_select: bool, dtype, in_place: bool) -> type:
    """One worker's vertex; ``is_select`` is a constant of compute."""
    third = BOOL if is_select else dtype
    if in_place:
        class TernaryInPlace(Vertex):
            in1Out: InOut[VectorList[dtype]]
            in2: Input[VectorList[dtype]]
            in3: Input[VectorList[third]]

            def compute(self):
                for r in range(len(self.in1Out)):
                    for i in range(len(self.in1Out[r])):
                        if is_select:
                            self.in1Out[r][i] = self.in1Out[r][i] if self.in3[r][i] else self.in2[r][i]
                        else:
                            self.in1Out[r][i] = min(max(self.in1Out[r][i], self.in2[r][i]), self.in3[r][i])
                return True
        return TernaryInPlace

    class Ternary(Vertex):
        in1: Input[VectorList[dtype]]
        in2: Input[VectorList[dtype]]
        in3: Input[VectorList[third]]
        out: Output[VectorList[dtype]]

        def compute(self):
            for r in range(len(self.out)):
                for i in range(len(self.out[r])):
                    if is_select:
                        self.out[r][i] = self.in1[r][i] if self.in3[r][i] else self.in2[r][i]
                    else:
                        self.out[r][i] = min(max(self.in1[r][i], self.in2[r][i]), self.in3[r][i])
            return True
    return Ternary


def _template(name: str, is_select: bool, in_place: bool):
    types = SELECT_TYPES if is_select else CLAMP_TYPES

    def factory(dtype):
        return _ternary_class(is_select, dtype, in_place)
    factory.__name__ = name.split("::")[1]
    return popsim.vertex_template(name, dtype=types)(factory)


TEMPLATES = {(s, p): _template(f"popops::{'Select' if s else 'Clamp'}{'InPlace' if p else ''}", s, p)
             for s in (True, False) for p in (False, True)}


def _basic_loop(n: int, width: int, cycles: int) -> int:
    return cycles * (n + width - 1) // width


def select_cycles(sizes) -> int:
    """PopLibs' Select/SelectInPlace estimate for regions of ``sizes`` elements."""
    return 5 + sum(6 + _basic_loop(n, 1, 5) for n in sizes)


def clamp_cycles(dtype, sizes) -> int:
    """PopLibs' Clamp/ClampInPlace estimate for regions of ``sizes`` elements."""
    width, per_vector = {FLOAT: (2, 2), HALF: (4, 2)}.get(dtype, (1, 7))
    return 5 + sum(6 + _basic_loop(n, width, per_vector) for n in sizes)


def _ensure(graph, is_select: bool, dtype, in_place: bool) -> str:
    field = "in1Out" if in_place else "out"
    if is_select:
        def estimate(info, target):
            return select_cycles(info.field_sizes(field))
    else:
        def estimate(info, target):
            return clamp_cycles(dtype, info.field_sizes(field))
    return ensure_vertex(graph, TEMPLATES[(is_select, in_place)][dtype], estimate)


def _as_tensors(graph, operands, roles, what: str):
    """Tensors of one element type for the two value operands (numbers become constants)."""
    for t, role in zip(operands, roles):
        if isinstance(t, popsim.Tensor):
            check_tensor(graph, t, what, role)
        elif not isinstance(t, (numbers.Number, np.generic)):
            raise popsim.TypeError(f"{what}: {role} must be a popsim.Tensor or a number, found {type(t).__name__}")
    tensors = [t for t in operands if isinstance(t, popsim.Tensor)]
    if not tensors:
        raise PoplibsError(f"{what}: needs a tensor among {', '.join(roles)}, found only numbers")
    dtype = tensors[0].dtype
    for t in tensors[1:]:
        if t.dtype != dtype:
            raise PoplibsError(f"{what}: {', '.join(roles)} must have one element type, found {describe(tensors[0])} "
                               f"and {describe(t)}; cast one with popops.cast")
    return [t if isinstance(t, popsim.Tensor) else scalar_constant(graph, t, dtype, what, tensors[0])
            for t in operands], dtype


def _apply(graph, is_select: bool, first, second, third, prog, name, what, in_place=False, out=None):
    check_graph(graph, what)
    check_prog(prog, what)
    check_name(name, what)
    if in_place and not isinstance(first, popsim.Tensor):
        raise PoplibsError(f"{what}: the first operand is written in place and must be a tensor, found "
                           f"{type(first).__name__}")
    if is_select:
        (a, b), dtype = _as_tensors(graph, [first, second], ["a", "b"], what)
        check_tensor(graph, third, what, "pred")
        if third.dtype != BOOL:
            raise PoplibsError(f"{what}: the predicate {describe(third)} must be BOOL; compare with popops.neq(..., 0) "
                               "or cast it")
        operands, types = [a, b, third], SELECT_TYPES
    else:
        (x, lo, hi), dtype = _as_tensors(graph, [first, second, third], ["x", "lo", "hi"], what)
        operands, types = [x, lo, hi], CLAMP_TYPES
    if dtype not in types:
        raise PoplibsError(f"{what}: {'SELECT' if is_select else 'CLAMP'} does not support {dtype.name} "
                           f"({describe(operands[0])}); it takes {', '.join(t.name for t in types)}")
    shape = common_shape(operands, what)
    if in_place:
        out = operands[0]
        check_writable(out, what, "in-place operand")
        if tuple(out.shape) != shape:
            raise PoplibsError(f"{what}: the in-place operand {describe(out)} must have the operands' broadcast "
                               f"shape {shape}")
    elif out is not None:
        check_tensor(graph, out, what, "output")
        check_writable(out, what, "output")
        if tuple(out.shape) != shape or out.dtype != dtype:
            raise PoplibsError(f"{what}: the output {describe(out)} must be {dtype.name} of shape {shape}")
    else:
        out = per_tile.create_output(graph, operands, dtype, name)
    views = [poputil.broadcast_to_match(t, shape) for t in operands]
    fields = ("in1Out", "in2", "in3") if in_place else ("in1", "in2", "in3", "out")
    tensors = views if in_place else views + [out]
    vertex_type = _ensure(graph, is_select, dtype, in_place)
    width = graph.target.vector_width(dtype)

    def make_vertex(tile, regions):
        return vertex_type, {f: per_tile.region_views(t, regions) for f, t in zip(fields, tensors)}

    cs = per_tile.add_per_tile_compute_set(graph, name or what, out, make_vertex, grain_size=width,
                                           min_elements_per_worker=2 * width, grouping="workers")
    prog.add(Execute(cs))
    return out


def select(graph, a, b, pred, prog, name: str = ""):
    """``pred ? a : b`` element by element (PopLibs' select; NumPy broadcasting; ``a`` or
    ``b`` may be a number): a new tensor."""
    return _apply(graph, True, a, b, pred, prog, name, "popops.select")


def select_in_place(graph, a, b, pred, prog, name: str = "") -> None:
    """``a = pred ? a : b`` (PopLibs' selectInPlace)."""
    _apply(graph, True, a, b, pred, prog, name, "popops.select_in_place", in_place=True)


def select_with_output(graph, a, b, pred, out, prog, name: str = "") -> None:
    """``out = pred ? a : b`` (PopLibs' selectWithOutput)."""
    _apply(graph, True, a, b, pred, prog, name, "popops.select_with_output", out=out)


def clamp(graph, x, lo, hi, prog, name: str = ""):
    """``min(max(x, lo), hi)`` element by element (PopLibs' clamp; ``lo``/``hi`` tensors
    or numbers, broadcast): a new tensor."""
    return _apply(graph, False, x, lo, hi, prog, name, "popops.clamp")


def clamp_in_place(graph, x, lo, hi, prog, name: str = "") -> None:
    """``x = min(max(x, lo), hi)`` (PopLibs' clampInPlace)."""
    _apply(graph, False, x, lo, hi, prog, name, "popops.clamp_in_place", in_place=True)


def clamp_with_output(graph, x, lo, hi, out, prog, name: str = "") -> None:
    """``out = min(max(x, lo), hi)`` (PopLibs' clampWithOutput)."""
    _apply(graph, False, x, lo, hi, prog, name, "popops.clamp_with_output", out=out)
