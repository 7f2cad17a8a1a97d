"""IPU-Links between the IPUs of a device: which IPUs they join, how traffic is routed
over them, and how long a phase of inter-IPU transfers takes (docs/cost_model.md,
"IPU-Link topology").

Geometry. IPU ``i`` of a device sits on rung ``i // 2`` of a ladder, on rail ``i % 2``:
the two IPUs of a rung are card partners (PopLibs' model treats each pair as a card),
and each rail runs up the even or the odd IPUs (0, 2, 4, ... and 1, 3, 5, ...). On a "ladder"
(IPU-POD16) the rails end at the first and the last rung; on a "torus" (IPU-POD64 and
up) each rail wraps around from its last rung to its first.

Link counts, per direction, taken from the IPUModel that PopLibs' own tests build (the
global exchange constraints of PopLibs' test utilities, which give each
IPU 4 links to its card partner, 2 for traffic that crosses the rung on its way to another
card, 2 up the rail and 2 down it: a GC200's 10 IPU-Links):

- card partners ``i`` and ``i ^ 1``: ``RUNG_LINKS`` = 4;
- rail neighbours ``i`` and ``i +- 2`` (and, on a torus, the wrap-around pair): ``RAIL_LINKS`` = 2.

PopLibs keeps 2 of the rung's links for traffic forwarded to other cards apart from the 4
for the partner's own; this model has one count per directed pair, so all traffic over a
rung shares its 4 links. The two agree when a rung carries only its partner's traffic, or
forwarded traffic that all goes on the same way along the rail (that rail pair, of 2
links, carries at least the same bytes). Forwarded traffic that splits up and down the
rail can cross the rung up to twice as fast here; a rung carrying both kinds can be
slower or faster.

Routing is PopLibs' too: cross the rung first when the rails differ, then walk the rail
one rung at a time towards the destination (on a torus, the shorter way round, ties
broken upward). PopLibs' helper refuses odd IPU counts; popsim prices every target, so
with an odd count the last IPU is half a card: it has no partner, and traffic from it to
the other rail walks its own rail first and crosses the rung at the end.

A phase of transfers lasts as long as its busiest directed link pair needs for the bytes
routed over it, plus the hop latency times the longest route:

    max over (a, b) of ceil(bytes over (a, b) / (links(a, b) x link_bytes_per_cycle))
    + hop_latency_cycles x (the most hops of any flow)
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Tuple

from .arguments import as_int, as_positive_float
from .errors import PopsimError
from .target import IPU_LINK_TOPOLOGIES, IpuLinkTopologyType, Target

__all__ = ["IpuLinkTopology", "RUNG_LINKS", "RAIL_LINKS"]

#: Links joining card partners, per direction (PopLibs' IPUModel: 4 intra-card links).
RUNG_LINKS = 4
#: Links joining rail neighbours, per direction (PopLibs' IPUModel: 2 up, 2 down).
RAIL_LINKS = 2

Hop = Tuple[int, int]


@dataclass(frozen=True)
class IpuLinkTopology:
    """The IPU-Links of a device of ``num_ipus`` IPUs joined as a ``kind`` ("ladder" or
    "torus"); one link carries ``link_bytes_per_cycle`` bytes per tile-clock cycle in each
    direction, and each hop adds ``hop_latency_cycles``. Build it from a target with
    :meth:`of`."""

    kind: str
    num_ipus: int
    link_bytes_per_cycle: float
    hop_latency_cycles: int

    def __post_init__(self):
        if isinstance(self.kind, IpuLinkTopologyType):  # a target's field: keep the plain name
            object.__setattr__(self, "kind", self.kind.value)
        if self.kind not in IPU_LINK_TOPOLOGIES:
            allowed = ", ".join(repr(k) for k in IPU_LINK_TOPOLOGIES)
            raise PopsimError(f"unknown IPU-Link topology {self.kind!r}: expected one of {allowed}")
        object.__setattr__(self, "num_ipus", as_int(self.num_ipus, "IpuLinkTopology.num_ipus", low=1))
        object.__setattr__(self, "link_bytes_per_cycle",
                           as_positive_float(self.link_bytes_per_cycle, "IpuLinkTopology.link_bytes_per_cycle"))
        object.__setattr__(self, "hop_latency_cycles",
                           as_int(self.hop_latency_cycles, "IpuLinkTopology.hop_latency_cycles", low=0))

    @classmethod
    def of(cls, target: Target, num_ipus: Optional[int] = None) -> "IpuLinkTopology":
        """The topology of ``target``'s links across a device of ``num_ipus`` IPUs (default:
        the target's own; a replicated graph's target describes one replica, while its
        transfers cross the whole device)."""
        clock = target.tile_clock_frequency
        return cls(kind=target.ipu_link_topology,
                   num_ipus=target.num_ipus if num_ipus is None else num_ipus,
                   link_bytes_per_cycle=target.ipu_link_bytes_per_second / clock,
                   hop_latency_cycles=math.ceil(target.ipu_link_latency_seconds * clock))

    # -- geometry -------------------------------------------------------------------------
    def _check(self, ipu, what: str) -> int:
        i = as_int(ipu, what)
        if not 0 <= i < self.num_ipus:
            raise PopsimError(f"{what} {i} is out of range: the device has {self.num_ipus} IPU"
                              f"{'s' if self.num_ipus != 1 else ''} (0..{self.num_ipus - 1})")
        return i

    def _rail_length(self, rail: int) -> int:
        """IPUs on rail ``rail`` (the odd rail is one shorter when the count is odd)."""
        return (self.num_ipus - rail + 1) // 2

    def _rail_step(self, ipu: int, step: int) -> Optional[int]:
        """The IPU one rung up (``step`` +1) or down (-1) the rail from ``ipu``, or None at a
        ladder's end (or on a rail of one IPU)."""
        rail, rung = ipu % 2, ipu // 2
        length = self._rail_length(rail)
        there = rung + step
        if self.kind == "torus":
            if length < 2:
                return None
            there %= length
        elif not 0 <= there < length:
            return None
        return 2 * there + rail

    def _partner(self, ipu: int) -> Optional[int]:
        other = ipu ^ 1
        return other if other < self.num_ipus else None

    def links(self, a: int, b: int) -> int:
        """How many parallel links carry traffic from IPU ``a`` to neighbour IPU ``b`` (0 if
        they are not neighbours). Each of ``a``'s link groups (the rung, the 2 up the rail,
        the 2 down it) counts towards the IPU it reaches: on a torus of 2 rungs both rail
        groups reach the same IPU, which is then joined by 4 rail links."""
        a, b = self._check(a, "IPU"), self._check(b, "IPU")
        if a == b:
            return 0
        groups = ((self._partner(a), RUNG_LINKS), (self._rail_step(a, +1), RAIL_LINKS),
                  (self._rail_step(a, -1), RAIL_LINKS))
        return sum(count for there, count in groups if there == b)

    # -- routing --------------------------------------------------------------------------
    def _walk_rail(self, src: int, dst: int) -> List[Hop]:
        """Hops along one rail from ``src`` to ``dst`` (the same rail)."""
        here, goal = src // 2, dst // 2
        length = self._rail_length(src % 2)
        if self.kind == "torus":
            up = (goal - here) % length
            step = +1 if up <= length - up else -1  # the shorter way round; a tie goes up
        else:
            step = +1 if goal > here else -1
        hops, ipu = [], src
        while ipu != dst:
            nxt = self._rail_step(ipu, step)
            hops.append((ipu, nxt))
            ipu = nxt
        return hops

    def route(self, src: int, dst: int) -> List[Hop]:
        """The directed hops ``(a, b)`` a transfer from IPU ``src`` to IPU ``dst`` takes:
        across the rung first if the rails differ, then along the rail ([] if src == dst)."""
        src, dst = self._check(src, "source IPU"), self._check(dst, "destination IPU")
        if src == dst:
            return []
        if src % 2 == dst % 2:
            return self._walk_rail(src, dst)
        partner = self._partner(src)
        if partner is not None:
            return [(src, partner)] + self._walk_rail(partner, dst)
        # The half card's IPU has no rung to cross: the destination's partner always exists
        # (it is on the even rail, below the last IPU), so cross there.
        return self._walk_rail(src, dst ^ 1) + [(dst ^ 1, dst)]

    def hops(self, src: int, dst: int) -> int:
        """How many links a transfer from ``src`` to ``dst`` crosses."""
        return len(self.route(src, dst))

    # -- pricing --------------------------------------------------------------------------
    def _routed(self, flows: Iterable[Tuple[int, int, int]]) -> Tuple[Dict[Hop, int], int]:
        """Bytes over each directed link pair, and the most hops of any flow that moves data."""
        by_pair: Dict[Hop, int] = {}
        for k, flow in enumerate(flows):
            try:
                src, dst, nbytes = flow
            except (TypeError, ValueError):
                raise PopsimError(f"flow {k} must be (source IPU, destination IPU, bytes), found {flow!r}") from None
            src, dst = self._check(src, "source IPU"), self._check(dst, "destination IPU")
            nbytes = as_int(nbytes, f"the bytes of flow {k}", low=0)
            if nbytes and src != dst:  # nothing crosses a link: no bandwidth, no latency
                by_pair[src, dst] = by_pair.get((src, dst), 0) + nbytes
        loads: Dict[Hop, int] = {}
        most_hops = 0
        for (src, dst), nbytes in by_pair.items():  # each pair is routed once, however many flows it has
            path = self.route(src, dst)
            most_hops = max(most_hops, len(path))
            for hop in path:
                loads[hop] = loads.get(hop, 0) + nbytes
        return loads, most_hops

    def link_loads(self, flows: Iterable[Tuple[int, int, int]]) -> Dict[Hop, int]:
        """Bytes routed over each directed neighbour pair ``(a, b)`` by ``flows`` of
        (source IPU, destination IPU, bytes); pairs no flow uses are left out."""
        return self._routed(flows)[0]

    def transfer_cycles(self, flows: Iterable[Tuple[int, int, int]]) -> float:
        """Cycles a phase moving ``flows`` of (source IPU, destination IPU, bytes) takes: the
        flows sharing a directed link pair share its bandwidth; the busiest pair sets the
        pace, and the longest route adds its hops' latency. 0 when nothing crosses a link."""
        loads, most_hops = self._routed(flows)
        if not loads:
            return 0.0
        busiest = max(math.ceil(nbytes / (self.links(a, b) * self.link_bytes_per_cycle))
                      for (a, b), nbytes in loads.items())
        return float(busiest + self.hop_latency_cycles * most_hops)
