"""Benchmark: running vertices. Every figure is measured in this run.

1. Engine overhead per vertex: a compute set of 1472 tiles x 6 workers x 100 trivial
   vertices (quick: x 4); run time / vertices. Target (issue 7) <= 3 ns.
2. Threads: a compute-bound compute set with 2 engine threads vs 1. Target >= 1.9x.
3. Compiled Python vertex vs the same algorithm as a C++ codelet (a dot product over
   long vectors, on every tile). Target: Python at least 0.95x the C++ speed.
4. Graph building: add_vertex with connections + set_tile_mapping, per vertex (views
   made beforehand). Target <= 1 us.
5. Codelet cache: add_codelets of an already-compiled C++ file and Python class in a
   new graph, plus building its Engine's codelet tables. Target < 50 ms, nothing compiled.

Run: python bench/bench_vertices.py [--quick]
"""
from __future__ import annotations

import os
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common as C

import popsim
from popsim import FLOAT, INT, Input, Output, Vector
from popsim.codelet import compiler
from popsim.program import Execute

CODELETS = r"""
#include <poplar/Vertex.hpp>
using namespace poplar;

class Nop : public Vertex {
public:
  Output<int> out;
  bool compute() { return true; }
};

class Dot : public Vertex {
public:
  Input<Vector<float>> a;
  Input<Vector<float>> b;
  Output<float> out;
  unsigned repeats;
  bool compute() {
    float total = 0.0f;
    for (unsigned r = 0; r < repeats; ++r) {
      float s = 0.0f;
      for (unsigned i = 0; i < a.size(); ++i) s += a[i] * b[i];
      total += s;
    }
    *out = total;
    return true;
  }
};
"""


class PyDot(popsim.Vertex):
    """The same algorithm as the C++ Dot vertex."""

    a: Input[Vector[float]]
    b: Input[Vector[float]]
    out: Output[float]
    repeats: int

    def compute(self):
        total = 0.0
        for r in range(self.repeats):
            s = 0.0
            for i in range(len(self.a)):
                s += self.a[i] * self.b[i]
            total += s
        self.out = total
        return True


def codelet_file() -> str:
    path = os.path.join(tempfile.gettempdir(), "popsim_bench_vertices.cpp")
    if not os.path.exists(path) or open(path).read() != CODELETS:
        with open(path, "w") as f:
            f.write(CODELETS)
    return path


def overhead(per_worker: int, repeat: int) -> C.Result:
    device = popsim.IPUModel().create_device()
    graph = popsim.Graph(device)
    graph.add_codelets(codelet_file())
    tiles, workers = device.target.num_tiles, device.target.num_worker_contexts
    n = tiles * workers * per_worker
    out = graph.add_variable(INT, [n], "out", mapping=popsim.VariableMappingMethod.LINEAR)
    cs = graph.add_compute_set("nops")
    per_tile = n // tiles
    for t in range(tiles):
        for k in range(per_tile):
            v = graph.add_vertex(cs, "Nop", {"out": out[t * per_tile + k]})
            graph.set_tile_mapping(v, t)
            graph.set_perf_estimate(v, 1)
    engine = popsim.Engine(graph, Execute(cs))
    engine.load(device)
    seconds = C.best_of(lambda: engine.run(0), repeat=repeat)
    ns = seconds / n * 1e9
    return C.Result(bench="vertices", metric=f"engine overhead, {n:,} trivial vertices", unit="ns/vertex", value=ns,
                    target="<= 3 ns/vertex", passed=ns <= 3)


def dot_graph(vertex, length: int, repeats: int, per_tile: int, tiles: int, threads: int):
    device = popsim.IPUModel().create_device()
    graph = popsim.Graph(device)
    graph.add_codelets(codelet_file())
    graph.add_codelets(PyDot)
    rng = np.random.default_rng(0)
    a = graph.add_variable(FLOAT, [tiles, per_tile, length], "a")
    b = graph.add_variable(FLOAT, [tiles, per_tile, length], "b")
    out = graph.add_variable(FLOAT, [tiles, per_tile], "out")
    for t in range(tiles):
        for x in (a[t], b[t], out[t]):
            graph.set_tile_mapping(x, t)
    graph.set_initial_value(a, rng.random((tiles, per_tile, length)))
    graph.set_initial_value(b, rng.random((tiles, per_tile, length)))
    cs = graph.add_compute_set("dots")
    for t in range(tiles):
        for k in range(per_tile):
            v = graph.add_vertex(cs, vertex, {"a": a[t, k], "b": b[t, k], "out": out[t, k]})
            graph.set_initial_value(v["repeats"], repeats)
            graph.set_tile_mapping(v, t)
    graph.create_host_read("out", out)
    engine = popsim.Engine(graph, Execute(cs), {"popsim.numThreads": str(threads)})
    engine.load(device)
    return engine


def threads_and_languages(quick: bool, repeat: int):
    length, repeats, per_tile = (256, 8, 6) if quick else (512, 20, 6)
    tiles = 1472
    engines = {
        "cpp1": dot_graph("Dot", length, repeats, per_tile, tiles, 1),
        "cpp2": dot_graph("Dot", length, repeats, per_tile, tiles, 2),
        "py1": dot_graph("PyDot", length, repeats, per_tile, tiles, 1),
    }
    for e in engines.values():
        e.run(0)
    reference = engines["cpp1"].read_tensor("out")
    for name, e in engines.items():
        if not np.array_equal(e.read_tensor("out"), reference):
            raise RuntimeError(f"engine {name} computed different dot products")
    best = C.best_of_interleaved({k: (lambda e=e: e.run(0)) for k, e in engines.items()}, repeat=repeat)
    speedup = best["cpp1"] / best["cpp2"]
    py_speed = best["cpp1"] / best["py1"]
    macs = tiles * per_tile * length * repeats
    return [
        C.Result(bench="vertices", metric=f"2 threads vs 1 ({macs / 1e6:.0f} M MACs)", unit="x", value=speedup,
                 target=">= 1.9x", passed=speedup >= 1.9,
                 notes=[f"1 thread {best['cpp1'] * 1e3:.1f} ms, 2 threads {best['cpp2'] * 1e3:.1f} ms"]),
        C.Result(bench="vertices", metric="compiled Python vertex vs C++ codelet", unit="x", value=py_speed,
                 target=">= 0.95x", passed=py_speed >= 0.95,
                 notes=[f"Python {best['py1'] * 1e3:.1f} ms, C++ {best['cpp1'] * 1e3:.1f} ms (1 thread each)"]),
    ]


def building(n: int) -> C.Result:
    device = popsim.IPUModel().create_device()
    graph = popsim.Graph(device)
    graph.add_codelets(codelet_file())
    a = graph.add_variable(FLOAT, [n, 4], "a", mapping=popsim.VariableMappingMethod.LINEAR)
    out = graph.add_variable(FLOAT, [n], "out", mapping=popsim.VariableMappingMethod.LINEAR)
    rows = [a[i] for i in range(n)]
    outs = [out[i] for i in range(n)]
    tiles = [i * device.target.num_tiles // n for i in range(n)]
    cs = graph.add_compute_set("build")
    start = time.perf_counter()
    for i in range(n):
        v = graph.add_vertex(cs, "Dot", {"a": rows[i], "b": rows[i], "out": outs[i]})
        graph.set_tile_mapping(v, tiles[i])
    us = (time.perf_counter() - start) / n * 1e6
    return C.Result(bench="vertices", metric=f"graph building, {n:,} vertices x 3 connections", unit="us/vertex",
                    value=us, target="<= 1 us/vertex", passed=us <= 1)


def codelet_cache() -> C.Result:
    path = codelet_file()

    def work():
        g = popsim.Graph(popsim.IPUModel().create_device())
        g.add_codelets(path)
        g.add_codelets(PyDot)
        return g
    work()  # make sure both are compiled (first use in this process may compile)
    compiled = compiler.stats["compiled"]
    seconds = C.best_of(work, repeat=5, warmup=0)
    again = compiler.stats["compiled"] - compiled
    ms = seconds * 1e3
    return C.Result(bench="vertices", metric="codelets of a new graph, already compiled", unit="ms", value=ms,
                    target="< 50 ms, 0 compiles", passed=ms < 50 and again == 0,
                    notes=[f"libraries compiled during the timed runs: {again}"])


def main(argv=None) -> int:
    args = C.parse_args(__doc__.splitlines()[0], argv)
    repeat = args.repeat or (3 if args.quick else 5)
    results = [overhead(4 if args.quick else 100, repeat)]
    results += threads_and_languages(args.quick, repeat)
    results.append(building(20_000 if args.quick else 100_000))
    results.append(codelet_cache())
    C.report("bench_vertices: running vertices", results, args, C.environment())
    return 0


if __name__ == "__main__":
    sys.exit(main())
