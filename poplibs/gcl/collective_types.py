"""GCL's vocabulary (gcl/Collectives.hpp): the reduction operators, communication groups
and the element types each operator takes, with the checks every collective makes of
its arguments."""
from __future__ import annotations

import enum
import numbers
from dataclasses import dataclass
from typing import List, Optional

import popsim
from popsim import BOOL, FLOAT, HALF, INT, UNSIGNED_INT

from ..poputil import PoplibsError

__all__ = ["CollectiveOperator", "CommGroupType", "CommGroup", "check_operator", "group_members"]


class CollectiveOperator(enum.Enum):
    """How a collective combines the replicas' values, element by element."""
    ADD = "ADD"
    MEAN = "MEAN"                 # ADD, then divided by the group size
    MUL = "MUL"
    MIN = "MIN"
    MAX = "MAX"
    LOGICAL_AND = "LOGICAL_AND"   # BOOL only
    LOGICAL_OR = "LOGICAL_OR"     # BOOL only
    SQUARE_ADD = "SQUARE_ADD"     # the sum of the squares
    LOCAL = "LOCAL"               # no reduction: each replica keeps its own value

    @property
    def cpp(self) -> str:
        """The C++ spelling, as vertex template names give it."""
        return f"gcl::CollectiveOperator::{self.name}"


class CommGroupType(enum.Enum):
    """Which replicas take part together: ALL of them; CONSECUTIVE groups of
    ``replica_group_size`` ({0..k-1}, {k..2k-1}, ...); or ORTHOGONAL groups, one member
    from each consecutive block ({0, m, 2m, ...}, {1, m+1, ...} with m = R / k)."""
    ALL = "ALL"
    CONSECUTIVE = "CONSECUTIVE"
    ORTHOGONAL = "ORTHOGONAL"


@dataclass(frozen=True)
class CommGroup:
    """GCL's CommGroup(type, replicaGroupSize, stride). A size of 0 means every
    replica (as GCL's default group). ``stride`` is accepted for GCL's signature; only
    1 is supported (popsim refuses strided groups rather than guess their layout)."""
    type: CommGroupType = CommGroupType.ALL
    replica_group_size: int = 0
    stride: int = 1

    def __post_init__(self):
        if not isinstance(self.type, CommGroupType):
            raise popsim.TypeError(f"CommGroup: type must be a gcl.CommGroupType (ALL, CONSECUTIVE, ORTHOGONAL), found "
                                   f"{self.type!r}")
        for name in ("replica_group_size", "stride"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
                raise ValueError(f"CommGroup: {name} must be a non-negative int, found {value!r}")
            object.__setattr__(self, name, int(value))
        if self.stride != 1:
            raise ValueError(f"CommGroup: stride {self.stride} is not supported; popsim's groups are CONSECUTIVE or "
                             "ORTHOGONAL blocks with stride 1")


#: the element types each operator reduces (GCL's instantiations); LOCAL moves nothing
_NUMERIC = (FLOAT, HALF, INT, UNSIGNED_INT)
OPERATOR_TYPES = {
    CollectiveOperator.ADD: _NUMERIC, CollectiveOperator.MEAN: (FLOAT, HALF),
    CollectiveOperator.MUL: _NUMERIC, CollectiveOperator.MIN: _NUMERIC, CollectiveOperator.MAX: _NUMERIC,
    CollectiveOperator.SQUARE_ADD: (FLOAT, HALF),
    CollectiveOperator.LOGICAL_AND: (BOOL,), CollectiveOperator.LOGICAL_OR: (BOOL,),
    CollectiveOperator.LOCAL: (FLOAT, HALF, INT, UNSIGNED_INT, BOOL),
}
#: the element types the data-movement collectives (all-gather, all-to-all) take
MOVE_TYPES = (FLOAT, HALF, INT, UNSIGNED_INT, BOOL)


def check_operator(op, dtype, what: str) -> CollectiveOperator:
    """``op`` as a CollectiveOperator, checked against the tensor's element type."""
    if isinstance(op, str) and op.upper() in CollectiveOperator.__members__:
        op = CollectiveOperator[op.upper()]
    if not isinstance(op, CollectiveOperator):
        raise PoplibsError(f"{what}: the operator must be a gcl.CollectiveOperator "
                           f"({', '.join(CollectiveOperator.__members__)}), found {op!r}")
    allowed = OPERATOR_TYPES[op]
    if dtype not in allowed:
        raise PoplibsError(f"{what}: {op.name} does not take {dtype.name} tensors; it takes "
                           f"{', '.join(t.name for t in allowed)}"
                           + (" (cast the tensor, or use ADD and divide)" if op is CollectiveOperator.MEAN
                                    else ""))
    return op


def group_members(group: Optional[CommGroup], replication_factor: int, what: str) -> List[List[int]]:
    """The replica groups ``group`` forms among ``replication_factor`` replicas, each
    in increasing replica order (so the rank of a replica in its group is its place
    in its list)."""
    if group is None:
        group = CommGroup()
    if not isinstance(group, CommGroup):
        raise PoplibsError(f"{what}: group must be a gcl.CommGroup, found {type(group).__name__}")
    r = replication_factor
    size = group.replica_group_size or r
    if group.type is CommGroupType.ALL:
        if size != r:
            raise PoplibsError(f"{what}: a CommGroup of type ALL spans all {r} replicas; its "
                               f"replica_group_size must be 0 or {r}, found {size}")
        return [list(range(r))]
    if size > r or r % size:
        raise PoplibsError(f"{what}: a {group.type.name} group of {size} replicas does not divide the "
                           f"replication factor {r}; use a group size that divides {r}")
    if group.type is CommGroupType.CONSECUTIVE:
        return [list(range(g * size, (g + 1) * size)) for g in range(r // size)]
    blocks = r // size
    return [list(range(g, r, blocks)) for g in range(blocks)]
