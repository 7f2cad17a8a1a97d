"""Ring schedules: the programs of a reduce-scatter and an all-gather around rings of
replicas, step by step.

A *chain* carries fragments one way around a ring for ``length`` steps, starting after
``delay`` steps: direction +1 sends from ring position q to q + 1, -1 to q - 1. A
reduce-scatter's chain of length L brings the fragment owned by position o from
position o - dL, each replica on the way adding its own piece: at sub-step s position p
receives the partial result for the fragment of position p + d(L - s), and the owner
(s = L) finishes it. A one-way ring is one chain of length n - 1; meet-in-the-middle
is two chains, one each way, of lengths ceil((n-1)/2) and floor((n-1)/2), the shorter
delayed so that both arrive at the owner at the last step. An all-gather's chain of
length L carries each owner's fragment to the next L positions its way.

Which fragment a replica sends depends on its ring position, but for each pair of
neighbours it is fixed: so a step is one CrossReplicaCopy per position q (map
{ring[q]: ring[q + d]} in every group), sending that fragment's pieces from where they
lie, all adjacent in one Sequence so that they move as one exchange. Only what a
replica does with what it received depends on its position: a reduce-scatter step's
compute set (gcl::ReduceStep) picks the fragment by the ring position each tile holds.
An all-gather needs no compute: each fragment is copied from its slot to the same slot
of the next replica.

The order in which a fragment is reduced is fixed by the ring: for the fragment of
position o, a one-way ring folds x[o - d(n-1)], then x[o - d(n-2)], ..., and last x[o]
(acc = x_next op acc); meet-in-the-middle computes (x[o] op cw) op acw, each side
folded from its far end.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional

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


def chains_for(method: str, n: int, aligned: bool = True) -> List[List[Chain]]:
    """The rings (each a list of chains sharing one set of fragments) a method runs over
    a ring of n replicas: one ring, except the ring pair's two (half the data each: the
    first half of the elements, tile after tile, clockwise, the rest anticlockwise).
    ``aligned``: meet-in-the-middle's shorter chain waits to arrive with the other (a
    reduce-scatter's owner combines both)."""
    if method == "clockwise_ring":
        return [[Chain(1, n - 1)]]
    if method == "anticlockwise_ring":
        return [[Chain(-1, n - 1)]]
    if method == "bidirectional_ring_pair":
        return [[Chain(1, n - 1)], [Chain(-1, n - 1)]]
    if method == "meet_in_middle_ring":
        cw, acw = n // 2, (n - 1) // 2
        return [[Chain(1, cw)] + ([Chain(-1, acw, cw - acw if aligned else 0)] if acw else [])]
    raise ValueError(method)


@dataclass
class RingContext:
    """What every step of one collective shares: the graph, element type, the rings,
    the tiles that take part and each tile's copy of this replica's ring position."""
    graph: object
    dtype: object
    rings: object
    tiles: List[int]
    positions: List[popsim.Tensor]  # per tile: an UNSIGNED_INT scalar
    name: str

    @property
    def size(self) -> int:
        return self.rings.size

    @classmethod
    def create(cls, graph, dtype, rings, tiles, prog, name: str) -> "RingContext":
        """Set up the positions: one compute set reading the replication index."""
        index = graph.add_replication_index_constant(f"{name}/replicationIndex")
        table = graph.add_constant(UNSIGNED_INT, (rings.replicas,), rings.positions(), f"{name}/ringPositions")
        position = graph.add_variable(UNSIGNED_INT, (max(1, len(tiles)),), f"{name}/ringPosition")
        first = tiles[0] if tiles else 0
        for t in (index, table, position):
            graph.set_tile_mapping(t, first)
        cs = graph.add_compute_set(f"{name}/ringPosition")
        vertex = ensure_vertex(graph, "position")
        for i, tile in enumerate(tiles):
            graph.set_tile_mapping(position[i], tile)
            v = graph.add_vertex(cs, vertex, {"index": index, "positions": table, "position": position[i]})
            graph.set_tile_mapping(v, tile)
        if tiles:
            prog.add(Execute(cs))
        return cls(graph, dtype, rings, list(tiles), [position[i] for i in range(len(tiles))], name)

    def add(self, cs, kind: str, i: int, fields: dict, op=None, in_place: bool = False, **state) -> None:
        graph = self.graph
        v = graph.add_vertex(cs, ensure_vertex(graph, kind, self.dtype, op, in_place),
                             {"position": self.positions[i], **fields})
        for key, value in state.items():
            graph.set_initial_value(v[key], value)
        graph.set_tile_mapping(v, self.tiles[i])

    def subset(self, indices, part: str = "") -> "RingContext":
        """The same collective on some of its tiles (``indices`` into ``tiles``); what it
        adds is named after ``part`` (one ring of several) too."""
        return RingContext(self.graph, self.dtype, self.rings, [self.tiles[i] for i in indices],
                           [self.positions[i] for i in indices], f"{self.name}/{part}" if part else self.name)

    def buffer(self, widths, what: str):
        return per_tile_buffer(self.graph, self.dtype, self.tiles, widths, f"{self.name}/{what}")

    def pair_copies(self, direction: int, src_of, dst_of, what: str) -> list:
        """One CrossReplicaCopy per ring position q, from ``src_of(q)`` on the replica
        at q to ``dst_of(q)`` on the one at q + direction (in every group)."""
        n, out = self.size, []
        for q in range(n):
            pairs = {ring[q]: ring[(q + direction) % n] for ring in self.rings.orders}
            out.append(CrossReplicaCopy(src_of(q), dst_of(q), pairs, f"{self.name}/{what}"))
        return out


def _fragment(pieces, o: int, lengths_of: Optional[list] = None):
    """Fragment ``o``: its piece on every tile (``lengths_of``: cut to those pieces'
    lengths, for the per-tile buffers the fragment lands in)."""
    parts = [p[o] if lengths_of is None else p[:lengths_of[i][o].num_elements()] for i, p in enumerate(pieces)]
    return popsim.concat(parts) if len(parts) > 1 else parts[0]


class _Fragments:
    """Each fragment's view made once: a fragment is a view of thousands of pieces, and
    several steps send it."""

    def __init__(self, pieces, lengths_of=None):
        self.pieces, self.lengths_of, self.made = pieces, lengths_of, {}

    def __getitem__(self, o: int):
        if o not in self.made:
            self.made[o] = _fragment(self.pieces, o, self.lengths_of)
        return self.made[o]


@dataclass
class ReduceScatterPlan:
    """One ring's reduce-scatter. ``local[i]``: tile i's n pieces of the data, in
    ring-position order; ``result[i]``: where the owner's finished fragment goes: a
    list of one static buffer, or n pieces like ``local`` (then the owner's own; they
    may be ``local`` itself: in place). Each chain adds its partial results into a
    buffer of its own and sends them on from there."""
    ctx: RingContext
    local: List[List[popsim.Tensor]]
    result: List[List[popsim.Tensor]]
    chains: List[Chain]
    op: Op
    acc: list = field(default_factory=list)
    received: list = field(default_factory=list)

    def __post_init__(self):
        # SQUARE_ADD squares every piece first (into the result's pieces when it has n,
        # else in place), then adds: each replica's values are squared once, at home.
        self.squares = None
        if self.op is Op.SQUARE_ADD and self.steps > 0:
            target = self.result if len(self.result[0]) > 1 else self.local
            self.squares = (self.local, target)
            self.local, self.op = target, Op.ADD
        widths = [max((p.num_elements() for p in pieces), default=0) for pieces in self.local]
        for c, _ in enumerate(self.chains):
            self.acc.append(self.ctx.buffer(widths, f"partial{c}"))
            self.received.append(self.ctx.buffer(widths, f"received{c}"))

    @property
    def steps(self) -> int:
        return max((c.length + c.delay for c in self.chains), default=0)

    def _reduce(self, cs, i, out, received, offset, divisor=0, op=None, local=None):
        local = self.local[i] if local is None else local
        fields = {"received": received, "out": out}
        in_place = out is local
        if not in_place:
            fields["local"] = local
        self.ctx.add(cs, "reduce", i, fields, op=op or self.op, in_place=in_place, offset=offset % self.ctx.size,
                     divisor=divisor)

    def initial(self, cs) -> None:
        """The squares for SQUARE_ADD, the whole result for a ring of one; else nothing:
        the first copies send the data itself."""
        if self.steps == 0:
            for i in range(len(self.ctx.tiles)):
                self._reduce(cs, i, self.result[i], [], 0, self.ctx.size if self.op is Op.MEAN else 0)
        elif self.squares is not None:
            source, target = self.squares
            for i in range(len(self.ctx.tiles)):
                for a, b in zip(source[i], target[i]):  # one vertex per piece: each writes its own
                    self._reduce(cs, i, [b] if a is not b else [a], [], 0, op=Op.SQUARE_ADD,
                                 local=[a] if a is not b else None)

    def copies(self, step: int) -> list:
        out = []
        for c, chain in enumerate(self.chains):
            sub, d = step - chain.delay, chain.direction
            if sub == 1:  # the data itself: from each position, the fragment its chain starts
                sent = [(q + d * chain.length) % self.ctx.size for q in range(self.ctx.size)]
                src, dst = _Fragments(self.local), _Fragments(self.received[c][1], self.local)
                out += self.ctx.pair_copies(d, lambda q: src[sent[q]], lambda q: dst[sent[q]], f"ring{d:+d}")
            elif 1 < sub <= chain.length:
                out.append(CrossReplicaCopy(self.acc[c][0], self.received[c][0], self.ctx.rings.shift_map(d),
                                            f"{self.ctx.name}/ring{d:+d}"))
        return out

    def compute(self, cs, step: int) -> None:
        for c, chain in enumerate(self.chains):
            sub = step - chain.delay
            if 1 <= sub < chain.length:
                for i in range(len(self.ctx.tiles)):
                    self._reduce(cs, i, [self.acc[c][1][i]], [self.received[c][1][i]],
                                 chain.direction * (chain.length - sub))
        if step == self.steps:
            divisor = self.ctx.size if self.op is Op.MEAN else 0
            for i in range(len(self.ctx.tiles)):
                self._reduce(cs, i, self.result[i], [b[1][i] for b in self.received], 0, divisor)


@dataclass
class AllGatherPlan:
    """One ring's all-gather: ``slots[i]`` are tile i's n destinations in ring-position
    order, each replica's own slot already filled."""
    ctx: RingContext
    slots: List[List[popsim.Tensor]]
    chains: List[Chain]

    def __post_init__(self):
        self.fragments = _Fragments(self.slots)

    @property
    def steps(self) -> int:
        return max((c.length + c.delay for c in self.chains), default=0)

    def initial(self, cs) -> None:
        pass

    def copies(self, step: int) -> list:
        out = []
        for chain in self.chains:
            sub = step - chain.delay
            if 1 <= sub <= chain.length:
                d = chain.direction
                sent = [(q - d * (sub - 1)) % self.ctx.size for q in range(self.ctx.size)]
                fragment = [self.fragments[o] for o in sent]
                out += self.ctx.pair_copies(d, fragment.__getitem__, fragment.__getitem__, f"ring{d:+d}")
        return out

    def compute(self, cs, step: int) -> None:
        pass


def run_schedule(graph, prog, plans, name: str) -> None:
    """The plans' initial compute set (when they have work in it), then each step's
    copies (adjacent: one exchange) and compute set (when it has vertices)."""
    cs = graph.add_compute_set(f"{name}/start")
    for plan in plans:
        plan.initial(cs)
    if cs.num_vertices():
        prog.add(Execute(cs))
    for step in range(1, max(plan.steps for plan in plans) + 1):
        prog.add(Sequence([c for plan in plans for c in plan.copies(step)]))
        cs = graph.add_compute_set(f"{name}/step{step}")
        for plan in plans:
            plan.compute(cs, step)
        if cs.num_vertices():
            prog.add(Execute(cs))
