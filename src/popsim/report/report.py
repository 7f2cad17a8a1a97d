"""The report: what a compiled graph holds and what its runs cost, as plain data.

``engine.get_report()`` builds one; ``report.to_json(path)`` saves it (the schema is
documented in docs/report_schema.md) and ``popsim.open_report(path)`` reads it back.
Everything in it comes from the memory layout and the cycle model, never typed in by
hand.
"""
from __future__ import annotations

import json
import dataclasses
import os
from dataclasses import dataclass, field
from typing import Dict, List, NamedTuple, Optional, Union

import numpy as np

from ..compilation import CompilationInfo

SCHEMA_VERSION = 4


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
    replicas: int = 1  # a replicated graph: the figures above are one replica's

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
    always live (always-live variables, constants, vertex state, code) plus what only
    that step needs (its exchange buffers and the not-always-live variables live then).
    ``not_always_live``: bytes, over all tiles, that variables which are not always live
    take, sharing memory where their live ranges do not overlap (part of "variables")."""

    bytes_per_tile: int
    by_category: Dict[str, List[int]]
    # The fullest tiles, fullest first: [{"tile": t, "tensors": [[name, bytes], ...]}, ...]
    largest: List[Dict[str, object]] = field(default_factory=list)
    always_live: int = 0
    liveness: List[int] = field(default_factory=list)  # per step: total bytes live during it
    not_always_live: int = 0
    # Exchange-buffer bytes saved because vertices on one tile reading the same elements
    # share one receive buffer (what separate buffers would add, over all compute sets).
    exchange_buffers_shared: int = 0

    def figures(self) -> "TileFigures":
        """The per-tile totals and what is derived from them, from one conversion of the
        lists (readers that need several of the properties below ask for this once)."""
        cats = list(self.by_category.values())
        per_category = np.asarray(cats, np.int64) if cats else np.zeros((0, 0), np.int64)
        tiles = per_category.sum(axis=0) if cats else np.zeros(0, np.int64)
        return TileFigures(
            tiles=tiles, total=int(tiles.sum()), max_tile=int(np.argmax(tiles)) if tiles.size else 0,
            max_bytes=int(tiles.max()) if tiles.size else 0,
            out_of_memory=np.flatnonzero(tiles > self.bytes_per_tile).tolist(),
            category_totals=dict(zip(self.by_category, per_category.sum(axis=1).tolist())) if cats else {})

    @property
    def tiles(self) -> np.ndarray:
        return self.figures().tiles

    @property
    def total(self) -> int:
        return self.figures().total

    def category_total(self, name: str) -> int:
        return int(np.sum(self.by_category.get(name, [])))

    def tile_breakdown(self, tile: int) -> Dict[str, int]:
        return {name: int(values[tile]) for name, values in self.by_category.items()}

    @property
    def max_tile(self) -> int:
        return self.figures().max_tile

    @property
    def max_bytes(self) -> int:
        return self.figures().max_bytes

    @property
    def tiles_out_of_memory(self) -> List[int]:
        return self.figures().out_of_memory


class TileFigures(NamedTuple):
    """``MemoryInfo.figures()``: bytes per tile and what follows from them."""

    tiles: np.ndarray                 # per tile: its total over the categories
    total: int                        # over all tiles
    max_tile: int                     # the fullest tile (the first of equals; 0 with no tiles)
    max_bytes: int                    # its bytes
    out_of_memory: List[int]          # tiles holding more than bytes_per_tile
    category_totals: Dict[str, int]   # per category: over all tiles


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
    # Several IPUs: the cycles each IPU of a replica spent on it (its waits included);
    # ``cycles`` is the most of them.
    ipu_cycles: Optional[List[float]] = None


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
    # The first steps executed, in order: [step index, IPU, start cycle, cycles], one
    # row per IPU a step charges; capped.
    trace: List[List[float]] = field(default_factory=list)
    trace_truncated: bool = False
    # Per IPU of a replica: the cycles it ran, its clock less its waits for the last IPU
    # at the ends of runs (total_cycles is the largest). Each IPU keeps its own clock:
    # work on one overlaps work on another (docs/multi_ipu.md).
    ipu_cycles: List[float] = field(default_factory=list)

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

    def to_json_text(self) -> str:
        """The report as the compact JSON text ``to_json`` saves."""
        return json_text(self.to_dict())

    def to_json(self, path: Union[str, os.PathLike]) -> None:
        """Save as JSON (schema version ``SCHEMA_VERSION``, docs/report_schema.md)."""
        text = self.to_json_text()
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)

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


def json_text(data) -> str:
    """``data`` (``Report.to_dict()`` or a part of it) as profile.json spells it: compact.

    ``json.dumps`` runs the C encoder in one pass; ``json.dump`` to a file would run the
    pure-Python one, several times slower on the per-tile lists, for the same text."""
    return json.dumps(data, separators=(",", ":"))


def part_json_text(value) -> str:
    """The JSON text of one part of a report (a field's value), as profile.json spells it."""
    return json_text(_plain(value))


def report_json_text(report: "Report", known: Dict[str, str]) -> str:
    """``report.to_json_text()``, with the JSON text of some top-level fields given:
    ``known[name]`` must be ``part_json_text`` of that field (a writer that makes report
    after report keeps the text of what does not change). The same text as serialising
    the whole: compact JSON of an object is its members' texts joined."""
    members = []
    for f in dataclasses.fields(report):
        text = known.get(f.name)
        members.append(f"{json.dumps(f.name)}:{part_json_text(getattr(report, f.name)) if text is None else text}")
    return "{" + ",".join(members) + "}"


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
