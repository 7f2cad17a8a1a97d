"""Encoding and gathering (PopLibs' popops/Encoding.hpp, EncodingConstants.hpp,
Gather.hpp): ``encode_one_hot``, ``iota``, ``MASKED_LABEL_CODE`` and the simple ``gather``.

encode_one_hot writes ``encoded[i][indices[i]] = on`` and ``off`` everywhere else, with
vertices on the tiles that hold ``encoded``: one ``popops::EncodeOneHot<unsigned
int,float>`` (``...CustomValues`` with ``on``/``off`` fields when they are not 1 and 0,
or are tensors: PopLibs' overload with ``on``/``off`` Tensors, read by the vertices) per
contiguous piece of a tile's regions, the pieces shared between the workers. A
vertex reads the indices of the rows its piece touches. An index equal to
``MASKED_LABEL_CODE`` (or any index >= the number of classes) matches no column: an
all-``off`` row.

gather(t, indices, axis) is numpy's ``take`` (XLA's gather with one index per slice):
the result has ``t.shape[:axis] + indices.shape + t.shape[axis+1:]``. Indices are
clamped to ``[0, t.shape[axis] - 1]`` first (XLA clamps start indices; element-wise
``popops.max``/``popops.min``), then it is ``multi_slice`` along ``axis``.

iota(graph, t, start, prog): ``t[i] = start + i`` for a 1-D INT or UNSIGNED_INT ``t``;
each worker's regions get one ``popops::Iota<T>`` (VectorList ``out``, plain state
``offsets``: the value of each region's first element).
"""
import numbers

import numpy as np

import popsim
from popsim import FLOAT, HALF, INT, UNSIGNED_INT, Input, Output, Vector, VectorList, Vertex
from popsim.program import Execute

from .. import poputil
from ..poputil import PoplibsError, per_tile
from ..poputil.checks import check_graph, check_tensor
from ..poputil.util import ensure_vertex
from . import elementwise
from .dynamic_slice import check_prog, describe
from .op_checks import check_writable, convert
from .multi_slice import multi_slice

__all__ = ["MASKED_LABEL_CODE", "encode_one_hot", "gather", "iota"]

#: PopLibs' EncodingConstants.hpp: an index that encodes as an all-off row
MASKED_LABEL_CODE = 0xFFFFFFFF
INDEX_TYPES = (UNSIGNED_INT, INT)
ENCODED_TYPES = (FLOAT, HALF, INT, UNSIGNED_INT)


@popsim.vertex_template("popops::EncodeOneHot", index_type=INDEX_TYPES, out_type=ENCODED_TYPES)
def EncodeOneHot(index_type, out_type):  # noqa: N802 - Poplar's vertex name
    class EncodeOneHot(Vertex):
        indices: Input[Vector[index_type]]
        out: Output[Vector[out_type]]
        numClasses: UNSIGNED_INT
        firstColumn: UNSIGNED_INT  # the column of out[0] in its row (rows are numClasses long)

        def compute(self):
            row = 0
            col = int(self.firstColumn)
            classes = int(self.numClasses)
            for k in range(len(self.out)):
                self.out[k] = 1 if self.indices[row] == col else 0
                col += 1
                if col == classes:
                    col = 0
                    row += 1
            return True
    return EncodeOneHot


@popsim.vertex_template("popops::EncodeOneHotCustomValues", index_type=INDEX_TYPES, out_type=ENCODED_TYPES)
def EncodeOneHotCustomValues(index_type, out_type):  # noqa: N802 - Poplar's vertex name
    class EncodeOneHotCustomValues(Vertex):
        indices: Input[Vector[index_type]]
        out: Output[Vector[out_type]]
        on: Input[out_type]
        off: Input[out_type]
        numClasses: UNSIGNED_INT
        firstColumn: UNSIGNED_INT

        def compute(self):
            row = 0
            col = int(self.firstColumn)
            classes = int(self.numClasses)
            for k in range(len(self.out)):
                self.out[k] = self.on if self.indices[row] == col else self.off
                col += 1
                if col == classes:
                    col = 0
                    row += 1
            return True
    return EncodeOneHotCustomValues


@popsim.vertex_template("popops::Iota", dtype=[INT, UNSIGNED_INT])
def Iota(dtype):  # noqa: N802 - Poplar's vertex name
    class Iota(Vertex):
        out: Output[VectorList[dtype]]
        offsets: popsim.Vector[dtype]

        def compute(self):
            for r in range(len(self.out)):
                for i in range(len(self.out[r])):
                    self.out[r][i] = self.offsets[r] + i
            return True
    return Iota


def encode_one_hot_cycles(width: int, num_elements: int, num_rows: int) -> int:
    """popsim's model (PopLibs' sources give no EncodeOneHot formula): 20 cycles of
    setup, the piece filled with ``off`` at one data-path-wide store (``width``: the
    target's vector_width of the output type) per cycle, then 10 cycles per row to find
    and write its ``on`` element."""
    return 20 + -(-num_elements // width) + 10 * num_rows


def iota_cycles(sizes, width: int) -> int:
    """PopLibs' Iota estimate: 10 + sum of (4 + 3 x vectors), ``width`` the target's
    vector_width of the output type."""
    return 10 + sum(4 + 3 * -(-n // width) for n in sizes)


def _ensure(graph, custom: bool, index_type, out_type) -> str:
    template = EncodeOneHotCustomValues if custom else EncodeOneHot

    def estimate(info, target):
        return encode_one_hot_cycles(target.vector_width(out_type), info.field_size("out"), info.field_size("indices"))
    return ensure_vertex(graph, template[index_type, out_type], estimate)


def _check_number(value, what: str, role: str):
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, np.integer, np.floating)):
        raise PoplibsError(f"{what}: {role} must be a number or a scalar tensor, found {type(value).__name__} "
                           f"{value!r:.60}")


def _value(graph, value, dtype, what: str, role: str):
    if isinstance(value, popsim.Tensor):
        check_tensor(graph, value, what, role)
        if value.num_elements() != 1 or value.dtype != dtype:
            raise PoplibsError(f"{what}: {role} must be a scalar (one element) of the encoded tensor's type "
                               f"{dtype.name}, found {describe(value)}; cast it or pass a number")
        return value.reshape(())
    converted, fits = convert(value, dtype)
    if not fits:
        raise PoplibsError(f"{what}: {role} {value!r:.60} does not fit the encoded tensor's type {dtype.name} exactly")
    constant = graph.add_constant(dtype, (), converted, f"{what}/{role}")
    graph.set_tile_mapping(constant, 0)
    return constant


def encode_one_hot(graph, indices, encoded, prog, on=1, off=0, name: str = "") -> None:
    """PopLibs' encodeOneHot: ``encoded`` (N x C) gets ``on`` at column ``indices[i]`` of
    row i and ``off`` elsewhere; ``indices`` is a 1-D INT or UNSIGNED_INT tensor of N
    entries. ``on``/``off``: numbers, or one-element tensors of ``encoded``'s type (read
    at run time). MASKED_LABEL_CODE (and any index outside [0, C)) gives an all-off row."""
    what = "popops.encode_one_hot"
    check_graph(graph, what)
    check_prog(prog, what)
    check_tensor(graph, indices, what, "indices")
    check_tensor(graph, encoded, what, "encoded")
    if indices.rank != 1 or indices.dtype not in INDEX_TYPES:
        raise PoplibsError(f"{what}: the indices must be a 1-D INT or UNSIGNED_INT tensor, found {describe(indices)}")
    if encoded.rank != 2 or encoded.shape[0] != indices.shape[0]:
        raise PoplibsError(f"{what}: the encoded tensor must be 2-D with one row per index ({indices.shape[0]} rows "
                           f"for {describe(indices)}), found {describe(encoded)}")
    if encoded.dtype not in ENCODED_TYPES:
        raise PoplibsError(f"{what}: {describe(encoded)} must be one of {', '.join(t.name for t in ENCODED_TYPES)}")
    if encoded.contains_constant() or encoded.contains_aliases():
        raise PoplibsError(f"{what}: {describe(encoded)} is written and must be a variable without constants or "
                           "aliased elements")
    tensors = isinstance(on, popsim.Tensor) or isinstance(off, popsim.Tensor)
    for value, role in ((on, "on"), (off, "off")):
        if not isinstance(value, popsim.Tensor):  # before they are compared: an array's truth value is ambiguous
            _check_number(value, what, role)
    custom = tensors or (on, off) != (1, 0)
    extra = {"on": _value(graph, on, encoded.dtype, what, "on"),
             "off": _value(graph, off, encoded.dtype, what, "off")} if custom else {}
    classes = encoded.shape[1]
    if encoded.num_elements() == 0:
        return
    vertex_type = _ensure(graph, custom, indices.dtype, encoded.dtype)
    width = graph.target.vector_width(encoded.dtype)
    flat = encoded.flatten()
    cs = graph.add_compute_set(name or what)
    for tile, regions in per_tile.tile_regions(graph, encoded):
        for group in poputil.split_regions_between_workers(graph.target, regions, width):
            for begin, end in group:
                fields = {"indices": indices.slice(begin // classes, (end - 1) // classes + 1),
                          "out": flat.slice(begin, end), **extra}
                v = graph.add_vertex(cs, vertex_type, fields)
                graph.set_initial_value(v["numClasses"], classes)
                graph.set_initial_value(v["firstColumn"], begin % classes)
                graph.set_tile_mapping(v, tile)
    prog.add(Execute(cs))


def gather(graph, t, indices, axis, prog, name: str = ""):
    """PopLibs' gather(input, indices, axis): numpy's ``take(t, indices, axis)``, indices
    (INT or UNSIGNED_INT, any shape) clamped to the valid range as XLA does. A new tensor
    of shape ``t.shape[:axis] + indices.shape + t.shape[axis+1:]``."""
    what = "popops.gather"
    check_graph(graph, what)
    check_prog(prog, what)
    check_tensor(graph, t, what, "input")
    check_tensor(graph, indices, what, "indices")
    if isinstance(axis, bool) or not isinstance(axis, numbers.Integral) or not 0 <= axis < t.rank:
        raise PoplibsError(f"{what}: axis must be a dimension of {describe(t)} (0 to {t.rank - 1}), found {axis!r}")
    if indices.dtype not in INDEX_TYPES:
        raise PoplibsError(f"{what}: the indices must be INT or UNSIGNED_INT, found {describe(indices)}")
    if t.shape[axis] == 0:
        raise PoplibsError(f"{what}: dimension {axis} of {describe(t)} is empty: there is nothing to gather")
    axis = int(axis)
    name = name or "gather"
    last = t.shape[axis] - 1
    flat = indices.flatten()
    if indices.dtype == INT:
        flat = elementwise.max(graph, flat, 0, prog, f"{name}/clampLow").reinterpret(UNSIGNED_INT)
    clamped = elementwise.min(graph, flat, last, prog, f"{name}/clamp")
    k = clamped.num_elements()
    rows = multi_slice(graph, t, clamped.reshape((k, 1)), [axis], [1], prog, name)  # [k, ..1 at axis..]
    rest = tuple(n for d, n in enumerate(t.shape) if d != axis)
    out = rows.squeeze([axis + 1]).reshape(tuple(indices.shape) + rest)
    r = indices.rank
    perm = list(range(r, r + axis)) + list(range(r)) + list(range(r + axis, r + len(rest)))
    return out.dim_shuffle(perm)


def iota(graph, t, start, prog, name: str = "") -> None:
    """``t[i] = start + i`` (PopLibs' iota; ``t`` 1-D INT or UNSIGNED_INT)."""
    what = "popops.iota"
    check_tensor(graph, t, what)
    check_prog(prog, what)
    if t.rank != 1 or t.dtype not in (INT, UNSIGNED_INT):
        raise PoplibsError(f"{what}: {describe(t)} must be a 1-D INT or UNSIGNED_INT tensor")
    if isinstance(start, bool) or not isinstance(start, numbers.Integral):
        raise PoplibsError(f"{what}: start must be a whole number, found {type(start).__name__} {start!r}")
    info = np.iinfo(t.dtype.numpy)
    if not (info.min <= start and start + max(t.num_elements() - 1, 0) <= info.max):
        raise PoplibsError(f"{what}: start {start} + {t.num_elements()} elements does not fit {describe(t)}")
    check_writable(t, what, "tensor")
    vertex_type = ensure_vertex(graph, Iota[t.dtype],
                                lambda info, target: iota_cycles(info.field_sizes("out"), target.vector_width(t.dtype)))
    cs = graph.add_compute_set(name or "Iota")
    width = graph.target.vector_width(t.dtype)
    for tile, regions in per_tile.tile_regions(graph, t):
        for group in per_tile.group_regions(graph.target, regions, "workers", width, 2 * width):
            vertex = graph.add_vertex(cs, vertex_type, {"out": per_tile.region_views(t, group)})
            graph.set_initial_value(vertex["offsets"], np.array([start + b for b, _ in group], t.dtype.numpy))
            graph.set_tile_mapping(vertex, tile)
    prog.add(Execute(cs))
