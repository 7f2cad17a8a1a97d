"""Compute sets lowered for the core: vertex rows, field bindings, exchange tables.

Each edge field becomes a pointer the codelet reads or writes during the compute
phase. A field connected to one contiguous run of elements on the vertex's own tile
points straight into tile memory; any other connection (elements on other tiles, or a
scattered view) gets an exchange buffer on the vertex's tile, filled before the compute
phase (inputs) and copied back after it (outputs), as Poplar's exchange does; fields
that only read the same elements on one tile share one buffer (exchange.py). Vertices
are grouped by tile, kept in creation order, and dealt round-robin to the workers.

Graphs have up to millions of edges, so the per-edge Python work only records each
edge; tiles, buffers, copy segments and traffic are then resolved for all the edges of
a compute set at once with numpy.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

import numpy as np

from ..codec import NOT_SAVED
from ..contract import COLUMNS, NUM_CATEGORIES, ROW_WIDTHS, VERTEX_MULTI, FieldBase
from ..errors import GraphConnectionError, InvalidTileMappingError
from ..runs import Runs, runs_of
from ..tensor import Tensor
from ..views import contiguous_inner
from .cost_model import DEFAULT_VERTEX_CYCLES, VERTEX_CODE_BYTES, CostModel, StepCost
from .conflicts import check_conflicts
from .exchange import Traffic, merge_overlapping_runs
from .layout import ARENA_ALIGNMENT, TILE_REGION_ALIGNMENT, MemoryLayout
from .transfers import CopyTables, TransferPlanner, merge_segments

FIELD_ARENA, FIELD_SPANS = int(FieldBase.ARENA), int(FieldBase.SPANS)  # plain ints: appended per edge
_TILE, _FIRST_FIELD, _NUM_FIELDS = (COLUMNS["vertices"][c] for c in ("tile", "first_field", "num_fields"))


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
    # bytes per element), so that the core can check every field row against tile memory.
    codelet_fields: List[List[Tuple[int, int]]] = field(default_factory=list)
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

    def field_views(self, row: int) -> List[object]:
        """Vertex ``row``'s fields as arena (offset, count), or lists of them for list fields."""
        first, count = int(self.vertices[row, _FIRST_FIELD]), int(self.vertices[row, _NUM_FIELDS])
        out = []
        for base, offset, size in self.fields[first:first + count].tolist():
            if base == FIELD_SPANS:
                out.append([tuple(s) for s in self.spans[offset:offset + size].tolist()])
            else:
                out.append((offset, size))
        return out


class _Edges:
    """The edges of one compute set, recorded one by one, resolved together."""

    def __init__(self):
        self.gid: List[int] = []        # first element when one contiguous run of one variable, else -1
        self.tensor: List[object] = []  # the view, for edges that are not one contiguous run
        self.n: List[int] = []
        self.itemsize: List[int] = []
        self.tile: List[int] = []
        self.reads: List[bool] = []
        self.writes: List[bool] = []
        self.owner: List[Tuple[object, str]] = []  # (VertexRef, field name) for messages

    def add(self, t: Tensor, tile: int, direction, vertex, name: str) -> int:
        var = t._var
        contiguous = var is not None and contiguous_inner(t._shape, t._strides)[0] == 0
        self.gid.append(var.base + t._offset if contiguous else -1)
        self.tensor.append(None if contiguous else t)
        self.n.append(t.num_elements())
        self.itemsize.append(t._dtype.size)
        self.tile.append(tile)
        self.reads.append(direction.reads)
        self.writes.append(direction.writes)
        self.owner.append((vertex, name))
        return len(self.gid) - 1


class ComputeSetLowerer:
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
        self.cpu = not self.target.requires_tile_mapping
        self.vertices: List[List[int]] = []
        self.fields: List[List[int]] = []
        self.spans: List[List[int]] = []
        self.groups: List[Tuple[int, int, int]] = []
        self.compute_sets: List[Tuple[int, int, int, int]] = []
        self.codelets: List[Tuple[str, str]] = []
        self.codelet_fields: List[List[Tuple[int, int]]] = []
        self.exchange_costs: List[np.ndarray] = []
        self._codelet_index: Dict[Tuple[str, str], int] = {}
        self.state_bytes = 0
        self.init_entries: List[Tuple[int, np.ndarray]] = []  # (arena offset, bytes) written at load
        self.row_type: List[int] = []
        self.row_index: List[int] = []
        self.row_cs: List[int] = []
        self._type_index: Dict[str, int] = {}
        self.types: List[object] = []
        self.cs_names: List[str] = []
        self.cs_buffer_bytes: List[int] = []
        self.cs_shared_bytes: List[int] = []
        self.warnings: List[str] = []
        self._code_on_tile: set = set()
        self._lowered: Dict[int, Tuple[int, StepCost]] = {}

    # -- per compute set -----------------------------------------------------------------------
    def lower(self, cs) -> Tuple[int, StepCost]:
        """Row of ``cs`` for OP_EXECUTE and the static part of its cost (lowered once)."""
        if cs.index in self._lowered:
            return self._lowered[cs.index]
        for v in cs.vertices:
            if v.tile is None:
                raise InvalidTileMappingError(f"{v.describe()} has no tile: place it with graph.set_tile_mapping(v, "
                                              "tile)")
        order = sorted(cs.vertices, key=lambda v: (v.tile, v.index))
        edges = _Edges()
        pending_fields: List[Tuple[int, int]] = []  # (field row, edge)
        pending_spans: List[Tuple[int, int]] = []   # (span row, edge)
        state_tiles: List[int] = []
        state_sizes: List[int] = []
        first_group = len(self.groups)
        workers = self.target.num_worker_contexts
        k = 0
        while k < len(order):
            tile = order[k].tile
            start_row = len(self.vertices)
            dealt = 0
            while k < len(order) and order[k].tile == tile:
                v = order[k]
                worker = -1
                if not v.type.multi:
                    worker = dealt % workers
                    dealt += 1
                self._vertex(v, worker, edges, pending_fields, pending_spans, state_tiles, state_sizes)
                k += 1
            self.groups.append((tile, start_row, len(self.vertices) - start_row))
        self.layout.account_many(np.asarray(state_tiles, np.int64), "vertex_state", np.asarray(state_sizes, np.int64))

        buffers_before = int(self.layout.by_category["exchange_buffers"].sum())
        offsets, gathers, scatters, traffic_in, traffic_out = self._resolve(edges, cs)
        self.cs_buffer_bytes.append(int(self.layout.by_category["exchange_buffers"].sum()) - buffers_before)
        self.cs_names.append(cs.name)
        for row, e in pending_fields:
            self.fields[row][1] = int(offsets[e])
        for row, e in pending_spans:
            self.spans[row][0] = int(offsets[e])
        table_in = self.tables.add(gathers) if gathers.size else -1
        table_out = self.tables.add(scatters) if scatters.size else -1
        self.compute_sets.append((first_group, len(self.groups) - first_group, table_in, table_out))
        exchange_in, exchange_out = traffic_in.cost(self.cost), traffic_out.cost(self.cost)
        self.exchange_costs.append(np.stack([exchange_in.vector, exchange_out.vector]))
        static = self.cost.compute_set(exchange_in, exchange_out)
        self._lowered[cs.index] = (len(self.compute_sets) - 1, static)
        if self.progress is not None:
            self.progress.advance(len(cs.vertices), f"compute set {cs.name}")
        return self._lowered[cs.index]

    def _codelet(self, vt) -> int:
        key = ("", vt.symbol) if (self.interpreted and vt.language == "python") else (str(vt.library), vt.symbol)
        if key not in self._codelet_index:
            self._codelet_index[key] = len(self.codelets)
            self.codelets.append(key)
            self.codelet_fields.append([(FIELD_SPANS if f.kind.is_list else FIELD_ARENA, f.dtype.size)
                                        for f in vt.fields])
        return self._codelet_index[key]

    def _estimate(self, v) -> int:
        if v.perf_estimate is not None:
            return v.perf_estimate
        estimator = self.state.estimators.get(v.type.name)
        if estimator is not None:
            from ..vertices import VertexInfo
            result = estimator(VertexInfo(v), self.target)
            cycles = result[0] if isinstance(result, tuple) else result
            return int(cycles)
        if v.type.counts_cycles:
            return -1
        warning = (f"vertex type '{v.type.name}' has no perf estimate and no estimator: each run counts "
                   f"{DEFAULT_VERTEX_CYCLES} cycles (set_perf_estimate or register_perf_estimator)")
        if warning not in self.warnings:
            self.warnings.append(warning)
        return DEFAULT_VERTEX_CYCLES

    def _vertex(self, v, worker, edges: _Edges, pending_fields, pending_spans, state_tiles, state_sizes) -> None:
        vt = v.type
        tile = v.tile
        state_offset = self.state_bytes
        self.state_bytes += -(-max(vt.state_size, 1) // ARENA_ALIGNMENT) * ARENA_ALIGNMENT
        state_tiles.append(tile)
        state_sizes.append(vt.state_size)
        if (tile, vt.name) not in self._code_on_tile:
            self._code_on_tile.add((tile, vt.name))
            self.layout.account(tile, "vertex_code", VERTEX_CODE_BYTES)
        first_field = len(self.fields)
        for spec, conn in zip(vt.fields, v.conn):
            if type(conn) is Tensor:
                pending_fields.append((len(self.fields), edges.add(conn, tile, spec.direction, v, spec.name)))
                self.fields.append([FIELD_ARENA, 0, conn.num_elements()])
                continue
            if conn is None or (type(conn) is list and any(c is None for c in conn)):
                missing = "" if conn is None else f" (sub-edges {[i for i, c in enumerate(conn) if c is None]})"
                fix = "graph.connect(v[name], tensor)" if spec.kind.is_edge else \
                    "graph.set_initial_value(v[name], value)"
                raise GraphConnectionError(f"field '{spec.name}' ({spec.describe()}) of {v.describe()} is not "
                                           f"connected{missing}: call {fix}")
            if type(conn) is list:
                self.fields.append([FIELD_SPANS, len(self.spans), len(conn)])
                for t in conn:
                    pending_spans.append((len(self.spans), edges.add(t, tile, spec.direction, v, spec.name)))
                    self.spans.append([0, t.num_elements()])
                self.layout.account(tile, "edge_descriptors", 16 * len(conn))
            else:  # plain state values
                values = np.ascontiguousarray(conn).view(np.uint8).reshape(-1)
                offset = self.layout.allocate(values.size, tile, "vertex_state")
                self.init_entries.append((offset, values))
                self.fields.append([FIELD_ARENA, offset, int(np.asarray(conn).size)])
        flags = VERTEX_MULTI if vt.multi else 0
        self.vertices.append([self._codelet(vt), tile, worker, state_offset, first_field, len(vt.fields),
                              self._estimate(v), flags])
        t = self._type_index.get(vt.name)
        if t is None:
            t = self._type_index[vt.name] = len(self.types)
            self.types.append(vt)
        self.row_type.append(t)
        self.row_index.append(v.index)
        self.row_cs.append(len(self.compute_sets))  # this compute set's row, appended when it is done

    # -- all edges of a compute set at once ----------------------------------------------------
    def _resolve(self, edges: _Edges, cs):
        """Arena offset of every edge, the gather and scatter tables, and the traffic.

        A field whose elements all sit on its vertex's tile but not in one run is
        rearranged on the tile; one with any element elsewhere is exchanged whole
        (elements already on the tile travel as self-sends). Fields that only read share
        their buffer with the other readers of the same elements on their tile
        (exchange.py)."""
        count = len(edges.gid)
        ntiles = self.target.num_tiles
        gid = np.asarray(edges.gid, np.int64)
        n = np.asarray(edges.n, np.int64)
        tile = np.asarray(edges.tile, np.int64)
        itemsize = np.asarray(edges.itemsize, np.int64)
        reads = np.asarray(edges.reads, bool)
        writes = np.asarray(edges.writes, bool)
        read_only = reads & ~writes
        simple = gid >= 0
        direct = simple & (n == 0)
        filled = simple & (n > 0)
        index = self.layout.index
        if self.cpu:
            direct |= filled
        elif filled.any():
            first = np.searchsorted(index.begins, gid, side="right") - 1
            last = np.searchsorted(index.begins, gid + n - 1, side="right") - 1
            safe = np.maximum(first, 0)
            direct |= filled & (first >= 0) & (first == last) & (gid + n <= index.ends[safe]) & \
                (index.tiles[safe] == tile)
        offsets = np.zeros(count, np.int64)
        used = direct & (n > 0)
        offsets[used] = self.planner.arena_offsets(gid[used])
        moved = ~direct
        phases = (Traffic(ntiles), Traffic(ntiles))
        segments: Tuple[List[np.ndarray], List[np.ndarray]] = ([], [])
        separate_bytes = 0  # what the shared buffers would take unshared

        # Contiguous runs of one variable, off their vertex's tile. Runs only read share
        # one buffer per tile and union of overlapping runs; runs written get one each.
        shared = np.flatnonzero(moved & simple & read_only)
        region, r_tile, r_gid, r_n, r_member = merge_overlapping_runs(tile[shared], gid[shared], n[shared])
        r_item = itemsize[shared][r_member]
        r_offset = self.layout.allocate_many(r_n * r_item, r_tile, "exchange_buffers")
        offsets[shared] = r_offset[region] + (gid[shared] - r_gid[region]) * itemsize[shared]
        separate_bytes += _padded(n[shared] * itemsize[shared]) - _padded(r_n * r_item)
        # One gather fills each shared region, but the traffic is each reading field's:
        # Poplar's exchange delivers a region to every edge that reads it (its IPUModel
        # and hardware profiles of tutorial 6 show one receive per vertex).
        self._exchange_runs(phases[0], segments[0], r_tile, r_gid, r_n, r_item, r_offset, incoming=True,
                            traffic_runs=(tile[shared], gid[shared], n[shared], itemsize[shared]))
        own = np.flatnonzero(moved & simple & ~read_only)
        own_offset = self.layout.allocate_many(n[own] * itemsize[own], tile[own], "exchange_buffers")
        offsets[own] = own_offset
        for phase, active in ((0, reads[own]), (1, writes[own])):
            sel = own[active]
            self._exchange_runs(phases[phase], segments[phase], tile[sel], gid[sel], n[sel], itemsize[sel],
                                own_offset[active], incoming=phase == 0)

        # Views that are not one run: piece by piece; identical views only read share a buffer.
        views = np.flatnonzero(moved & ~simple)
        runs, leader = self._view_runs(edges, views, tile, itemsize, read_only)
        leads = leader == views
        lead_offset = self.layout.allocate_many(n[views[leads]] * itemsize[views[leads]], tile[views[leads]],
                                                "exchange_buffers")
        offsets[views[leads]] = lead_offset
        offsets[views[~leads]] = offsets[leader[~leads]]
        separate_bytes += _padded(n[views[~leads]] * itemsize[views[~leads]])
        pieces, owner, piece_tile = self._pieces([r for r, lead in zip(runs, leads.tolist()) if lead],
                                                 views[leads])
        pbytes = pieces.length * itemsize[owner]
        # Traffic is counted per reading field (see the contiguous case): a shared view's
        # pieces weigh as many times as the fields that read them.
        readers = np.bincount(np.searchsorted(views, leader), minlength=views.size)
        tbytes = pbytes * readers[np.searchsorted(views, owner)]
        parena = self.planner.arena_offsets(pieces.gid)
        plocal = offsets[owner] + pieces.pos * itemsize[owner]
        remote = np.zeros(count, bool)  # a view with any element elsewhere is exchanged whole
        remote[owner[piece_tile != tile[owner]]] = True
        off_tile = remote[owner]
        cross = piece_tile // self.target.tiles_per_ipu != tile[owner] // self.target.tiles_per_ipu
        for phase, active, seg, (src, dst) in ((0, reads[owner], segments[0], (parena, plocal)),
                                              (1, writes[owner], segments[1], (plocal, parena))):
            if not active.any():
                continue
            seg.append(merge_segments(src[active], dst[active], pbytes[active]))
            traffic = phases[phase]
            local = active & ~off_tile
            traffic.onchip += np.bincount(tile[owner][local], weights=tbytes[local], minlength=ntiles)
            traffic.onchip_runs += np.bincount(tile[owner][local], minlength=ntiles)
            for mask, sent, received in ((active & off_tile & ~cross, traffic.sent, traffic.received),
                                         (active & cross, traffic.global_sent, traffic.global_received)):
                mine = np.bincount(tile[owner][mask], weights=tbytes[mask], minlength=ntiles)
                theirs = np.bincount(piece_tile[mask], weights=tbytes[mask], minlength=ntiles)
                received += mine if phase == 0 else theirs
                sent += theirs if phase == 0 else mine
        self.cs_shared_bytes.append(int(separate_bytes))

        written = simple & writes & (n > 0)
        pw = writes[owner]
        write_intervals = (np.concatenate([gid[written], pieces.gid[pw]]),
                           np.concatenate([n[written], pieces.length[pw]]),
                           np.concatenate([np.flatnonzero(written), owner[pw]]))
        read_intervals = None
        if self.check_races:
            read = simple & read_only & (n > 0)
            pr = read_only[owner]
            read_intervals = (np.concatenate([gid[read], pieces.gid[pr]]),
                              np.concatenate([n[read], pieces.length[pr]]),
                              np.concatenate([np.flatnonzero(read), owner[pr]]))
        check_conflicts(cs, edges.owner, write_intervals, read_intervals)
        gathers = np.concatenate(segments[0]) if segments[0] else np.empty((0, 3), np.int64)
        scatters = np.concatenate(segments[1]) if segments[1] else np.empty((0, 3), np.int64)
        return offsets, gathers, scatters, phases[0], phases[1]

    def _exchange_runs(self, traffic: Traffic, segments: List[np.ndarray], tile: np.ndarray, gid: np.ndarray,
                       n: np.ndarray, itemsize: np.ndarray, buffer: np.ndarray, incoming: bool,
                       traffic_runs=None) -> None:
        """Copy segments between runs of variables and their buffers on ``tile``, and
        the traffic: into the buffers when ``incoming`` (gather), else out (scatter).
        ``traffic_runs`` (tile, gid, n, itemsize), when given, are the runs the traffic
        is counted for instead (the fields reading a shared buffer)."""
        if not gid.size:
            return
        arena = self.planner.arena_offsets(gid)
        src, dst = (arena, buffer) if incoming else (buffer, arena)
        segments.append(merge_segments(src, dst, n * itemsize))
        if traffic_runs is not None:
            tile, gid, n, itemsize = traffic_runs
        nbytes = n * itemsize
        if self.cpu:
            traffic.onchip += np.bincount(tile, weights=nbytes, minlength=traffic.onchip.size)
            traffic.onchip_runs += np.bincount(tile, minlength=traffic.onchip.size)
            return
        traffic.add_runs(self.layout.index, self.target.tiles_per_ipu, self.target.num_ipus > 1, tile, gid, n,
                         itemsize, incoming)

    def _view_runs(self, edges: _Edges, views: np.ndarray, tile: np.ndarray, itemsize: np.ndarray,
                   read_only: np.ndarray) -> Tuple[List[Runs], np.ndarray]:
        """The runs of each view edge, and the edge whose buffer each uses: itself, or
        the first read-only edge on its tile with the same elements in the same order."""
        runs = [runs_of(edges.tensor[e]) for e in views.tolist()]
        leader = views.copy()
        first: Dict[tuple, int] = {}
        for k, (e, r) in enumerate(zip(views.tolist(), runs)):
            if read_only[e]:
                key = (int(tile[e]), int(itemsize[e]), r.gid.tobytes(), r.length.tobytes())
                leader[k] = first.setdefault(key, e)
        return runs, leader

    def _pieces(self, runs: List[Runs], views: np.ndarray):
        """The ``runs`` of the given (non-contiguous) edges split at tile boundaries: the
        pieces (``pos`` relative to their edge), the edge of each, its tile."""
        if not runs:
            empty = np.empty(0, np.int64)
            return Runs(empty, empty, empty), empty, empty
        start = np.concatenate([r.gid for r in runs])
        length = np.concatenate([r.length for r in runs])
        pos = np.concatenate([r.pos for r in runs])
        owner = np.repeat(views, [r.size for r in runs])
        if self.cpu:
            return Runs(pos, start, length), owner, np.zeros(start.size, np.int64)
        # Give every run its own stretch of a common position axis so that splitting keeps track of it.
        base = np.zeros(start.size, np.int64)
        if start.size > 1:
            np.cumsum(length[:-1], out=base[1:])
        pieces, tiles = self.layout.index.split(Runs(base, start, length))
        parent = np.searchsorted(base, pieces.pos, side="right") - 1
        return Runs(pos[parent] + pieces.pos - base[parent], pieces.gid, pieces.length), owner[parent], tiles

    def tables_out(self) -> VertexTables:
        def arr(rows, table):
            return np.asarray(rows, np.int64).reshape(-1, ROW_WIDTHS[table])
        return VertexTables(
            vertices=arr(self.vertices, "vertices"), fields=arr(self.fields, "fields"), spans=arr(self.spans, "spans"),
            groups=arr(self.groups, "groups"), compute_sets=arr(self.compute_sets, "compute_sets"),
            codelets=self.codelets, codelet_fields=self.codelet_fields,
            exchange_costs=np.asarray(self.exchange_costs, np.float64).reshape(-1, 2, NUM_CATEGORIES),
            sync_cycles=self.cost.sync_cycles, state_bytes=self.state_bytes, row_type=np.asarray(self.row_type, np.int64),
            row_index=np.asarray(self.row_index, np.int64), row_cs=np.asarray(self.row_cs, np.int64),
            type_names=[t.name for t in self.types], type_fields=[list(t.field_names) for t in self.types],
            type_sources=[t.source for t in self.types], cs_names=self.cs_names,
            cs_buffer_bytes=self.cs_buffer_bytes, cs_shared_bytes=self.cs_shared_bytes,
            group_tiles=np.asarray([g[0] for g in self.groups], np.int64),
            cs_groups=[(c[0], c[1]) for c in self.compute_sets], warnings=self.warnings, vertex_types=self.types)



def _padded(nbytes: np.ndarray) -> int:
    """Bytes the buffers take in the per-tile memory accounting (each padded like a region)."""
    return int(((nbytes + TILE_REGION_ALIGNMENT - 1) // TILE_REGION_ALIGNMENT * TILE_REGION_ALIGNMENT).sum())
