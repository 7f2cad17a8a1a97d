"""Benchmark: reports and the executable cache, on tutorial 6's program.

1. Executable cache: constructing the Engine for tutorial 6 (10000 x 1000; quick:
   2000 x 1000) a second time, from the cache, vs the first time. Target (issue 7) >= 20x faster.
2. Report overhead: Engine construction + run with the graph and execution profiles
   (profile.json and report.html written) vs without. Target <= +10%. (autoReport.all
   writes more: vars.json, serialized_graph.json, archive.popsimexe, debug.json.)
3. Report size: profile.json of a program with 100 steps over all 1472 tiles.
   Target < 5 MB.

Run: python bench/bench_report.py [--quick]
"""
from __future__ import annotations

import contextlib
import io
import os
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common as C

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tutorials"))

import popsim  # noqa: E402
import tut6_matrix_vector_opt as tut6  # noqa: E402
from popsim import FLOAT  # noqa: E402
from popsim.program import Copy, Sequence  # noqa: E402


def tut6_program(rows: int, cols: int):
    model = popsim.IPUModel("ipu2")
    model.min_ipu_sync_delay = 0
    model.relative_sync_delay = popsim.RelativeSyncDelayType.NO_DELAY
    device = model.create_device()
    graph = popsim.Graph(device)
    graph.add_codelets(os.path.join(ROOT, "tutorials", "codelets", "matrix_mul_codelets.cpp"))
    matrix = graph.add_variable(FLOAT, [rows, cols], "matrix")
    vector = graph.add_variable(FLOAT, [cols], "inputVector")
    out = graph.add_variable(FLOAT, [rows], "outputVector")
    with contextlib.redirect_stdout(io.StringIO()):
        prog = tut6.build_multiply_program(graph, matrix, vector, out)
    graph.set_initial_value(matrix, np.random.default_rng(0).random((rows, cols)))
    return device, graph, prog


def cache_speedup(rows: int, cols: int, repeat: int) -> C.Result:
    """Best of `repeat` first Engines (each with an empty cache) against best of `repeat`
    cache hits, each from a freshly built graph (in this process, so the entry's sha256 is
    already known: a new process also hashes the file once, ~10 ms for tutorial 6)."""
    def engine_seconds(cache: str, hit: bool) -> float:
        _, graph, prog = tut6_program(rows, cols)
        start = time.perf_counter()
        engine = popsim.Engine(graph, prog, {"popsim.cacheDir": cache})
        seconds = time.perf_counter() - start
        if engine.get_report().compilation.from_cache != hit:
            raise RuntimeError(f"expected from_cache={hit} for an Engine of tutorial 6")
        return seconds
    caches = [tempfile.mkdtemp(prefix="popsim-bench-cache-") for _ in range(repeat)]
    first = min(engine_seconds(cache, hit=False) for cache in caches)
    second = min(engine_seconds(cache, hit=True) for cache in caches)
    ratio = first / second
    return C.Result(bench="report", metric=f"tutorial 6 {rows}x{cols}: 2nd Engine from the cache", unit="x",
                    value=ratio, target=">= 20x faster", passed=ratio >= 20,
                    notes=[f"first Engine {first:.3f} s, from the cache {second:.3f} s (best of {repeat} each)"])


def report_overhead(rows: int, cols: int, repeat: int) -> C.Result:
    directory = tempfile.mkdtemp(prefix="popsim-bench-report-")
    device, graph, prog = tut6_program(rows, cols)

    def one(options):
        def go():
            engine = popsim.Engine(graph, prog, options)
            engine.load(device)
            engine.run(0)
        return go
    best = C.best_of_interleaved({"off": one({}),
                                  "on": one({"autoReport.outputGraphProfile": "true",
                                             "autoReport.outputExecutionProfile": "true",
                                             "autoReport.directory": directory})},
                                 repeat=repeat, warmup=1)
    extra = best["on"] / best["off"] - 1
    return C.Result(bench="report", metric=f"tutorial 6 {rows}x{cols}: autoReport on vs off", unit="%",
                    value=100 * extra, target="<= +10%", passed=extra <= 0.10,
                    notes=[f"Engine + run: {best['off']:.3f} s without reports, {best['on']:.3f} s with"])


def report_size() -> C.Result:
    device = popsim.IPUModel().create_device()
    graph = popsim.Graph(device)
    n = 1472 * 8
    a = graph.add_variable(FLOAT, [n], "a", mapping=popsim.VariableMappingMethod.LINEAR)
    b = graph.add_variable(FLOAT, [n], "b", mapping=popsim.VariableMappingMethod.LINEAR)
    steps = [Copy(a, b.reshape([8, 1472]).transpose().flatten()) if k % 2 else Copy(b, a) for k in range(100)]
    engine = popsim.Engine(graph, Sequence(steps))
    engine.load(device)
    engine.run()
    path = os.path.join(tempfile.mkdtemp(prefix="popsim-bench-size-"), "profile.json")
    engine.get_report().to_json(path)
    mb = os.path.getsize(path) / 1e6
    return C.Result(bench="report", metric="profile.json, 1472 tiles x 100 steps", unit="MB", value=mb,
                    target="< 5 MB", passed=mb < 5)


def main(argv=None) -> int:
    args = C.parse_args(__doc__.splitlines()[0], argv)
    rows = 2000 if args.quick else 10000
    repeat = args.repeat or (2 if args.quick else 3)
    results = [cache_speedup(rows, 1000, repeat), report_overhead(rows, 1000, repeat),
               report_size()]
    C.report("bench_report: reports and the executable cache", results, args, C.environment())
    return 0


if __name__ == "__main__":
    sys.exit(main())
