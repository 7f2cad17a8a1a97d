"""Data movement lowered to byte-level copy tables, with the tile traffic each causes.

A copy table is a list of (source offset, destination offset, bytes) segments the core
runs with memcpy, held as strided runs of them (copy_runs.py). Tensor-to-tensor copies
address the arena on both sides; host transfers (streams, host reads and writes,
PrintTensor) address a contiguous host buffer holding the view's elements in row-major
order on the other side. Data that changes IPU on a multi-IPU target crosses IPU-Links
and is costed as global exchange.
"""
from __future__ import annotations

from typing import List, Optional, Tuple

import numpy as np

from ..contract import ROW_WIDTHS
from ..runs import Runs, runs_of, split_at_positions
from .copy_runs import merge_segments, segments_to_runs
from .cost_model import CostModel, StepCost, device_flows
from .layout import MemoryLayout


class CopyTables:
    """Accumulates copy tables for the core, as run rows (copy_runs.py): a table's
    segments are made into runs as it is added, so the segments of one table at most are
    alive at a time."""

    def __init__(self):
        self._runs: List[np.ndarray] = []
        self._begin: List[int] = [0]
        self._overlaps: List[int] = []

    def add(self, segs: np.ndarray, overlaps: bool = False) -> int:
        """Add a table of (n, 3) segments (src, dst, len); returns its index."""
        return self.add_runs(segments_to_runs(segs), overlaps)

    def add_runs(self, runs: np.ndarray, overlaps: bool = False) -> int:
        """Add a table already made into run rows (RunBuilder); returns its index."""
        self._runs.append(np.asarray(runs, np.int64).reshape(-1, ROW_WIDTHS["copy_runs"]))
        self._begin.append(self._begin[-1] + self._runs[-1].shape[0])
        self._overlaps.append(int(overlaps))
        return len(self._overlaps) - 1

    def arrays(self) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The tables joined (copy_runs, table_begin, table_overlaps), once: each table's
        rows are dropped as they are copied, so joining them needs the joined array and
        one table more, not twice the tables. No table can be added afterwards."""
        runs = np.empty((self._begin[-1], ROW_WIDTHS["copy_runs"]), np.int64)
        parts, self._runs = self._runs, None
        for i, (b, e) in enumerate(zip(self._begin[:-1], self._begin[1:])):
            runs[b:e] = parts[i]
            parts[i] = None
        return runs, np.asarray(self._begin, np.int64), np.asarray(self._overlaps, np.uint8)


class TransferPlanner:
    """Turns views into copy tables and tile traffic for one engine's layout."""

    def __init__(self, table, layout: MemoryLayout, cost: CostModel):
        self.table = table
        self.layout = layout
        self.cost = cost
        self.num_tiles = cost.num_tiles
        self._itemsize = np.fromiter((v.dtype.size for v in table.variables), np.int64, len(table.variables))

    def arena_offsets(self, gid: np.ndarray, var: Optional[np.ndarray] = None) -> np.ndarray:
        """Arena byte offset of each global element id; ``var``, when given, the variable
        index of each id where the caller knows it, -1 where not (those are looked up)."""
        if var is None:
            var = self.table.index_of(gid)
        else:
            unknown = np.flatnonzero(var < 0)
            if unknown.size:
                var = var.copy()
                var[unknown] = self.table.index_of(gid[unknown])
        return self.layout.var_offsets[var] + (gid - self.table.bases()[var]) * self._itemsize[var]

    def edge_variables(self, edge: np.ndarray, gid: np.ndarray, length: np.ndarray, count: int) -> np.ndarray:
        """For runs ``[gid, gid + length)`` of ``count`` edges (``edge``: each run's, ascending),
        the variable of each edge whose runs all lie in one (the variables of its lowest and
        highest ids, looked up once per edge), else -1. An empty run counts its first id,
        so its piece is looked up when that id is another variable's."""
        out = np.full(count, -1, np.int64)
        if not edge.size:
            return out
        starts = np.flatnonzero(np.concatenate(([True], edge[1:] != edge[:-1])))
        low = self.table.index_of(np.minimum.reduceat(gid, starts))
        high = self.table.index_of(np.maximum.reduceat(gid + np.maximum(length, 1) - 1, starts))
        out[edge[starts]] = np.where(low == high, low, -1)
        return out

    def _tiles(self, runs: Runs) -> Tuple[Runs, np.ndarray]:
        if not self.cost.enabled:
            return runs, np.zeros(runs.size, np.int64)
        return self.layout.index.split(runs)

    def copy(self, src, dst) -> Tuple[np.ndarray, StepCost]:
        """Segments and cost of copying view ``src`` into view ``dst`` element by element,
        within each replica (cross_replica_copies: between replicas)."""
        segs, traffic = self._copy_traffic(src, dst, cross_replica=False)
        return segs, self.cost.copy(**traffic)

    def cross_replica_copies(self, copies) -> Tuple[List[np.ndarray], StepCost]:
        """Segments of each of ``copies`` ((src, dst, replica_map) triples, independent
        of each other) and the cost of one exchange that moves them all at once, as
        Poplar merges adjacent CrossReplicaCopy programs: their bytes share the IPU-Links,
        and each tile's exchange port carries what its replica sends and receives in all
        of them (the busiest replica's tile sets the pace: replicas run in lockstep)."""
        all_segs, moved = [], []
        replicas = self.cost.replication_factor
        sent = np.zeros((replicas, self.num_tiles))
        received = np.zeros((replicas, self.num_tiles))
        for src, dst, replica_map in copies:
            segs, traffic = self._copy_traffic(src, dst, cross_replica=True)
            all_segs.append(segs)
            moved.extend(device_flows(traffic["flows"], self.cost.num_ipus, replicas, replica_map))
            senders = np.flatnonzero(np.asarray(replica_map) >= 0)
            sent[senders] += traffic["global_sent"]
            received[np.asarray(replica_map)[senders]] += traffic["global_received"]
        zero = np.zeros(self.num_tiles)
        cost = self.cost.copy(onchip_bytes=zero, onchip_runs=zero, sent=zero, received=zero,
                              global_sent=sent.max(axis=0), global_received=received.max(axis=0), moved=moved)
        return all_segs, cost

    def _copy_traffic(self, src, dst, cross_replica: bool):
        """The segments of a copy and its traffic per tile (the keyword arguments of
        CostModel.copy): on-tile bytes and runs, bytes sent and received between tiles,
        and those crossing IPU-Links with their IPU-to-IPU flows (all of them in a
        cross-replica copy)."""
        size = src.dtype.size
        s_runs, s_tiles = self._tiles(runs_of(src))
        d_runs, d_tiles = self._tiles(runs_of(dst))
        # Cut both sides at every boundary of either, so piece i of one matches piece i of the other.
        s_cut = split_at_positions(s_runs, d_runs.pos)
        d_cut = split_at_positions(d_runs, s_runs.pos)
        src_tile = _tile_of_pieces(s_runs, s_tiles, s_cut)
        dst_tile = _tile_of_pieces(d_runs, d_tiles, d_cut)
        nbytes = s_cut.length * size
        segs = merge_segments(self.arena_offsets(s_cut.gid), self.arena_offsets(d_cut.gid), nbytes)
        tiles_per_ipu = self.cost.target.tiles_per_ipu
        src_ipu, dst_ipu = src_tile // tiles_per_ipu, dst_tile // tiles_per_ipu
        if cross_replica:
            on_tile, cross = np.zeros(src_tile.size, bool), np.ones(src_tile.size, bool)
        else:
            on_tile = src_tile == dst_tile
            cross = src_ipu != dst_ipu  # over IPU-Links
        between = ~on_tile & ~cross
        n = self.num_tiles
        flows = np.zeros((self.cost.num_ipus, self.cost.num_ipus))
        np.add.at(flows, (src_ipu[cross], dst_ipu[cross]), nbytes[cross])
        return segs, dict(
            onchip_bytes=np.bincount(src_tile[on_tile], weights=nbytes[on_tile], minlength=n),
            onchip_runs=np.bincount(src_tile[on_tile], minlength=n),
            sent=np.bincount(src_tile[between], weights=nbytes[between], minlength=n),
            received=np.bincount(dst_tile[between], weights=nbytes[between], minlength=n),
            global_sent=np.bincount(src_tile[cross], weights=nbytes[cross], minlength=n),
            global_received=np.bincount(dst_tile[cross], weights=nbytes[cross], minlength=n),
            flows=flows)

    def tiles_of(self, tensor) -> np.ndarray:
        """The tiles holding some element of ``tensor``."""
        if not self.cost.enabled:
            return np.zeros(1, np.int64)
        _, tiles = self._tiles(runs_of(tensor))
        return np.unique(tiles[tiles >= 0])

    def host_segments(self, tensor, to_device: bool) -> np.ndarray:
        """Segments between a contiguous host buffer (the view in row-major order) and
        the arena: host -> arena when ``to_device``, else arena -> host."""
        runs = runs_of(tensor)
        size = tensor.dtype.size
        host = runs.pos * size
        arena = self.arena_offsets(runs.gid)
        nbytes = runs.length * size
        return merge_segments(host, arena, nbytes) if to_device else merge_segments(arena, host, nbytes)


def _tile_of_pieces(runs: Runs, tiles: np.ndarray, pieces: Runs) -> np.ndarray:
    """Tile of each piece of ``runs`` after further cutting (pieces are in view order)."""
    if runs.size == 0:
        return np.empty(0, np.int64)
    return tiles[np.searchsorted(runs.pos, pieces.pos, side="right") - 1]
