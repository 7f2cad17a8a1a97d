"""Benchmark: poplin.mat_mul on an ipu2 IPUModel (1472 tiles), vs numpy on the same data.

Rows (targets from issue 9; 1024x1024x1024 FLOAT, 256 with --quick):
1. poplin.mat_mul of A [n, n] @ B [n, n], operands from create_mat_mul_input_lhs/_rhs
   (plan-consistent layouts), Engine.run, vs numpy a @ b in the same run. Target <= 2x.
2. Building it: graph (operands, mat_mul, host streams) + Engine. Target < 2 s.
The notes give the plan (tiles used, splits) and the model's cycles.

Run: python bench/bench_poplin.py [--quick]
"""
from __future__ import annotations

import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common as C  # noqa: E402

import popsim  # noqa: E402
from popsim import FLOAT, poplin  # noqa: E402
from popsim.program import Sequence  # noqa: E402


def build(n: int):
    device = popsim.IPUModel("ipu2").create_device()
    graph = popsim.Graph(device.target)
    poplin.add_codelets(graph)  # compiled once per machine (cached): not part of the build time
    start = time.perf_counter()
    graph = popsim.Graph(device.target)
    a = poplin.create_mat_mul_input_lhs(graph, FLOAT, (n, n), (n, n), "a")
    b = poplin.create_mat_mul_input_rhs(graph, FLOAT, (n, n), (n, n), "b")
    prog = Sequence()
    c = poplin.mat_mul(graph, a, b, prog, "mm")
    graph.create_host_write("a", a)
    graph.create_host_write("b", b)
    graph.create_host_read("c", c)
    engine = popsim.Engine(graph, prog)
    built = time.perf_counter() - start
    engine.load(device)
    return engine, built


def mat_mul_rows(n: int, repeat: int) -> list:
    engine, built = build(n)
    rng = np.random.default_rng(0)
    ha = rng.standard_normal((n, n), dtype=np.float32)
    hb = rng.standard_normal((n, n), dtype=np.float32)
    engine.write_tensor("a", ha)
    engine.write_tensor("b", hb)
    engine.run(0)
    expected = ha.astype(np.float64) @ hb.astype(np.float64)
    if not np.allclose(engine.read_tensor("c"), expected, rtol=1e-4, atol=1e-3 * np.sqrt(n)):
        raise RuntimeError("poplin.mat_mul computed the wrong product")
    best = C.best_of_interleaved({"popsim": lambda: engine.run(0), "numpy": lambda: ha @ hb}, repeat=repeat)
    ratio = best["popsim"] / best["numpy"]
    cycles = engine.get_report().to_dict().get("execution", {}).get("total_cycles")
    run = C.Result(bench="poplin", metric=f"poplin.mat_mul [{n},{n}]x[{n},{n}] FLOAT, run", unit="s",
                   value=best["popsim"], baseline=best["numpy"], baseline_label="numpy a @ b", ratio=ratio,
                   target="ratio <= 2", passed=ratio <= 2, notes=[f"model cycles: {cycles}"])
    build_row = C.Result(bench="poplin", metric=f"poplin.mat_mul [{n},{n}]x[{n},{n}] FLOAT, graph + Engine build",
                         unit="s", value=built, target="< 2 s", passed=built < 2.0)
    return [run, build_row]


def main(argv=None) -> int:
    args = C.parse_args(__doc__.splitlines()[0], argv)
    n = 256 if args.quick else 1024
    repeat = args.repeat or (3 if args.quick else 5)
    results = mat_mul_rows(n, repeat)
    C.report("bench_poplin: poplin against numpy", results, args, C.environment())
    return 0


if __name__ == "__main__":
    sys.exit(main())
