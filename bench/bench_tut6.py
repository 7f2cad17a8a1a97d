"""Benchmark: tutorial 6 (matrix-vector, optimised) at 10000 x 1000, end to end.

Runs tutorials/tut6_matrix_vector_opt.py as a user would (a fresh process: graph with
80,000 vertices, Engine, run, check, profile summary), times it (target < 5 s), and
prints popsim's cycle figures beside the ones Poplar's IPUModel publishes for the same
program on ipu2 (the tutorial's README).

Run: python bench/bench_tut6.py [--quick]   (--quick: 1000 x 100, no fidelity table)
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common as C  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "tutorials", "tut6_matrix_vector_opt.py")

# Poplar SDK IPUModel, ipu2, tutorial 6 at 10000 x 1000 (the tutorial's README).
POPLAR = {
    "Total cycles": 6_681_766,
    "Tile average compute cycles (including idle threads)": 3_801.8,
    "Tile average compute cycles (excluding idle threads)": 3_717.6,
    "Tile average IPU exchange cycles": 8_697.4,
    "Tile average host exchange cycles": 6_663_550.8,
    "Tile average sync cycles": 1_134.8,
}


def figures(text: str) -> dict:
    out = {}
    for label in POPLAR:
        m = re.search(re.escape(label) + r":\s+([\d,.]+)", text)
        if m:
            out[label] = float(m.group(1).replace(",", ""))
    return out


def main(argv=None) -> int:
    args = C.parse_args(__doc__.splitlines()[0], argv)
    size = ["1000", "100"] if args.quick else ["10000", "1000"]
    start = time.perf_counter()
    result = subprocess.run([sys.executable, SCRIPT, *size], capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if result.returncode != 0 or "Multiplication result OK" not in result.stdout:
        raise RuntimeError(f"tutorial 6 failed:\n{result.stdout}\n{result.stderr}")
    res = C.Result(bench="tut6", metric=f"tutorial 6 {'x'.join(size)} end to end", unit="s", value=seconds,
                   target="< 5 s" if not args.quick else "", passed=(seconds < 5) if not args.quick else None)
    details = C.environment()
    if not args.quick:
        ours = figures(result.stdout)
        rows = []
        for label, theirs in POPLAR.items():
            mine = ours.get(label)
            diff = "-" if mine is None else f"{100.0 * (mine - theirs) / theirs:+.1f}%"
            rows.append([label, f"{theirs:,.1f}", "-" if mine is None else f"{mine:,.1f}", diff])
        details += "\n\nCycle model vs Poplar's IPUModel (ipu2, 10000 x 1000):\n"
        details += C.table(rows, ["figure", "Poplar IPUModel", "popsim", "difference"])
    C.report("bench_tut6: tutorial 6 end to end", [res], args, details)
    return 0


if __name__ == "__main__":
    sys.exit(main())
