"""popops' named element-wise ops (PopLibs' popops/ElementWise.hpp): ``add(graph, a, b,
prog, name="")``, ``add_in_place(graph, a, b, prog)``, ``add_with_output(graph, a, b, out,
prog)`` and so on for every entry of the op table (elementwise_ops.py).

How an op becomes vertices (PopLibs' ElementWise.cpp): the operands are broadcast to
their common shape (NumPy rules; a Python number becomes a constant of the other
operand's type); the output (a new tensor mapped like the largest input, the first
operand for ``_in_place``, or the given tensor) decides placement; each tile holding
output elements gets one 1D MultiVertex when it holds them in one contiguous region,
else one 2D vertex per worker, its regions split between workers in grains of the
vector width with at least two grains each. All of it is one compute set, appended to
``prog`` as an Execute.
"""
import numbers
from typing import TYPE_CHECKING, Any

import numpy as np

import popsim
from popsim.program import Execute

from .. import poputil
from ..poputil import PoplibsError, per_tile
from ..poputil.broadcast import common_shape
from ..poputil.checks import check_graph, check_name, check_tensor
from ..poputil.memory_order import element_order, flat_view
from .elementwise_ops import BINARY_OPS, UNARY_OPS, ElementwiseOp, formula
from .elementwise_vertices import SCALAR_TYPES, ensure_vertex, worker_cycles
from .op_checks import check_prog, check_writable, describe, scalar_constant, scalar_value

__all__ = []


def _operands(graph, spec: ElementwiseOp, operands, what: str):
    """The operands as tensors of one element type the op takes."""
    for i, t in enumerate(operands):
        if isinstance(t, popsim.Tensor):
            check_tensor(graph, t, what, f"operand {i + 1}")
        elif not isinstance(t, (numbers.Number, np.generic)):
            raise popsim.TypeError(f"{what}: operand {i + 1} must be a popsim.Tensor or a number, "
                                   f"found {type(t).__name__}")
    tensors = [t for t in operands if isinstance(t, popsim.Tensor)]
    if not tensors:
        raise PoplibsError(f"{what}: needs at least one tensor operand, found only numbers "
                           f"{[o for o in operands]!r}; compute constants on the host")
    dtype = tensors[0].dtype
    mixed = [t for t in tensors if t.dtype != dtype]
    if mixed:
        raise PoplibsError(f"{what}: operands must have one element type, found {describe(tensors[0])} and "
                           f"{describe(mixed[0])}; cast one with popops.cast")
    if dtype not in spec.types:
        raise PoplibsError(f"{what}: {spec.op.name} does not support {dtype.name} "
                           f"({', '.join(describe(t) for t in tensors)}); "
                           f"it takes {', '.join(t.name for t in spec.types)}")
    return [t if isinstance(t, popsim.Tensor) else scalar_constant(graph, t, dtype, what, tensors[0])
            for t in operands], dtype


def _run(graph, spec: ElementwiseOp, operands, dtype, out, in_place: bool, prog, name: str, what: str,
         scalar=None, order=None):
    """Add the compute set computing ``spec`` of ``operands`` (broadcast to ``out``'s
    shape) into ``out`` and append its Execute to ``prog``. ``scalar``: the second operand
    of a binary op is this number (``operands`` holds the first only), held by
    BroadcastScalar vertices as their member B. ``order``: ``out``'s memory order when its
    creator knows it (per_tile.create_output_in_order), else worked out here."""
    shape = tuple(out.shape)
    views = [poputil.broadcast_to_match(t, shape) for t in operands]
    width = graph.target.vector_width(dtype)
    # B's value typed once (a FLOAT member for HALF data), not converted per vertex
    values = {} if scalar is None else {
        "B": np.array([scalar], (popsim.FLOAT if dtype == popsim.HALF else dtype).numpy)}
    if scalar is not None:
        fields = ("in1Out",) if in_place else ("in1", "out")
    elif spec.is_binary:
        fields = ("in1Out", "in2") if in_place else ("in1", "in2", "out")
    else:
        fields = ("inOut",) if in_place else ("in", "out")
    # Every operand flat in the order the output follows memory (poputil.memory_order's
    # element_order), once, not per vertex: a tile's share of a convolution's output (or of a
    # tile-grouped clone of a concat) is then one region, not one per channel and row (or source)
    order = order or element_order(graph, out)
    flats = [flat_view(order, t) for t in (views if in_place else views + [out])]
    layout = flats[0] if in_place else flats[-1]
    # PopLibs: a tile holding its elements in one contiguous region gets a 1D MultiVertex
    regions_on = {tile: len(regions) for tile, regions in per_tile.tile_regions(graph, layout)}
    vertex = {two_d: ensure_vertex(graph, spec.op, dtype, two_d, in_place, scalar is not None)
              for two_d in {n != 1 for n in regions_on.values()}}

    workers = graph.target.num_worker_contexts
    cycles_of = {}  # (2D?, region sizes) -> the estimate: tiles of a linear mapping repeat them

    def make_vertex(tile, regions):
        two_d = regions_on[tile] != 1
        view = per_tile.region_views if two_d else per_tile.regions_view
        # The estimate from the regions in hand: lowering then calls no estimator per vertex.
        key = (two_d, tuple(e - b for b, e in regions))
        cycles = cycles_of.get(key)
        if cycles is None:
            cycles = cycles_of[key] = worker_cycles(spec.op, dtype, two_d, in_place, key[1], workers, width,
                                                    scalar is not None)
        return vertex[two_d], {f: view(flat, regions) for f, flat in zip(fields, flats)}, cycles, values

    cs = per_tile.add_per_tile_compute_set(graph, name or what, layout, make_vertex, grain_size=width,
                                           min_elements_per_worker=2 * width, grouping="auto")
    prog.add(Execute(cs))


def apply(graph, spec: ElementwiseOp, operands, prog, name: str = "", out=None, in_place: bool = False):
    """Run op ``spec`` on ``operands`` (tensors or numbers): into a new tensor (returned),
    in place into the first operand, or into ``out``."""
    what = f"popops.{spec.name}{'_in_place' if in_place else '_with_output' if out is not None else ''}"
    check_graph(graph, what)
    check_prog(prog, what)
    check_name(name, what)
    if in_place and not isinstance(operands[0], popsim.Tensor):
        raise PoplibsError(f"{what}: the first operand is written in place and must be a tensor, found "
                           f"{type(operands[0]).__name__} {operands[0]!r}")
    scalar = None
    first, second = operands[0], operands[-1]
    if (spec.is_binary and isinstance(first, popsim.Tensor) and isinstance(second, (numbers.Number, np.generic))
            and first.dtype.name in SCALAR_TYPES and first.dtype in spec.types):
        # PopLibs' BroadcastScalar: the number goes into each vertex, not through the exchange
        check_tensor(graph, first, what, "operand 1")
        scalar = scalar_value(second, first.dtype, what, first)
        operands, dtype = [first], first.dtype
    else:
        operands, dtype = _operands(graph, spec, operands, what)
    shape = common_shape(operands, what)
    result = spec.result_type(dtype)
    if in_place:
        out = operands[0]
        if result != dtype:
            raise PoplibsError(f"{what}: {spec.op.name} gives {result.name} results, which cannot be stored in "
                               f"place into {describe(out)}; use popops.{spec.name} or popops.{spec.name}_with_output")
        check_writable(out, what, "in-place operand")
        if shape != tuple(out.shape):
            raise PoplibsError(f"{what}: the in-place operand {describe(out)} must have the operands' broadcast "
                               f"shape {shape}; the other operand broadcasts to it, never it to the other")
        operands = [operands[0]] + [_unaliased(graph, t, out, prog, name) for t in operands[1:]]
    elif out is not None:
        check_tensor(graph, out, what, "output")
        check_writable(out, what, "output")
        if tuple(out.shape) != shape or out.dtype != result:
            raise PoplibsError(f"{what}: the output {describe(out)} must be {result.name} of shape {shape} (the "
                               "operands' broadcast shape and the op's result type)")
    order = None   # the output's memory order, when creating it works it out
    if out is None:
        out, order = per_tile.create_output_in_order(graph, operands, result, name)
    _run(graph, spec, operands, dtype, out, in_place, prog, name, what, scalar, order)
    return out


def _unaliased(graph, operand, out, prog, name: str):
    """``operand``, or a copy of it made first when it shares elements with the in-place
    output: ``add_in_place(g, a, a, prog)`` reads every element as it was before the op,
    whichever order the vertices read and write them in."""
    if not operand.intersects_with(out):
        return operand
    copy = graph.clone(operand, f"{name or 'operand'}/before")
    prog.add(popsim.program.Copy(operand, copy))
    return copy


def _functions(spec: ElementwiseOp):
    """The public op, op_in_place and op_with_output of one table entry."""
    if spec.is_binary:
        def op(graph, a, b, prog, name=""):
            return apply(graph, spec, [a, b], prog, name)

        def op_in_place(graph, a, b, prog, name=""):
            apply(graph, spec, [a, b], prog, name, in_place=True)

        def op_with_output(graph, a, b, out, prog, name=""):
            apply(graph, spec, [a, b], prog, name, out=out)
        args = "a, b"
    else:
        def op(graph, a, prog, name=""):
            return apply(graph, spec, [a], prog, name)

        def op_in_place(graph, a, prog, name=""):
            apply(graph, spec, [a], prog, name, in_place=True)

        def op_with_output(graph, a, out, prog, name=""):
            apply(graph, spec, [a], prog, name, out=out)
        args = "a"
    expr = formula(spec.body_for(spec.types[0]))
    types = ", ".join(t.name for t in spec.types)
    result = "BOOL" if spec.result == "bool" else "the operands' type"
    for fn, suffix, what in ((op, "", "returns a new tensor of"), (op_in_place, "_in_place", "writes into a"),
                             (op_with_output, "_with_output", "writes into out")):
        fn.__name__ = fn.__qualname__ = spec.name + suffix
        fn.__doc__ = (f"PopLibs' {spec.op.name} ({expr} element by element, NumPy broadcasting of {args}; a "
                      f"number may stand for a tensor): {what} the result. Operands {types}; result {result}. "
                      "Appends one compute set to prog.")
        yield fn


for _spec in BINARY_OPS + UNARY_OPS:
    for _fn in _functions(_spec):
        globals()[_fn.__name__] = _fn
        __all__.append(_fn.__name__)

if TYPE_CHECKING:  # for type checkers only: the ops made from the op table above
    def __getattr__(name: str) -> Any: ...
