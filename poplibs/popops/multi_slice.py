"""Multi-slicing (PopLibs' popops/DynamicSlice.hpp multiSlice, multiUpdate,
multiUpdateAdd, multiUpdateMax): many single-entry slices of one dimension at once, e.g. embedding
lookups and their gradient updates.

``t`` is viewed as ``t2d`` = [numEntries, columns] (the sliced dimension rolled to the
front). The vertices follow the mapping of ``t2d[0]``, as PopLibs' unplanned slices do:
one ``popops::MultiSlice`` (``MultiUpdate``, ``MultiUpdateAdd``, ``MultiUpdateOp``) MultiVertex per region of
it, reading or writing every entry of its columns (no exchange when ``t`` comes from
``create_sliceable_tensor``). The output's columns live on the tile of the vertex that
writes them. Offsets outside ``[0, numEntries)`` are not wrapped: the vertices skip them,
so multi_slice does not write their output rows (their contents are undefined, as in
PopLibs: popsim may hand a vertex a gathered copy of a non-contiguous output and write
all of it back) and the updates ignore their rows.
Repeated offsets: multi_update keeps the last row, multi_update_add adds them all,
multi_update_max takes the maximum of them all.
"""
import numbers

import numpy as np

import popsim
from popsim.program import Execute

from ..poputil import PoplibsError
from ..poputil.checks import check_graph, check_tensor
from .dynamic_slice import check_dims, check_prog, describe
from .slice_vertices import ADD_TYPES, MULTI_TYPES, ensure_vertex

__all__ = ["multi_slice", "multi_update", "multi_update_add", "multi_update_max"]


def _check(graph, t, offsets, dims, sizes, prog, what: str, types):
    check_graph(graph, what)
    check_prog(prog, what)
    check_tensor(graph, t, what, "sliced tensor")
    if t.dtype not in types:
        raise PoplibsError(f"{what}: {describe(t)} has a type the vertices do not take; they take "
                           f"{', '.join(x.name for x in types)}")
    dims, sizes = check_dims(t, dims, sizes, what)
    if len(dims) != 1 or sizes != [1]:
        raise PoplibsError(f"{what}: PopLibs' multi-slices take single entries of one dimension: dims [d] and "
                           f"sizes [1], found dims {dims} and sizes {sizes}; use dynamic_slice for larger slices")
    check_tensor(graph, offsets, what, "offsets")
    if offsets.dtype != popsim.UNSIGNED_INT or offsets.rank != 2 or offsets.shape[1] != len(dims):
        raise PoplibsError(f"{what}: the offsets must be an UNSIGNED_INT tensor of shape [numIndices, {len(dims)}] "
                           f"(one row per slice, one column per dim of {dims}), found {describe(offsets)}")
    return dims[0]


def _slice_shape(t, dim: int, num: int):
    shape = list(t.shape)
    shape[dim] = 1
    return tuple([num] + shape)


def _view_2d(t, dim: int):
    n = t.shape[dim]
    return t.dim_roll(dim, 0).reshape((n, t.num_elements() // max(n, 1)))


def _check_slices(graph, t, s, dim: int, offsets, what: str) -> None:
    check_tensor(graph, s, what, "slices")
    expected = _slice_shape(t, dim, offsets.shape[0])
    if tuple(s.shape) != expected or s.dtype != t.dtype:
        raise PoplibsError(f"{what}: the slices {describe(s)} must be {t.dtype.name} of shape {expected} (one "
                           f"slice of {describe(t)} per row of the offsets {describe(offsets)})")
    if t.contains_constant() or t.contains_aliases():
        raise PoplibsError(f"{what}: {describe(t)} is written and must be a variable without constants or "
                           "aliased elements")


def _add_vertices(graph, name: str, kind: str, t, s2d, offsets, dim: int, prog, extra=None) -> None:
    """One ``kind`` vertex per region of ``t2d[0]``, on that region's tile."""
    t2d = _view_2d(t, dim)
    cs = graph.add_compute_set(name)
    vertex_type = ensure_vertex(graph, kind, t.dtype)
    column = offsets.reshape((offsets.shape[0],))
    for tile, regions in enumerate(graph.get_tile_mapping(t2d[0])):
        for begin, end in regions:
            fields = {"offsets": column, "baseT": t2d.slice(begin, end, 1).flatten(),
                      "subT": s2d.slice(begin, end, 1).flatten(), **(extra or {})}
            v = graph.add_vertex(cs, vertex_type, fields)
            for field, value in (("baseOffset", 0), ("numBaseElements", t2d.shape[0]), ("regionSize", end - begin)):
                graph.set_initial_value(v[field], value)
            graph.set_tile_mapping(v, tile)
    prog.add(Execute(cs))


def multi_slice(graph, t, offsets, dims, sizes, prog, name: str = ""):
    """PopLibs' multiSlice: ``out[i] = t`` at entry ``offsets[i, 0]`` of dimension
    ``dims[0]`` (``sizes`` is ``[1]``). ``offsets``: UNSIGNED_INT of shape [n, 1]. The
    result has shape [n] + t.shape with 1 in the sliced dimension; its columns are mapped
    like ``t``'s first entry. Rows of out-of-range offsets are undefined (not written)."""
    what = "popops.multi_slice"
    dim = _check(graph, t, offsets, dims, sizes, prog, what, MULTI_TYPES)
    num = offsets.shape[0]
    out = graph.add_variable(t.dtype, _slice_shape(t, dim, num), name or "multiSlice")
    out2d = out.reshape((num, out.num_elements() // max(num, 1)))
    if out.num_elements() == 0:
        graph.set_tile_mapping(out, 0)
        return out
    for tile, regions in enumerate(graph.get_tile_mapping(_view_2d(t, dim)[0])):
        for begin, end in regions:
            graph.set_tile_mapping(out2d.slice(begin, end, 1), tile)
    _add_vertices(graph, name or what, "MultiSlice", t, out2d, offsets, dim, prog)
    return out


def multi_update(graph, t, s, offsets, dims, sizes, prog, name: str = "") -> None:
    """PopLibs' multiUpdate: ``t`` at entry ``offsets[i, 0]`` of ``dims[0]`` = ``s[i]``
    (``s`` as multi_slice returns it); out-of-range offsets are ignored, with repeated
    offsets the last row wins."""
    what = "popops.multi_update"
    dim = _check(graph, t, offsets, dims, sizes, prog, what, MULTI_TYPES)
    _check_slices(graph, t, s, dim, offsets, what)
    if s.num_elements():
        _add_vertices(graph, name or what, "MultiUpdate", t, _view_2d(s, 0), offsets, dim, prog)


def multi_update_add(graph, t, s, offsets, scale, dims, sizes, prog, name: str = "") -> None:
    """PopLibs' multiUpdateAdd: ``t`` at entry ``offsets[i, 0]`` of ``dims[0]`` +=
    ``scale * s[i]``; ``scale`` a number or a scalar tensor of ``t``'s type. Out-of-range
    offsets are ignored; repeated offsets all add."""
    what = "popops.multi_update_add"
    dim = _check(graph, t, offsets, dims, sizes, prog, what, ADD_TYPES)
    _check_slices(graph, t, s, dim, offsets, what)
    if isinstance(scale, popsim.Tensor):
        check_tensor(graph, scale, what, "scale")
        if scale.num_elements() != 1 or scale.dtype != t.dtype:
            raise PoplibsError(f"{what}: the scale must be one element of {t.dtype.name} (the type of "
                               f"{describe(t)}), found {describe(scale)}")
        scale = scale.reshape(())
    elif isinstance(scale, (numbers.Number, np.generic)) and not isinstance(scale, bool):
        value = np.asarray(scale).astype(t.dtype.numpy)
        if t.dtype.name not in ("FLOAT", "HALF") and value.item() != scale:
            raise PoplibsError(f"{what}: the scale {scale!r} does not fit {describe(t)} exactly")
        constant = graph.add_constant(t.dtype, (), value.item(), f"{what}/scale")
        graph.set_tile_mapping(constant, 0)
        scale = constant
    else:
        raise PoplibsError(f"{what}: the scale must be a number or a scalar tensor, found {type(scale).__name__}")
    if s.num_elements():
        _add_vertices(graph, name or what, "MultiUpdateAdd", t, _view_2d(s, 0), offsets, dim, prog,
                      {"scale": scale})


def multi_update_max(graph, t, s, offsets, dims, sizes, prog, name: str = "") -> None:
    """PopLibs' multiUpdateMax: ``t`` at entry ``offsets[i, 0]`` of ``dims[0]`` =
    ``max(t[...], s[i])`` element-wise (PopLibs' ``t > s ? t : s``: a NaN in either gives
    ``s``'s element). Out-of-range offsets are ignored; with repeated offsets ``t`` ends up
    with the maximum of them all. Types: FLOAT, HALF, INT, UNSIGNED_INT."""
    what = "popops.multi_update_max"
    dim = _check(graph, t, offsets, dims, sizes, prog, what, ADD_TYPES)
    _check_slices(graph, t, s, dim, offsets, what)
    if s.num_elements():
        _add_vertices(graph, name or what, "MultiUpdateMax", t, _view_2d(s, 0), offsets, dim, prog)
