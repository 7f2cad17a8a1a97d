"""Benchmark: popops.map of a 5-operation expression on 16M FLOAT elements (256K with --quick), vs numpy.

The expression ``(_1 * _2 + 1) * exp(-_1)`` (MULTIPLY, ADD, NEGATE, EXPONENT, MULTIPLY) over
two FLOAT tensors mapped LINEAR over all tiles of an ipu2 IPUModel: one generated vertex
per tile in one compute set (popops.map), timed as ``engine.run``, against numpy
evaluating the same expression on float32 arrays (with its temporaries). Informational
row: no target yet (the issue asks for the measurement).

Run: python bench/bench_popops.py [--quick]
"""
from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common as C  # noqa: E402

import popsim  # noqa: E402
from popsim import FLOAT, popops  # noqa: E402
from popsim.popops import expr as pe  # noqa: E402
from popsim.program import Sequence  # noqa: E402


def main(argv=None) -> int:
    args = C.parse_args(__doc__.splitlines()[0], argv)
    n = (1 << 18) if args.quick else (1 << 24)
    repeat = args.repeat or 5
    warmup = args.warmup if args.warmup is not None else 1

    device = popsim.IPUModel("ipu2").create_device()
    graph = popsim.Graph(device.target)
    a = graph.add_variable(FLOAT, [n], "a", mapping=popsim.VariableMappingMethod.LINEAR)
    b = graph.add_variable(FLOAT, [n], "b", mapping=popsim.VariableMappingMethod.LINEAR)
    prog = Sequence()
    y = popops.map(graph, (pe._1 * pe._2 + 1) * pe.exp(-pe._1), [a, b], prog, "fused")
    for name, t in (("a", a), ("b", b)):
        graph.create_host_write(name, t)
    graph.create_host_read("y", y)
    engine = popsim.Engine(graph, prog)
    engine.load(device)
    rng = np.random.default_rng(0)
    va, vb = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    engine.write_tensor("a", va)
    engine.write_tensor("b", vb)

    def numpy_expr():
        return (va * vb + 1) * np.exp(-va)

    # Correctness (untimed)
    engine.run(0)
    if not np.allclose(engine.read_tensor("y"), numpy_expr(), rtol=1e-5, atol=1e-6):
        raise RuntimeError("popops.map computed another result than numpy for (a * b + 1) * exp(-a)")

    C.collect()
    best = C.best_of_interleaved({"map": lambda: engine.run(0), "numpy": numpy_expr}, repeat=repeat, warmup=warmup)
    ratio = best["map"] / best["numpy"]
    size = f"{n >> 20}M" if n >= 1 << 20 else f"{n >> 10}K"
    metric = f"popops.map (a*b+1)*exp(-a), {size} FLOAT"
    results = [C.Result(bench="popops_map", metric=metric, unit="s", value=best["map"], baseline=best["numpy"],
                        baseline_label="numpy expression", ratio=ratio)]
    tiles = sum(1 for iv in graph.get_tile_mapping(a) if iv)
    details = (f"{n:,} elements per tensor, LINEAR over {tiles} tiles (ipu2 IPUModel), one compute set of "
               f"{graph.num_vertices} vertices; best of {repeat} after {warmup} warm-up\n{C.environment()}")
    C.report("bench_popops: popops.map of a fused 5-op expression vs numpy", results, args, details)
    return 0


if __name__ == "__main__":
    sys.exit(main())
