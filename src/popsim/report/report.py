"""The report: what a compiled graph holds and what its runs cost, as plain data.

``engine.get_report()`` builds one; ``report.to_json(path)`` saves it (the schema is
documented in docs/report_schema.md) and ``popsim.open_report(path)`` reads it back.
Everything in it comes from the memory layout and the cycle model, never typed in by
hand.
"""
from __future__ import annotations

import json
import dataclasses
from dataclasses import dataclass, field
from typing import Dict, List, Optional

import numpy as np

from ..compilation import CompilationInfo

SCHEMA_VERSION = 2


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
    """Bytes per tile, by category; ``tiles[t]`` is tile t's total.

    ``liveness``: for each step of the program, the bytes live while it runs: what is
    always live (variables, constants, vertex state, code) plus what only that step
    needs (its exchange buffers)."""

    bytes_per_tile: int
    by_category: Dict[str, List[int]]
    # The fullest tiles, fullest first: [{"tile": t, "tensors": [[name, bytes], ...]}, ...]
    largest: List[Dict[str, object]] = field(default_factory=list)
    always_live: int = 0
    liveness: List[int] = field(default_factory=list)  # per step: total bytes live during it
    # Exchange-buffer bytes saved because vertices on one tile reading the same elements
    # share one receive buffer (what separate buffers would add, over all compute sets).
    exchange_buffers_shared: int = 0

    @property
    def tiles(self) -> np.ndarray:
        cats = list(self.by_category.values())
        return np.sum(np.asarray(cats, np.int64), axis=0) if cats else np.zeros(0, np.int64)

    @property
    def total(self) -> int:
        return int(self.tiles.sum())

    def category_total(self, name: str) -> int:
        return int(np.sum(self.by_category.get(name, [])))

    def tile_breakdown(self, tile: int) -> Dict[str, int]:
        return {name: int(values[tile]) for name, values in self.by_category.items()}

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
    """One place in the lowered program; cycle figures are totals over its ``count`` runs.

    ``tile_compute`` / ``tile_exchange``: cycles of one run on each tile (compute sets:
    averaged over their runs); a tile's sync is the rest of the step's duration."""

    name: str
    kind: str
    program: str
    count: int
    cycles: float
    categories: Dict[str, float]  # tile-average cycles per activity, summed over runs
    tile_compute: Optional[List[float]] = None
    tile_exchange: Optional[List[float]] = None
    compute_set: Optional[str] = None


@dataclass
class VertexTypeCycles:
    """Cycles spent by all vertices of one type (summed over their workers and runs)."""

    name: str
    instances: int
    cycles: float


@dataclass
class ComputeSetCycles:
    """A compute set: its vertices, runs, and the cycles of all its Execute steps."""

    name: str
    vertices: int
    runs: int
    cycles: float


@dataclass
class ExecutionInfo:
    total_cycles: float
    programs_executed: List[Dict[str, object]]  # [{"index", "name", "runs"}]
    steps: List[StepInfo]
    categories: Dict[str, float]  # tile averages over the whole execution
    vertex_types: List[VertexTypeCycles] = field(default_factory=list)
    compute_sets: List[ComputeSetCycles] = field(default_factory=list)
    # The first steps executed, in order: [step index, start cycle, cycles]; capped.
    trace: List[List[float]] = field(default_factory=list)
    trace_truncated: bool = False

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
    compilation: CompilationInfo = field(default_factory=CompilationInfo)
    options: Dict[str, str] = field(default_factory=dict)
    warnings: List[str] = field(default_factory=list)
    popsim_version: str = ""
    schema_version: int = SCHEMA_VERSION

    def to_dict(self) -> dict:
        """The report as JSON-ready data (lists of numbers are passed on as they are)."""
        return _plain(self)

    def to_json(self, path) -> None:
        """Save as JSON (schema version ``SCHEMA_VERSION``, docs/report_schema.md)."""
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.to_dict(), f, separators=(",", ":"))

    @classmethod
    def from_dict(cls, d: dict) -> "Report":
        from ..errors import PopsimError
        version = d.get("schema_version")
        if version != SCHEMA_VERSION:
            raise PopsimError(f"report schema version {version!r} is not supported: this popsim reads version "
                              f"{SCHEMA_VERSION}; re-create the report with this version")
        try:
            ex = dict(d["execution"])
            ex["steps"] = [StepInfo(**s) for s in ex["steps"]]
            ex["vertex_types"] = [VertexTypeCycles(**t) for t in ex.get("vertex_types", [])]
            ex["compute_sets"] = [ComputeSetCycles(**c) for c in ex.get("compute_sets", [])]
            return cls(target=TargetInfo(**d["target"]), graph=GraphInfo(**d["graph"]),
                       memory=MemoryInfo(**d["memory"]), execution=ExecutionInfo(**ex),
                       compilation=CompilationInfo(**d.get("compilation", {})), options=d.get("options", {}),
                       warnings=d.get("warnings", []), popsim_version=d.get("popsim_version", ""),
                       schema_version=version)
        except (KeyError, TypeError) as e:
            raise PopsimError(f"the report is malformed ({type(e).__name__}: {e}); re-create it") from None

    def summary(self, options: Optional[Dict[str, str]] = None) -> str:
        from .summary import format_summary
        return format_summary(self, options or {})


def _plain(value):
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        if value and isinstance(value[0], (int, float)) and not isinstance(value[0], bool):
            return list(value)
        return [_plain(v) for v in value]
    if hasattr(value, "tolist"):  # numpy arrays and scalars
        return value.tolist()
    return value


def open_report(path) -> Report:
    """Read a report saved with ``report.to_json`` (or by ``autoReport``): a
    profile.json file, or the directory holding one."""
    import os
    from ..errors import PopsimError
    if os.path.isdir(path):
        path = os.path.join(path, "profile.json")
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as e:
        raise PopsimError(f"cannot open report {str(path)!r}: {e}") from None
    if not isinstance(data, dict):
        raise PopsimError(f"cannot open report {str(path)!r}: it is not a popsim report (a JSON object)")
    return Report.from_dict(data)
