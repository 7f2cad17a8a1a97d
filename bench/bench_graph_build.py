"""Benchmark: graph construction + Engine build + load, and tensor view operations.

1. Build: a Graph on an ipu2 IPUModel with 1472 tiles x 100 FLOAT[4] variables (x 10 with
   --quick), each mapped to its tile with set_tile_mapping, then Engine(graph,
   popsim.Sequence()) and engine.load(device). Total seconds, target < 2 s.
2. Views: a mix of seven view operations on a rank-3 FLOAT[8, 16, 32] variable (t[i],
   t.slice(b, e, dim), t.reshape, t.dim_shuffle, t[1:5, ::2], transpose, t.flatten()),
   in ops per second, target >= 200,000 ops/s; baseline: the numpy equivalents on an
   ndarray of the same shape (ratio = popsim time per op / numpy time per op).

Run: python bench/bench_graph_build.py [--quick]
"""
from __future__ import annotations

import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common as C

import popsim
from popsim import FLOAT

TARGET_BUILD_S = 2.0
TARGET_OPS = 200_000
VIEW_SHAPE = (8, 16, 32)
OPS_PER_MIX = 7


def build(device, vars_per_tile: int):
    """Build the graph, the engine and load it; returns the phase times and the engine."""
    t0 = time.perf_counter()
    graph = popsim.Graph(device.target)
    for tile in range(device.target.num_tiles):
        for j in range(vars_per_tile):
            v = graph.add_variable(FLOAT, [4], f"v{tile}_{j}")
            graph.set_tile_mapping(v, tile)
    t1 = time.perf_counter()
    engine = popsim.Engine(graph, popsim.Sequence())
    t2 = time.perf_counter()
    engine.load(device)
    t3 = time.perf_counter()
    return {"graph": t1 - t0, "engine": t2 - t1, "load": t3 - t2, "total": t3 - t0}, graph, engine, v


# The view mix. transpose() is Poplar's 2-D transpose (rank 3 raises, as in Poplar), so it is
# applied to a rank-2 view of the same variable, made once outside the timed loop.
def popsim_mix(t, t2):
    t[3]
    t.slice(2, 6, 1)
    t.reshape([16, 8, 32])
    t.dim_shuffle([2, 0, 1])
    t[1:5, ::2]
    t2.transpose()
    t.flatten()


def numpy_mix(a, a2):
    a[3]
    a[:, 2:6]
    a.reshape((16, 8, 32))
    a.transpose((2, 0, 1))
    a[1:5, ::2]
    a2.T
    a.ravel()          # a view, like t.flatten() (ndarray.flatten would copy)


def check_views(t, t2, a, a2) -> None:
    pairs = [(t[3], a[3]), (t.slice(2, 6, 1), a[:, 2:6]), (t.reshape([16, 8, 32]), a.reshape((16, 8, 32))),
             (t.dim_shuffle([2, 0, 1]), a.transpose((2, 0, 1))), (t[1:5, ::2], a[1:5, ::2]),
             (t2.transpose(), a2.T), (t.flatten(), a.ravel())]
    for i, (p, q) in enumerate(pairs):
        if tuple(p.shape) != q.shape:
            raise RuntimeError(f"view op {i}: popsim shape {tuple(p.shape)} != numpy shape {q.shape}")


def main(argv=None) -> int:
    args = C.parse_args(__doc__.splitlines()[0], argv)
    vars_per_tile = 10 if args.quick else 100
    build_repeat = args.repeat or 3
    build_warmup = args.warmup if args.warmup is not None else 1
    mixes = 2_000 if args.quick else 30_000
    view_repeat = args.repeat or (3 if args.quick else 5)

    device = popsim.IPUModel("ipu2").create_device()
    num_tiles = device.target.num_tiles

    # -- 1. build ------------------------------------------------------------------------------
    cold = None
    best = None
    num_vars = num_tiles * vars_per_tile
    for i in range(build_warmup + build_repeat):
        C.collect()
        phases, graph, engine, last = build(device, vars_per_tile)
        if i == 0:
            cold = phases["total"]
            # Sanity check (untimed): the last variable sits on the last tile only.
            m = graph.get_tile_mapping(last)
            if [tuple(x) for x in m[num_tiles - 1]] != [(0, 4)] or any(m[k] for k in range(num_tiles - 1)):
                raise RuntimeError(f"set_tile_mapping(v, {num_tiles - 1}) gave an unexpected mapping")
        if i >= build_warmup and (best is None or phases["total"] < best["total"]):
            best = phases
        del graph, engine, last

    build_res = C.Result(bench="graph_build", metric=f"build {num_tiles}x{vars_per_tile} vars + Engine + load",
                         unit="s", value=best["total"], target=f"< {TARGET_BUILD_S:.0f} s",
                         passed=best["total"] < TARGET_BUILD_S)
    phase_rows = [C.Result(bench="graph_build", metric=f"  of which {k}", unit="s", value=best[k])
                  for k in ("graph", "engine", "load")]

    # -- 2. views ------------------------------------------------------------------------------
    vg = popsim.Graph(device.target)
    t = vg.add_variable(FLOAT, list(VIEW_SHAPE), "t")
    vg.set_tile_mapping(t, 0)
    t2 = t[0]
    a = np.zeros(VIEW_SHAPE, np.float32)
    a2 = a[0]
    check_views(t, t2, a, a2)

    def run_popsim():
        for _ in range(mixes):
            popsim_mix(t, t2)

    def run_numpy():
        for _ in range(mixes):
            numpy_mix(a, a2)

    C.collect()
    tv = C.best_of_interleaved({"popsim": run_popsim, "numpy": run_numpy}, repeat=view_repeat, warmup=1)
    nops = mixes * OPS_PER_MIX
    ops_popsim = nops / tv["popsim"]
    ops_numpy = nops / tv["numpy"]
    view_res = C.Result(bench="graph_build", metric="tensor view ops (7-op mix)", unit="ops/s", value=ops_popsim,
                        baseline=ops_numpy, baseline_label="numpy views", ratio=tv["popsim"] / tv["numpy"],
                        target=f">= {TARGET_OPS:,} ops/s", passed=ops_popsim >= TARGET_OPS)

    # Per-operation rates (context).
    single = {
        "t[i]": (lambda: t[3], lambda: a[3]),
        "t.slice(2, 6, 1)": (lambda: t.slice(2, 6, 1), lambda: a[:, 2:6]),
        "t.reshape": (lambda: t.reshape([16, 8, 32]), lambda: a.reshape((16, 8, 32))),
        "t.dim_shuffle": (lambda: t.dim_shuffle([2, 0, 1]), lambda: a.transpose((2, 0, 1))),
        "t[1:5, ::2]": (lambda: t[1:5, ::2], lambda: a[1:5, ::2]),
        "t2.transpose() (2-D)": (lambda: t2.transpose(), lambda: a2.T),
        "t.flatten()": (lambda: t.flatten(), lambda: a.ravel()),
    }
    per_op = []
    n_single = max(1, mixes // 2)
    for name, (pf, nf) in single.items():
        def loop(f=pf):
            for _ in range(n_single):
                f()

        def nloop(f=nf):
            for _ in range(n_single):
                f()
        b = C.best_of_interleaved({"popsim": loop, "numpy": nloop}, repeat=3, warmup=1)
        per_op.append(C.Result(bench="graph_build", metric=f"  {name}", unit="ops/s", value=n_single / b["popsim"],
                               baseline=n_single / b["numpy"], ratio=b["popsim"] / b["numpy"]))

    details = (f"build: {num_vars:,} FLOAT[4] variables ({num_tiles} tiles x {vars_per_tile}), "
               f"best of {build_repeat} after {build_warmup} warm-up (cold first build: {cold:.3f} s)\n"
               f"views: {nops:,} ops per timing on FLOAT{list(VIEW_SHAPE)}, best of {view_repeat}; per-op rows "
               f"include a lambda call in both columns\n{C.environment()}")
    C.report("bench_graph_build: graph build and tensor views", [build_res, *phase_rows, view_res, *per_op], args,
             details)
    return 0


if __name__ == "__main__":
    sys.exit(main())
