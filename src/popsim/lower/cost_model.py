"""The cycle model: what each lowered step costs on the target.

Every figure the engine reports comes from here (and, for compute sets, from vertex
estimates; a superstep's parts are added up in native/core/superstep.hpp, the one
place that composes them). A step's cost is a vector over CATEGORIES (the core's
cost categories, popsim/contract.py) for each IPU of a replica: its duration there in
cycles, and the *tile average* of the cycles that IPU's tiles spend in each activity
during it; with the IPUs it involves and the IPUs whose clocks it joins (StepCost,
native/core/clocks.hpp). For every step the activities add up to the duration: a tile
that finishes early waits at the sync, and that wait is counted as sync, as Poplar's
IPUModel does.

Constants (docs/cost_model.md explains each; targets carry the bandwidths, the IPU-Link
figures included, and IpuLinkTopology routes transfers between IPUs):

================================  ======  =====================================================
constant                          value   meaning
================================  ======  =====================================================
COPY_RUN_OVERHEAD_CYCLES          4       per contiguous run an on-tile copy moves
EXCHANGE_OVERHEAD_CYCLES          10      per tile taking part in an exchange phase
IpuLinkTopology (topology.py)     10.98   ipu2: bytes per cycle of one IPU-Link (128 Gibit/s x
                                          0.85 / clock); 4 links join card partners, 2 rail
                                          neighbours; 20 cycles a hop (15 ns x clock)
HOST_STREAM_OVERHEAD_CYCLES       100     per host stream transfer (host sync handshake)
LOOP_ITERATION_CYCLES             4       per Repeat iteration (counted branch)
CALL_CYCLES                       6       per Call (call and return)
BRANCH_EXTRA_CYCLES               10      If / Switch / RepeatWhile decision, plus a sync and
                                          the exchange of the predicate to every tile
DEFAULT_VERTEX_CYCLES             100     a C++ vertex with no perf estimate and no estimator
                                          (the report warns)
VERTEX_CODE_BYTES                 512     code of one vertex type on each tile that runs it
EXCHANGE_CODE_BYTES               32      code of one exchange phase on each tile taking part
CONTROL_CODE_BYTES                8       per instruction of the control program, on every tile
WORKER_STACK_BYTES                64      stack of each worker context, on every tile
SUPERVISOR_STACK_BYTES            128     stack of the supervisor, on every tile
================================  ======  =====================================================
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import List, Optional, Tuple

import numpy as np

from ..contract import CAT, CATEGORIES, NUM_CATEGORIES
from ..target import Target
from ..topology import IpuLinkTopology

__all__ = ["CATEGORIES", "CAT", "NUM_CATEGORIES", "StepCost", "CostModel"]

COPY_RUN_OVERHEAD_CYCLES = 4
EXCHANGE_OVERHEAD_CYCLES = 10
HOST_STREAM_OVERHEAD_CYCLES = 100
LOOP_ITERATION_CYCLES = 4
CALL_CYCLES = 6
BRANCH_EXTRA_CYCLES = 10
DEFAULT_VERTEX_CYCLES = 100
VERTEX_CODE_BYTES = 512
EXCHANGE_CODE_BYTES = 32
CONTROL_CODE_BYTES = 8
WORKER_STACK_BYTES = 64
SUPERVISOR_STACK_BYTES = 128


@dataclass
class StepCost:
    """The cost of one execution of a step, and where on the chip it goes.

    ``vector[i]``: the step's cost vector on IPU i of a replica (docs/multi_ipu.md): its
    duration there and the tile averages of each activity over that IPU's tiles.
    ``involved``: the IPUs that spend it (a bit each); ``join``: the IPUs whose clocks
    meet (an inter-IPU transfer or an external sync): at the start of the step, or,
    with ``join_tail`` >= 0, before the last ``join_tail`` cycles of each one's duration
    (what they run together, after each has done its own part). Replicas run in
    lockstep, so one replica's IPUs stand for all."""

    vector: np.ndarray = field(default_factory=lambda: np.zeros((1, NUM_CATEGORIES)))
    # Per-tile detail for reports (tile -> cycles), only for steps that have it.
    tile_compute: Optional[np.ndarray] = None
    tile_exchange: Optional[np.ndarray] = None
    exchange_bytes: int = 0
    host_bytes: int = 0
    involved: int = 1
    join: int = 0
    join_tail: int = -1

    @property
    def cycles(self) -> float:
        """The step's duration on its slowest IPU."""
        return float(self.vector[:, CAT["cycles"]].max()) if self.vector.size else 0.0


def _vector(**parts: float) -> np.ndarray:
    v = np.zeros(NUM_CATEGORIES)
    for name, value in parts.items():
        v[CAT[name]] = value
    return v


def mask_of(ipus) -> int:
    """The bit mask of a collection of IPU indices (or of a boolean array over IPUs)."""
    ipus = np.asarray(ipus)
    if ipus.dtype == bool:
        ipus = np.flatnonzero(ipus)
    mask = 0
    for i in ipus.tolist():
        mask |= 1 << int(i)
    return mask


class CostModel:
    """Cycle formulas for one target (one replica's IPUs; ``replication_factor``
    replicas of it make the device). A CPU target has no cost model: every cost is 0."""

    def __init__(self, target: Target, replication_factor: int = 1):
        self.target = target
        self.enabled = target.has_cost_model
        self.num_tiles = target.num_tiles
        self.num_ipus = target.num_ipus
        self.replication_factor = replication_factor
        self.all_ipus = (1 << self.num_ipus) - 1
        self._topology: Optional[IpuLinkTopology] = None

    @property
    def topology(self) -> IpuLinkTopology:
        """The device's IPU-Links (every replica's IPUs)."""
        if self._topology is None:
            self._topology = IpuLinkTopology.of(self.target, self.num_ipus * self.replication_factor)
        return self._topology

    @property
    def sync_cycles(self) -> int:
        return self.target.max_ipu_sync_delay if self.enabled else 0

    def zero(self) -> StepCost:
        return StepCost(np.zeros((self.num_ipus, NUM_CATEGORIES)), involved=self.all_ipus)

    def _everywhere(self, v: np.ndarray, join_all: bool = False) -> StepCost:
        """A step that costs every IPU the same (control, syncs, branches)."""
        join = self.all_ipus if join_all and self.num_ipus > 1 else 0
        return StepCost(np.tile(v, (self.num_ipus, 1)), involved=self.all_ipus, join=join)

    def _per_ipu(self, per_tile: np.ndarray) -> np.ndarray:
        return per_tile.reshape(self.num_ipus, -1)

    def copy(self, onchip_bytes: np.ndarray, onchip_runs: np.ndarray, sent: np.ndarray,
             received: np.ndarray, global_sent: Optional[np.ndarray] = None,
             global_received: Optional[np.ndarray] = None, flows: Optional[np.ndarray] = None,
             moved: Optional[list] = None) -> StepCost:
        """A Copy: on each IPU, an on-tile phase (memcpy on each tile), then an exchange
        phase for data that changes tile, each followed by a sync; then, for data that
        changes IPU, a global exchange phase over the IPU-Links followed by a global
        sync, which the IPUs taking part reach together (their clocks join). Arrays are
        per tile of a replica; ``global_*`` count only bytes that cross IPU-Links;
        ``flows[a, b]``: bytes from IPU a to IPU b within each replica; ``moved``, when
        given instead, the device-wide flows of a cross-replica copy (device_flows)."""
        if not self.enabled:
            return self.zero()
        t = self.target
        compute = np.where(onchip_bytes > 0,
                           np.ceil(onchip_bytes / t.memcpy_bytes_per_cycle) + COPY_RUN_OVERHEAD_CYCLES * onchip_runs,
                           0.0)
        traffic = np.maximum(sent, received)
        exchange = np.where(traffic > 0, np.ceil(traffic / t.exchange_bytes_per_cycle) + EXCHANGE_OVERHEAD_CYCLES,
                            0.0)
        c_phase, x_phase = self._per_ipu(compute).max(axis=1), self._per_ipu(exchange).max(axis=1)
        syncs = (c_phase > 0).astype(float) + (x_phase > 0)
        duration = c_phase + x_phase + syncs * self.sync_cycles
        global_tiles, g_phase, global_bytes = self._global_exchange(global_sent, global_received, flows, moved)
        linked = self._per_ipu(global_tiles).max(axis=1) > 0
        together = int(g_phase + t.global_sync_cycles)
        if linked.any():  # after its own local phases, each waits for the others, then the link phase
            duration[linked] += together
        tiles = t.tiles_per_ipu
        avg_c = self._per_ipu(compute).sum(axis=1) / tiles
        avg_x = self._per_ipu(exchange).sum(axis=1) / tiles
        avg_g = self._per_ipu(global_tiles).sum(axis=1) / tiles
        vector = np.zeros((self.num_ipus, NUM_CATEGORIES))
        for name, value in (("cycles", duration), ("compute_including_idle", avg_c), ("compute_excluding_idle", avg_c),
                            ("ipu_exchange", avg_x), ("global_exchange", avg_g),
                            ("sync", duration - avg_c - avg_x - avg_g)):
            vector[:, CAT[name]] = value
        busy = duration > 0
        return StepCost(vector, tile_compute=compute, tile_exchange=exchange + global_tiles,
                        exchange_bytes=int(sent.sum()) + global_bytes,
                        involved=mask_of(busy) if busy.any() else self.all_ipus,
                        join=mask_of(linked) if linked.sum() > 1 else 0, join_tail=together if linked.any() else -1)

    def _global_exchange(self, sent: Optional[np.ndarray], received: Optional[np.ndarray],
                         flows: Optional[np.ndarray], moved: Optional[list]):
        """The IPU-Link phase: (cycles of each tile, phase cycles, bytes). Every replica
        moves its flows at once over the device's links (docs/multi_ipu.md): the phase
        lasts until the busiest link has carried what crosses it, or the busiest tile
        has pushed its bytes through its exchange port, plus the hops' latency; every
        tile sending or receiving across IPUs takes part for the whole phase."""
        zero = np.zeros(self.num_tiles)
        if sent is None or received is None or not (sent.any() or received.any()):
            return zero, 0.0, 0
        t = self.target
        per_tile = np.maximum(sent, received)
        port = math.ceil(float(per_tile.max()) / t.exchange_bytes_per_cycle)
        topology = self.topology
        links, hops = 0.0, 1
        if moved is None and flows is not None:
            moved = device_flows(flows, self.num_ipus, self.replication_factor)
        if moved is not None:
            links = topology.transfer_cycles(moved)
            hops = max((topology.hops(a, b) for a, b, _ in moved), default=1)
        phase = float(max(links, port + topology.hop_latency_cycles * hops))
        return np.where(per_tile > 0, phase, 0.0), phase, int(sent.sum())

    def host_transfer(self, nbytes: int, tiles: Optional[np.ndarray] = None) -> StepCost:
        """A stream copy (or PrintTensor): the IPUs holding the data (``tiles``; None:
        all) wait for the host link together."""
        if not self.enabled:
            return self.zero()
        host = math.ceil(nbytes / self.target.host_bytes_per_cycle) + HOST_STREAM_OVERHEAD_CYCLES
        duration = host + self.sync_cycles
        step = self._everywhere(_vector(cycles=duration, host_exchange=host, sync=self.sync_cycles))
        step.host_bytes = nbytes
        if tiles is not None and len(tiles) and self.num_ipus > 1:
            ipus = np.unique(np.asarray(tiles, np.int64) // self.target.tiles_per_ipu)
            step.involved = mask_of(ipus)
            step.join = step.involved if ipus.size > 1 else 0
        return step

    def sync(self, external: bool) -> StepCost:
        """INTERNAL: each IPU syncs its own tiles; EXTERNAL / GLOBAL: every IPU meets."""
        if not self.enabled:
            return self.zero()
        cycles = self.target.global_sync_cycles if external else self.sync_cycles
        return self._everywhere(_vector(cycles=cycles, sync=cycles), join_all=external)

    def compute_set(self, exchange_in: StepCost, exchange_out: StepCost, vertex_tiles: np.ndarray) -> StepCost:
        """What the report shows of an Execute besides its cycles: the per-tile exchange
        of its exchange-in phase (inputs brought to the vertices' tiles) and exchange-out
        phase (outputs taken back), the bytes they move, and the IPUs it involves (those
        with vertices or exchange; all when none has). The step's cycles are not here:
        the core composes the whole superstep (exchange-in + compute + sync +
        exchange-out) on each IPU each time it runs, in native/core/superstep.hpp, from
        these two phases' cost vectors and ``sync_cycles``."""
        if not self.enabled:
            return self.zero()
        tile_exchange = None
        if exchange_in.tile_exchange is not None and exchange_out.tile_exchange is not None:
            tile_exchange = exchange_in.tile_exchange + exchange_out.tile_exchange
        busy = np.zeros(self.num_ipus, bool)
        busy[np.unique(np.asarray(vertex_tiles, np.int64) // self.target.tiles_per_ipu)] = True
        for phase in (exchange_in, exchange_out):
            busy |= phase.vector[:, CAT["cycles"]] > 0
        join = exchange_in.join | exchange_out.join
        return StepCost(np.zeros((self.num_ipus, NUM_CATEGORIES)), tile_exchange=tile_exchange,
                        exchange_bytes=exchange_in.exchange_bytes + exchange_out.exchange_bytes,
                        involved=mask_of(busy) if busy.any() else self.all_ipus, join=join)

    def branch(self, predicate_bytes: int) -> StepCost:
        """Deciding If / Switch / RepeatWhile: the predicate goes to every tile of every
        IPU (their clocks join), then a sync."""
        if not self.enabled:
            return self.zero()
        exchange = math.ceil(predicate_bytes / self.target.exchange_bytes_per_cycle) + EXCHANGE_OVERHEAD_CYCLES
        control = BRANCH_EXTRA_CYCLES
        duration = exchange + self.sync_cycles + control
        return self._everywhere(_vector(cycles=duration, ipu_exchange=exchange, sync=self.sync_cycles,
                                        control=control), join_all=True)

    def control(self, cycles: int) -> StepCost:
        if not self.enabled:
            return self.zero()
        return self._everywhere(_vector(cycles=cycles, control=cycles))

    def loop_iteration(self) -> StepCost:
        return self.control(LOOP_ITERATION_CYCLES)

    def call(self) -> StepCost:
        return self.control(CALL_CYCLES)


def device_flows(flows: np.ndarray, num_ipus: int, replicas: int, replica_map: Optional[np.ndarray] = None):
    """One replica's IPU-to-IPU byte counts (``flows[a, b]``) as every replica moves
    them at once, in device IPU numbers (replica r's IPU i is r * num_ipus + i): within
    each replica, or from replica r to ``replica_map[r]`` (-1: r sends nothing)."""
    src, dst = np.nonzero(flows)
    out: List[Tuple[int, int, int]] = []
    for r in range(replicas):
        d = r if replica_map is None else int(replica_map[r])
        if d < 0:
            continue
        out.extend((r * num_ipus + int(a), d * num_ipus + int(b), int(flows[a, b])) for a, b in zip(src, dst))
    return out
