"""gcl: the Graphcore Communication Library's collectives (gcl/Collectives.hpp) on
popsim's replicated graphs: all-reduce, reduce-scatter, all-gather and all-to-all across
replicas, lowered as GCL lowers them, to ring steps of CrossReplicaCopy and on-tile
reductions; and their forms across the IPUs of one replica."""
from .collective_types import CollectiveOperator, CommGroup, CommGroupType

__all__ = ["CollectiveOperator", "CommGroup", "CommGroupType"]
from .cross_replica import (all_gather_cross_replica, all_reduce_cross_replica, all_reduce_in_place_cross_replica,
                            all_reduce_to_destination_cross_replica, all_to_all_cross_replica,
                            reduce_scatter_cross_replica)

# the names with the variant last, as popsim's API spells them too (docs/gcl.md)
all_reduce_cross_replica_in_place = all_reduce_in_place_cross_replica
all_reduce_cross_replica_to_destination = all_reduce_to_destination_cross_replica

__all__ += ["all_reduce_cross_replica", "all_reduce_in_place_cross_replica", "all_reduce_to_destination_cross_replica",
            "all_reduce_cross_replica_in_place", "all_reduce_cross_replica_to_destination",
            "reduce_scatter_cross_replica", "all_gather_cross_replica", "all_to_all_cross_replica"]
from .within_replica import (Chunk, Chunks, all_gather_within_replica, all_reduce_within_replica,  # noqa: E402
                             reduce_scatter_within_replica)

__all__ += ["Chunk", "Chunks", "all_reduce_within_replica", "reduce_scatter_within_replica",
            "all_gather_within_replica"]
