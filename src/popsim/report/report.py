"""The report: what a compiled graph holds and what its runs cost, as plain data.

``engine.get_report()`` builds one; ``report.to_json(path)`` saves it and
``popsim.open_report(path)`` reads it back. Everything in it comes from the memory
layout and the cycle model, never typed in by hand.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Dict, List, Optional

import numpy as np

SCHEMA_VERSION = 1


@dataclass
class TargetInfo:
    type: str
    arch: str
    num_ipus: int
    tiles_per_ipu: int
    num_tiles: int
    bytes_per_tile: int
    clock: float  # Hz
    num_worker_contexts: int

    @property
    def total_memory(self) -> int:
        return self.num_tiles * self.bytes_per_tile


@dataclass
class GraphInfo:
    num_vertices: int
    num_edges: int
    num_variables: int
    num_compute_sets: int


@dataclass
class MemoryInfo:
    """Bytes per tile, by category; ``tiles[t]`` is tile t's total."""

    bytes_per_tile: int
    by_category: Dict[str, List[int]]
    # The fullest tiles: [{"tile": t, "tensors": [[name, bytes], ...]}, ...], fullest first.
    largest: List[Dict[str, object]] = field(default_factory=list)

    @property
    def tiles(self) -> np.ndarray:
        cats = list(self.by_category.values())
        return np.sum(np.asarray(cats, np.int64), axis=0) if cats else np.zeros(0, np.int64)

    @property
    def total(self) -> int:
        return int(self.tiles.sum())

    def category_total(self, name: str) -> int:
        return int(np.sum(self.by_category.get(name, [])))

    @property
    def max_tile(self) -> int:
        tiles = self.tiles
        return int(np.argmax(tiles)) if tiles.size else 0

    @property
    def max_bytes(self) -> int:
        tiles = self.tiles
        return int(tiles.max()) if tiles.size else 0

    @property
    def tiles_out_of_memory(self) -> List[int]:
        return np.flatnonzero(self.tiles > self.bytes_per_tile).tolist()


@dataclass
class StepInfo:
    """One place in the lowered program; cycle figures are totals over its ``count`` runs."""

    name: str
    kind: str
    program: str
    count: int
    cycles: float
    categories: Dict[str, float]  # tile-average cycles per activity, summed over runs
    tile_compute: Optional[List[float]] = None   # per tile, one run
    tile_exchange: Optional[List[float]] = None  # per tile, one run


@dataclass
class VertexTypeCycles:
    """Cycles spent by all vertices of one type (summed over their workers and runs)."""

    name: str
    instances: int
    cycles: float


@dataclass
class ExecutionInfo:
    total_cycles: float
    programs_executed: List[Dict[str, object]]  # [{"index", "name", "runs"}]
    steps: List[StepInfo]
    categories: Dict[str, float]  # tile averages over the whole execution
    vertex_types: List[VertexTypeCycles] = field(default_factory=list)

    def cycles_by_kind(self) -> Dict[str, float]:
        out: Dict[str, float] = {}
        for s in self.steps:
            out[s.kind] = out.get(s.kind, 0.0) + s.cycles
        return out


@dataclass
class Report:
    target: TargetInfo
    graph: GraphInfo
    memory: MemoryInfo
    execution: ExecutionInfo
    options: Dict[str, str] = field(default_factory=dict)
    warnings: List[str] = field(default_factory=list)
    schema_version: int = SCHEMA_VERSION

    def to_dict(self) -> dict:
        return asdict(self)

    def to_json(self, path) -> None:
        """Save as JSON (schema version ``SCHEMA_VERSION``)."""
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.to_dict(), f, separators=(",", ":"))

    @classmethod
    def from_dict(cls, d: dict) -> "Report":
        from ..errors import PopsimError
        version = d.get("schema_version")
        if version != SCHEMA_VERSION:
            raise PopsimError(f"report schema version {version!r} is not supported: this popsim reads version "
                              f"{SCHEMA_VERSION}; re-create the report with this version")
        ex = d["execution"]
        return cls(target=TargetInfo(**d["target"]), graph=GraphInfo(**d["graph"]),
                   memory=MemoryInfo(**d["memory"]),
                   execution=ExecutionInfo(total_cycles=ex["total_cycles"], programs_executed=ex["programs_executed"],
                                           steps=[StepInfo(**s) for s in ex["steps"]], categories=ex["categories"],
                                           vertex_types=[VertexTypeCycles(**t) for t in ex.get("vertex_types", [])]),
                   options=d.get("options", {}), warnings=d.get("warnings", []), schema_version=version)

    def summary(self, options: Optional[Dict[str, str]] = None) -> str:
        from .summary import format_summary
        return format_summary(self, options or {})


def open_report(path) -> Report:
    """Read a report saved with ``report.to_json`` (or by ``autoReport``)."""
    from ..errors import PopsimError
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        raise PopsimError(f"cannot open report {str(path)!r}: {e}") from None
    return Report.from_dict(data)
