"""The rings GCL sends fragments around, and the method its ``auto`` option picks.

A group's ring follows the IPU-Links. With one IPU per replica, replicas 2i and 2i+1
share a rung of the ladder, so the ring goes up one rail and down the other (replicas
0, 2, 4, ..., then the odd ones in decreasing order): every step is one link hop, on
the ladder and the torus alike. With several IPUs per replica, or a group that is not a
block of consecutive replicas, the ring visits the replicas in order (the torus closes
it with its wrap-around links; on a ladder the step back to the first replica takes
several hops). The rank of a replica in its group is its place among the group's
members in increasing order; its position is its place on the ring.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List

__all__ = ["Rings", "make_rings", "pick_method"]


@dataclass(frozen=True)
class Rings:
    """The rings of every group of one collective (all the same length n)."""
    orders: List[List[int]]   # per group: its replicas in ring order
    replicas: int             # the replication factor

    @property
    def size(self) -> int:
        return len(self.orders[0])

    def positions(self) -> List[int]:
        """Each replica's position on its ring."""
        out = [0] * self.replicas
        for ring in self.orders:
            for q, r in enumerate(ring):
                out[r] = q
        return out

    def ranks_in_ring_order(self) -> List[int]:
        """For each ring position q, the group rank of the replica there (the same for
        every group: the groups are laid out alike)."""
        ring = self.orders[0]
        members = sorted(ring)
        return [members.index(r) for r in ring]

    def shift_map(self, k: int) -> Dict[int, int]:
        """The CrossReplicaCopy map sending from every position q to q + k of its ring."""
        n = self.size
        return {ring[q]: ring[(q + k) % n] for ring in self.orders for q in range(n) if (q + k) % n != q}


def make_rings(groups: List[List[int]], replicas: int, ipus_per_replica: int, rank_order: bool = False) -> Rings:
    """The ring of each group (``rank_order``: the members in rank order, for the
    methods that do not follow the links)."""
    orders = []
    for members in groups:
        n = len(members)
        consecutive = members == list(range(members[0], members[0] + n))
        if rank_order or ipus_per_replica > 1 or not consecutive or n <= 2:
            orders.append(list(members))
        else:
            up, down = members[0::2], members[1::2]  # one rail up, the other down
            orders.append(up + down[::-1])
    return Rings(orders, replicas)


# GCL's thresholds (bytes per IPU) for choosing meet-in-the-middle over the ring pair,
# by the number of ranks above which each applies: all-gather, reduce-scatter
_MEET_IN_MIDDLE_BELOW = {"all_gather": ((0, 622592), (4, 2490368), (8, 19922944)),
                         "reduce_scatter": ((0, 1245184), (4, 4980736), (8, 39845888))}


def pick_method(kind: str, nbytes: int, ranks: int, ipus_per_replica: int, topology: str) -> str:
    """GCL's ``auto`` choice for a reduce-scatter or all-gather of ``nbytes`` per replica
    over ``ranks`` replicas: one-way rings for small rings and multi-IPU replicas,
    meet-in-the-middle for small data or many ranks, else the bidirectional ring pair."""
    if ipus_per_replica > 1 and topology == "torus":
        return "meet_in_middle_ring"
    if ipus_per_replica > 1 or ranks <= 2:
        return "clockwise_ring"
    if ranks > 16 or any(ranks > above and nbytes < limit for above, limit in _MEET_IN_MIDDLE_BELOW[kind]):
        return "meet_in_middle_ring"
    return "bidirectional_ring_pair"
