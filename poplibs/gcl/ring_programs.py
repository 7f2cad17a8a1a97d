"""Ring schedules: the programs of a reduce-scatter and an all-gather around rings of
replicas, step by step.

A *chain* carries fragments one way around a ring for ``length`` steps, starting after
``delay`` steps: direction +1 sends from ring position q to q + 1, -1 to q - 1. A
reduce-scatter's chain of length L brings the fragment owned by position q from
position q - dL, each replica on the way adding its own piece: at sub-step s position p
receives the partial result for the fragment of position p + d(L - s), and the owner
(s = L) finishes it. A one-way ring is one chain of length n - 1; meet-in-the-middle
is two chains, one each way, of lengths ceil((n-1)/2) and floor((n-1)/2), the shorter
delayed so that both arrive at the owner at the last step. An all-gather's chain of
length L carries each owner's fragment to the next L positions its way.

Every step is one Sequence of CrossReplicaCopy programs (the chains' and rings' copies
of one step are adjacent, so they move in one exchange) followed by one compute set.
The order in which a fragment is reduced is therefore fixed by the ring: for the
fragment of position q, a one-way ring folds x[q-d(n-1)], then x[q-d(n-2)], ..., and
last x[q] (acc = x_next op acc); meet-in-the-middle computes
(x[q] op cw) op acw, each side folded from its far end.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import List

import popsim
from popsim import UNSIGNED_INT
from popsim.program import CrossReplicaCopy, Execute, Sequence

from .collective_types import CollectiveOperator as Op
from .fragments import per_tile_buffer
from .ring_vertices import ensure_vertex

__all__ = ["RingContext", "Chain", "ReduceScatterPlan", "AllGatherPlan", "run_schedule", "chains_for"]


@dataclass(frozen=True)
class Chain:
    direction: int  # +1 or -1 around the ring
    length: int     # steps it sends for
    delay: int = 0  # steps it waits before its first send


def chains_for(method: str, n: int) -> List[List[Chain]]:
    """The rings (each a list of chains sharing one set of fragments) a method runs over
    a ring of n replicas: one ring, except the ring pair's two (half the data each)."""
    if method == "clockwise_ring":
        return [[Chain(1, n - 1)]]
    if method == "anticlockwise_ring":
        return [[Chain(-1, n - 1)]]
    if method == "bidirectional_ring_pair":
        return [[Chain(1, n - 1)], [Chain(-1, n - 1)]]
    if method == "meet_in_middle_ring":
        cw, acw = n // 2, (n - 1) // 2
        return [[Chain(1, cw)] + ([Chain(-1, acw, cw - acw)] if acw else [])]
    raise ValueError(method)


@dataclass
class RingContext:
    """What every step of one collective shares: the graph, element type, the rings,
    the tiles that take part and each tile's copy of this replica's ring position."""
    graph: object
    dtype: object
    shift_map: object          # k -> the CrossReplicaCopy map from position q to q + k
    size: int                  # replicas per ring
    tiles: List[int]
    positions: List[popsim.Tensor]  # per tile: an UNSIGNED_INT scalar
    name: str

    @classmethod
    def create(cls, graph, dtype, rings, tiles, prog, name: str) -> "RingContext":
        """Set up the positions: one compute set reading the replication index."""
        index = graph.add_replication_index_constant(f"{name}/replicationIndex")
        table = graph.add_constant(UNSIGNED_INT, (rings.replicas,), rings.positions(), f"{name}/ringPositions")
        position = graph.add_variable(UNSIGNED_INT, (len(tiles),), f"{name}/ringPosition")
        first = tiles[0] if tiles else 0
        graph.set_tile_mapping(index, first)
        graph.set_tile_mapping(table, first)
        cs = graph.add_compute_set(f"{name}/ringPosition")
        vertex = ensure_vertex(graph, "position")
        for i, tile in enumerate(tiles):
            graph.set_tile_mapping(position[i], tile)
            v = graph.add_vertex(cs, vertex, {"index": index, "positions": table, "position": position[i]})
            graph.set_tile_mapping(v, tile)
        if tiles:
            prog.add(Execute(cs))
        return cls(graph, dtype, rings.shift_map, rings.size, list(tiles), [position[i] for i in range(len(tiles))],
                   name)

    def add(self, cs, kind: str, i: int, fields: dict, op=None, **state) -> None:
        graph = self.graph
        v = graph.add_vertex(cs, ensure_vertex(graph, kind, self.dtype, op), {"position": self.positions[i], **fields})
        for key, value in state.items():
            graph.set_initial_value(v[key], value)
        graph.set_tile_mapping(v, self.tiles[i])

    def buffer(self, widths, what: str):
        return per_tile_buffer(self.graph, self.dtype, self.tiles, widths, f"{self.name}/{what}")


@dataclass
class ReduceScatterPlan:
    """One ring's reduce-scatter: ``pieces[i]`` are tile i's n pieces in ring-position
    order, ``widths[i]`` the longest. ``result`` (after the schedule): per tile, this
    replica's finished fragment (its first len(piece) elements)."""
    ctx: RingContext
    pieces: List[List[popsim.Tensor]]
    widths: List[int]
    chains: List[Chain]
    op: Op
    acc: list = field(default_factory=list)
    received: list = field(default_factory=list)
    buffers: list = field(default_factory=list)

    def __post_init__(self):
        for c, _ in enumerate(self.chains):
            a, a_slices = self.ctx.buffer(self.widths, f"acc{c}")
            b, b_slices = self.ctx.buffer(self.widths, f"received{c}")
            self.acc.append(a_slices)
            self.received.append(b_slices)
            self.buffers.append((a, b))

    @property
    def steps(self) -> int:
        return max((c.length + c.delay for c in self.chains), default=0)

    @property
    def result(self):
        return self.acc[0]

    def _reduce(self, cs, i, acc, received, offset, divisor=0):
        self.ctx.add(cs, "reduce", i, {"local": self.pieces[i], "received": received, "acc": acc},
                     op=self.op, offset=offset % self.ctx.size, divisor=divisor)

    def initial(self, cs) -> None:
        done = self.steps == 0  # a ring of one: the first piece is the result
        divisor = self.ctx.size if self.op is Op.MEAN and done else 0
        for c, chain in enumerate(self.chains):
            for i in range(len(self.ctx.tiles)):
                self._reduce(cs, i, self.acc[c][i], [], chain.direction * chain.length, divisor)

    def copies(self, step: int) -> list:
        out = []
        for c, chain in enumerate(self.chains):
            if 1 <= step - chain.delay <= chain.length:
                a, b = self.buffers[c]
                out.append(CrossReplicaCopy(a, b, self.ctx.shift_map(chain.direction),
                                            f"{self.ctx.name}/ring{chain.direction:+d}"))
        return out

    def compute(self, cs, step: int) -> None:
        last = step == self.steps
        for c, chain in enumerate(self.chains):
            sub = step - chain.delay
            if 1 <= sub < chain.length:
                for i in range(len(self.ctx.tiles)):
                    self._reduce(cs, i, self.acc[c][i], [self.received[c][i]], chain.direction * (chain.length - sub))
        if last:
            divisor = self.ctx.size if self.op is Op.MEAN else 0
            for i in range(len(self.ctx.tiles)):
                self._reduce(cs, i, self.acc[0][i], [b[i] for b in self.received], 0, divisor)


@dataclass
class AllGatherPlan:
    """One ring's all-gather: ``data[i]`` is tile i's part of this replica's fragment,
    ``slots[i]`` tile i's n destinations in ring-position order (each as long as the
    fragment's part, or shorter: the first elements are stored)."""
    ctx: RingContext
    data: List[popsim.Tensor]
    slots: List[List[popsim.Tensor]]
    widths: List[int]
    chains: List[Chain]
    buffers: list = field(default_factory=list)

    def __post_init__(self):
        for c, _ in enumerate(self.chains):
            self.buffers.append([self.ctx.buffer(self.widths, f"gathered{c}_{k}") for k in range(2)])

    @property
    def steps(self) -> int:
        return max((c.length + c.delay for c in self.chains), default=0)

    def _sent(self, c: int, sub: int):
        """What chain c sends at its sub-step ``sub`` (1-based) and where it lands."""
        src = popsim.concat(self.data) if sub == 1 else self.buffers[c][sub % 2][0]
        return src, self.buffers[c][(sub + 1) % 2]

    def initial(self, cs) -> None:
        for i in range(len(self.ctx.tiles)):
            self.ctx.add(cs, "gather", i, {"data": [self.data[i]], "out": self.slots[i]}, offsets=[0])

    def copies(self, step: int) -> list:
        out = []
        for c, chain in enumerate(self.chains):
            sub = step - chain.delay
            if 1 <= sub <= chain.length:
                src, (dst, _) = self._sent(c, sub)
                out.append(CrossReplicaCopy(src, dst, self.ctx.shift_map(chain.direction),
                                            f"{self.ctx.name}/ring{chain.direction:+d}"))
        return out

    def compute(self, cs, step: int) -> None:
        arrivals = []  # (per-tile landing buffers, slot offset) of the chains that moved
        for c, chain in enumerate(self.chains):
            sub = step - chain.delay
            if 1 <= sub <= chain.length:
                arrivals.append((self._sent(c, sub)[1][1], (-chain.direction * sub) % self.ctx.size))
        if arrivals:  # one vertex per tile stores them all: each slot is written once
            for i in range(len(self.ctx.tiles)):
                self.ctx.add(cs, "gather", i, {"data": [landed[i] for landed, _ in arrivals], "out": self.slots[i]},
                             offsets=[offset for _, offset in arrivals])


def run_schedule(graph, prog, plans, name: str) -> None:
    """The plans' initial compute set, then each step's copies (adjacent: one exchange)
    and compute set."""
    cs = graph.add_compute_set(f"{name}/start")
    for plan in plans:
        plan.initial(cs)
    prog.add(Execute(cs))
    for step in range(1, max(plan.steps for plan in plans) + 1):
        prog.add(Sequence([c for plan in plans for c in plan.copies(step)]))
        cs = graph.add_compute_set(f"{name}/step{step}")
        for plan in plans:
            plan.compute(cs, step)
        prog.add(Execute(cs))
