"""Building a Report from an executable and, when it has run, what its runs counted.

The report never looks inside an engine: the engine hands it an ExecutionProfile (the
core's counters, copied out) and the report reads only that and the executable.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional

import numpy as np

from ..contract import CAT
from ..lower import CATEGORIES
from ..version import __version__
from .report import (ComputeSetCycles, ExecutionInfo, GraphInfo, MemoryInfo, Report, StepInfo, TargetInfo,
                     TileFigures, VertexTypeCycles)

__all__ = ["ExecutionProfile", "StaticParts", "build_report", "static_parts"]


@dataclass
class ExecutionProfile:
    """What an engine's runs have counted so far (``Engine.execution_profile()``)."""

    step_counts: np.ndarray       # per step: how many times it ran
    step_cycles: np.ndarray       # per step x IPU of a replica x CATEGORIES: cycles, summed over its runs
    group_cycles: np.ndarray      # per tile group of a compute set: compute cycles, summed
    vertex_cycles: np.ndarray     # per vertex row: cycles, summed
    trace: np.ndarray             # (step, IPU, start cycle, cycles) rows of the first steps run
    trace_truncated: bool
    ipu_clocks: np.ndarray        # per IPU: its clock (the total cycles it has run)
    ipu_idle: np.ndarray          # per IPU: cycles it waited at the end of runs for the last IPU
    program_runs: List[int]       # per program: completed runs
    program_names: List[str]


@dataclass
class StaticParts:
    """What a report of one executable holds whatever has run: built once, for a writer
    that makes report after report of it (autoReport). The reports built from it share
    these objects: only a caller that never hands its reports out may pass it."""

    target: TargetInfo
    graph: GraphInfo
    memory: MemoryInfo
    cs_vertices: List[int]      # per compute set: its vertices
    type_instances: np.ndarray  # per vertex type: its vertices


class _StaticMemoryInfo(MemoryInfo):
    """The MemoryInfo of StaticParts: never changed once built, so its figures (which the
    summary and the page both need) are computed once. Same fields, same JSON."""

    def figures(self) -> TileFigures:
        known = self.__dict__.get("_figures")
        if known is None:
            known = self.__dict__["_figures"] = super().figures()
        return known


def static_parts(exe, shared: bool = True) -> StaticParts:
    """The parts of ``exe``'s reports that no run changes (see StaticParts). ``shared``:
    for a writer that keeps them (their memory figures are then computed once); False
    for one report that its caller may change."""
    lw = exe.lowered
    target, vt = lw.target, lw.vertices
    return StaticParts(
        target=TargetInfo(type=target.target_type.value, arch=target.arch, num_ipus=target.num_ipus,
                          tiles_per_ipu=target.tiles_per_ipu, num_tiles=target.num_tiles,
                          bytes_per_tile=target.bytes_per_tile, clock=target.tile_clock_frequency,
                          num_worker_contexts=target.num_worker_contexts, replicas=lw.replication_factor),
        graph=GraphInfo(**lw.graph_counts), memory=_memory(lw, _StaticMemoryInfo if shared else MemoryInfo),
        cs_vertices=np.bincount(vt.row_cs, minlength=len(vt.cs_names)).tolist() if len(vt.row_cs)
        else [0] * len(vt.cs_names),
        type_instances=np.bincount(vt.row_type, minlength=len(vt.type_names)) if len(vt.row_type)
        else np.zeros(0, int))


def build_report(exe, options: Dict[str, str], profile: Optional[ExecutionProfile] = None,
                 static: Optional[StaticParts] = None) -> Report:
    """The report of executable ``exe`` (with ``options``, the ones set explicitly) after
    the runs ``profile`` counted (None: nothing has run). ``static``: ``static_parts(exe)``
    kept from an earlier call, to share (see StaticParts); None builds them afresh."""
    static = static if static is not None else static_parts(exe, shared=False)
    lw = exe.lowered
    target = lw.target
    vt = lw.vertices
    steps_meta = lw.programs.steps
    nsteps = len(steps_meta)
    ipus = target.num_ipus
    if profile is not None:
        counts, per_ipu = profile.step_counts, profile.step_cycles
        group_cycles, vertex_cycles = profile.group_cycles, profile.vertex_cycles
        trace, truncated = profile.trace, profile.trace_truncated
        clocks, idle = profile.ipu_clocks, profile.ipu_idle
    else:
        counts, per_ipu = np.zeros(nsteps, np.uint64), np.zeros((nsteps, ipus, len(CATEGORIES)))
        group_cycles, vertex_cycles = np.zeros(len(vt.groups)), np.zeros(len(vt.vertices))
        trace, truncated = np.zeros((0, 4)), False
        clocks, idle = np.zeros(ipus), np.zeros(ipus)
    # A step's figures: its slowest IPU's cycles, and each activity's tile average over
    # all the replica's tiles (the mean over its IPUs); one IPU: that IPU's.
    cycles = per_ipu.mean(axis=1) if nsteps else np.zeros((0, len(CATEGORIES)))
    if nsteps:
        cycles[:, CAT["cycles"]] = per_ipu[:, :, CAT["cycles"]].max(axis=1)
    steps = []
    for i, step in enumerate(steps_meta):
        c = step.cost
        tile_compute = None if c.tile_compute is None else c.tile_compute.tolist()
        if step.compute_set >= 0:  # measured as the compute set ran: per tile, averaged over runs
            first, count = vt.cs_groups[step.compute_set]
            per_tile = np.zeros(target.num_tiles)
            np.add.at(per_tile, vt.group_tiles[first:first + count], group_cycles[first:first + count])
            tile_compute = (per_tile / max(1, int(counts[i]))).tolist()
        steps.append(StepInfo(
            name=step.name, kind=step.kind, program=step.program, count=int(counts[i]),
            cycles=float(cycles[i, CAT["cycles"]]),
            categories={name: float(cycles[i, k]) for k, name in enumerate(CATEGORIES) if k != CAT["cycles"]},
            tile_compute=tile_compute, tile_exchange=None if c.tile_exchange is None else c.tile_exchange.tolist(),
            compute_set=vt.cs_names[step.compute_set] if step.compute_set >= 0 else None,
            ipu_cycles=per_ipu[i, :, CAT["cycles"]].tolist() if ipus > 1 else None))
    # Over the whole execution: the last IPU's clock; each activity as a tile average
    # over the replica's tiles, an IPU's wait for the others at the end of a run as sync.
    totals = per_ipu.sum(axis=0).mean(axis=0) if nsteps else np.zeros(len(CATEGORIES))
    totals[CATEGORIES.index("sync")] += float(np.mean(idle)) if len(idle) else 0.0
    totals[CAT["cycles"]] = float(np.max(clocks)) if len(clocks) else 0.0
    by_type = np.bincount(vt.row_type, weights=vertex_cycles, minlength=len(vt.type_names)) if len(vt.row_type) \
        else np.zeros(0)
    instances = static.type_instances
    compute_sets = []
    for row, name in enumerate(vt.cs_names):
        mine = [i for i, s in enumerate(steps_meta) if s.compute_set == row]
        compute_sets.append(ComputeSetCycles(name=name, vertices=static.cs_vertices[row],
                                             runs=int(sum(counts[i] for i in mine)),
                                             cycles=float(sum(cycles[i, CAT["cycles"]] for i in mine))))
    names = profile.program_names if profile is not None else lw.program_names
    runs = profile.program_runs if profile is not None else [0] * lw.num_programs
    return Report(
        target=static.target, graph=static.graph, memory=static.memory,
        execution=ExecutionInfo(
            total_cycles=float(totals[CAT["cycles"]]),
            programs_executed=[{"index": i, "name": names[i], "runs": r} for i, r in enumerate(runs) if r],
            steps=steps, categories={name: float(totals[k]) for k, name in enumerate(CATEGORIES) if k != CAT["cycles"]},
            vertex_types=[VertexTypeCycles(n, int(k), float(c)) for n, k, c in zip(vt.type_names, instances, by_type)],
            compute_sets=compute_sets, trace=trace.tolist(), trace_truncated=bool(truncated),
            ipu_cycles=[float(c) for c in np.asarray(clocks) - np.asarray(idle)]),
        compilation=exe.compilation, options=dict(options), warnings=list(vt.warnings), popsim_version=__version__)


def _memory(lw, kind=MemoryInfo) -> MemoryInfo:
    layout = lw.layout
    totals = layout.tile_totals
    worst = np.argsort(-totals, kind="stable")[:5]
    shared = int(layout.not_always_live.sum()) if layout.not_always_live is not None else 0
    always = int(sum(int(v.sum()) for k, v in layout.by_category.items() if k != "exchange_buffers")) - shared
    buffers = lw.vertices.cs_buffer_bytes
    step_live = layout.step_live if layout.step_live is not None else np.zeros(len(lw.programs.steps), np.int64)
    liveness = [always + int(step_live[i]) + (buffers[s.compute_set] if s.compute_set >= 0 else 0)
                for i, s in enumerate(lw.programs.steps)]
    return kind(
        bytes_per_tile=lw.target.bytes_per_tile,
        by_category={k: v.tolist() for k, v in layout.by_category.items()},
        largest=[{"tile": int(t), "tensors": [[n, b] for n, b in layout.largest_on_tile(int(t), lw.variable_names)]}
                 for t in worst if totals[t] > 0],
        always_live=always, liveness=liveness, not_always_live=shared,
        exchange_buffers_shared=int(sum(lw.vertices.cs_shared_bytes)))
