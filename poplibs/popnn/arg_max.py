"""Arg max / arg min per row and top k (PopLibs' popnn/Loss.hpp: argMax, argMin,
maxAndArgMax, minAndArgMin, topK).

The reduction is PopLibs' two-kind multi-stage one (Loss.cpp ``maxMinArgMaxMin``), placed
on the tiles that hold the data rather than spread over every tile:

1. ``<name>/ReduceClass[0]``: each tile's intervals of the input are cut into row pieces;
   each piece gets one ``popnn::ReduceMaxClassGather<InType,LabelType>`` MultiVertex on
   that tile, its workers taking chunks of ``workerSize`` elements (PopLibs' split: at
   least 32 elements a worker, at most 4095, the repeat counter's limit), each writing
   one (value, index) partial into a variable on that tile.
2. ``<name>/ReduceClass[i]``: while a row has more than one partial, its partials (in
   column order) are cut into groups of 32, each reduced by one
   ``popnn::ReduceMaxClassSparse<PartialsType,LabelType>`` on the tile of the group's
   first partial.

Partial values are FLOAT for FLOAT and HALF inputs (PopLibs'); ties keep the first index.
"""
from typing import List, Tuple

import numpy as np

import popsim
from popsim import UNSIGNED_INT
from popsim.program import Copy, Execute

from .. import popops
from ..poputil import PoplibsError, per_tile
from ..poputil.checks import check_name, check_prog, check_tensor, describe
from .arg_max_vertices import IN_TYPES, gather_vertex, partials_type, sparse_vertex

__all__ = ["arg_max", "arg_min", "max_and_arg_max", "min_and_arg_min", "top_k", "reduce_class"]

WORKER_MIN = 32          # PopLibs' fewest elements a Gather worker takes
WORKER_MAX = 4095        # the repeat counter's limit (Target::getRptCountMax)
SPARSE_PARTIALS = 32     # partials per Sparse vertex (PopLibs' partialsSize)


def check_rows(graph, t, prog, what: str, role: str = "input", types=IN_TYPES) -> None:
    """``t`` a 2-D tensor of ``graph`` of ``types`` with at least one column (no rows: empty
    results; an empty row has no largest element)."""
    check_tensor(graph, t, what, role)
    if prog is not None:
        check_prog(prog, what)
    if t.rank != 2:
        raise PoplibsError(f"{what}: the {role} must be a 2-D tensor [rows, columns], found {describe(t)} "
                           f"of rank {t.rank}")
    if t.shape[1] == 0 and t.shape[0]:
        raise PoplibsError(f"{what}: the {role} {describe(t)} must have at least one column: an empty row has no "
                           "largest or smallest element")
    if t.dtype not in types:
        raise PoplibsError(f"{what}: the {role} must be one of {', '.join(x.name for x in types)}, "
                           f"found {describe(t)}")


def _worker_split(size: int, workers: int) -> Tuple[int, int, int]:
    """(elements, workerSize, workers used) of the next vertex over ``size`` elements:
    PopLibs' argMinMaxSplitFirstReduction rule for one vertex."""
    if size // workers >= WORKER_MIN:
        worker_size = -(-size // workers)
        if worker_size > WORKER_MAX:
            return workers * WORKER_MAX, WORKER_MAX, workers
        return size, worker_size, workers
    return size, WORKER_MIN, -(-size // WORKER_MIN)


def _first_stage(graph, t, is_max: bool, label_type, prog, name: str):
    """The Gather stage: per row, a list of (first column, tile, values, indices) partial
    runs, in column order."""
    rows, cols = t.shape
    ptype = partials_type(t.dtype)
    kind = "max" if is_max else "min"
    vertex_type = gather_vertex(graph, is_max, t.dtype, label_type)
    workers = graph.target.num_worker_contexts
    flat = t.flatten()
    cs = graph.add_compute_set(f"{name}/ReduceClass[0]")
    runs: List[list] = [[] for _ in range(rows)]
    for tile, regions in per_tile.tile_regions(graph, t):
        specs = []
        for begin, end in regions:
            pos = begin
            while pos < end:
                row_end = min(end, (pos // cols + 1) * cols)
                size, worker_size, used = _worker_split(row_end - pos, workers)
                specs.append((pos, size, worker_size, used))
                pos += size
        total = sum(s[3] for s in specs)
        values = graph.add_variable(ptype, (total,), f"{name}/valuePartials[0]/tile{tile}")
        indices = graph.add_variable(label_type, (total,), f"{name}/indexPartials[0]/tile{tile}")
        graph.set_tile_mapping(values, tile)
        graph.set_tile_mapping(indices, tile)
        out = 0
        for pos, size, worker_size, used in specs:
            row, col = divmod(pos, cols)
            v_values, v_indices = values.slice(out, out + used), indices.slice(out, out + used)
            v = graph.add_vertex(cs, vertex_type, {"activations": flat.slice(pos, pos + size),
                                                   f"{kind}Value": v_values, f"{kind}Index": v_indices})
            graph.set_initial_value(v["index"], col)
            graph.set_initial_value(v["size"], size)
            graph.set_initial_value(v["workerSize"], worker_size)
            graph.set_tile_mapping(v, tile)
            runs[row].append((col, tile, v_values, v_indices))
            out += used
    prog.add(Execute(cs))
    return runs


def _empty(graph, dtype, shape, name: str):
    t = graph.add_variable(dtype, shape, name)
    graph.set_tile_mapping(t, 0)
    return t


def _concat(views):
    return views[0] if len(views) == 1 else popsim.concat(views)


def reduce_class(graph, t, is_max: bool, label_type, prog, name: str):
    """PopLibs' maxMinArgMaxMin: ``(values, indices)`` of each row's largest (smallest)
    element, 1-D views of ``t.shape[0]`` elements (values FLOAT for FLOAT/HALF input)."""
    if t.shape[0] == 0:  # no rows: empty results
        return tuple(_empty(graph, dtype, (0,), f"{name}/{role}") for dtype, role in
                     ((partials_type(t.dtype), "values"), (label_type, "indices")))
    runs = _first_stage(graph, t, is_max, label_type, prog, name)
    ptype = partials_type(t.dtype)
    kind = "max" if is_max else "min"
    # per row: (values view, indices view, tile of each partial)
    rows = []
    for row_runs in runs:
        row_runs.sort(key=lambda r: r[0])
        tiles = np.concatenate([np.full(r[2].num_elements(), r[1]) for r in row_runs])
        rows.append((_concat([r[2] for r in row_runs]), _concat([r[3] for r in row_runs]), tiles))
    stage = 1
    while any(len(r[2]) > 1 for r in rows):
        vertex_type = sparse_vertex(graph, is_max, ptype, label_type)
        cs = graph.add_compute_set(f"{name}/ReduceClass[{stage}]")
        groups = []  # (row, begin, end, tile)
        for r, (_, _, tiles) in enumerate(rows):
            if len(tiles) > 1:
                groups += [(r, b, min(b + SPARSE_PARTIALS, len(tiles)), int(tiles[b]))
                           for b in range(0, len(tiles), SPARSE_PARTIALS)]
        values = graph.add_variable(ptype, (len(groups),), f"{name}/valuePartials[{stage}]")
        indices = graph.add_variable(label_type, (len(groups),), f"{name}/indexPartials[{stage}]")
        mapping: List[List[Tuple[int, int]]] = [[] for _ in range(graph.target.num_tiles)]
        for i, (_, _, _, tile) in enumerate(groups):
            mapping[tile].append((i, i + 1))
        graph.set_tile_mapping(values, mapping)
        graph.set_tile_mapping(indices, mapping)
        next_rows: dict = {}
        for i, (r, b, e, tile) in enumerate(groups):
            v = graph.add_vertex(cs, vertex_type, {"activations": rows[r][0].slice(b, e),
                                                   "labels": rows[r][1].slice(b, e),
                                                   f"{kind}Value": values[i], f"{kind}Index": indices[i]})
            graph.set_tile_mapping(v, tile)
            next_rows.setdefault(r, []).append((i, tile))
        for r, outs in next_rows.items():
            first, last = outs[0][0], outs[-1][0] + 1  # a row's groups are consecutive
            rows[r] = (values.slice(first, last), indices.slice(first, last), np.array([o[1] for o in outs]))
        prog.add(Execute(cs))
        stage += 1
    return _concat([r[0] for r in rows]), _concat([r[1] for r in rows])


def _arg(graph, t, prog, name: str, is_max: bool, what: str):
    check_rows(graph, t, prog, what)
    check_name(name, what)
    return reduce_class(graph, t, is_max, UNSIGNED_INT, prog, name or what)


def arg_max(graph, t, prog, name: str = ""):
    """PopLibs' argMax: the UNSIGNED_INT column of each row's largest element of the 2-D
    ``t`` (FLOAT, HALF, INT or UNSIGNED_INT), the first one on ties; shape ``[rows]``."""
    return _arg(graph, t, prog, name, True, "popnn.arg_max")[1]


def arg_min(graph, t, prog, name: str = ""):
    """PopLibs' argMin: as arg_max for the smallest element."""
    return _arg(graph, t, prog, name, False, "popnn.arg_min")[1]


def _with_values(graph, t, prog, name: str, is_max: bool, what: str):
    values, indices = _arg(graph, t, prog, name, is_max, what)
    if values.dtype != t.dtype:  # HALF input: the FLOAT partials cast back, as PopLibs does
        values = popops.cast(graph, values, t.dtype, prog, f"{name or what}/cast")
    return values, indices


def max_and_arg_max(graph, t, prog, name: str = ""):
    """PopLibs' maxAndArgMax: ``(values, indices)`` of each row's largest element, values
    of ``t``'s type, indices UNSIGNED_INT (the first on ties); both shape ``[rows]``."""
    return _with_values(graph, t, prog, name, True, "popnn.max_and_arg_max")


def min_and_arg_min(graph, t, prog, name: str = ""):
    """PopLibs' minAndArgMin: as max_and_arg_max for the smallest element."""
    return _with_values(graph, t, prog, name, False, "popnn.min_and_arg_min")


def top_k(graph, t, indices, k, sort, prog, name: str = ""):
    """PopLibs' topK: the ``k`` largest elements of each row of the 2-D ``t``, shape
    ``[rows, 1, k]`` (descending when ``sort``; otherwise in an unspecified order, here
    also descending), built with popops.top_k_with_permutation.

    ``indices`` is PopLibs' output reference: pass a list (its contents are replaced by
    the UNSIGNED_INT ``[rows, 1, k]`` indices tensor) or an existing UNSIGNED_INT tensor
    of that shape (the indices are copied into it)."""
    what = "popnn.top_k"
    check_rows(graph, t, prog, what)  # PopLibs also takes BOOL; popops' sort does not
    if not isinstance(indices, (list, popsim.Tensor)):
        raise PoplibsError(f"{what}: indices is PopLibs' output reference: pass a list (it receives the indices "
                           f"tensor) or an UNSIGNED_INT tensor of shape {(t.shape[0], 1, k)} to write, "
                           f"found {type(indices).__name__}")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= t.shape[1]:
        raise PoplibsError(f"{what}: k must be a whole number from 1 to the row length {t.shape[1]} of "
                           f"{describe(t)}, found {k!r}")
    if not isinstance(sort, (bool, np.bool_)):
        raise PoplibsError(f"{what}: sort must be a bool, found {type(sort).__name__} {sort!r}")
    shape = (t.shape[0], 1, int(k))
    if isinstance(indices, popsim.Tensor):
        check_tensor(graph, indices, what, "indices")
        if indices.dtype != UNSIGNED_INT or tuple(indices.shape) != shape:
            raise PoplibsError(f"{what}: the indices tensor must be UNSIGNED_INT of shape {shape}, found "
                               f"{describe(indices)}")
    order = popops.SortOrder.DESCENDING if sort else popops.SortOrder.NONE
    if t.shape[0] == 0:  # no rows: empty results
        values, positions = _empty(graph, t.dtype, shape, f"{name or 'topK'}/values"), \
            _empty(graph, UNSIGNED_INT, shape, f"{name or 'topK'}/indices")
        if isinstance(indices, list):
            indices[:] = [positions]
        return values
    values, positions = popops.top_k_with_permutation(graph, prog, t, popops.TopKParams(int(k), True, order),
                                                      name or "topK")
    values, positions = values.expand([1]), positions.expand([1])
    if isinstance(indices, list):
        indices[:] = [positions]
    else:
        prog.add(Copy(positions, indices))
    return values
