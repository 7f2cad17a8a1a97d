"""Dynamic slicing (PopLibs' popops/DynamicSlice.hpp): ``dynamic_slice``,
``dynamic_update`` and ``create_sliceable_tensor``.

How a slice becomes vertices (PopLibs' DynamicSlice.cpp): the dimensions are sliced one
at a time, the one that shrinks the tensor most first (``bestSliceOrder``). For one
dimension the tensor is viewed as ``t2d`` = [dimSize, rest] (the dimension rolled to the
front) and the output, a clone of ``t``'s first ``size`` entries along it, as ``s2d`` =
[size, rest]. The vertices follow the tile mapping of ``t2d[0]``: a tile holding its part
of it in one region whose column of ``t2d`` is contiguous in memory gets one
``DynamicSlice1D`` MultiVertex, any other tile one ``DynamicSlice2D`` per worker. Each
vertex reads the offset (a scalar of the offset tensor) at run time; slices wrap
around: entry i comes from ``(offset + i) mod dimSize``; an offset >= dimSize leaves
the output unwritten (PopLibs' vertices return), or with the option
``remapOutOfBoundIndices`` reads as 0. When several dimensions are sliced, each stage
after the first reads its offset through a one-vertex map that makes it out of range too
when an earlier one was (the earlier stage left its temporary unwritten: the output
must stay untouched, as PopLibs documents, not get stale rows). ``dynamic_update`` slices the outer dimensions
into temporaries, updates the innermost with ``s`` and writes each back
(``DynamicUpdateSlice1D/2D``), as PopLibs does.
"""
import bisect
import functools
from typing import List, Sequence as Seq, Tuple

import popsim
from popsim.program import Copy, Execute

from .. import poputil
from ..poputil import PoplibsError
from ..poputil.checks import check_count, check_graph, check_prog, check_tensor, check_whole_numbers, describe
from . import expr as pe
from .map_expr import map as map_expr
from .slice_vertices import REMAP_FLAG, SLICE_TYPES, ensure_vertex

__all__ = ["create_sliceable_tensor", "dynamic_slice", "dynamic_update"]

_OPTIONS = ("remapOutOfBoundIndices",)


def check_dims(t, dims, sizes, what: str) -> Tuple[List[int], List[int]]:
    """``dims`` distinct dimensions of ``t`` and ``sizes`` (one each) no larger than them."""
    dims, sizes = (list(check_whole_numbers(v, what, name, low=0)) for v, name in ((dims, "dims"), (sizes, "sizes")))
    if len(dims) != len(sizes):
        raise PoplibsError(f"{what}: dims {dims} and sizes {sizes} must have the same length "
                           "(one slice size per sliced dimension)")
    for d, size in zip(dims, sizes):
        if d >= t.rank:
            raise PoplibsError(f"{what}: dimension {d} in dims {dims} is out of range for {describe(t)} "
                               f"(rank {t.rank}: dimensions 0 to {t.rank - 1})")
        if size > t.shape[d]:
            raise PoplibsError(f"{what}: slice size {size} of dimension {d} is larger than that dimension of "
                               f"{describe(t)} ({t.shape[d]})")
    if len(set(dims)) != len(dims):
        raise PoplibsError(f"{what}: dims {dims} names a dimension more than once")
    return [int(d) for d in dims], [int(s) for s in sizes]


def _check_offset(graph, offset, dims, what: str) -> None:
    check_tensor(graph, offset, what, "offset")
    if offset.dtype != popsim.UNSIGNED_INT or offset.rank != 1 or offset.shape[0] != len(dims):
        raise PoplibsError(f"{what}: the offset must be an UNSIGNED_INT tensor of shape ({len(dims)},) (one entry "
                           f"per sliced dimension of dims {list(dims)}), found {describe(offset)}")


def _remap(options, what: str) -> bool:
    options = dict(options or {})
    for key, value in options.items():
        if key not in _OPTIONS:
            raise popsim.InvalidOptionError(f"{what}: unknown option {key!r}; the options are {', '.join(_OPTIONS)}")
        if value not in ("true", "false"):
            raise popsim.InvalidOptionError(f"{what}: option {key} must be \"true\" or \"false\", found {value!r}")
    return options.get("remapOutOfBoundIndices") == "true"


def best_slice_order(shape, dims: Seq[int], sizes: Seq[int]) -> List[int]:
    """PopLibs' bestSliceOrder: the indices into dims, the dimension keeping the smallest
    fraction sizes[a] / shape[dims[a]] first (ties in the given order)."""
    return sorted(range(len(dims)), key=lambda a: sizes[a] / shape[dims[a]])


def _generate(graph, cs, kind: str, offset, t2d, s2d, remap: bool) -> None:
    """PopLibs' generateVertices: ``kind`` DynamicSlice or DynamicUpdateSlice vertices
    moving ``s2d``'s rows from/to ``t2d`` at ``offset``, following ``t2d[0]``'s mapping."""
    dtype = t2d.dtype
    num_base, num_sub = t2d.shape[0], s2d.shape[0]
    flagged = num_base | (REMAP_FLAG if remap else 0)
    width = graph.target.vector_width(dtype)
    for tile, regions in enumerate(_contiguous_regions(graph, t2d[0])):
        if not regions:
            continue
        if len(regions) == 1:
            begin, end = regions[0]
            tile_base = popsim.concat([t2d[i].slice(begin, end) for i in range(num_base)])
            if tile_base.is_contiguous():
                tile_sub = popsim.concat([s2d[i].slice(begin, end) for i in range(num_sub)])
                v = graph.add_vertex(cs, ensure_vertex(graph, kind + "1D", dtype),
                                     {"offset": offset, "baseT": tile_base, "subT": tile_sub})
                for field, value in (("numBaseElements", flagged), ("numSubElements", num_sub),
                                     ("regionSize", end - begin)):
                    graph.set_initial_value(v[field], value)
                graph.set_tile_mapping(v, tile)
                continue
        for group in poputil.split_regions_between_workers(graph.target, regions, width, 2 * width):
            base = [t2d[i].slice(b, e) for b, e in group for i in range(num_base)]
            sub = [s2d[i].slice(b, e) for b, e in group for i in range(num_sub)]
            v = graph.add_vertex(cs, ensure_vertex(graph, kind + "2D", dtype),
                                 {"offset": offset, "baseT": base, "subT": sub})
            for field, value in (("numBaseElements", flagged), ("numSubElements", num_sub),
                                 ("numRegions", len(group))):
                graph.set_initial_value(v[field], value)
            graph.set_tile_mapping(v, tile)


def _contiguous_regions(graph, t):
    """Per tile, ``t``'s intervals there cut where its elements stop being one run of
    memory, in memory order (PopLibs' generateVertices takes getSortedContiguousRegions of
    each tile's mapping): a vertex's base and sub regions are then each one run, which the
    vertices read in place instead of through a rearranging buffer."""
    mapping = graph.get_tile_mapping(t)
    spans = sorted((b, e, tile) for tile, regions in enumerate(mapping) for b, e in regions)
    if not spans:
        return mapping
    begins = [b for b, _, _ in spans]
    result = [[] for _ in mapping]
    for group in graph.get_sorted_contiguous_regions(t, [(b, e) for b, e, _ in spans]):
        for b, e in group:  # one call for every tile: cut back at the tiles' interval ends
            while b < e:
                k = bisect.bisect_right(begins, b) - 1
                end = min(e, spans[k][1])
                result[spans[k][2]].append((b, end))
                b = end
    return result


def _view_2d(t, dim: int):
    n = t.shape[dim]
    return t.dim_roll(dim, 0).reshape((n, t.num_elements() // n))


def _slice_one(graph, t, offset, dim: int, size: int, prog, name: str, remap: bool):
    s = graph.clone(t.slice(0, size, dim), f"{name}/sliced_{dim}")
    cs = graph.add_compute_set(f"{name}/slice_d{dim}")
    _generate(graph, cs, "DynamicSlice", offset, _view_2d(t, dim), _view_2d(s, dim), remap)
    prog.add(Execute(cs))
    return s


def _update_one(graph, t, s, offset, dim: int, prog, name: str, remap: bool) -> None:
    cs = graph.add_compute_set(f"{name}/update_d{dim}")
    _generate(graph, cs, "DynamicUpdateSlice", offset, _view_2d(t, dim), _view_2d(s, dim), remap)
    prog.add(Execute(cs))


def _check_common(graph, t, offset, dims, sizes, prog, what: str):
    check_graph(graph, what)
    check_prog(prog, what)
    check_tensor(graph, t, what, "tensor to slice")
    if t.dtype not in SLICE_TYPES:
        raise PoplibsError(f"{what}: {describe(t)} has a type the slice vertices do not take; they take "
                           f"{', '.join(x.name for x in SLICE_TYPES)}")
    dims, sizes = check_dims(t, dims, sizes, what)
    _check_offset(graph, offset, dims, what)
    return dims, sizes


def dynamic_slice(graph, t, offset, dims, sizes, prog, name: str = "", options=None):
    """PopLibs' dynamicSlice: the slice of ``t`` of ``sizes`` entries along ``dims``,
    starting at the run-time ``offset`` (an UNSIGNED_INT tensor, one entry per dim),
    wrapping modulo each dimension's size. A new tensor, mapped like ``t``'s first
    ``sizes`` entries. Option ``remapOutOfBoundIndices`` ("true"/"false"): an offset >=
    the dimension's size reads as 0 instead of leaving the output unwritten."""
    what = "popops.dynamic_slice"
    dims, sizes = _check_common(graph, t, offset, dims, sizes, prog, what)
    remap = _remap(options, what)
    name = name or "dynamicSlice"
    if 0 in sizes:  # nothing to read: a static empty slice, as PopLibs returns
        out = t
        for d, size in zip(dims, sizes):
            out = out.slice(0, size, d)
        return out
    out = t
    order = best_slice_order(t.shape, dims, sizes)
    for k, i in enumerate(order):
        stage_offset = offset[i] if k == 0 or remap else \
            _unless_out_of_range(graph, t, offset, dims, order[:k + 1], prog, f"{name}/d{dims[i]}")
        out = _slice_one(graph, out, stage_offset, dims[i], sizes[i], prog, f"{name}/d{dims[i]}", remap)
    return out


def _unless_out_of_range(graph, t, offset, dims, stages, prog, name: str):
    """The offset of the last of ``stages`` (indices into dims), or that dimension's size
    (out of range: its vertices write nothing) when an earlier stage's offset is out of
    range. That stage left its temporary unwritten, and the output must stay untouched,
    as PopLibs documents, not get the temporary's rows from an earlier run."""
    *earlier, last = stages
    in_range = functools.reduce(pe.logical_and, [pe.PlaceHolder(k + 2) < pe.Const(t.shape[dims[i]], popsim.UNSIGNED_INT)
                                                 for k, i in enumerate(earlier)])
    beyond = pe.Const(t.shape[dims[last]], popsim.UNSIGNED_INT)
    return map_expr(graph, pe.select(pe.PlaceHolder(1), beyond, in_range),
                    [offset[last]] + [offset[i] for i in earlier], prog, f"{name}/offset")


def dynamic_update(graph, t, s, offset, dims, sizes, prog, name: str = "", options=None) -> None:
    """PopLibs' dynamicUpdate: write ``s`` into ``t`` at the run-time ``offset`` along
    ``dims`` (``s`` has ``t``'s shape with ``sizes`` in ``dims``), wrapping modulo each
    dimension's size; an offset >= the size writes nothing (or at 0 with
    ``remapOutOfBoundIndices``)."""
    what = "popops.dynamic_update"
    dims, sizes = _check_common(graph, t, offset, dims, sizes, prog, what)
    check_tensor(graph, s, what, "update")
    expected = list(t.shape)
    for d, size in zip(dims, sizes):
        expected[d] = size
    if tuple(s.shape) != tuple(expected) or s.dtype != t.dtype:
        raise PoplibsError(f"{what}: the update {describe(s)} must be {t.dtype.name} of shape {tuple(expected)} "
                           f"({describe(t)} with sizes {sizes} in dims {dims})")
    if t.contains_constant() or t.contains_aliases():
        raise PoplibsError(f"{what}: {describe(t)} is written and must be a variable without constants or "
                           "aliased elements")
    remap = _remap(options, what)
    name = name or "dynamicUpdate"
    if not dims:
        prog.add(Copy(s, t))
        return
    if 0 in sizes:
        return
    order = best_slice_order(t.shape, dims, sizes)
    reduced = [t]
    for i in order[:-1]:  # slice off all but the last dimension, then write back in reverse
        reduced.append(_slice_one(graph, reduced[-1], offset[i], dims[i], sizes[i], prog,
                                  f"{name}/s_d{dims[i]}", remap))
    reduced.append(s)
    for k in reversed(range(len(order))):
        i = order[k]
        _update_one(graph, reduced[k], reduced[k + 1], offset[i], dims[i], prog, f"{name}/u_d{dims[i]}", remap)


def create_sliceable_tensor(graph, dtype, shape, dims, sizes, name: str = "", min_grain_size: int = 0):
    """PopLibs' createSliceableTensor: a new variable of ``shape`` laid out for slicing
    along ``dims``: the unsliced elements ("columns") are spread over the tiles in
    grains of ``min_grain_size`` (at least 1), each tile holding every sliced entry of its
    columns, stored slice by slice, so a slice needs no exchange and each tile's part
    is one contiguous region (one DynamicSlice1D / MultiSlice vertex per tile)."""
    what = "popops.create_sliceable_tensor"
    check_graph(graph, what)
    shape = check_whole_numbers(shape, what, "shape", low=0)
    dims, sizes = check_dims(_Shape(shape, dtype), dims, sizes, what)
    grain = max(1, check_count(min_grain_size, what, "min_grain_size"))
    rest = [d for d in range(len(shape)) if d not in dims]
    sliced_shape = [shape[d] for d in dims]
    rest_shape = [shape[d] for d in rest]
    num_sliced = _prod(sliced_shape)
    num_cols = _prod(rest_shape)
    total = num_sliced * num_cols
    flat = graph.add_variable(dtype, (total,), name or "sliceable")
    if total == 0:
        graph.set_tile_mapping(flat, 0)
        return flat.reshape(shape)
    chunks = poputil.split_regions([(0, num_cols)], grain, graph.num_tiles)
    mapping: List[List[Tuple[int, int]]] = [[] for _ in range(graph.num_tiles)]
    views, start = [], 0
    for tile, chunk in enumerate(chunks):
        (b, e), = chunk
        n = num_sliced * (e - b)
        mapping[tile].append((start, start + n))
        views.append(flat.slice(start, start + n).reshape((num_sliced, e - b)))
        start += n
    graph.set_tile_mapping(flat, mapping)
    grid = popsim.concat(views, 1).reshape(tuple(sliced_shape + rest_shape))
    order = dims + rest  # grid dimension k is shape dimension order[k]
    return grid.dim_shuffle([order.index(d) for d in range(len(shape))])


class _Shape:
    """Just enough of a tensor for check_dims on a shape not yet created."""

    def __init__(self, shape, dtype):
        self.shape, self.rank, self.name = shape, len(shape), "(to be created)"
        self.dtype = dtype


def _prod(values) -> int:
    result = 1
    for v in values:
        result *= v
    return result
