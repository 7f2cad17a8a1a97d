"""Benchmark: replicas spread over MPI processes (popsim.dist), against one process and against MPI itself.

(a) Compute-bound replicas. 8 replicas of an ipu2 IPUModel (one IPU of 64 tiles each)
    run poplin.mat_mul of FLOAT [256, 256] x [256, 256] (quick: 128) 128 times per
    program, with one thread per process (popsim.numThreads = 1): engine.run on one
    process (plain python) against the same script under mpiexec -n 2, where each process
    runs 4 replicas. Both check the products against numpy. Target: 2 processes at least
    1.7x faster (speed-up = one process's time / two processes' time).
(b) An all-reduce across processes. gcl.all_reduce_in_place_cross_replica (ADD, FLOAT,
    clockwise ring) of 16M elements (quick: 1M) per replica, 2 replicas on 2 processes
    (mpiexec -n 2, one replica each), data mapped with poputil.map_tensor_linearly: the
    host time of engine.run, in alternation with mpi4py's comm.Allreduce (SUM) of the same
    bytes between the same processes; the first run's result is checked against numpy.
    Target: within 2x of MPI's (ratio = popsim / Allreduce <= 2).
(c) Memory per process (informational). 16 replicas (quick: 8) of an ipu2 IPUModel, each
    with two FLOAT tensors of 16M elements (quick: 1M) mapped linearly: a ring-shifting
    CrossReplicaCopy, popops.add_in_place and an all-reduce of 64K elements, run once on
    1 process and on 4 (mpiexec -n 4): process 0's peak resident memory (ru_maxrss) and
    run time; the two runs' modelled cycles must agree. --memory-replicas,
    --memory-elements and --memory-processes change the sizes; --memory-only runs (c) alone.

The targets are the issue's, for the full sizes only (--quick rows are informational:
small transfers are dominated by fixed costs). Times are process 0's best of --repeat runs
(default 5) after a warm-up run; every process's run ends only when all have (the run's
closing barrier), so process 0's time is the job's. Needs mpi4py and mpiexec (pip install
"popsim[mpi]"); without them it prints why and writes no rows.

Run: python bench/bench_scale_out.py [--quick] [--repeat N] [--memory-only] [--memory-replicas R]
     [--memory-elements E] [--memory-processes N]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import _common as C  # noqa: E402

SPEEDUP_TARGET = 1.7
ALLREDUCE_TARGET = 2.0
REPEATS = 128  # mat_muls per run: long enough that a run is compute, not its fixed costs
COMPUTE_TILES = 64  # per IPU: each tile's share of a mat_mul is big enough to be compute, not bookkeeping


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="small sizes (CI smoke run)")
    p.add_argument("--repeat", type=int, default=5, help="timed runs (best is kept)")
    p.add_argument("--warmup", type=int, default=1, help="untimed runs first")
    p.add_argument("--json", metavar="PATH", default=None, help="also write the results as JSON")
    p.add_argument("--memory-only", action="store_true", help="only (c), the memory per process")
    p.add_argument("--memory-replicas", type=int, default=None, help="(c): replicas (default 16; quick: 8)")
    p.add_argument("--memory-elements", type=int, default=None,
                   help="(c): elements per tensor (default 16M; quick: 1M)")
    p.add_argument("--memory-processes", type=int, default=4, help="(c): the processes compared with one (default 4)")
    p.add_argument("--child", choices=["compute", "allreduce", "memory"], default=None, help=argparse.SUPPRESS)
    p.add_argument("--out", default=None, help=argparse.SUPPRESS)
    return p.parse_args(argv)


# -- what each process runs ---------------------------------------------------------------------
def _device(replicas: int, tiles: int = 0):
    import popsim
    model = popsim.IPUModel("ipu2")
    model.num_ipus = replicas
    if tiles:
        model.tiles_per_ipu = tiles
    device = model.create_device()
    return device, popsim.Graph(device, replication_factor=replicas)


def _timed_runs(engine, repeat: int, warmup: int, extra=None):
    """Best engine.run time (and, alternating with it, best ``extra()`` time)."""
    fns = {"run": lambda: engine.run(0)}
    if extra is not None:
        fns["extra"] = extra
    return C.best_of_interleaved(fns, repeat, warmup)


def child_compute(args) -> dict:
    import popsim
    from popsim import FLOAT, poplin
    from popsim.program import Repeat, Sequence
    size, replicas = (128 if args.quick else 256), 8
    device, g = _device(replicas, COMPUTE_TILES)
    poplin.add_codelets(g)
    a = poplin.create_mat_mul_input_lhs(g, FLOAT, [size, size], [size, size], "a")
    b = poplin.create_mat_mul_input_rhs(g, FLOAT, [size, size], [size, size], "b")
    body = Sequence()
    c = poplin.mat_mul(g, a, b, body, "c")
    g.create_host_write("a", a)
    g.create_host_write("b", b)
    g.create_host_read("c", c)
    rng = np.random.default_rng(0)
    first, local = popsim.dist.replica_index_offset(), popsim.dist.num_local_replicas()
    A = rng.standard_normal((replicas, size, size)).astype(np.float32)[first:first + local]  # noqa: N806 - the matrices
    B = rng.standard_normal((size, size)).astype(np.float32)  # noqa: N806
    with popsim.Engine(g, Repeat(REPEATS, body), {"popsim.numThreads": "1"}) as engine:
        engine.load(device)
        engine.write_tensor("a", A)
        engine.write_tensor("b", B)
        engine.run(0)
        np.testing.assert_allclose(engine.read_tensor("c"), A @ B, rtol=1e-4, atol=1e-3)
        best = _timed_runs(engine, args.repeat, args.warmup)
    return {"run": best["run"], "size": size, "replicas": replicas}


def child_allreduce(args) -> dict:
    import popsim
    from mpi4py import MPI
    from popsim import FLOAT, gcl, poputil
    from popsim.program import Sequence
    n, replicas = (1 << 20 if args.quick else 16 << 20), 2
    device, g = _device(replicas)
    x = g.add_variable(FLOAT, (n,), "x")
    poputil.map_tensor_linearly(g, x)
    prog = Sequence()
    gcl.all_reduce_in_place_cross_replica(g, x, gcl.CollectiveOperator.ADD, prog, name="ar",
                                          options={"method": "clockwise_ring"})
    g.create_host_write("x", x)
    g.create_host_read("x_out", x)
    data = np.random.default_rng(0).standard_normal((replicas, n), dtype=np.float32)
    me = popsim.dist.replica_index_offset()
    comm = MPI.COMM_WORLD
    send, recv = data[me].copy(), np.empty(n, np.float32)
    with popsim.Engine(g, prog, {"popsim.numThreads": "1"}) as engine:
        engine.load(device)
        engine.write_tensor("x", data[me:me + 1])
        engine.run(0)
        got = engine.read_tensor("x_out")[0]
        np.testing.assert_allclose(got, data[0] + data[1], rtol=1e-6, atol=1e-6)
        comm.Barrier()
        best = _timed_runs(engine, args.repeat, args.warmup, extra=lambda: comm.Allreduce(send, recv, MPI.SUM))
    return {"run": best["run"], "mpi": best["extra"], "elements": n}


def child_memory(args) -> dict:
    import resource
    import popsim
    from popsim import FLOAT, gcl, popops, poputil
    from popsim.program import CrossReplicaCopy, Sequence
    n = args.memory_elements or (1 << 20 if args.quick else 16 << 20)
    replicas = args.memory_replicas or (8 if args.quick else 16)
    device, g = _device(replicas)
    x, y = g.add_variable(FLOAT, (n,), "x"), g.add_variable(FLOAT, (n,), "y")
    for t in (x, y):
        poputil.map_tensor_linearly(g, t)
    prog = Sequence(CrossReplicaCopy(x, y, {r: (r + 1) % replicas for r in range(replicas)}))
    popops.add_in_place(g, x, y, prog)
    gcl.all_reduce_in_place_cross_replica(g, x[:1 << 16], gcl.CollectiveOperator.ADD, prog)
    with popsim.Engine(g, prog, {"popsim.numThreads": "1"}) as engine:
        engine.load(device)
        start = time.perf_counter()
        engine.run(0)
        seconds = time.perf_counter() - start
        cycles = engine.get_report().execution.total_cycles
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return {"run": seconds, "peak": peak, "cycles": cycles, "replicas": replicas, "elements": n,
            "local": popsim.dist.num_local_replicas()}


# -- the parent: launch, collect, report ---------------------------------------------------------
def launch(kind: str, processes: int, args, tmp: str) -> dict:
    out = os.path.join(tmp, f"{kind}-{processes}.json")
    command = [sys.executable, os.path.abspath(__file__), "--child", kind, "--out", out,
               "--repeat", str(args.repeat), "--warmup", str(args.warmup)] + (["--quick"] if args.quick else [])
    for flag in ("memory_replicas", "memory_elements"):
        if getattr(args, flag):
            command += ["--" + flag.replace("_", "-"), str(getattr(args, flag))]
    if processes > 1:
        command = [shutil.which("mpiexec"), "-n", str(processes)] + command
    env = dict(os.environ, POPSIM_MPI="1" if processes > 1 else "0")
    subprocess.run(command, check=True, env=env)
    with open(out) as f:
        return json.load(f)


def main(argv=None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.child:
        import popsim
        result = {"compute": child_compute, "allreduce": child_allreduce, "memory": child_memory}[args.child](args)
        if popsim.dist.instance_index() == 0:
            with open(args.out, "w") as f:
                json.dump(result, f)
        return 0
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        C.report("bench_scale_out: skipped", [], args, "mpi4py is not installed: pip install \"popsim[mpi]\"")
        return 0
    if shutil.which("mpiexec") is None:
        C.report("bench_scale_out: skipped", [], args, "no mpiexec on PATH: pip install \"popsim[mpi]\"")
        return 0
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        results, details = ([], []) if args.memory_only else speed(args, tmp)
        results += memory(args, tmp)
    C.report("bench_scale_out: replicas over MPI processes vs one process and vs MPI's Allreduce", results, args,
             "; ".join(details + [f"{time.perf_counter() - start:.0f} s in all"]))
    return 0


def speed(args, tmp: str):
    """(a) and (b): their rows, and a line of raw figures."""
    one, two = launch("compute", 1, args, tmp), launch("compute", 2, args, tmp)
    reduce = launch("allreduce", 2, args, tmp)
    speedup = one["run"] / two["run"]
    ratio = reduce["run"] / reduce["mpi"]
    size = f"{reduce['elements'] / (1 << 20):g}M FLOAT"
    rows = [
        C.Result(bench="scale_out", metric=f"{one['replicas']} replicas of mat_mul {one['size']}^3 x{REPEATS}, "
                 "2 processes x 1 thread: host run", unit="s", value=two["run"], baseline=one["run"],
                 baseline_label="1 process x 1 thread", ratio=two["run"] / one["run"],
                 target="" if args.quick else f"speed-up >= {SPEEDUP_TARGET:g}",
                 passed=None if args.quick else speedup >= SPEEDUP_TARGET,
                 notes=[f"speed-up {speedup:.2f}x"]),
        C.Result(bench="scale_out", metric=f"all-reduce {size}, 2 replicas on 2 processes: host run", unit="s",
                 value=reduce["run"], baseline=reduce["mpi"], baseline_label="mpi4py Allreduce of the same bytes",
                 ratio=ratio, target="" if args.quick else f"ratio <= {ALLREDUCE_TARGET:g}",
                 passed=None if args.quick else ratio <= ALLREDUCE_TARGET),
    ]
    return rows, [f"(a) one process {one['run']:.3f} s, two {two['run']:.3f} s",
                  f"(b) popsim {reduce['run'] * 1e3:.1f} ms, Allreduce {reduce['mpi'] * 1e3:.1f} ms"]


def memory(args, tmp: str):
    """(c): process 0's peak memory on one process and on --memory-processes."""
    alone, shared = launch("memory", 1, args, tmp), launch("memory", args.memory_processes, args, tmp)
    assert alone["cycles"] == shared["cycles"], "the processes modelled other cycles than one process"
    rows = []
    for processes, m in ((1, alone), (args.memory_processes, shared)):
        rows.append(C.Result(
            bench="scale_out", metric=f"{m['replicas']} replicas x 2 x {m['elements'] / (1 << 20):g}M FLOAT on "
            f"{processes} process{'es' if processes > 1 else ''}: peak memory of process 0", unit="GiB",
            value=m["peak"] / 2 ** 30,
            notes=[f"{m['local']} replicas per process, run {m['run']:.2f} s, {m['cycles']:,.0f} cycles"]))
    return rows


if __name__ == "__main__":
    sys.exit(main())
