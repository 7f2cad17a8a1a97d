"""GraphDescription: everything a graph holds, as lowering, the executable-cache digest
and the reference executor read it.

A top-level graph and its virtual graphs share one description (``graph.description``).
It is the one seam between building a graph and consuming it: a new concept (a replica
count, the IPUs of a replica, the replication-index constants) is added here once and
every consumer sees it, instead of each reaching into the graph's private attributes.

A replicated graph (``Graph(device, replication_factor=R)``) describes ONE replica: its
``target`` has the device's IPUs divided by R, tiles numbered from 0; lowering compiles
that replica once and the engine runs R copies of its tile state.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Dict, List, Optional, Tuple

import numpy as np

from . import errors
from .arguments import found
from .codelet.registry import CodeletRegistry
from .target import Target
from .variables import VariableTable

if TYPE_CHECKING:  # only for annotations: these modules import this one
    from .program import Function
    from .streams import DataStream
    from .tensor import Tensor
    from .vertices import ComputeSet

__all__ = ["GraphDescription"]


@dataclass(eq=False)
class GraphDescription:
    """What a graph (and its virtual graphs) holds.

    ``target``: one replica's target. ``replication_factor``: how many replicas run it.
    ``table``: the variables and constants (the only state). ``compute_sets``,
    ``functions``: by index. ``streams``, ``host_writes``, ``host_reads``: by handle.
    ``initial_values``: (view, values) in the order they were set. ``replication_index``:
    the constants whose value is each replica's index (add_replication_index_constant).
    ``estimators``: perf estimators by vertex type name. ``codelets``: the registered
    vertex types."""

    target: Target
    replication_factor: int = 1
    table: VariableTable = field(default_factory=VariableTable)
    compute_sets: List["ComputeSet"] = field(default_factory=list)
    streams: Dict[str, "DataStream"] = field(default_factory=dict)
    host_writes: Dict[str, "Tensor"] = field(default_factory=dict)
    host_reads: Dict[str, "Tensor"] = field(default_factory=dict)
    functions: List["Function"] = field(default_factory=list)
    initial_values: List[Tuple["Tensor", np.ndarray]] = field(default_factory=list)
    replication_index: List["Tensor"] = field(default_factory=list)
    codelets: CodeletRegistry = field(default_factory=CodeletRegistry)
    estimators: Dict[str, object] = field(default_factory=dict)
    names: Dict[str, int] = field(default_factory=dict)

    # -- the machine it describes ------------------------------------------------------------
    @property
    def device_ipus(self) -> int:
        """IPUs of the whole device: every replica's."""
        return self.target.num_ipus * self.replication_factor

    def streams_by_index(self) -> List["DataStream"]:
        return sorted(self.streams.values(), key=lambda s: s.index)

    def unique_name(self, name: Optional[str], default: str) -> str:
        """Debug names as given; unnamed objects get ``default`` plus a counter."""
        if name is not None and not isinstance(name, str):
            raise errors.TypeError(f"a debug name must be a string, found {found(name)} (for a {default})")
        if name:
            return name
        n = self.names.get(default, 0)
        self.names[default] = n + 1
        return f"{default}{n}" if n else default
