"""Benchmark: PopLibs ops (popops, poprand) on an ipu2 IPUModel, vs numpy on the same data.

Rows (targets from issue 8; 16M elements, 1M with --quick):
1. popops.add of two FLOAT tensors mapped linearly over 1472 tiles, Engine.run, vs
   np.add(a, b, out=c). Target <= 1.2x.
2. popops.map of the 5-operation expression (a*b + 1) * exp(-a) (MULTIPLY, ADD, NEGATE,
   EXPONENT, MULTIPLY) into one generated vertex per tile, Engine.run, vs numpy evaluating
   it on float32 arrays (with its temporaries). Target <= 1.0x.
3. poprand.uniform of FLOAT, Engine.run, vs numpy's Generator.random(dtype=float32).
   Target <= 2x.
4. Building popops.add over those tensors: graph + Engine. Target < 0.5 s.
5. Building a chain of 100 element-wise ops on a tensor over all 1472 tiles: graph +
   Engine. Target < 2 s.
6. Peak memory of the add run: the process's peak resident memory grown while building,
   loading and running it (host buffers included). Target <= 2x its three tensors' bytes
   + 200 MB.
7. popops.reduce ADD of a [4096, 4096] FLOAT tensor mapped linearly over 1472 tiles
   ([512, 512] with --quick), over dim 0 and over dim 1, Engine.run, vs np.sum(a, axis=d)
   on the same data. Target <= 2x. The notes give the graph + Engine build time.

Run: python bench/bench_popops.py [--quick]
"""
from __future__ import annotations

import os
import resource
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common as C

import popsim
from popsim import FLOAT, popops, poprand, poputil
from popsim.popops import Operation, ReduceParams
from popsim.popops import expr as pe
from popsim.program import Sequence


def peak_rss_bytes() -> int:
    """The process's peak resident memory so far (Linux reports ru_maxrss in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def linear_tensor(graph, n: int, name: str):
    t = graph.add_variable(FLOAT, [n], name)
    poputil.map_tensor_linearly(graph, t)
    return t


def add_rows(n: int, repeat: int) -> list:
    """Rows 1, 3 and 5: popops.add run, its build time, its peak memory."""
    rss_before = peak_rss_bytes()
    start = time.perf_counter()
    device = popsim.IPUModel("ipu2").create_device()
    graph = popsim.Graph(device.target)
    a, b = linear_tensor(graph, n, "a"), linear_tensor(graph, n, "b")
    prog = Sequence()
    c = popops.add(graph, a, b, prog, "add")
    for name, t in (("a", a), ("b", b)):
        graph.create_host_write(name, t)
    graph.create_host_read("c", c)
    engine = popsim.Engine(graph, prog)
    built = time.perf_counter() - start
    engine.load(device)
    rng = np.random.default_rng(0)
    ha, hb = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    engine.write_tensor("a", ha)
    engine.write_tensor("b", hb)
    engine.run(0)
    if not np.array_equal(engine.read_tensor("c"), ha + hb):
        raise RuntimeError("popops.add computed the wrong sum")
    hc = np.empty_like(ha)
    best = C.best_of_interleaved({"popsim": lambda: engine.run(0), "numpy": lambda: np.add(ha, hb, out=hc)},
                                 repeat=repeat)
    grown = peak_rss_bytes() - rss_before
    limit = 2 * 3 * n * FLOAT.size + 200 * C.MIB
    ratio = best["popsim"] / best["numpy"]
    return [
        C.Result(bench="popops", metric=f"popops.add {n:,} FLOAT over 1472 tiles, run", unit="s",
                 value=best["popsim"], baseline=best["numpy"], baseline_label="np.add(out=)", ratio=ratio,
                 target="ratio <= 1.2", passed=ratio <= 1.2),
        C.Result(bench="popops", metric=f"build popops.add of {n:,}: graph + Engine", unit="s", value=built,
                 target="< 0.5 s", passed=built < 0.5),
        C.Result(bench="popops", metric=f"peak memory growth of the {n:,} add run", unit="MB", value=grown / 1e6,
                 target=f"<= {limit / 1e6:,.0f} MB", passed=grown <= limit,
                 notes=[f"three tensors: {3 * n * FLOAT.size / 1e6:,.0f} MB; the host buffers written and read "
                        "count too"]),
    ]


def map_row(n: int, repeat: int) -> C.Result:
    device = popsim.IPUModel("ipu2").create_device()
    graph = popsim.Graph(device.target)
    a, b = linear_tensor(graph, n, "a"), linear_tensor(graph, n, "b")
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
    engine.run(0)
    if not np.allclose(engine.read_tensor("y"), numpy_expr(), rtol=1e-5, atol=1e-6):
        raise RuntimeError("popops.map computed another result than numpy for (a * b + 1) * exp(-a)")
    best = C.best_of_interleaved({"popsim": lambda: engine.run(0), "numpy": numpy_expr}, repeat=repeat)
    ratio = best["popsim"] / best["numpy"]
    return C.Result(bench="popops", metric=f"popops.map (a*b+1)*exp(-a), {n:,} FLOAT, run", unit="s",
                    value=best["popsim"], baseline=best["numpy"], baseline_label="numpy expression", ratio=ratio,
                    target="ratio <= 1.0", passed=ratio <= 1.0)


def uniform_row(n: int, repeat: int) -> C.Result:
    device = popsim.IPUModel("ipu2").create_device()
    graph = popsim.Graph(device.target)
    ref = linear_tensor(graph, n, "ref")
    prog = Sequence()
    out = poprand.uniform(graph, None, 0, ref, FLOAT, 0.0, 1.0, prog)
    graph.create_host_read("out", out)
    engine = popsim.Engine(graph, prog)
    engine.load(device)
    generator, buffer = np.random.default_rng(0), np.empty(n, np.float32)
    best = C.best_of_interleaved({"popsim": lambda: engine.run(0),
                                  "numpy": lambda: generator.random(out=buffer, dtype=np.float32)}, repeat=repeat)
    values = engine.read_tensor("out")
    if not (values.min() >= 0.0 and values.max() <= 1.0 and abs(values.mean() - 0.5) < 0.01):
        raise RuntimeError("poprand.uniform gave values outside [0, 1] or of the wrong mean")
    ratio = best["popsim"] / best["numpy"]
    return C.Result(bench="poprand", metric=f"poprand.uniform {n:,} FLOAT, run", unit="s", value=best["popsim"],
                    baseline=best["numpy"], baseline_label="Generator.random", ratio=ratio, target="ratio <= 2",
                    passed=ratio <= 2)


def chain_row(length: int) -> C.Result:
    start = time.perf_counter()
    device = popsim.IPUModel("ipu2").create_device()
    graph = popsim.Graph(device.target)
    x = linear_tensor(graph, 1472 * 64, "x")
    prog = Sequence()
    ops = (popops.add, popops.mul, popops.sub, popops.max)
    for k in range(length):
        x = ops[k % len(ops)](graph, x, 1.5, prog)
    popsim.Engine(graph, prog)
    seconds = time.perf_counter() - start
    return C.Result(bench="popops", metric=f"build a chain of {length} element-wise ops on 1472 tiles", unit="s",
                    value=seconds, target="< 2 s", passed=seconds < 2)


def reduce_row(side: int, dim: int, repeat: int) -> C.Result:
    start = time.perf_counter()
    device = popsim.IPUModel("ipu2").create_device()
    graph = popsim.Graph(device.target)
    a = graph.add_variable(FLOAT, [side, side], "a")
    poputil.map_tensor_linearly(graph, a)
    prog = Sequence()
    out = popops.reduce(graph, a, [dim], ReduceParams(Operation.ADD), prog, "sum")
    graph.create_host_write("a", a)
    graph.create_host_read("out", out)
    engine = popsim.Engine(graph, prog)
    built = time.perf_counter() - start
    engine.load(device)
    ha = np.random.default_rng(0).random((side, side), dtype=np.float32)
    engine.write_tensor("a", ha)
    engine.run(0)
    if not np.allclose(engine.read_tensor("out"), ha.sum(axis=dim, dtype=np.float64), rtol=1e-5, atol=1e-3):
        raise RuntimeError(f"popops.reduce over dim {dim} computed the wrong sum")
    best = C.best_of_interleaved({"popsim": lambda: engine.run(0), "numpy": lambda: np.sum(ha, axis=dim)},
                                 repeat=repeat)
    ratio = best["popsim"] / best["numpy"]
    return C.Result(bench="popops", metric=f"popops.reduce ADD [{side},{side}] FLOAT over dim {dim}, run", unit="s",
                    value=best["popsim"], baseline=best["numpy"], baseline_label=f"np.sum(axis={dim})", ratio=ratio,
                    target="ratio <= 2", passed=ratio <= 2, notes=[f"build (graph + Engine): {built:.2f} s"])


def main(argv=None) -> int:
    args = C.parse_args(__doc__.splitlines()[0], argv)
    n = (1 if args.quick else 16) << 20
    repeat = args.repeat or (3 if args.quick else 5)
    results = add_rows(n, repeat)  # first: its peak memory is measured from a fresh process
    results.append(map_row(n, repeat))
    results.append(uniform_row(n, repeat))
    results.append(chain_row(100))
    side = 512 if args.quick else 4096
    results += [reduce_row(side, dim, repeat) for dim in (0, 1)]
    C.report("bench_popops: PopLibs ops against numpy", results, args, C.environment())
    return 0


if __name__ == "__main__":
    sys.exit(main())
