"""Benchmark: control-program overhead, Repeat(N, Copy(x, y)) of one-element tensors.

x and y are one-element FLOAT variables on the same tile of an ipu2 IPUModel; the
program is Repeat(1_000_000, Copy(x, y)) (100,000 with --quick). Reports run time / N in
ns per iteration. Target: <= 200 ns/iter. Context baseline: a pure-Python loop doing
y[0] = x[0] on one-element numpy arrays N times.

Run: python bench/bench_control.py [--quick]
"""
from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common as C

import popsim
from popsim import FLOAT
from popsim.program import Copy, Repeat

TARGET_NS = 200.0


def copy_step_count(engine) -> int:
    """Executions of the Copy step so far, from the engine report (None if unavailable)."""
    for step in engine.get_report().execution.steps:
        if getattr(step, "kind", "") == "Copy":
            return getattr(step, "count", None)
    return None


def main(argv=None) -> int:
    args = C.parse_args(__doc__.splitlines()[0], argv)
    iters = 100_000 if args.quick else 1_000_000
    repeat = args.repeat or (5 if args.quick else 7)
    warmup = args.warmup if args.warmup is not None else 1

    device = popsim.IPUModel("ipu2").create_device()
    graph = popsim.Graph(device.target)
    x = graph.add_variable(FLOAT, [1], "x")
    y = graph.add_variable(FLOAT, [1], "y")
    graph.set_tile_mapping(x, 0)
    graph.set_tile_mapping(y, 0)
    graph.create_host_write("x-write", x)
    graph.create_host_read("y-read", y)
    engine = popsim.Engine(graph, [Repeat(iters, Copy(x, y))])
    engine.load(device)

    # Correctness check (untimed): y gets x, and the body really ran `iters` times.
    engine.write_tensor("x-write", np.array([3.25], np.float32))
    before = copy_step_count(engine)
    engine.run(0)
    after = copy_step_count(engine)
    if engine.read_tensor("y-read")[0] != np.float32(3.25):
        raise RuntimeError("popsim Repeat(Copy(x, y)) produced wrong data: y != x after engine.run")
    notes = []
    if before is not None and after is not None:
        if after - before != iters:
            raise RuntimeError(f"the report counts {after - before} executions of Copy(x, y), expected {iters}")
    else:
        notes.append("the engine report has no step counts; the iteration count was not cross-checked")

    C.collect()
    t_popsim = C.best_of(lambda: engine.run(0), repeat=repeat, warmup=warmup)

    xa = np.array([1.5], np.float32)
    ya = np.zeros(1, np.float32)

    def python_loop():
        for _ in range(iters):
            ya[0] = xa[0]

    t_py = C.best_of(python_loop, repeat=3, warmup=1)

    ns = t_popsim / iters * 1e9
    ns_py = t_py / iters * 1e9
    res = C.Result(bench="control", metric=f"Repeat({iters:,}, Copy 1 elem)", unit="ns/iter", value=ns,
                   baseline=ns_py, baseline_label="Python loop y[0] = x[0]", ratio=ns / ns_py,
                   target=f"<= {TARGET_NS:.0f} ns/iter", passed=ns <= TARGET_NS, notes=notes)
    details = (f"x, y: FLOAT[1] on tile 0 (ipu2 IPUModel); run time {t_popsim * 1e3:.2f} ms for {iters:,} "
               f"iterations, best of {repeat} after {warmup} warm-up; the Python-loop baseline is context only "
               f"(best of 3)\n{C.environment()}")
    C.report("bench_control: control-program overhead", [res], args, details)
    return 0


if __name__ == "__main__":
    sys.exit(main())
