"""The cycle model: what each lowered step costs on the target.

Every figure the engine reports comes from here (and, for compute sets, from vertex
estimates; a superstep's parts are added up in native/core/superstep.hpp, the one
place that composes them). A step's cost is a vector over CATEGORIES (the core's
cost categories, popsim/contract.py): its duration in cycles, and
the *tile average* of the cycles tiles spend in each activity during it. For every
step the activities add up to the duration: a tile that finishes early waits at
the sync, and that wait is counted as sync, as Poplar's IPUModel does.

Constants (docs/cost_model.md explains each; targets carry the bandwidths, including
the IPU-Link figures: ``ipu_link_bytes_per_cycle`` and ``ipu_link_latency_cycles``):

================================  ======  =====================================================
constant                          value   meaning
================================  ======  =====================================================
COPY_RUN_OVERHEAD_CYCLES          4       per contiguous run an on-tile copy moves
EXCHANGE_OVERHEAD_CYCLES          10      per tile taking part in an exchange phase
target.ipu_link_bytes_per_cycle   43.9    ipu2 (ipu1 36.5, ipu21 31.6): bytes one IPU sends
                                          (or receives) per cycle over its IPU-Links: 4 links x
                                          128 Gibit/s x 0.85 efficiency / tile clock
target.ipu_link_latency_cycles    20      ipu2 (ipu1 24, ipu21 28): ceil(15 ns x clock x hops),
                                          hops = 1 + IPUs/4
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
from typing import Optional

import numpy as np

from ..contract import CAT, CATEGORIES, NUM_CATEGORIES
from ..target import Target

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
    """The cost of one execution of a step, and where on the chip it goes."""

    vector: np.ndarray = field(default_factory=lambda: np.zeros(NUM_CATEGORIES))
    # Per-tile detail for reports (tile -> cycles), only for steps that have it.
    tile_compute: Optional[np.ndarray] = None
    tile_exchange: Optional[np.ndarray] = None
    exchange_bytes: int = 0
    host_bytes: int = 0

    @property
    def cycles(self) -> float:
        return float(self.vector[0])


def _vector(**parts: float) -> np.ndarray:
    v = np.zeros(NUM_CATEGORIES)
    for name, value in parts.items():
        v[CAT[name]] = value
    return v


class CostModel:
    """Cycle formulas for one target. A CPU target has no cost model: every cost is 0."""

    def __init__(self, target: Target):
        self.target = target
        self.enabled = target.has_cost_model
        self.num_tiles = target.num_tiles

    @property
    def sync_cycles(self) -> int:
        return self.target.max_ipu_sync_delay if self.enabled else 0

    def _phase(self, busy: np.ndarray) -> float:
        return float(busy.max()) if busy.size else 0.0

    def copy(self, onchip_bytes: np.ndarray, onchip_runs: np.ndarray, sent: np.ndarray,
             received: np.ndarray, global_sent: Optional[np.ndarray] = None,
             global_received: Optional[np.ndarray] = None) -> StepCost:
        """A Copy: an on-tile phase (memcpy on each tile), then an exchange phase for
        data that changes tile, each followed by a sync, then (multi-IPU targets) a
        global exchange phase for data that changes IPU, followed by a global sync.
        Arrays are per tile; ``global_*`` count only bytes that cross IPU-Links."""
        if not self.enabled:
            return StepCost()
        t = self.target
        compute = np.where(onchip_bytes > 0,
                           np.ceil(onchip_bytes / t.memcpy_bytes_per_cycle) + COPY_RUN_OVERHEAD_CYCLES * onchip_runs,
                           0.0)
        traffic = np.maximum(sent, received)
        exchange = np.where(traffic > 0, np.ceil(traffic / t.exchange_bytes_per_cycle) + EXCHANGE_OVERHEAD_CYCLES,
                            0.0)
        c_phase, x_phase = self._phase(compute), self._phase(exchange)
        global_tiles, g_phase, global_bytes = self._global_exchange(global_sent, global_received)
        syncs = (c_phase > 0) + (x_phase > 0)
        duration = c_phase + x_phase + syncs * self.sync_cycles
        if g_phase > 0:
            duration += g_phase + t.global_sync_cycles
        avg_c, avg_x = compute.sum() / self.num_tiles, exchange.sum() / self.num_tiles
        avg_g = global_tiles.sum() / self.num_tiles
        return StepCost(_vector(cycles=duration, compute_including_idle=avg_c, compute_excluding_idle=avg_c,
                                ipu_exchange=avg_x, global_exchange=avg_g, sync=duration - avg_c - avg_x - avg_g),
                        tile_compute=compute, tile_exchange=exchange + global_tiles,
                        exchange_bytes=int(sent.sum()) + global_bytes)

    def _global_exchange(self, sent: Optional[np.ndarray], received: Optional[np.ndarray]):
        """The IPU-Link phase: (cycles of each tile, phase cycles, bytes). It lasts until
        the busiest IPU has pushed its traffic through its links, or the busiest tile
        through its exchange port, plus the link latency; every tile sending or
        receiving across IPUs takes part for the whole phase."""
        zero = np.zeros(self.num_tiles)
        if sent is None or received is None or not (sent.any() or received.any()):
            return zero, 0.0, 0
        t = self.target
        per_tile = np.maximum(sent, received)
        per_ipu = np.maximum(sent.reshape(t.num_ipus, -1).sum(axis=1), received.reshape(t.num_ipus, -1).sum(axis=1))
        link = math.ceil(float(per_ipu.max()) / t.ipu_link_bytes_per_cycle)
        port = math.ceil(float(per_tile.max()) / t.exchange_bytes_per_cycle)
        phase = float(max(link, port) + t.ipu_link_latency_cycles)
        return np.where(per_tile > 0, phase, 0.0), phase, int(sent.sum())

    def host_transfer(self, nbytes: int) -> StepCost:
        """A stream copy (or PrintTensor): every tile waits for the host link."""
        if not self.enabled:
            return StepCost()
        host = math.ceil(nbytes / self.target.host_bytes_per_cycle) + HOST_STREAM_OVERHEAD_CYCLES
        duration = host + self.sync_cycles
        return StepCost(_vector(cycles=duration, host_exchange=host, sync=self.sync_cycles), host_bytes=nbytes)

    def sync(self, external: bool) -> StepCost:
        if not self.enabled:
            return StepCost()
        cycles = self.target.global_sync_cycles if external else self.sync_cycles
        return StepCost(_vector(cycles=cycles, sync=cycles))

    def compute_set(self, exchange_in: StepCost, exchange_out: StepCost) -> StepCost:
        """What the report shows of an Execute besides its cycles: the per-tile exchange
        of its exchange-in phase (inputs brought to the vertices' tiles) and exchange-out
        phase (outputs taken back), and the bytes they move. The step's cycles are not
        here: the core composes the whole superstep (exchange-in + compute + sync +
        exchange-out) each time it runs, in native/core/superstep.hpp, from these two
        phases' cost vectors and ``sync_cycles``."""
        if not self.enabled:
            return StepCost()
        v = np.zeros(NUM_CATEGORIES)  # composed by the core (superstep.hpp)
        tile_exchange = None
        if exchange_in.tile_exchange is not None and exchange_out.tile_exchange is not None:
            tile_exchange = exchange_in.tile_exchange + exchange_out.tile_exchange
        return StepCost(v, tile_exchange=tile_exchange,
                        exchange_bytes=exchange_in.exchange_bytes + exchange_out.exchange_bytes)

    def branch(self, predicate_bytes: int) -> StepCost:
        """Deciding If / Switch / RepeatWhile: the predicate goes to every tile, then a sync."""
        if not self.enabled:
            return StepCost()
        exchange = math.ceil(predicate_bytes / self.target.exchange_bytes_per_cycle) + EXCHANGE_OVERHEAD_CYCLES
        control = BRANCH_EXTRA_CYCLES
        duration = exchange + self.sync_cycles + control
        return StepCost(_vector(cycles=duration, ipu_exchange=exchange, sync=self.sync_cycles, control=control))

    def control(self, cycles: int) -> StepCost:
        if not self.enabled:
            return StepCost()
        return StepCost(_vector(cycles=cycles, control=cycles))

    def loop_iteration(self) -> StepCost:
        return self.control(LOOP_ITERATION_CYCLES)

    def call(self) -> StepCost:
        return self.control(CALL_CYCLES)

