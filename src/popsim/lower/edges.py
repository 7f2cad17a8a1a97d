"""The edges of one compute set as numpy columns, read straight from its vertex store.

A compute set keeps each connection in a flat slot list (vertex_store.py): an edge
record (variable, offset, shape, strides) for most, a Tensor or a list of Tensors for
the rest. Lowering needs, per edge, its first element and length when it is one
contiguous run of a variable, its runs otherwise, and which vertex field it belongs
to. Records are read column by column (a few passes of C-level iteration over the
slots, no object made per edge) and grouped by geometry, the pair (shape, strides):
the geometry decides the element count, whether the view is one run, and the pattern
of its runs otherwise, so that is worked out once per geometry, not once per edge.
Only Tensors a caller kept alive, views not of one variable and list fields cost
Python per edge.

Edges are numbered in lowering order (vertices by tile then index, fields in
declaration order, sub-edges in order): the order buffers are allocated in and
conflicts are reported in.
"""
from __future__ import annotations

from itertools import chain, compress
from typing import Dict, List, Tuple

import numpy as np

from ..runs import distinct, sort_order
from ..tensor import Tensor
from ..vertex_store import SLOT_LIST, SLOT_RECORD, SLOT_TENSOR, EdgeList, edge_record, record_columns, vertex_ref
from ..views import strided_runs

_EMPTY = np.empty(0, np.int64)


class EdgeTable:
    """Per edge (in lowering order): ``vertex`` (index in its compute set), ``position``
    (field), ``tile``, ``itemsize``, ``reads``, ``writes``, ``n`` (elements), ``gid`` (first
    global element id when the edge is one contiguous run of one variable, else -1).

    Edges that are not one run (``gid`` -1) have their runs in ``run_edge``, ``run_pos``
    (position in the view), ``run_gid``, ``run_len``, sorted by edge then position, and a
    key, (``view_pattern``, ``view_first``): the id of their pattern of runs and their
    first element, equal for two edges exactly when their runs are equal."""

    __slots__ = ("vertex", "position", "tile", "itemsize", "reads", "writes", "n", "gid", "run_edge", "run_pos",
                 "run_gid", "run_len", "view_pattern", "view_first", "_cs")
    # the slots' types, for type checkers (annotations only: the class gets no attributes)
    vertex: np.ndarray
    position: np.ndarray
    tile: np.ndarray
    itemsize: np.ndarray
    reads: np.ndarray
    writes: np.ndarray
    n: np.ndarray
    gid: np.ndarray
    run_edge: np.ndarray
    run_pos: np.ndarray
    run_gid: np.ndarray
    run_len: np.ndarray
    view_pattern: np.ndarray
    view_first: np.ndarray
    _cs: object

    @property
    def count(self) -> int:
        return int(self.n.size)

    def owner(self, edge: int) -> Tuple[object, str]:
        """(VertexRef, field name) of an edge, for messages."""
        v = vertex_ref(self._cs, int(self.vertex[edge]))
        return v, v.type.fields[int(self.position[edge])].name


class EdgeOwners:
    """``owners[edge]``: (VertexRef, field name), made only when a message needs one."""

    __slots__ = ("_edges",)

    def __init__(self, edges: EdgeTable):
        self._edges = edges

    def __getitem__(self, edge) -> Tuple[object, str]:
        return self._edges.owner(int(edge))


class _Patterns:
    """Ids of run patterns (runs relative to their first element): two views have the
    same runs exactly when they have the same pattern id and first element."""

    def __init__(self):
        self._ids: Dict[Tuple[bytes, bytes], int] = {}

    def key(self, gid: np.ndarray, length: np.ndarray) -> Tuple[int, int]:
        """(pattern id, first element) of runs starting at ``gid``."""
        first = int(gid[0]) if gid.size else 0
        k = ((gid - first).tobytes(), length.tobytes())
        return self._ids.setdefault(k, len(self._ids)), first


def read_edges(cs, row_slot: np.ndarray, row_kind: np.ndarray, row_vertex: np.ndarray, row_pos: np.ndarray,
               row_tile: np.ndarray, row_itemsize: np.ndarray, row_reads: np.ndarray,
               row_writes: np.ndarray) -> Tuple[EdgeTable, np.ndarray, np.ndarray]:
    """The edges of the field rows given (in lowering order, every one connected): one
    per record or Tensor row, one per sub-edge of list rows. Returns the table, the
    first edge of each row and the edges of each row (0 for rows that are not edges)."""
    slots = cs._slots
    table = cs.variables
    rows = row_slot.size
    is_record = row_kind == SLOT_RECORD
    is_list = row_kind == SLOT_LIST
    per_row = (is_record | (row_kind == SLOT_TENSOR)).astype(np.int64)
    list_rows = np.flatnonzero(is_list)
    lists = [slots[s] for s in row_slot[list_rows].tolist()]
    # EdgeLists (packed strided sub-edges) read as columns at once; lists of Tensors one by one
    is_packed = np.fromiter((type(c) is EdgeList.TYPE for c in lists), bool, len(lists))
    packed_columns, packed_count = EdgeList.columns(list(compress(lists, is_packed)))
    plain = list(compress(lists, ~is_packed))
    del lists
    packed_rows, plain_rows = list_rows[is_packed], list_rows[~is_packed]
    per_row[packed_rows] = packed_count
    per_row[plain_rows] = [len(c) for c in plain]
    row_start = np.cumsum(per_row) - per_row
    count = int(per_row.sum()) if rows else 0
    edge_row = np.repeat(np.arange(rows, dtype=np.int64), per_row)

    # Strided views of one variable: records read column-wise (in storage order, then put in
    # edge order), then Tensors and sub-edges one by one.
    rec_rows = np.flatnonzero(is_record)
    rec_slots = row_slot[rec_rows]
    picked = np.zeros(len(slots), np.uint8)
    picked[rec_slots] = 1
    records = slots if rec_slots.size == len(slots) else list(compress(slots, picked.tobytes()))
    edge_of_slot = np.zeros(len(slots), np.int64)
    edge_of_slot[rec_slots] = row_start[rec_rows]
    columns = [record_columns(records), packed_columns]
    del records
    # Tensors, then the sub-edges of the other list rows (a row's edges are consecutive).
    others = np.flatnonzero(row_kind == SLOT_TENSOR)
    items = [slots[s] for s in row_slot[others].tolist()]
    items += chain.from_iterable(plain)
    item_edge = np.concatenate([row_start[others], _row_edges(row_start, per_row, plain_rows)])
    # Each a record already (list fields hold Tensors, but a record reads the same), a
    # strided view of one variable (made a record), or a view not of one variable.
    general_mask = bytes(type(t) is not tuple and t._var is None for t in items)
    strided = np.frombuffer(general_mask, np.uint8) == 0
    x_records = [t if type(t) is tuple else edge_record(t) for t in compress(items, strided.tobytes())]
    general: List[Tuple[int, Tensor]] = list(zip(item_edge[~strided].tolist(), compress(items, general_mask)))
    del items
    columns.append(record_columns(x_records))
    s_edge = np.concatenate([edge_of_slot[np.flatnonzero(picked)], _row_edges(row_start, per_row, packed_rows),
                             item_edge[strided]])
    var_index, offset, rank, dims, steps = (np.concatenate(c) for c in zip(*columns))

    edges = EdgeTable()
    edges._cs = cs
    edges.vertex = row_vertex[edge_row]
    edges.position = row_pos[edge_row]
    edges.tile = row_tile[edge_row]
    edges.itemsize = row_itemsize[edge_row]
    edges.reads = row_reads[edge_row]
    edges.writes = row_writes[edge_row]
    edges.n = np.zeros(count, np.int64)
    edges.gid = np.full(count, -1, np.int64)
    edges.view_pattern = np.full(count, -1, np.int64)
    edges.view_first = np.zeros(count, np.int64)
    patterns = _Patterns()
    run_parts: List[Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []

    if s_edge.size:
        n, simple, geo, geometry = _geometries(rank, dims, steps)
        start = table.bases()[var_index] + offset
        pat_start, pat_count, pat_pos, pat_gid, pat_len, g_pattern = _geometry_runs(geometry, patterns)
        edges.n[s_edge] = n
        edges.gid[s_edge[simple]] = start[simple]
        views = ~simple
        if views.any():
            v_edge, v_geo, v_start = s_edge[views], geo[views], start[views]
            edges.view_pattern[v_edge] = g_pattern[v_geo]
            # A strided view's first element is at its offset (empty views have none: 0, as _Patterns says).
            edges.view_first[v_edge] = np.where(n[views] > 0, v_start, 0)
            cnt = pat_count[v_geo]
            owner = np.repeat(np.arange(v_edge.size), cnt)
            k = np.repeat(pat_start[v_geo] - (np.cumsum(cnt) - cnt), cnt) + np.arange(owner.size)
            run_parts.append((v_edge[owner], pat_pos[k], v_start[owner] + pat_gid[k], pat_len[k]))
            del owner, k
    if general:
        _general_runs(general, table, edges, patterns, run_parts)
    if run_parts:
        # (joined and sorted only when they must be: a convolution's gathers have millions of runs)
        columns = [np.concatenate(p) if len(p) > 1 else p[0] for p in zip(*run_parts)]
        del run_parts
        run_edge = columns[0]
        if run_edge.size > 1 and bool((run_edge[1:] < run_edge[:-1]).any()):
            order = sort_order(run_edge)
            for i in range(4):
                columns[i] = columns[i][order]
            del order
        edges.run_edge, edges.run_pos, edges.run_gid, edges.run_len = columns
    else:
        edges.run_edge = edges.run_pos = edges.run_gid = edges.run_len = _EMPTY
    return edges, row_start, per_row


def _row_edges(row_start: np.ndarray, per_row: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The edges of ``rows``, row after row (each row's are consecutive from its first)."""
    count = per_row[rows]
    return np.repeat(row_start[rows] - (np.cumsum(count) - count), count) + np.arange(int(count.sum()))


def _general_runs(general: List[Tuple[int, Tensor]], table, edges: EdgeTable, patterns: _Patterns,
                  run_parts: list) -> None:
    """The runs of views not of one variable (Tensor._runs: consecutive ids of one variable),
    all found in one pass over their concatenated ids rather than view by view, and once per
    distinct view: vertices reading one window of an id array (a convolution's input window,
    read by the vertex of every out-channel part) share its runs."""
    e_of = np.fromiter((e for e, _ in general), np.int64, len(general))
    distinct: Dict[tuple, int] = {}   # (memory, shape, strides, type) of an id array -> its index
    arrays = []
    which = np.empty(len(general), np.int64)
    for k, (_, t) in enumerate(general):
        a = t._ids
        key = (a.__array_interface__["data"][0], a.shape, a.strides, a.dtype.str)
        u = distinct.get(key)
        if u is None:
            u = distinct[key] = len(arrays)
            arrays.append(a.reshape(-1))
        which[k] = u
    del distinct
    size = np.fromiter(map(len, arrays), np.int64, len(arrays))
    ids = np.concatenate(arrays).astype(np.int64, copy=False) if arrays else _EMPTY
    del arrays
    first_of = np.cumsum(size) - size   # each view's first element in ``ids``
    total = ids.size
    at = table.run_starts(ids, first_of[size > 0])   # a run never crosses from one view into the next
    run_len = np.diff(np.append(at, total)).astype(np.int64)
    run_gid = ids[at]
    del ids
    run_view = np.searchsorted(first_of, at, side="right") - 1
    # views with no empty one before them are found by searchsorted's last match: skip empties
    runs_of = np.bincount(run_view, minlength=size.size) if at.size else np.zeros(size.size, np.int64)
    run_start = np.cumsum(runs_of) - runs_of
    one = runs_of == 1   # one run after all (a block of a reshaped view): an edge like any other run
    edge_one = one[which]
    edges.n[e_of[edge_one]] = run_len[run_start[which[edge_one]]]
    edges.gid[e_of[edge_one]] = run_gid[run_start[which[edge_one]]]
    many = np.flatnonzero(~one)
    if many.size == 0:
        return
    pattern, first = np.zeros(size.size, np.int64), np.zeros(size.size, np.int64)
    for u, r0, nr in zip(many.tolist(), run_start[many].tolist(), runs_of[many].tolist()):
        pattern[u], first[u] = patterns.key(run_gid[r0:r0 + nr], run_len[r0:r0 + nr])
    edge_many = np.flatnonzero(~edge_one)
    views = which[edge_many]
    e = e_of[edge_many]
    edges.n[e] = size[views]
    edges.view_pattern[e], edges.view_first[e] = pattern[views], first[views]
    # each edge's runs, its view's, edges in order
    count = runs_of[views]
    owner = np.repeat(e, count)
    k = np.repeat(run_start[views] - (np.cumsum(count) - count), count) + np.arange(int(count.sum()))
    run_parts.append((owner, (at - first_of[run_view])[k], run_gid[k], run_len[k]))


def _geometries(rank: np.ndarray, dims: np.ndarray, steps: np.ndarray):
    """For strided views given by their ranks and their shapes' and strides' entries one
    after the other (vertex_store.record_columns): the elements of each, whether it is one run (views.contiguous_inner,
    vectorised), and for the others the index of their geometry (shape, strides) in the
    list of distinct ones returned."""
    m = rank.size
    n = np.ones(m, np.int64)
    simple = np.ones(m, bool)
    geo = np.full(m, -1, np.int64)
    geometry: List[Tuple[tuple, tuple]] = []
    first = np.cumsum(rank) - rank
    for r in distinct(rank).tolist():
        if r == 0:
            continue  # a scalar: one element, one run
        sel = np.flatnonzero(rank == r)
        at = first[sel][:, None] + np.arange(r)
        shape, strides = dims[at], steps[at]
        n[sel] = shape.prod(axis=1)
        # One run when, from the innermost dimension out, each has one element or steps over
        # exactly the block of elements inside it.
        one_run = np.ones(sel.size, bool)
        block = np.ones(sel.size, np.int64)
        for j in range(r - 1, -1, -1):
            one_run &= (shape[:, j] == 1) | (strides[:, j] == block)
            block = block * shape[:, j]
        simple[sel] = one_run
        if one_run.all():
            continue
        keys = np.concatenate([shape[~one_run], strides[~one_run]], axis=1)
        order = np.lexsort(keys.T[::-1])
        keys = keys[order]
        new = np.ones(keys.shape[0], bool)
        new[1:] = (keys[1:] != keys[:-1]).any(axis=1)
        ids = np.empty(keys.shape[0], np.int64)
        ids[order] = np.cumsum(new) - 1 + len(geometry)
        geo[sel[~one_run]] = ids
        geometry += [(tuple(k[:r]), tuple(k[r:])) for k in keys[new].tolist()]
    return n, simple, geo, geometry


def _geometry_runs(geometry: list, patterns: _Patterns):
    """Per geometry (views that are not one run): their runs relative to the view's first
    element (concatenated: start, count, then pos, gid, length of each run) and the
    pattern id."""
    m = len(geometry)
    pat_count = np.zeros(m, np.int64)
    pattern = np.full(m, -1, np.int64)
    parts: List[Tuple[np.ndarray, np.ndarray]] = []
    for g, (shape, strides) in enumerate(geometry):
        gid, length = strided_runs(0, shape, strides)
        pattern[g] = patterns.key(gid, length)[0]
        pat_count[g] = gid.size
        parts.append((gid, length))
    pat_start = np.cumsum(pat_count) - pat_count
    if parts:
        gid = np.concatenate([p[0] for p in parts])
        length = np.concatenate([p[1] for p in parts])
        pos = np.zeros(gid.size, np.int64)
        for (_, lens), s in zip(parts, pat_start.tolist()):
            if lens.size > 1:
                np.cumsum(lens[:-1], out=pos[s + 1:s + lens.size])
    else:
        gid = length = pos = _EMPTY
    return pat_start, pat_count, pos, gid, length, pattern
