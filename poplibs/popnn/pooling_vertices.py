"""popnn's pooling vertices (the C++ codelet file pooling_vertices.cpp; its header gives the
fields) and their cycle estimators.

The pooling MultiVertices' estimate is PopLibs' ``getPoolingCycles`` (lib/popnn/
PerformanceEstimation.hpp, which popnnCycleEstimators.cpp's poolingCycleEstimator calls for
MaxPooling, SumPooling, MaxPoolingGrad and MaxPoolingGradientScale) on popsim's worklist:
per worker, the vertex-state and initialisation overheads, 13 cycles a row, 20 an entry,
and per 64-bit vector of channels ``2 + rpt + 1`` with the inner ``rpt`` loop
``4 + 3n`` (max), ``5 + 3n`` (sum) or ``7 + 5n`` (backward), n the entry's elements less
one; the tile's figure is ``7 + W * slowest worker + 6``, W the target's worker contexts.
PopLibs packs its pointers (unpack costs 2 each, its defaults). popsim charges a
MultiVertex per worker, so the estimate returned is the tile's figure over the workers.
SelectiveScaling's PopLibs estimate is a placeholder (10 cycles); popsim's: ``10 + Σ_runs
(8 + 2 · positions · vectors)`` (load the run, one reciprocal, a multiply and store per
vector).
"""
from pathlib import Path

from popsim import FLOAT, HALF

from ..poputil import template_vertex

CPP_CODELETS = Path(__file__).with_name("pooling_vertices.cpp")
CPP_FLAGS = "-O3"
TYPES = (FLOAT, HALF)
MAX_POOLING = "popnn::MaxPooling"
SUM_POOLING = "popnn::SumPooling"
MAX_POOLING_GRAD = "popnn::MaxPoolingGrad"
MAX_POOLING_GRADIENT_SCALE = "popnn::MaxPoolingGradientScale"
SELECTIVE_SCALING = "popnn::SelectiveScaling"
_POOLING = (MAX_POOLING, SUM_POOLING, MAX_POOLING_GRAD, MAX_POOLING_GRADIENT_SCALE)


def vertex_name(base: str, dtype) -> str:
    """``popnn::MaxPooling<float>`` and the like."""
    return template_vertex(base, dtype)


def _vectors(chans: int, dtype) -> int:
    """64-bit vectors per position (PopLibs' chansPerGroupD)."""
    per_vector = 2 if dtype == FLOAT else 4
    return max(1, -(-chans // per_vector))


def pooling_tile_cycles(row_starts, work_list, row_size: int, chans: int, dtype, is_max: bool, is_bwd: bool,
                        workers: int) -> int:
    """PopLibs' getPoolingCycles (module docstring) for one vertex's worklist."""
    chans_d = _vectors(chans, dtype)
    rows = len(row_starts) - 1
    unpack = 2
    slowest = 0
    for wid in range(workers):
        first, last = wid * rows // workers, (wid + 1) * rows // workers
        cycles = 4 + 2 + 2 + 7 + 2 + unpack
        cycles += 4 + (last - first) * row_size * chans_d      # initialise its rows
        cycles += 5 + 1 + unpack
        if last == first:
            slowest = max(slowest, cycles + 1)
            continue
        cycles += 2 + (1 if is_max else 2)
        if is_bwd:
            cycles += 6 + 2 * unpack
        cycles += 3 + 2 + 2 * unpack + 1
        for r in range(first, last):
            cycles += 13 + 2
            for e in range(int(row_starts[r]), int(row_starts[r + 1])):
                n = int(work_list[3 * e + 2]) - 1
                rpt = 7 + 5 * n if is_bwd else (4 + 3 * n if is_max else 5 + 3 * n)
                cycles += 20 + 1 + chans_d * (2 + rpt + 1) + 1 + 3
        slowest = max(slowest, cycles + 1)
    return 7 + slowest * workers + 6


def _pooling_estimator(dtype, is_max: bool, is_bwd: bool):
    def estimate(info, target):
        workers = target.num_worker_contexts
        tile = pooling_tile_cycles(info.initial_value("rowStarts"), info.initial_value("workList"),
                                   int(info.initial_value("rowSize")), int(info.initial_value("chansPerGroup")),
                                   dtype, is_max, is_bwd, workers)
        return -(-tile // workers)
    return estimate


def selective_scaling_cycles(scale_worklist, chans: int, dtype) -> int:
    """popsim's SelectiveScaling estimate (module docstring)."""
    chans_d = _vectors(chans, dtype)
    runs = [int(n) for n in list(scale_worklist)[1::3]]
    return 10 + sum(8 + 2 * n * chans_d for n in runs)


def _scaling_estimator(dtype):
    def estimate(info, target):
        work = info.initial_value("scaleWorklist")
        work = [] if work is None else list(work) if hasattr(work, "__len__") else [work]
        return selective_scaling_cycles(work, int(info.initial_value("chansPerGroup")), dtype)
    return estimate


def ensure_codelets(graph) -> None:
    """Add the codelet file to ``graph`` (once) and register every instantiation's estimator."""
    if graph.has_codelet(vertex_name(MAX_POOLING, FLOAT)):
        return
    graph.add_codelets(str(CPP_CODELETS), CPP_FLAGS)
    for dtype in TYPES:
        graph.register_perf_estimator(vertex_name(MAX_POOLING, dtype), _pooling_estimator(dtype, True, False))
        graph.register_perf_estimator(vertex_name(SUM_POOLING, dtype), _pooling_estimator(dtype, False, False))
        graph.register_perf_estimator(vertex_name(MAX_POOLING_GRAD, dtype), _pooling_estimator(dtype, True, True))
        graph.register_perf_estimator(vertex_name(MAX_POOLING_GRADIENT_SCALE, dtype),
                                      _pooling_estimator(dtype, True, False))
        graph.register_perf_estimator(vertex_name(SELECTIVE_SCALING, dtype), _scaling_estimator(dtype))


__all__ = ["MAX_POOLING", "MAX_POOLING_GRAD", "MAX_POOLING_GRADIENT_SCALE", "SELECTIVE_SCALING", "SUM_POOLING",
           "ensure_codelets", "pooling_tile_cycles", "selective_scaling_cycles", "vertex_name"]
