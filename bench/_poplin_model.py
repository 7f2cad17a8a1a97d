"""Shared by bench_poplin_amp.py and bench_poplin_tflops.py: build one square matmul on an
ipu2 IPUModel, run it once, and read what the model says it cost from the engine's report.

Figures (all from the report, docs/report_schema.md):
* ``cycles``: execution.total_cycles of the run (the program is the matmul alone);
* ``categories``: execution.categories (compute incl./excl. idle workers, exchange, sync);
* ``conv_cycles`` / ``reduce_cycles``: the Execute steps of the AMP compute sets
  (``*/Conv``) and of the partials' reduction (``*/Reduce``), whole steps;
* ``temp_bytes``: the matmul's temporaries as liveness sees them: the variables beyond the
  operands and the output (the partials) plus the exchange buffers of the step that needs
  the most (``max(liveness) - always_live``), over all tiles;
* ``max_tile_bytes``: the fullest tile's total as popsim allocates it (each compute set's
  exchange buffers keep their own memory for the whole program: no reuse between them).
"""
from __future__ import annotations

import time
import warnings

import popsim
from popsim import FLOAT, poplin
from popsim.program import Sequence


def plan_of(n: int, dtype, options):
    """(plan, warnings raised while planning) for [n, n] @ [n, n]."""
    graph = popsim.Graph(popsim.IPUModel("ipu2").create_device().target)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        plan = poplin.get_mat_mul_plan(graph, dtype, (n, n), (n, n), options)
    return plan, [str(w.message) for w in caught]


def build_and_run(n: int, dtype=FLOAT, options=None) -> dict:
    device = popsim.IPUModel("ipu2").create_device()
    poplin.add_codelets(popsim.Graph(device.target))  # compiled once (cached): not in the build time
    start = time.perf_counter()
    graph = popsim.Graph(device.target)
    a = poplin.create_mat_mul_input_lhs(graph, dtype, (n, n), (n, n), "a", options)
    b = poplin.create_mat_mul_input_rhs(graph, dtype, (n, n), (n, n), "b", options)
    prog = Sequence()
    c = poplin.mat_mul(graph, a, b, prog, "mm", options)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        engine = popsim.Engine(graph, prog)
    engine.load(device)
    built = time.perf_counter() - start
    engine.run(0)
    report = engine.get_report()
    ex, mem = report.execution, report.memory
    operand_bytes = 3 * n * n * c.dtype.size  # A, B and C
    steps = [s for s in ex.steps if s.kind == "Execute"]
    return {
        "build_s": built,
        "cycles": ex.total_cycles,
        "categories": dict(ex.categories),
        "conv_cycles": sum(s.cycles for s in steps if (s.compute_set or "").endswith("/Conv")),
        "reduce_cycles": sum(s.cycles for s in steps if (s.compute_set or "").endswith("/Reduce")),
        "temp_bytes": mem.category_total("variables") - operand_bytes + max(mem.liveness) - mem.always_live,
        "max_tile_bytes": mem.max_bytes,
        "num_tiles": report.target.num_tiles,
        "clock": report.target.clock,
    }
