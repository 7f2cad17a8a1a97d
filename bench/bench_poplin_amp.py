"""Benchmark: availableMemoryProportion (AMP) swept over one matmul on an ipu2 IPUModel.

For [n, n] @ [n, n] (FLOAT, n = 1024; 256 with --quick) and each AMP value, the plan
(poplin.get_mat_mul_plan: temporary bytes per tile, serial splits, in-channel and
out-channel partition, the planner's cycles, and whether the planner warned that no plan
fits), then, built and run on the engine, the modelled total cycles and the report's
temporary memory (bench/_poplin_model.py says how it is read). Plans with more than
--max-serial serial iterations are planned only (each iteration is a compute set and a
reduction: building 32 of them takes over a minute on a 2-core host).

Run: python bench/bench_poplin_amp.py [--quick] [--max-serial N] [--dtype float|half]
docs/poplin_amp.md explains the table.
"""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _poplin_model as M

from popsim import FLOAT, HALF

AMPS = (1.0, 0.6, 0.2, 0.1, 0.05, 0.03, 0.02, 0.01, 0.005)


def sweep(n: int, dtype, amps, max_serial: int) -> list:
    rows = []
    for amp in amps:
        options = {"availableMemoryProportion": amp}
        plan, warned = M.plan_of(n, dtype, options)
        p = plan.partition
        serial = p.total_serial_split()
        row = {"amp": amp, "budget": int(amp * 638976), "plan_temp": plan.temp_bytes_per_tile,
               "serial": f"in {p.in_chan_split.serial} out {p.out_chan_split.serial}",
               "partition": f"M/{p.batch_split} K/{p.in_chan_split.parallel} N/{p.out_chan_split.parallel}",
               "tiles": plan.tiles_used, "plan_cycles": plan.cycles, "warned": bool(warned)}
        if serial <= max_serial:
            run = M.build_and_run(n, dtype, options)
            row.update(cycles=int(run["cycles"]), temp_per_tile=int(run["temp_bytes"] / plan.tiles_used),
                       max_tile=run["max_tile_bytes"], build_s=run["build_s"])
        rows.append(row)
        print(_line(row), flush=True)
    return rows


HEADER = ("| AMP | budget B/tile | plan temp B/tile | serial splits | partition | tiles | planner cycles | warned "
          "| modelled cycles | report temp B/tile | fullest tile B | build s |")


def _line(r) -> str:
    ran = "cycles" in r
    cells = [f"{r['amp']:g}", f"{r['budget']:,}", f"{r['plan_temp']:,}", r["serial"], r["partition"], str(r["tiles"]),
             f"{r['plan_cycles']:,}", "yes" if r["warned"] else "no",
             f"{r['cycles']:,}" if ran else "planned only", f"{r['temp_per_tile']:,}" if ran else "-",
             f"{r['max_tile']:,}" if ran else "-", f"{r['build_s']:.1f}" if ran else "-"]
    return "| " + " | ".join(cells) + " |"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--max-serial", type=int, default=16)
    parser.add_argument("--dtype", choices=("float", "half"), default="float")
    parser.add_argument("--n", type=int, default=None)
    parser.add_argument("--json", default=None, help="ignored (run_all compatibility)")
    args = parser.parse_args(argv)
    n = args.n or (256 if args.quick else 1024)
    dtype = FLOAT if args.dtype == "float" else HALF
    print(f"bench_poplin_amp: [{n},{n}] @ [{n},{n}] {dtype.name} on ipu2 (1472 tiles, 638,976 B per tile)")
    print(HEADER)
    print("|" + "---|" * 12)
    rows = sweep(n, dtype, (1.0, 0.1, 0.01) if args.quick else AMPS, args.max_serial)
    ran = [r for r in rows if "cycles" in r]
    for low, high in zip(ran[1:], ran[:-1]):  # AMP falls down the table
        if low["plan_temp"] > high["plan_temp"]:
            raise RuntimeError(f"AMP {low['amp']} planned more temporary memory than AMP {high['amp']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
