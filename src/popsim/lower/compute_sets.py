"""Compute sets lowered for the core: vertex rows, field bindings, exchange tables.

Each edge field becomes a pointer the codelet reads or writes during the compute
phase. A field connected to one contiguous run of elements on the vertex's own tile
points straight into tile memory; any other connection (elements on other tiles, or a
scattered view) gets an exchange buffer on the vertex's tile, filled before the compute
phase (inputs) and copied back after it (outputs), as Poplar's exchange does; fields
that only read the same elements on one tile share one buffer (exchange.py). Vertices
are grouped by tile, kept in creation order, and dealt round-robin to the workers.

Graphs have up to millions of edges, so nothing here goes through Python one vertex or
one edge at a time: the vertex store is read by column (vertex_rows.py, edges.py), and
buffers, copy segments and traffic are resolved for all the edges of a compute set at
once (edge_buffers.py).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple, Union

import numpy as np

from ..codec import NOT_SAVED
from ..codelet.fields import FieldKind
from ..contract import COLUMNS, NUM_CATEGORIES, ROW_WIDTHS, VERTEX_MULTI, FieldBase
from ..errors import GraphConnectionError, InvalidTileMappingError
from ..runs import distinct, sort_order
from ..vertex_store import (NO_TILE, SLOT_LIST, SLOT_RECORD, SLOT_TENSOR, SLOT_VALUES, count_vertices_and_edges,
                            vertex_ref)
from .cost_model import DEFAULT_VERTEX_CYCLES, VERTEX_CODE_BYTES, CostModel, StepCost
from .edge_buffers import EdgePlacer
from .edges import read_edges
from .layout import ARENA_ALIGNMENT, MemoryLayout
from .liveness import edge_access
from .transfers import CopyTables, TransferPlanner
from .vertex_rows import FieldRows, TypeColumns

FIELD_ARENA, FIELD_SPANS = int(FieldBase.ARENA), int(FieldBase.SPANS)  # plain ints: appended per edge
_TILE, _FIRST_FIELD, _NUM_FIELDS = (COLUMNS["vertices"][c] for c in ("tile", "first_field", "num_fields"))
_FIELD, _SPAN, _GROUP, _CS = COLUMNS["fields"], COLUMNS["spans"], COLUMNS["groups"], COLUMNS["compute_sets"]


def _elements_read(spec) -> int:
    """How many elements a codelet reads at field ``spec``'s pointer (at each sub-edge's,
    for a list) whatever size the row gives: a scalar's one (codelet/include/popsim_codelet.h);
    0 for a vector, which reads the size it is given."""
    scalar = (FieldKind.SCALAR_EDGE, FieldKind.STATE)
    return int(spec.kind in scalar or (spec.kind is FieldKind.EDGE_VECTOR and spec.element_kind in scalar))


@dataclass
class VertexTables:
    """What the core needs to run compute sets (rows described in native/core/executable.hpp)."""

    vertices: np.ndarray
    fields: np.ndarray
    spans: np.ndarray
    groups: np.ndarray
    compute_sets: np.ndarray
    codelets: List[Tuple[str, str]]
    state_bytes: int
    # Per codelet (as ``codelets``): what its bind() expects of each field, (FieldBase,
    # bytes per element, elements read: 1 for a scalar, 0 for a vector), so that the core
    # can check every field row against tile memory (FieldLayout in executable.hpp).
    codelet_fields: List[List[Tuple[int, int, int]]] = field(default_factory=list)
    # Per compute set row: the cost vectors of its exchange-in and exchange-out phases
    # (rows, 2, NUM_CATEGORIES); the core adds them to the superstep's compute phase.
    exchange_costs: np.ndarray = None
    sync_cycles: int = 0  # the internal sync that ends a compute phase
    # Who each vertex row is, for messages and reports: its type (index into type_names /
    # type_fields), its index in its compute set, and the compute set row.
    row_type: np.ndarray = None
    row_index: np.ndarray = None
    row_cs: np.ndarray = None
    type_names: List[str] = field(default_factory=list)
    type_fields: List[List[str]] = field(default_factory=list)
    type_sources: List[str] = field(default_factory=list)
    cs_names: List[str] = field(default_factory=list)          # compute set row -> name
    cs_buffer_bytes: List[int] = field(default_factory=list)   # compute set row -> exchange buffer bytes
    cs_shared_bytes: List[int] = field(default_factory=list)   # compute set row -> buffer bytes saved by sharing
    group_tiles: np.ndarray = None                            # group row -> tile
    cs_groups: List[Tuple[int, int]] = field(default_factory=list)  # compute set row -> (first, count)
    warnings: List[str] = field(default_factory=list)
    # The VertexType objects by type index: only in the process that lowered the graph
    # (interpreted vertices need their Python class); None once serialized.
    vertex_types: Optional[List[object]] = field(default=None, metadata=NOT_SAVED)

    def describe(self, row: int) -> str:
        return (f"vertex '{self.type_names[self.row_type[row]]}' (#{int(self.row_index[row])}) on tile "
                f"{int(self.vertices[row, _TILE])} in compute set '{self.cs_names[self.row_cs[row]]}'")

    def location(self, row: int) -> str:
        return (f"in compute set '{self.cs_names[self.row_cs[row]]}', vertex #{int(self.row_index[row])} on tile "
                f"{int(self.vertices[row, _TILE])}")

    def field_views(self, row: int) -> List[Union[Tuple[int, int], List[Tuple[int, ...]]]]:
        """Vertex ``row``'s fields as arena (offset, count), or lists of them for list fields."""
        first, count = int(self.vertices[row, _FIRST_FIELD]), int(self.vertices[row, _NUM_FIELDS])
        out: List[Union[Tuple[int, int], List[Tuple[int, ...]]]] = []
        for base, offset, size in self.fields[first:first + count].tolist():
            if base == FIELD_SPANS:
                out.append([tuple(s) for s in self.spans[offset:offset + size].tolist()])
            else:
                out.append((offset, size))
        return out


_EMPTY = np.empty(0, np.int64)


class ComputeSetLowerer:
    """Lowers compute sets (each once) into the rows of VertexTables, the exchange copy
    tables and the static cost of each; everything is built column by column."""

    def __init__(self, state, layout: MemoryLayout, planner: TransferPlanner, tables: CopyTables,
                 cost: CostModel, interpreted: bool, progress=None, check_races: bool = False):
        self.check_races = check_races
        self.progress = progress
        self.state = state
        self.layout = layout
        self.planner = planner
        self.tables = tables
        self.cost = cost
        self.interpreted = interpreted
        self.target = state.target
        self.placer = EdgePlacer(layout, planner, self.target, check_races)
        # Rows, one array per lowered compute set: joined by tables_out.
        self._vertices: List[np.ndarray] = []
        self._fields: List[np.ndarray] = []
        self._spans: List[np.ndarray] = []
        self._groups: List[np.ndarray] = []
        self._row_type: List[np.ndarray] = []
        self._row_index: List[np.ndarray] = []
        self.num_vertices = self.num_fields = self.num_spans = self.num_groups = 0
        self.compute_sets: List[np.ndarray] = []  # rows of COLUMNS["compute_sets"]
        self.accesses: List[tuple] = []  # per row: (reads, writes), liveness.edge_access
        self.codelets: List[Tuple[str, str]] = []
        self.codelet_fields: List[List[Tuple[int, int]]] = []
        self.exchange_costs: List[np.ndarray] = []
        self._codelet_index: Dict[Tuple[str, str], int] = {}
        self.state_bytes = 0
        # written at load, per compute set: (arena offsets, byte counts, the bytes one after another)
        self.init_entries: List[Tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self._type_index: Dict[str, int] = {}
        self.types: List[object] = []
        self.cs_names: List[str] = []
        self.cs_buffer_bytes: List[int] = []
        self.cs_shared_bytes: List[int] = []
        self.warnings: List[str] = []
        self._code_on_tile: set = set()  # (tile, type index) pairs whose code is counted
        self._lowered: Dict[int, Tuple[int, StepCost]] = {}
        self._counts: Dict[int, Tuple[int, int]] = {}  # compute set index -> (vertices, edges)

    # -- per compute set -----------------------------------------------------------------------
    def lower(self, cs) -> Tuple[int, StepCost]:
        """Row of ``cs`` for OP_EXECUTE and the static part of its cost (lowered once)."""
        if cs.index in self._lowered:
            return self._lowered[cs.index]
        nv = len(cs._types)
        tiles = cs.vertex_tiles if nv else _EMPTY
        unplaced = np.flatnonzero(tiles == NO_TILE)
        if unplaced.size:
            v = vertex_ref(cs, int(unplaced[0]))
            raise InvalidTileMappingError(f"{v.describe()} has no tile: place it with graph.set_tile_mapping(v, "
                                          "tile)")
        order = sort_order(tiles)  # by tile, then creation order
        types = TypeColumns(cs._types)
        rows = FieldRows(cs, types, order)
        bad = rows.first_unconnected(cs._slots)
        if bad is not None:
            self._estimates(cs, order[:rows.rank_of_row(bad)])  # the vertices lowered before it, as they were
            raise self._unconnected(cs, rows, bad)
        estimates = self._estimates(cs, order)
        type_index, codelet = self._register(types, order)
        tile = tiles[order]
        vtype = types.of[order]
        state_size = types.state_size[vtype]
        padded = (np.maximum(state_size, 1) + ARENA_ALIGNMENT - 1) // ARENA_ALIGNMENT * ARENA_ALIGNMENT
        state_offset = self.state_bytes + np.cumsum(padded) - padded
        self.state_bytes += int(padded.sum())
        self.layout.account_many(tile, "vertex_state", state_size)
        self._count_code(tile, type_index[vtype])

        row_tile = tiles[rows.vertex]
        values_offset, values_size = self._state_values(cs, rows, row_tile)
        edges, edge_start, edge_count = read_edges(
            cs, rows.slot, rows.kind, rows.vertex, rows.position, row_tile, types.itemsize[rows.spec],
            types.reads[rows.spec], types.writes[rows.spec])
        is_list = rows.kind == SLOT_LIST
        self.layout.account_many(row_tile[is_list], "edge_descriptors", 16 * edge_count[is_list])

        # A compute set's exchange buffers are live only while it runs (filled before its
        # compute phase, emptied after), so a tile holds, of all of them, the most any one
        # compute set needs there: Poplar's liveness gives its temporaries the same memory.
        live = self.layout.by_category["exchange_buffers"]
        self.layout.by_category["exchange_buffers"] = np.zeros_like(live)
        placed = self.placer.place(edges, cs)
        mine = self.layout.by_category["exchange_buffers"]
        self.layout.by_category["exchange_buffers"] = np.maximum(live, mine)
        self.cs_buffer_bytes.append(int(mine.sum()))
        self.cs_shared_bytes.append(placed.shared_bytes)
        self.cs_names.append(cs.name)

        self._fields.append(self._field_rows(rows, edges, placed.offsets, edge_start, edge_count, is_list,
                                             values_offset, values_size))
        first_group = self.num_groups
        self._add_vertex_rows(tile, vtype, types, codelet, state_offset, estimates, order, type_index)
        table_in = self.tables.add_runs(placed.gathers) if placed.gathers.size else -1
        table_out = self.tables.add_runs(placed.scatters) if placed.scatters.size else -1
        by_group = table_in >= 0 and self._gathers_by_group(placed.gather_tiles)
        row = np.zeros(ROW_WIDTHS["compute_sets"], np.int64)
        row[_CS["first_group"]], row[_CS["num_groups"]] = first_group, self.num_groups - first_group
        row[_CS["exchange_in"]], row[_CS["exchange_out"]] = table_in, table_out
        row[_CS["gathers_by_group"]] = by_group
        self.compute_sets.append(row)
        self.accesses.append(edge_access(self.state.table, edges))
        exchange_in, exchange_out = placed.traffic_in.cost(self.cost), placed.traffic_out.cost(self.cost)
        self.exchange_costs.append(np.stack([exchange_in.vector, exchange_out.vector]))
        static = self.cost.compute_set(exchange_in, exchange_out, tile)
        self._lowered[cs.index] = (len(self.compute_sets) - 1, static)
        self._counts[cs.index] = (nv, edges.count)
        if self.progress is not None:
            self.progress.advance(nv, f"compute set {cs.name}")
        return self._lowered[cs.index]

    def _unconnected(self, cs, rows: FieldRows, row: int) -> GraphConnectionError:
        v = vertex_ref(cs, int(rows.vertex[row]))
        spec = v.type.fields[int(rows.position[row])]
        conn = cs._slots[int(rows.slot[row])]
        missing = "" if conn is None else f" (sub-edges {[i for i, c in enumerate(conn) if c is None]})"
        fix = "graph.connect(v[name], tensor)" if spec.kind.is_edge else "graph.set_initial_value(v[name], value)"
        return GraphConnectionError(f"field '{spec.name}' ({spec.describe()}) of {v.describe()} is not "
                                    f"connected{missing}: call {fix}")

    def _register(self, types: TypeColumns, order: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """Type index (by name) and codelet row of each local type, registered in the
        order the vertices first use them."""
        count = len(types.types)
        type_index = np.zeros(count, np.int64)
        codelet = np.zeros(count, np.int64)
        first_use = np.unique(types.of[order], return_index=True)[1] if order.size else _EMPTY
        for t in np.argsort(first_use, kind="stable").tolist():
            vt = types.types[t]
            codelet[t] = self._codelet(vt)
            index = self._type_index.get(vt.name)
            if index is None:
                index = self._type_index[vt.name] = len(self.types)
                self.types.append(vt)
            type_index[t] = index
        return type_index, codelet

    def _count_code(self, tile: np.ndarray, type_index: np.ndarray) -> None:
        """Vertex code once per (tile, vertex type) over all compute sets."""
        if not tile.size:
            return
        width = int(type_index.max()) + 1
        pairs = distinct(tile * width + type_index)
        new = [p for p in zip((pairs // width).tolist(), (pairs % width).tolist()) if p not in self._code_on_tile]
        if new:
            self._code_on_tile.update(new)
            self.layout.account_many(np.array([t for t, _ in new], np.int64), "vertex_code",
                                     np.full(len(new), VERTEX_CODE_BYTES, np.int64))

    def _state_values(self, cs, rows: FieldRows, row_tile: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """Arena space and initial contents of plain state fields; their offsets and
        element counts by row."""
        value_rows = np.flatnonzero(rows.kind == SLOT_VALUES)
        offset = np.zeros(rows.count, np.int64)
        size = np.zeros(rows.count, np.int64)
        if not value_rows.size:
            return offset, size
        slots = cs._slots
        values = [slots[s] for s in rows.slot[value_rows].tolist()]
        # equal small values are one shared array (vertex_store.shared_values): each is read once
        known = {}
        blobs, counts = [], []
        for v in values:
            hit = known.get(id(v))   # (``values`` keeps every array alive, so ids stay theirs)
            if hit is None:
                a = np.asarray(v)
                hit = known[id(v)] = (np.ascontiguousarray(a).tobytes(), int(a.size))
            blobs.append(hit[0])
            counts.append(hit[1])
        size[value_rows] = counts
        nbytes = np.fromiter(map(len, blobs), np.int64, len(blobs))
        offset[value_rows] = self.layout.allocate_many(nbytes, row_tile[value_rows], "vertex_state")
        # one buffer per compute set, not an array per field: millions of vertices have such fields
        self.init_entries.append((offset[value_rows], nbytes, np.frombuffer(b"".join(blobs), np.uint8)))
        return offset, size

    def _field_rows(self, rows: FieldRows, edges, offsets: np.ndarray, edge_start: np.ndarray,
                    edge_count: np.ndarray, is_list: np.ndarray, values_offset: np.ndarray,
                    values_size: np.ndarray) -> np.ndarray:
        """The (base, offset, size) row of every field, and the span rows of list fields."""
        base, offset, size = (_FIELD[c] for c in ("base", "offset", "size"))
        out = np.zeros((rows.count, ROW_WIDTHS["fields"]), np.int64)
        out[:, offset] = values_offset
        out[:, size] = values_size
        single = (rows.kind == SLOT_RECORD) | (rows.kind == SLOT_TENSOR)
        e = edge_start[single]
        out[single, offset] = offsets[e]
        out[single, size] = edges.n[e]
        counts = edge_count[is_list]
        out[is_list, base] = FIELD_SPANS
        out[is_list, offset] = self.num_spans + np.cumsum(counts) - counts
        out[is_list, size] = counts
        spanned = np.repeat(edge_start[is_list], counts) + np.arange(int(counts.sum())) - \
            np.repeat(np.cumsum(counts) - counts, counts)
        spans = np.empty((spanned.size, ROW_WIDTHS["spans"]), np.int64)
        spans[:, _SPAN["offset"]] = offsets[spanned]
        spans[:, _SPAN["size"]] = edges.n[spanned]
        self._spans.append(spans)
        self.num_spans += int(spanned.size)
        out[~is_list, base] = FIELD_ARENA
        return out

    def _add_vertex_rows(self, tile: np.ndarray, vtype: np.ndarray, types: TypeColumns, codelet: np.ndarray,
                         state_offset: np.ndarray, estimates: np.ndarray, order: np.ndarray,
                         type_index: np.ndarray) -> None:
        """Vertex rows (in lowering order), their tile groups, and who each row is. Each
        tile's vertices are dealt round-robin to the workers; MultiVertexes run on all."""
        nv = tile.size
        heads = np.flatnonzero(np.concatenate(([True], tile[1:] != tile[:-1]))) if nv else _EMPTY
        sizes = np.diff(np.append(heads, nv))
        single = ~types.multi[vtype]
        dealt = np.cumsum(single) - single
        dealt -= np.repeat(dealt[heads], sizes)
        worker = np.where(single, dealt % self.target.num_worker_contexts, -1)
        per_vertex = types.num_fields[vtype]
        rows = np.empty((nv, ROW_WIDTHS["vertices"]), np.int64)
        column = COLUMNS["vertices"]
        rows[:, column["codelet"]] = codelet[vtype]
        rows[:, column["tile"]] = tile
        rows[:, column["worker"]] = worker
        rows[:, column["state_offset"]] = state_offset
        rows[:, column["first_field"]] = self.num_fields + np.cumsum(per_vertex) - per_vertex
        rows[:, column["num_fields"]] = per_vertex
        rows[:, column["estimate"]] = estimates
        rows[:, column["flags"]] = np.where(single, 0, VERTEX_MULTI)
        self._vertices.append(rows)
        groups = np.zeros((heads.size, ROW_WIDTHS["groups"]), np.int64)
        groups[:, _GROUP["tile"]], groups[:, _GROUP["first_vertex"]] = tile[heads], self.num_vertices + heads
        groups[:, _GROUP["num_vertices"]] = sizes
        self._groups.append(groups)
        self._row_type.append(type_index[vtype])
        self._row_index.append(order)
        self.num_vertices += nv
        self.num_fields += int(per_vertex.sum())
        self.num_groups += int(heads.size)

    def _gathers_by_group(self, gather_tiles) -> bool:
        """Give the groups just added their share of the compute set's gathers (rows
        sorted by tile, PlacedEdges.gather_tiles), which the core then runs just before
        each group's vertices; False (nothing changed) when the gathers must run whole
        first, or there is one group (nothing to gain)."""
        groups = self._groups[-1]
        if gather_tiles is None or groups.shape[0] < 2:
            return False
        tiles = groups[:, _GROUP["tile"]]
        groups[:, _GROUP["first_gather"]] = np.searchsorted(gather_tiles, tiles, side="left")
        groups[:, _GROUP["end_gather"]] = np.searchsorted(gather_tiles, tiles, side="right")
        # every gather fills a buffer of a field of a vertex on its tile, so of a group
        if groups[-1, _GROUP["end_gather"]] - groups[0, _GROUP["first_gather"]] == gather_tiles.size:
            return True
        groups[:, _GROUP["first_gather"]] = groups[:, _GROUP["end_gather"]] = 0
        return False

    def _codelet(self, vt) -> int:
        key = ("", vt.symbol) if (self.interpreted and vt.language == "python") else (str(vt.library), vt.symbol)
        if key not in self._codelet_index:
            self._codelet_index[key] = len(self.codelets)
            self.codelets.append(key)
            self.codelet_fields.append([(FIELD_SPANS if f.kind.is_list else FIELD_ARENA, f.dtype.size,
                                         _elements_read(f)) for f in vt.fields])
        return self._codelet_index[key]

    def _estimates(self, cs, order: np.ndarray) -> np.ndarray:
        """Cycles of each vertex in ``order``: its perf estimate, else its type's
        estimator's, else -1 for types that count their own, else the default."""
        perf = cs._perf
        if None not in perf:
            return np.array(perf, np.int64)[order] if perf else _EMPTY
        ranks = order.tolist()
        from ..vertices import VertexInfo   # (imported here, once per compute set: not per vertex)
        return np.array([self._estimate(cs, k, VertexInfo) if perf[k] is None else perf[k] for k in ranks], np.int64)

    def _estimate(self, cs, k: int, info) -> int:
        vt = cs._types[k]
        estimator = self.state.estimators.get(vt.name)
        if estimator is not None:
            result = estimator(info(vertex_ref(cs, k)), self.target)
            cycles = result[0] if isinstance(result, tuple) else result
            return int(cycles)
        if vt.counts_cycles:
            return -1
        warning = (f"vertex type '{vt.name}' has no perf estimate and no estimator: each run counts "
                   f"{DEFAULT_VERTEX_CYCLES} cycles (set_perf_estimate or register_perf_estimator)")
        if warning not in self.warnings:
            self.warnings.append(warning)
        return DEFAULT_VERTEX_CYCLES

    def count_vertices_and_edges(self, compute_sets) -> Tuple[int, int]:
        """vertex_store.count_vertices_and_edges, with the counts of the compute sets
        lowered already taken from their lowering (every edge of those is connected)."""
        vertices, edges = count_vertices_and_edges([cs for cs in compute_sets if cs.index not in self._counts])
        for v, e in self._counts.values():
            vertices += v
            edges += e
        return vertices, edges

    def tables_out(self) -> VertexTables:
        def joined(parts, table):
            width = ROW_WIDTHS[table]
            return np.concatenate(parts).reshape(-1, width) if parts else np.empty((0, width), np.int64)
        groups = joined(self._groups, "groups")
        compute_sets = joined(self.compute_sets, "compute_sets")
        return VertexTables(
            vertices=joined(self._vertices, "vertices"), fields=joined(self._fields, "fields"),
            spans=joined(self._spans, "spans"), groups=groups,
            compute_sets=compute_sets,
            codelets=self.codelets, codelet_fields=self.codelet_fields,
            exchange_costs=np.asarray(self.exchange_costs, np.float64).reshape(-1, 2, self.target.num_ipus,
                                                                               NUM_CATEGORIES),
            sync_cycles=self.cost.sync_cycles, state_bytes=self.state_bytes,
            row_type=np.concatenate(self._row_type) if self._row_type else _EMPTY,
            row_index=np.concatenate(self._row_index) if self._row_index else _EMPTY,
            row_cs=np.repeat(np.arange(len(self._vertices), dtype=np.int64), [p.shape[0] for p in self._vertices]),
            type_names=[t.name for t in self.types], type_fields=[list(t.field_names) for t in self.types],
            type_sources=[t.source for t in self.types], cs_names=self.cs_names,
            cs_buffer_bytes=self.cs_buffer_bytes, cs_shared_bytes=self.cs_shared_bytes,
            group_tiles=groups[:, _GROUP["tile"]].copy(),
            cs_groups=[(int(c[_CS["first_group"]]), int(c[_CS["num_groups"]])) for c in compute_sets],
            warnings=self.warnings, vertex_types=self.types)
