"""Where each edge of a compute set points, and the exchange that fills its buffer.

A field connected to one contiguous run of elements on its vertex's tile points
straight into tile memory. Any other field gets an exchange buffer on the vertex's
tile, filled before the compute phase (inputs) and copied back after it (outputs), as
Poplar's exchange does: a field whose elements all sit on its tile but not in one run
is rearranged on the tile; one with any element elsewhere is exchanged whole (elements
already on the tile travel as self-sends). Fields that only read share their buffer
with the other readers of the same elements on their tile (exchange.py).

Everything here works on all the edges of a compute set at once (edges.py's table).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple

import numpy as np

from ..runs import Runs, search, sort_order
from .conflicts import check_conflicts
from .copy_runs import RunBuilder
from .edges import EdgeOwners, EdgeTable
from .exchange import Traffic, merge_overlapping_runs
from .layout import TILE_REGION_ALIGNMENT, MemoryLayout
from .transfers import TransferPlanner

#: Runs of view edges split into pieces at once (EdgePlacer._view_pieces): a bound on the
#: temporaries of a compute set that gathers millions of scattered elements.
VIEW_RUNS_AT_ONCE = 1 << 19
_EMPTY = np.empty(0, np.int64)
#: Sort key of an order-free gather piece: its edge's rank in the batch (below 2**23) times
#: this, plus its source offset (arenas stay below 2**40).
_EDGE_KEY = 1 << 40


@dataclass
class PlacedEdges:
    """Arena offset of every edge's data, the gather (before the compute phase) and
    scatter (after it) copy tables (run rows, copy_runs.py), the traffic of both
    phases, and the buffer bytes sharing saved. ``gather_tiles``: when the gathers may
    run tile by tile, each just before its tile's vertices (see EdgePlacer.place), the
    tile each gather row fills, in order (rows sorted by tile); else None."""

    offsets: np.ndarray
    gathers: np.ndarray
    scatters: np.ndarray
    traffic_in: Traffic
    traffic_out: Traffic
    shared_bytes: int
    gather_tiles: Optional[np.ndarray] = None


class EdgePlacer:
    """Places the edges of compute sets for one engine's layout."""

    def __init__(self, layout: MemoryLayout, planner: TransferPlanner, target, check_races: bool):
        self.layout = layout
        self.planner = planner
        self.target = target
        self.cpu = not target.requires_tile_mapping
        self.check_races = check_races

    def place(self, edges: EdgeTable, cs) -> PlacedEdges:
        """Buffers, copy segments and traffic of ``edges`` (raises GraphCycleError for
        conflicting writes, and for races when the race check is on)."""
        count = edges.count
        ntiles = self.target.num_tiles
        gid, n, tile, itemsize = edges.gid, edges.n, edges.tile, edges.itemsize
        reads, writes = edges.reads, edges.writes
        read_only = reads & ~writes
        simple = gid >= 0
        direct = simple & (n == 0)
        filled = simple & (n > 0)
        index = self.layout.index
        if self.cpu:
            direct |= filled
        elif filled.any():
            # One run on the vertex's tile: inside one interval of the mapping (intervals are
            # disjoint, so ending by the end of the one holding the first element suffices).
            first = search(index.begins, gid, side="right") - 1
            safe = np.maximum(first, 0)
            direct |= filled & (first >= 0) & (gid + n <= index.ends[safe]) & (index.tiles[safe] == tile)
        offsets = np.zeros(count, np.int64)
        used = direct & (n > 0)
        offsets[used] = self.planner.arena_offsets(gid[used])
        moved = ~direct
        phases = (Traffic(ntiles, self.target.num_ipus), Traffic(ntiles, self.target.num_ipus))
        # each phase's table, made into runs as it grows; gathers by the tile they fill
        segments = (RunBuilder(grouped=True), RunBuilder())
        separate_bytes = 0  # what the shared buffers would take unshared

        # Contiguous runs of one variable, off their vertex's tile. Runs only read share
        # one buffer per tile and union of overlapping runs; runs written get one each.
        shared = np.flatnonzero(moved & simple & read_only)
        region, r_tile, r_gid, r_n, r_member = merge_overlapping_runs(tile[shared], gid[shared], n[shared])
        r_item = itemsize[shared][r_member]
        r_offset = self.layout.allocate_many(r_n * r_item, r_tile, "exchange_buffers")
        offsets[shared] = r_offset[region] + (gid[shared] - r_gid[region]) * itemsize[shared]
        separate_bytes += _padded(n[shared] * itemsize[shared]) - _padded(r_n * r_item)
        # A region no field of this compute set writes holds during the compute phase exactly
        # what its source holds, so its fields read the source in place: the model keeps the
        # buffer's bytes and the exchange's cycles, the host skips the copy (which for a
        # matmul's operands is most of a run's memory traffic).
        alias = ~_overlap_written(edges, r_gid, r_n)
        if alias.any():
            mine = alias[region]
            offsets[shared[mine]] = self.planner.arena_offsets(gid[shared[mine]])
        # One gather fills each other shared region, but the traffic is each reading field's:
        # Poplar's exchange delivers a region to every edge that reads it (its IPUModel
        # and hardware profiles of tutorial 6 show one receive per vertex).
        copy = ~alias
        self._exchange_runs(phases[0], segments[0], r_tile[copy], r_gid[copy], r_n[copy], r_item[copy],
                            r_offset[copy], incoming=True,
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
        leader = _leaders(edges, views, read_only)
        leads = leader == views
        lead_offset = self.layout.allocate_many(n[views[leads]] * itemsize[views[leads]], tile[views[leads]],
                                                "exchange_buffers")
        offsets[views[leads]] = lead_offset
        offsets[views[~leads]] = offsets[leader[~leads]]
        separate_bytes += _padded(n[views[~leads]] * itemsize[views[~leads]])
        # A tile's gathers may run just before its own vertices, not before every tile's,
        # when no vertex of the compute set writes what any gather reads: then no tile's
        # compute phase can change another's inputs, and the result is the same, with each
        # tile's inputs still in the cache when its vertices read them. Only view gathers
        # qualify: a shared region is copied only because a field writes it, and a field's
        # own buffer is filled from what it writes. The gathers then write no byte twice
        # and read none they write, so their order is free too: each edge's pieces are
        # sorted by source, which makes far fewer, longer runs (a channel slice gathered
        # from two regions, alternately, is two runs instead of a row per position).
        by_tile = not copy.any() and not own[reads[own]].size and \
            not _views_written(edges, views[leads][reads[views[leads]]])
        pieces_w = self._view_pieces(edges, views, leader, leads, offsets, phases, segments, read_only, by_tile)

        written = simple & writes & (n > 0)
        write_intervals = (np.concatenate([gid[written], pieces_w["wgid"]]),
                           np.concatenate([n[written], pieces_w["wlen"]]),
                           np.concatenate([np.flatnonzero(written), pieces_w["wowner"]]))
        read_intervals = None
        if self.check_races:
            read = simple & read_only & (n > 0)
            read_intervals = (np.concatenate([gid[read], pieces_w["rgid"]]),
                              np.concatenate([n[read], pieces_w["rlen"]]),
                              np.concatenate([np.flatnonzero(read), pieces_w["rowner"]]))
        check_conflicts(cs, EdgeOwners(edges), write_intervals, read_intervals)
        gathers, gather_tiles = segments[0].finish_grouped()
        scatters = segments[1].finish()
        by_tile = by_tile and gathers.shape[0] > 0
        if by_tile:
            order = sort_order(gather_tiles)   # (stable: destinations are apart, order is free)
            gathers, gather_tiles = gathers[order], gather_tiles[order]
        return PlacedEdges(offsets, gathers, scatters, phases[0], phases[1], int(separate_bytes),
                           gather_tiles if by_tile else None)

    def _view_pieces(self, edges: EdgeTable, views: np.ndarray, leader: np.ndarray, leads: np.ndarray,
                     offsets: np.ndarray, phases, segments, read_only: np.ndarray, order_free: bool) -> dict:
        """The copy segments and traffic of the view edges that lead a buffer, piece by
        piece; returns the pieces written (``w*``) and, with the race check, those only
        read (``r*``): (gid, length, edge) each. The pieces are made a bounded number of
        runs at a time (VIEW_RUNS_AT_ONCE, whole edges each time): one compute set of a
        ResNet-50 gathers millions of one-element pieces, and each costs a few hundred
        bytes of temporaries. A batch's segments continue the last batch's; a segment
        that continues one across the cut is joined to it, and the table's runs depend
        only on its segments (RunBuilder), so the table is the one a single pass makes,
        and the traffic is sums of whole bytes, the same in any order. ``order_free``: the
        gathers may be copied in any order (see place), so each edge's pieces are sorted
        by source first (the same in any batch: batches hold whole edges)."""
        tile, itemsize, reads, writes = edges.tile, edges.itemsize, edges.reads, edges.writes
        count, ntiles = edges.count, self.target.num_tiles
        # Traffic is counted per reading field (see the contiguous case): a shared view's
        # pieces weigh as many times as the fields that read them.
        readers = np.zeros(count, np.int64)   # per edge (its leader's entry counts): looked up per piece
        readers[views] = np.bincount(np.searchsorted(views, leader), minlength=views.size)
        lead_edges = views[leads]
        # Each lead edge's runs: edges.run_edge is sorted, so they are one stretch of it.
        run_first = np.searchsorted(edges.run_edge, lead_edges, side="left")
        run_last = np.searchsorted(edges.run_edge, lead_edges, side="right")
        out = {k: [] for k in ("wgid", "wlen", "wowner", "rgid", "rlen", "rowner")}
        joined = [False, False]  # whether a batch of this phase came before (to join across the cut)
        remote = np.zeros(count, bool)  # a view with any element elsewhere is exchanged whole
        is_lead = np.zeros(count, bool)
        is_lead[lead_edges] = True
        # the variable of each edge that reads one (most): its pieces' arena offsets need no search
        edge_var = self.planner.edge_variables(edges.run_edge, edges.run_gid, edges.run_len, count)
        k = 0
        while k < lead_edges.size:
            stop = int(np.searchsorted(run_last, run_first[k] + VIEW_RUNS_AT_ONCE, side="right"))
            stop = max(stop, k + 1)
            pieces, owner, piece_tile = self._pieces(edges, is_lead, int(run_first[k]), int(run_last[stop - 1]))
            k = stop
            size, otile = itemsize[owner], tile[owner]
            pbytes = pieces.length * size
            tbytes = pbytes * readers[owner]
            parena = self.planner.arena_offsets(pieces.gid, edge_var[owner])
            plocal = offsets[owner] + pieces.pos * size
            del size
            remote[owner[piece_tile != otile]] = True
            # each piece's route: 0 on its edge's tile (the edge is all there), 1 from another tile
            # of the IPU, 2 from another IPU (only a piece off its edge's tile can be)
            route = remote[owner].astype(np.int64)
            route[piece_tile // self.target.tiles_per_ipu != otile // self.target.tiles_per_ipu] = 2
            for phase, active, (src, dst) in ((0, reads[owner], (parena, plocal)),
                                              (1, writes[owner], (plocal, parena))):
                if not active.any():
                    continue
                active = slice(None) if active.all() else active   # (read-only views: no copies)
                s, d, nb = src[active], dst[active], pbytes[active]
                group = otile[active] if segments[phase].grouped else None
                if order_free and phase == 0:   # each edge's pieces by source (edges stay in order)
                    edge = owner[active]
                    rank = np.cumsum(np.concatenate(([0], edge[1:] != edge[:-1])))
                    order = np.argsort(rank * _EDGE_KEY + s, kind="stable")
                    s, d, nb, group = s[order], d[order], nb[order], group[order]
                segments[phase].add(s, d, nb, group, join=joined[phase])
                joined[phase] = True
                traffic = phases[phase]
                # bytes by (route, tile) in one pass each (sums of whole bytes, as the masks per route gave)
                key = route[active] * ntiles
                weights = tbytes[active]
                at_edge = key + otile[active]
                mine = np.bincount(at_edge, weights=weights, minlength=3 * ntiles).reshape(3, ntiles)
                theirs = np.bincount(key + piece_tile[active], weights=weights, minlength=3 * ntiles).reshape(3, ntiles)
                traffic.onchip += mine[0]
                traffic.onchip_runs += np.bincount(at_edge, minlength=3 * ntiles)[:ntiles]
                for r, sent, received in ((1, traffic.sent, traffic.received),
                                          (2, traffic.global_sent, traffic.global_received)):
                    received += mine[r] if phase == 0 else theirs[r]
                    sent += theirs[r] if phase == 0 else mine[r]
            pw = writes[owner]
            out["wgid"].append(pieces.gid[pw]), out["wlen"].append(pieces.length[pw]), out["wowner"].append(owner[pw])
            if self.check_races:
                pr = read_only[owner]
                out["rgid"].append(pieces.gid[pr]), out["rlen"].append(pieces.length[pr])
                out["rowner"].append(owner[pr])
        return {k: np.concatenate(v) if v else _EMPTY for k, v in out.items()}

    def _exchange_runs(self, traffic: Traffic, segments: RunBuilder, tile: np.ndarray, gid: np.ndarray,
                       n: np.ndarray, itemsize: np.ndarray, buffer: np.ndarray, incoming: bool,
                       traffic_runs=None) -> None:
        """Copy segments between runs of variables and their buffers on ``tile``, and
        the traffic: into the buffers when ``incoming`` (gather), else out (scatter).
        ``traffic_runs`` (tile, gid, n, itemsize), when given, are the runs the traffic
        is counted for instead (the fields reading a shared buffer)."""
        if gid.size:
            arena = self.planner.arena_offsets(gid)
            src, dst = (arena, buffer) if incoming else (buffer, arena)
            segments.add(src, dst, n * itemsize, tile if segments.grouped else None)
        if traffic_runs is not None:
            tile, gid, n, itemsize = traffic_runs
        if not gid.size:
            return
        nbytes = n * itemsize
        if self.cpu:
            traffic.onchip += np.bincount(tile, weights=nbytes, minlength=traffic.onchip.size)
            traffic.onchip_runs += np.bincount(tile, minlength=traffic.onchip.size)
            return
        traffic.add_runs(self.layout.index, self.target.tiles_per_ipu, self.target.num_ipus > 1, tile, gid, n,
                         itemsize, incoming)

    def _pieces(self, edges: EdgeTable, is_lead: np.ndarray, first: int,
                last: int) -> Tuple[Runs, np.ndarray, np.ndarray]:
        """The runs ``first`` to ``last`` of the edges (whole edges) of the edges marked
        ``is_lead`` (views that lead a buffer) split at tile boundaries: the pieces (``pos``
        relative to their edge), the edge of each, its tile."""
        keep = is_lead[edges.run_edge[first:last]]
        keep = slice(None) if keep.all() else keep   # (most often every view leads: no copies)
        start, length, pos, owner = (a[first:last][keep] for a in (edges.run_gid, edges.run_len, edges.run_pos,
                                                                    edges.run_edge))
        if self.cpu or not start.size:
            return Runs(pos, start, length), owner, np.zeros(start.size, np.int64)
        # Give every run its own stretch of a common position axis so that splitting keeps track of it.
        base = np.zeros(start.size, np.int64)
        if start.size > 1:
            np.cumsum(length[:-1], out=base[1:])
        pieces, tiles = self.layout.index.split(Runs(base, start, length))
        if pieces.pos is base:   # no run crosses a tile boundary (scattered elements: one each)
            return Runs(pos, start, length), owner, tiles
        parent = np.searchsorted(base, pieces.pos, side="right") - 1
        return Runs(pos[parent] + pieces.pos - base[parent], pieces.gid, pieces.length), owner[parent], tiles


def _overlap_written(edges: EdgeTable, start: np.ndarray, length: np.ndarray) -> np.ndarray:
    """For each run [start, start + length) of element ids, whether any field of the
    compute set writes an element of it (one run fields, and the runs of view fields)."""
    one_run = (edges.gid >= 0) & edges.writes & (edges.n > 0)
    in_view = edges.writes[edges.run_edge] & (edges.gid[edges.run_edge] < 0) if edges.run_edge.size else \
        np.zeros(0, bool)
    w_start = np.concatenate([edges.gid[one_run], edges.run_gid[in_view]])
    if not w_start.size or not start.size:
        return np.zeros(start.size, bool)
    w_end = w_start + np.concatenate([edges.n[one_run], edges.run_len[in_view]])
    order = sort_order(w_start)
    w_start, reach = w_start[order], np.maximum.accumulate(w_end[order])
    # the written intervals starting before a run ends; the furthest of them reaches past its start?
    last = np.searchsorted(w_start, start + length, side="left") - 1
    return (last >= 0) & (reach[np.maximum(last, 0)] > start)


def _views_written(edges: EdgeTable, lead: np.ndarray) -> bool:
    """Whether a field of the compute set writes an element that the view edges ``lead``
    (sorted) read: first by each edge's extent, then, if extents meet, run by run."""
    if not lead.size or not edges.run_edge.size:
        return False
    mine = np.zeros(edges.count, bool)
    mine[lead] = True
    sel = np.flatnonzero(mine[edges.run_edge])
    if not sel.size:
        return False
    start, end = edges.run_gid[sel], edges.run_gid[sel] + edges.run_len[sel]
    owner = edges.run_edge[sel]
    heads = np.flatnonzero(np.concatenate(([True], owner[1:] != owner[:-1])))
    low, high = np.minimum.reduceat(start, heads), np.maximum.reduceat(end, heads)
    if not _overlap_written(edges, low, high - low).any():
        return False
    return bool(_overlap_written(edges, start, end - start).any())


def _leaders(edges: EdgeTable, views: np.ndarray, read_only: np.ndarray) -> np.ndarray:
    """For each view edge, the edge whose buffer it uses: itself, or the first read-only
    edge on its tile of the same element size with the same elements in the same order."""
    leader = views.copy()
    ro = views[read_only[views]]
    if ro.size > 1:
        keys = (ro, edges.view_first[ro], edges.view_pattern[ro], edges.itemsize[ro], edges.tile[ro])
        order = np.lexsort(keys)  # by tile, size, pattern, first element, then edge: the first edge leads
        k = [key[order] for key in keys[1:]]
        new = np.ones(ro.size, bool)
        new[1:] = (k[0][1:] != k[0][:-1]) | (k[1][1:] != k[1][:-1]) | (k[2][1:] != k[2][:-1]) | \
            (k[3][1:] != k[3][:-1])
        heads = ro[order][new]
        lead = np.empty(ro.size, np.int64)
        lead[order] = heads[np.cumsum(new) - 1]
        leader[read_only[views]] = lead
    return leader


def _padded(nbytes: np.ndarray) -> int:
    """Bytes the buffers take in the per-tile memory accounting (each padded like a region)."""
    return int(((nbytes + TILE_REGION_ALIGNMENT - 1) // TILE_REGION_ALIGNMENT * TILE_REGION_ALIGNMENT).sum())
