"""Shared helpers for the popsim benchmarks: argument parsing, timing, result tables.

Every benchmark script builds a list of :class:`Result` rows, prints them as a table and,
with ``--json PATH``, writes them for ``run_all.py``. A missed target is reported as FAIL
text only; the scripts exit non-zero only when an exception escapes.
"""
from __future__ import annotations

import argparse
import gc
import json
import platform
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import Callable, Dict, List, Optional, Sequence

import numpy as np

MIB = 1 << 20


@dataclass
class Result:
    bench: str                      # script name, e.g. "copy"
    metric: str                     # what was measured, e.g. "Copy 64 MiB tensor->tensor"
    unit: str                       # "s", "ns/iter", "ops/s"
    value: float                    # the popsim measurement
    baseline: Optional[float] = None
    baseline_label: str = ""
    ratio: Optional[float] = None   # popsim time / baseline time (> 1: popsim slower)
    target: str = ""                # e.g. "ratio <= 1.5"; empty: informational row
    passed: Optional[bool] = None   # None: no target
    notes: List[str] = field(default_factory=list)

    @property
    def verdict(self) -> str:
        if self.passed is None:
            return "-"
        return "PASS" if self.passed else "FAIL"


def parse_args(description: str, argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--quick", action="store_true", help="small sizes (CI smoke run, a few seconds)")
    p.add_argument("--repeat", type=int, default=None, help="timed repetitions (best is kept)")
    p.add_argument("--warmup", type=int, default=None, help="untimed warm-up repetitions")
    p.add_argument("--json", metavar="PATH", default=None, help="also write the results as JSON")
    return p.parse_args(argv)


def best_of(fn: Callable[[], object], repeat: int, warmup: int = 1) -> float:
    """Minimum wall time of ``fn()`` over ``repeat`` runs after ``warmup`` untimed runs."""
    for _ in range(warmup):
        fn()
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def best_of_interleaved(fns: Dict[str, Callable[[], object]], repeat: int, warmup: int = 1) -> Dict[str, float]:
    """Like best_of for several functions, run in alternation so that drift in machine
    load (frequency scaling, other processes) affects all of them alike."""
    for _ in range(warmup):
        for fn in fns.values():
            fn()
    best = {k: float("inf") for k in fns}
    for _ in range(repeat):
        for k, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            best[k] = min(best[k], time.perf_counter() - t0)
    return best


def collect() -> None:
    gc.collect()


def fmt_value(v: Optional[float], unit: str) -> str:
    if v is None:
        return "-"
    if unit == "s":
        if v < 1e-3:
            return f"{v * 1e6:.1f} us"
        if v < 1.0:
            return f"{v * 1e3:.2f} ms"
        return f"{v:.3f} s"
    if unit == "ops/s":
        return f"{v:,.0f} ops/s"
    if unit == "cycles":
        return f"{v:,.0f} cycles"
    if unit == "ns/iter":
        return f"{v:.1f} ns/iter"
    return f"{v:.4g} {unit}"


def fmt_ratio(r: Optional[float]) -> str:
    return "-" if r is None else f"{r:.2f}x"


def table(rows: List[List[str]], header: List[str]) -> str:
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
    line = "  ".join("-" * w for w in widths)
    out = ["  ".join(str(h).ljust(w) for h, w in zip(header, widths)), line]
    for r in rows:
        out.append("  ".join(str(c).ljust(w) for c, w in zip(r, widths)))
    return "\n".join(out)


HEADER = ["metric", "popsim", "baseline", "ratio", "target", "result"]


def result_rows(results: List[Result]) -> List[List[str]]:
    rows = []
    for r in results:
        base = fmt_value(r.baseline, r.unit)
        if r.baseline is not None and r.baseline_label:
            base = f"{base} ({r.baseline_label})"
        rows.append([r.metric, fmt_value(r.value, r.unit), base, fmt_ratio(r.ratio), r.target or "-", r.verdict])
    return rows


def environment() -> str:
    import popsim
    return (f"python {platform.python_version()}, numpy {np.__version__}, popsim {popsim.__version__}, "
            f"{platform.machine()} {platform.system()}")


def report(title: str, results: List[Result], args: argparse.Namespace, details: str = "") -> None:
    print(f"== {title}{' (quick)' if args.quick else ''} ==")
    if details:
        print(details)
    print(table(result_rows(results), HEADER))
    for r in results:
        for note in r.notes:
            print(f"note: {note}")
    print("(ratio = popsim time / baseline time; > 1 means popsim is slower)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump([asdict(r) for r in results], f, indent=1)
    sys.stdout.flush()
