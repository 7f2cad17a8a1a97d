"""Run every popsim benchmark and print a combined summary.

Each script runs as its own subprocess (fresh interpreter and memory), with its output
shown as it goes; ``--quick`` is passed through. Exits 0 unless a script crashed (a
missed target is FAIL text in the summary, not an error).

Run: python bench/run_all.py [--quick]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import _common as C  # noqa: E402

SCRIPTS = ["bench_copies.py", "bench_vertices.py", "bench_tut6.py", "bench_report.py", "bench_control.py",
           "bench_graph_build.py", "bench_popops.py", "bench_poplin.py", "bench_plan_fidelity.py", "bench_popnn.py",
           "bench_replication.py", "bench_data_parallel.py", "bench_gcl.py", "bench_scale_out.py",
           "bench_popart_resnet50.py"]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="small sizes (CI smoke run)")
    p.add_argument("--only", nargs="*", default=None, help="run only these scripts (e.g. bench_copies)")
    args = p.parse_args(argv)

    scripts = SCRIPTS
    if args.only:
        wanted = {s if s.endswith(".py") else s + ".py" for s in args.only}
        scripts = [s for s in SCRIPTS if s in wanted]

    rows = []
    crashed = []
    t_start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for script in scripts:
            out_json = os.path.join(tmp, script + ".json")
            cmd = [sys.executable, os.path.join(HERE, script), "--json", out_json]
            if args.quick:
                cmd.append("--quick")
            print(f"$ python bench/{script}{' --quick' if args.quick else ''}", flush=True)
            t0 = time.perf_counter()
            rc = subprocess.call(cmd)
            elapsed = time.perf_counter() - t0
            print(f"[{script}: exit {rc}, {elapsed:.1f} s]\n", flush=True)
            if rc != 0 or not os.path.exists(out_json):
                crashed.append(script)
                rows.append([script, "CRASHED (exit %d)" % rc, "-", "-", "-", "-", "CRASH"])
                continue
            with open(out_json) as f:
                for r in json.load(f):
                    res = C.Result(**r)
                    if res.passed is None:      # informational breakdown rows stay in the script's own table
                        continue
                    rows.append([script] + C.result_rows([res])[0])

    print(f"== popsim benchmark summary{' (quick)' if args.quick else ''} ==")
    print(C.table(rows, ["script"] + C.HEADER))
    targets = [r for r in rows if r[-1] in ("PASS", "FAIL")]
    passed = sum(1 for r in targets if r[-1] == "PASS")
    print(f"{passed}/{len(targets)} targets met; {len(crashed)} script(s) crashed; "
          f"{time.perf_counter() - t_start:.1f} s in all")
    return 1 if crashed else 0


if __name__ == "__main__":
    sys.exit(main())
