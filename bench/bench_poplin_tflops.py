"""Benchmark: modelled TFLOPS of square matmuls on an ipu2 IPUModel next to the peak.

For [n, n] @ [n, n], n = 256 .. 4096, FLOAT and HALF (default options: AMP 0.6, float
partials): 2·n³ FLOPs over the modelled seconds (cycles / 1.33 GHz), next to the target's
peak (poplin.peak_flops: 62.6 TFLOPS float, 250.6 half; Graphcore's published hardware figures). Sizes up
to --max-run are built and run on the engine and their cycles are the report's, with the
losses broken down from the execution profile (tile averages, summing to the total):

* busy compute: the busy worker slots of the compute sets, AMP and reduction vertices alike
  (``compute_excluding_idle``);
* idle workers: compute steps' time while some of the tile's 6 workers have no work
  (``compute_including_idle - compute_excluding_idle``);
* exchange (``ipu_exchange``) and sync (``sync``: waiting for the slowest tile);
* of the whole, the reduction of the in-channel partials (the ``*/Reduce`` steps).

Larger sizes are planned only by default (the planner's cycles; marked so), to keep the
run short: 2048² FLOAT builds in about 12 s and fits (its fullest tile 579 kB of 639 kB),
so --max-run 2048 runs it. No figure may exceed the peak: the script raises if one does.

Run: python bench/bench_poplin_tflops.py [--quick] [--max-run N]
"""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _poplin_model as M

import popsim
from popsim import FLOAT, HALF, poplin

SIZES = (256, 512, 1024, 2048, 4096)


def row(n: int, dtype, run: bool, target) -> dict:
    flops = poplin.mat_mul_flops(1, n, n, n)
    peak = poplin.peak_flops(target, dtype)
    plan, _ = M.plan_of(n, dtype, None)
    r = {"n": n, "dtype": dtype.name, "peak": peak, "plan_cycles": plan.cycles}
    if run:
        result = M.build_and_run(n, dtype)
        cycles = result["cycles"]
        cat = result["categories"]
        r.update(source="run", cycles=cycles, conv=cat["compute_excluding_idle"],
                 idle=cat["compute_including_idle"] - cat["compute_excluding_idle"], exchange=cat["ipu_exchange"],
                 sync=cat["sync"], reduce=result["reduce_cycles"], build_s=result["build_s"])
    else:
        r.update(source="planned only", cycles=plan.cycles)
    r["tflops"] = poplin.achieved_flops(flops, r["cycles"], target) / 1e12
    r["perfect_cycles"] = flops / 2 / (target.num_tiles * (target.amp_fp32_macs_per_cycle if dtype == FLOAT
                                                          else target.amp_fp16_macs_per_cycle))
    if r["tflops"] * 1e12 > peak:
        raise RuntimeError(f"[{n}]^3 {dtype.name}: modelled {r['tflops']:.1f} TFLOPS exceeds the peak "
                           f"{peak / 1e12:.1f}")
    return r


HEADER = ("| n | type | source | cycles | TFLOPS | peak | % of peak | perfect cycles | busy compute | idle workers "
          "| exchange | sync | reduce steps | planner cycles |")


def _pct(r, key):
    return f"{r[key]:,.0f} ({100 * r[key] / r['cycles']:.0f}%)" if key in r else "-"


def _line(r) -> str:
    cells = [str(r["n"]), r["dtype"], r["source"], f"{r['cycles']:,.0f}", f"{r['tflops']:.1f}",
             f"{r['peak'] / 1e12:.1f}", f"{100 * r['tflops'] * 1e12 / r['peak']:.1f}",
             f"{r['perfect_cycles']:,.0f}", _pct(r, "conv"), _pct(r, "idle"), _pct(r, "exchange"), _pct(r, "sync"),
             _pct(r, "reduce"), f"{r['plan_cycles']:,}"]
    return "| " + " | ".join(cells) + " |"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--max-run", type=int, default=1024, help="largest n built and run (others: planned)")
    parser.add_argument("--json", default=None, help="ignored (run_all compatibility)")
    args = parser.parse_args(argv)
    target = popsim.IPUModel("ipu2").create_device().target
    sizes = (256, 512) if args.quick else SIZES
    print("bench_poplin_tflops: square matmuls on ipu2 (1472 tiles, 1.33 GHz), default options")
    print(HEADER)
    print("|" + "---|" * 14)
    for dtype in (FLOAT, HALF):
        for n in sizes:
            print(_line(row(n, dtype, n <= args.max_run, target)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
