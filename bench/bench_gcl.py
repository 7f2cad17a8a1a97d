"""Benchmark: gcl's all-reduce across replicas, run on the host, against numpy summing the replicas' arrays.

An in-place all-reduce (gcl.all_reduce_in_place_cross_replica, ADD, FLOAT) of 16M elements
(16 * 2**20; quick: 1M) per replica over 8 replicas: an ipu2 IPUModel of 8 IPUs, one per
replica, 1472 tiles each, the data mapped with poputil.map_tensor_linearly. One graph and
engine per method: auto, clockwise_ring, meet_in_middle_ring, bidirectional_ring_pair
(quick: auto, clockwise_ring). For each: the build time (graph, variable, mapping and the
collective), the compile time (Engine + load) and the host time of engine.run: run once
first (untimed; every replica's result checked against numpy), then the best of 3, in
alternation with two numpy baselines on the same data (x: the 8 replicas' arrays):

(a) numpy summing the 8 arrays: s = x[0].copy(); s += x[r] for r = 1..7. The issue's
    target: the all-reduce runs on the host within 2x of it (ratio <= 2; shown for 16M
    elements over 8 replicas only, other sizes' rows are informational).
(b) numpy doing the all-reduce's whole work: that sum, then written into each of the 8
    replicas' arrays (informational).

From the engine's report of the first run: the collective's modelled cycles and time
(cycles / tile clock), and its algorithm bandwidth (bytes per replica / modelled seconds).

auto is GCL's choice by size and group (poplibs/gcl/rings.py pick_method; broadcast under
syncful.maxBroadcastSize): where it picks a method also listed, its row reuses that
method's engine (the same lowering) and says so. The engine's data is reduced in place on
every run (the values grow, the work does not). GCL_OPTIONS is ignored (unset here).

Run: python bench/bench_gcl.py [--quick] [--elements N] [--replicas R] [--methods auto clockwise_ring ...]
"""
from __future__ import annotations

import argparse
import gc
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common as C

import popsim
from popsim import FLOAT, gcl, poputil
from popsim.gcl.options import CollectiveOptions
from popsim.gcl.rings import pick_method
from popsim.program import Sequence

METHODS = ("auto", "clockwise_ring", "meet_in_middle_ring", "bidirectional_ring_pair")
QUICK_METHODS = ("auto", "clockwise_ring")
TARGET = 2.0  # the issue: within 2x of numpy summing the replicas' arrays


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="1M elements, methods auto and clockwise_ring (CI smoke run)")
    p.add_argument("--elements", type=int, default=None, help="elements per replica (default 16M; quick: 1M)")
    p.add_argument("--replicas", type=int, default=8, help="replicas, one IPU each (default 8)")
    p.add_argument("--methods", nargs="+", default=None, choices=METHODS + ("anticlockwise_ring", "broadcast"),
                   help=f"GCL methods (default: {' '.join(METHODS)}; quick: {' '.join(QUICK_METHODS)})")
    p.add_argument("--repeat", type=int, default=None, help="timed runs (best is kept; default 3)")
    p.add_argument("--warmup", type=int, default=None, help="untimed runs first (default 1: the checked run)")
    p.add_argument("--json", metavar="PATH", default=None, help="also write the results as JSON")
    return p.parse_args(argv)


def lowering(method: str, nbytes: int, replicas: int, topology: str) -> str:
    """The method an all-reduce of ``nbytes`` per replica runs by (auto resolved as GCL resolves it)."""
    if method != "auto":
        return method
    if nbytes * replicas <= CollectiveOptions().max_broadcast_size:
        return "broadcast"
    return pick_method("reduce_scatter", nbytes, replicas, 1, topology)


def measure(method: str, x: np.ndarray, reference: np.ndarray, baselines: dict, repeat: int, warmup: int) -> dict:
    """Build, compile, check and time one all-reduce engine; the numpy baselines timed in alternation."""
    replicas, n = x.shape
    t0 = time.perf_counter()
    model = popsim.IPUModel("ipu2")
    model.num_ipus = replicas
    device = model.create_device()
    graph = popsim.Graph(device, replication_factor=replicas)
    data = graph.add_variable(FLOAT, [n], "x")
    poputil.map_tensor_linearly(graph, data)
    prog = Sequence()
    gcl.all_reduce_in_place_cross_replica(graph, data, gcl.CollectiveOperator.ADD, prog, name="allReduce",
                                          options={"method": method})
    graph.create_host_write("x", data)
    graph.create_host_read("x", data)
    t1 = time.perf_counter()
    engine = popsim.Engine(graph, [prog])
    engine.load(device)
    t2 = time.perf_counter()

    engine.write_tensor("x", x)
    engine.run(0)  # warm, untimed: checked, and its report gives the modelled figures
    got = engine.read_tensor("x")
    scale = float(np.abs(reference).max()) or 1.0
    for r in range(replicas):
        if not np.array_equal(got[r], got[0]):
            raise RuntimeError(f"{method}: replica {r}'s result differs from replica 0's")
    if not np.allclose(got[0], reference, rtol=1e-5, atol=1e-5 * scale):
        raise RuntimeError(f"{method}: the all-reduce's result is not the sum of the replicas' arrays")
    del got
    report = engine.get_report()
    cycles, clock = report.execution.total_cycles, report.target.clock
    for _ in range(warmup - 1):
        engine.run(0)
    best = C.best_of_interleaved({"run": lambda: engine.run(0), **baselines}, repeat=repeat, warmup=0)
    threads = getattr(getattr(engine, "_machine", None), "num_threads", "?")
    return {"build": t1 - t0, "compile": t2 - t1, "run": best["run"], "sum": best["sum"],
            "all_reduce": best["all_reduce"], "cycles": cycles, "seconds": cycles / clock, "threads": threads}


def main(argv=None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if os.environ.pop("GCL_OPTIONS", None) is not None:
        print("note: GCL_OPTIONS is set; ignored here (each row names its method)")
    n = args.elements or (1 << 20 if args.quick else 16 << 20)
    replicas = args.replicas
    methods = list(dict.fromkeys(args.methods or (QUICK_METHODS if args.quick else METHODS)))
    repeat, warmup = args.repeat or 3, max(1, args.warmup or 1)
    nbytes = n * 4
    topology = str(popsim.IPUModel("ipu2").ipu_link_topology)
    start = time.perf_counter()

    x = np.random.default_rng(0).standard_normal((replicas, n), dtype=np.float32)
    out = np.empty_like(x)

    def numpy_sum():
        s = x[0].copy()
        for r in range(1, replicas):
            s += x[r]
        return s

    def numpy_all_reduce():
        s = numpy_sum()
        for r in range(replicas):
            np.copyto(out[r], s)

    reference = numpy_sum()
    numpy_all_reduce()  # warm: out's pages
    baselines = {"sum": numpy_sum, "all_reduce": numpy_all_reduce}

    lowerings = {m: lowering(m, nbytes, replicas, topology) for m in methods}
    measured = {}
    for m in methods:  # auto built only where it picks a method not listed
        low = lowerings[m]
        if low not in measured and (m != "auto" or low not in methods):
            measured[low] = measure(m, x, reference, baselines, repeat, warmup)
            gc.collect()  # one engine at a time

    rows, results = [], []
    size = f"{n / (1 << 20):g}M FLOAT x {replicas} replicas"
    auto = lowerings.get("auto")
    issue_size = (n, replicas) == (16 << 20, 8)  # the target is the issue's, for its size only
    for m in methods:
        f, low = measured[lowerings[m]], lowerings[m]
        label = m if low == m else f"{m} (= {low}{', its engine' if low in methods else ''})"
        if m == auto and "auto" in methods:
            label = f"{m} (auto's pick)"
        vs_sum, vs_all = f["run"] / f["sum"], f["run"] / f["all_reduce"]
        rows.append([label, f"{f['build']:.2f}", f"{f['compile']:.2f}", f"{f['run'] * 1e3:.1f}",
                     f"{f['sum'] * 1e3:.1f}", f"{f['all_reduce'] * 1e3:.1f}", f"{vs_sum:.2f}x", f"{vs_all:.2f}x",
                     f"{f['cycles']:,.0f}", f"{f['seconds'] * 1e3:.3f}", f"{nbytes / f['seconds'] / 1e9:.1f}"])
        if m == "auto" and low in methods:
            continue  # the table shows it; its figures are those of the row of the method it picks
        results.append(C.Result(
            bench="gcl", metric=f"all-reduce {size}, {label}: host run", unit="s", value=f["run"],
            baseline=f["sum"], baseline_label="numpy sum of the arrays", ratio=vs_sum,
            target=f"ratio <= {TARGET:g}" if issue_size else "", passed=vs_sum <= TARGET if issue_size else None,
            notes=[f"{label}: build {f['build']:.2f} s, compile {f['compile']:.2f} s; modelled {f['cycles']:,.0f} "
                   f"cycles = {f['seconds'] * 1e3:.3f} ms, algorithm bandwidth "
                   f"{nbytes / f['seconds'] / 1e9:.1f} GB/s"]))
        results.append(C.Result(
            bench="gcl", metric=f"all-reduce {size}, {label}: host run vs the whole work", unit="s",
            value=f["run"], baseline=f["all_reduce"], baseline_label="numpy sum + a copy to each replica",
            ratio=vs_all))
    threads = sorted({str(f["threads"]) for f in measured.values()})
    table = C.table(rows, ["method", "build s", "compile s", "run ms", "numpy sum ms", "numpy all-reduce ms",
                           "vs sum", "vs all-reduce", "modelled cycles", "modelled ms", "alg. bandwidth GB/s"])
    details = (f"{C.environment()}\n{size} ({nbytes / (1 << 20):g} MiB per replica), an ipu2 IPUModel of {replicas} "
               f"IPUs x 1472 tiles ({topology}), data mapped linearly; host: {os.cpu_count()} CPUs, engine threads "
               f"{', '.join(threads)}; run: best of {repeat} after {warmup} untimed, in alternation with the numpy "
               f"baselines ({time.perf_counter() - start:.1f} s in all)\n{table}\n")
    C.report(f"bench_gcl: all-reduce of {size} on the host vs numpy", results, args, details)
    return 0


if __name__ == "__main__":
    sys.exit(main())
