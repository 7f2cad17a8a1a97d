"""popops.map (PopLibs' popops/ElementWise.hpp map, mapInPlace, mapWithOutput): an
expression (expr.py) over a list of tensors, computed as ONE generated vertex type in ONE
compute set, with no temporaries.

``map(graph, expr, tensors, prog, name="")`` returns a new tensor of the tensors'
broadcast shape and the expression's type, mapped like the first full-shape tensor
(``per_tile.create_output``); ``map_in_place`` writes the result into ``tensors[0]``;
``map_with_output`` into ``out``. The tensors are broadcast to the output's shape (NumPy
rules); each tile holding output elements gets one 1D MultiVertex over its single
contiguous region, or one 2D vertex per worker over its share of several regions (the
element-wise rule, elementwise.py). Vertices and estimator: map_vertices.py.
"""
from typing import List

import popsim
from popsim.program import Execute

from .. import poputil
from ..poputil import PoplibsError, per_tile
from ..poputil.broadcast import common_shape
from ..poputil.checks import check_graph, check_name, check_tensor
from ..poputil.memory_order import element_order
from .op_checks import check_prog, check_writable, describe
from .expr_typing import infer
from .map_vertices import ensure_vertex, used_inputs

__all__ = ["map", "map_in_place", "map_with_output"]


def _tensors(graph, tensors, what: str) -> List:
    if isinstance(tensors, popsim.Tensor) or not isinstance(tensors, (list, tuple)):
        raise popsim.TypeError(f"{what}: tensors must be a list of popsim.Tensor (the placeholders _1, _2, ... index "
                               f"it), found {type(tensors).__name__}; write [t]")
    for i, t in enumerate(tensors):
        if not isinstance(t, popsim.Tensor):
            raise popsim.TypeError(f"{what}: tensors[{i}] (_{i + 1}) must be a popsim.Tensor, found {type(t).__name__} "
                                   f"{t!r}; put numbers into the expression as pe.Const")
        check_tensor(graph, t, what, f"tensor _{i + 1}")
    return list(tensors)


def _apply(graph, expr, tensors, prog, name: str, out=None, in_place: bool = False):
    what = f"popops.map{'_in_place' if in_place else '_with_output' if out is not None else ''}"
    check_graph(graph, what)
    check_prog(prog, what)
    check_name(name, what)
    tensors = _tensors(graph, tensors, what)
    typed = infer(expr, [t.dtype for t in tensors], what)
    if in_place:
        if not tensors:
            raise PoplibsError(f"{what}: writes its result into tensors[0] (_1), but no tensors were given")
        out = tensors[0]
        check_writable(out, what, "in-place tensor _1")
        role = "the in-place tensor _1"
    elif out is not None:
        check_tensor(graph, out, what, "output")
        check_writable(out, what, "output")
        role = "the output"
    elif not tensors:
        raise PoplibsError(f"{what}: no tensors given, so the output's shape is unknown; pass the tensors or "
                           "use map_with_output (or popops.fill for a constant)")
    shape = common_shape(tensors + ([out] if out is not None else []), what)
    order = None   # the output's memory order, when creating it works it out
    if out is None:
        out, order = per_tile.create_output_in_order(graph, tensors, typed.dtype, name)
    elif tuple(out.shape) != shape or out.dtype != typed.dtype:
        raise PoplibsError(f"{what}: {role} {describe(out)} must be {typed.dtype.name} (the expression's type) "
                           f"of shape {shape} (the tensors broadcast to it; NumPy rules), found "
                           f"{out.dtype.name} of shape {tuple(out.shape)}"
                           + ("; use popops.map for a new tensor of the expression's type" if in_place else ""))
    _run(graph, typed, tensors, out, in_place, prog, name or what, order)
    return out


def _run(graph, typed, tensors, out, in_place: bool, prog, cs_name: str, order=None) -> None:
    """One compute set: per tile one 1D vertex or one 2D vertex per worker; ``order``:
    ``out``'s memory order when its creator knows it."""
    shape = tuple(out.shape)
    dtypes = [t.dtype for t in tensors]
    fields = {f"in{n}": poputil.broadcast_to_match(tensors[n - 1], shape) for n in used_inputs(typed)}
    if in_place:
        fields["in1"] = out
    else:
        fields["out"] = out
    # in the order the output follows memory (poputil.memory_order.element_order): one region a
    # tile, not one per channel and row of a convolution's output or per source of a concat
    order = order or element_order(graph, out)
    layout = order.view(out) if order else out
    if order:
        fields = {f: order.view(t) for f, t in fields.items()}
    regions_on = {tile: len(regions) for tile, regions in per_tile.tile_regions(graph, layout)}

    def make_vertex(tile, regions):
        two_d = regions_on[tile] != 1
        vertex = ensure_vertex(graph, typed, dtypes, out.dtype, two_d, in_place)
        view = per_tile.region_views if two_d else per_tile.regions_view
        return vertex, {f: view(t, regions) for f, t in fields.items()}

    width = graph.target.vector_width(out.dtype)
    cs = per_tile.add_per_tile_compute_set(graph, cs_name, layout, make_vertex, grain_size=width,
                                           min_elements_per_worker=2 * width, grouping="auto")
    prog.add(Execute(cs))


def map(graph, expr, tensors, prog, name: str = ""):  # noqa: A001 - PopLibs' name
    """PopLibs' popops::map: ``expr`` (popsim.popops.expr) over ``tensors`` (``_1`` is
    ``tensors[0]``), broadcast by NumPy rules, into a new tensor of the expression's type;
    one generated vertex type, one compute set appended to ``prog``."""
    return _apply(graph, expr, tensors, prog, name)


def map_in_place(graph, expr, tensors, prog, name: str = "") -> None:
    """PopLibs' mapInPlace: ``expr`` over ``tensors`` written into ``tensors[0]`` (which
    must have the broadcast shape and the expression's type)."""
    _apply(graph, expr, tensors, prog, name, in_place=True)


def map_with_output(graph, expr, tensors, out, prog, name: str = "") -> None:
    """PopLibs' mapWithOutput: ``expr`` over ``tensors`` written into ``out`` (the
    expression's type; the tensors broadcast to its shape)."""
    if out is None:
        raise popsim.TypeError("popops.map_with_output: out must be a popsim.Tensor, found None")
    _apply(graph, expr, tensors, prog, name, out=out)
