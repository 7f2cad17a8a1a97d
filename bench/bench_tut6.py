"""Benchmark: tutorial 6 (matrix-vector, optimised) at 10000 x 1000, end to end.

Runs tutorials/tut6_matrix_vector_opt.py as a user would (a fresh process: graph with
80,000 vertices, Engine, run, check, profile summary), times it (target < 2 s), and
prints popsim's cycle figures beside the ones Poplar's IPUModel publishes for the same
program on ipu2 (the tutorial's README).

Also times the phases in this process (best of --repeat, default 3): graph building
(``build_multiply_program``: 80,000 add_vertex calls with their views and mappings),
Engine construction (lowering + native build) and load + run, so that a change in one
phase shows up apart from the others.

Run: python bench/bench_tut6.py [--quick]   (--quick: 1000 x 100, no fidelity table)
"""
from __future__ import annotations

import os
import re
import contextlib
import importlib.util
import io
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common as C

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "tutorials", "tut6_matrix_vector_opt.py")

# Poplar SDK IPUModel, tutorial 6 at 10000 x 1000: ipu2 from the tutorial's README (tile
# averages); ipu1 from the SDK 1.x README of the same program (totals over all tiles).
POPLAR = {
    "Total cycles": 6_681_766,
    "Tile average compute cycles (including idle threads)": 3_801.8,
    "Tile average compute cycles (excluding idle threads)": 3_717.6,
    "Tile average IPU exchange cycles": 8_697.4,
    "Tile average host exchange cycles": 6_663_550.8,
    "Tile average sync cycles": 1_134.8,
}


POPLAR_IPU1 = {
    "Total compute cycles (excluding idle threads)": 5_334_536,
    "DotProductVertex cycles (50,000 instances)": 5_250_000,
    "ReduceVertex cycles (10,000 instances)": 80_000,
}


def figures(text: str) -> dict:
    out = {}
    for label in POPLAR:
        m = re.search(re.escape(label) + r":\s+([\d,.]+)", text)
        if m:
            out[label] = float(m.group(1).replace(",", ""))
    for name in ("DotProductVertex", "ReduceVertex"):
        m = re.search(rf"{name} \(([\d,]+) instances\): ([\d,.]+)", text)
        if m:
            out[f"{name} cycles ({m.group(1)} instances)"] = float(m.group(2).replace(",", ""))
    return out


def run_tutorial(*args):
    start = time.perf_counter()
    result = subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True,
                            cwd=tempfile.mkdtemp(prefix="popsim-bench-tut6-"))
    seconds = time.perf_counter() - start
    if result.returncode != 0 or "Multiplication result OK" not in result.stdout:
        raise RuntimeError(f"tutorial 6 failed:\n{result.stdout}\n{result.stderr}")
    return result.stdout, seconds


def load_tutorial():
    spec = importlib.util.spec_from_file_location("tut6", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def phases_once(tut, rows: int, cols: int) -> dict:
    """One in-process run of the tutorial's steps, timed by phase (output suppressed)."""
    import numpy as np

    import popsim
    from popsim import FLOAT
    from popsim.program import Copy, Sequence
    model = popsim.IPUModel("ipu2")
    model.min_ipu_sync_delay = 0
    model.relative_sync_delay = popsim.RelativeSyncDelayType.NO_DELAY
    device = model.create_device()
    graph = popsim.Graph(device)
    graph.add_codelets(os.path.join(os.path.dirname(SCRIPT), "codelets", "matrix_mul_codelets.cpp"))
    matrix = graph.add_variable(FLOAT, [rows, cols], "matrix")
    in_vector = graph.add_variable(FLOAT, [cols], "inputVector")
    out_vector = graph.add_variable(FLOAT, [rows], "outputVector")
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        mul_prog = tut.build_multiply_program(graph, matrix, in_vector, out_vector)
    t1 = time.perf_counter()
    vs = graph.add_host_to_device_fifo("inputVector", FLOAT, cols)
    ms = graph.add_host_to_device_fifo("inputMatrix", FLOAT, cols * rows)
    out = graph.add_device_to_host_fifo("out", FLOAT, rows)
    prog = Sequence(Copy(vs, in_vector), Copy(ms, matrix), mul_prog, Copy(out_vector, out))
    t2 = time.perf_counter()
    engine = popsim.Engine(graph, prog)
    t3 = time.perf_counter()
    engine.load(device)
    rng = np.random.default_rng(42)
    h_input = rng.random(cols, dtype=np.float32)
    h_matrix = rng.random(rows * cols, dtype=np.float32)
    h_output = np.zeros(rows, np.float32)
    engine.connect_stream("inputVector", h_input)
    engine.connect_stream("inputMatrix", h_matrix)
    engine.connect_stream("out", h_output)
    engine.run()
    t4 = time.perf_counter()
    expected = h_matrix.reshape(rows, cols).astype(np.float64) @ h_input.astype(np.float64)
    if not np.allclose(h_output, expected, rtol=1e-5):
        raise RuntimeError("tutorial 6 phases: wrong product")
    return {"graph building (build_multiply_program)": t1 - t0, "Engine construction": t3 - t2,
            "load + run": t4 - t3}


def phases(rows: int, cols: int, repeat: int) -> list:
    tut = load_tutorial()
    best: dict = {}
    for _ in range(repeat):
        C.collect()
        for k, v in phases_once(tut, rows, cols).items():
            best[k] = min(best.get(k, v), v)
    return [C.Result(bench="tut6", metric=f"  phase: {k}", unit="s", value=v) for k, v in best.items()]


def fidelity_table(published: dict, ours: dict) -> str:
    rows = []
    for label, theirs in published.items():
        mine = ours.get(label)
        diff = "-" if mine is None else f"{100.0 * (mine - theirs) / theirs:+.1f}%"
        rows.append([label, f"{theirs:,.1f}", "-" if mine is None else f"{mine:,.1f}", diff])
    return C.table(rows, ["figure", "Poplar IPUModel", "popsim", "difference"])


def main(argv=None) -> int:
    args = C.parse_args(__doc__.splitlines()[0], argv)
    size = ["1000", "100"] if args.quick else ["10000", "1000"]
    out, seconds = run_tutorial(*size)
    res = C.Result(bench="tut6", metric=f"tutorial 6 {'x'.join(size)} end to end", unit="s", value=seconds,
                   target="< 2 s" if not args.quick else "", passed=(seconds < 2) if not args.quick else None)
    phase_rows = phases(int(size[0]), int(size[1]), args.repeat or 3)
    details = C.environment()
    if not args.quick:
        details += "\n\nCycle model vs Poplar's IPUModel, ipu2 (tile averages):\n"
        details += fidelity_table(POPLAR, figures(out))
        out1, _ = run_tutorial(*size, "--device", "model-ipu1")
        ours1 = figures(out1)
        tiles1 = 1216
        m = re.search(r"Tile average compute cycles \(excluding idle threads\):\s+([\d,.]+)", out1)
        if m:
            ours1["Total compute cycles (excluding idle threads)"] = float(m.group(1).replace(",", "")) * tiles1
        details += "\n\nCycle model vs Poplar's IPUModel, ipu1 (totals over the 1216 tiles):\n"
        details += fidelity_table(POPLAR_IPU1, ours1)
    details += f"\n\nphases: in this process, best of {args.repeat or 3}"
    C.report("bench_tut6: tutorial 6 end to end", [res, *phase_rows], args, details)
    return 0


if __name__ == "__main__":
    sys.exit(main())
