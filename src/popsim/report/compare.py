"""Two reports side by side: ``compare(a, b)`` says, as text, what changed from a to b.

Every figure is shown for both reports with its absolute and relative change: the
target, the graph's counts, memory (total, by category, the fullest tile, liveness),
cycles (total and by activity), each execution step (matched by name: the k-th step
called X in one report with the k-th called X in the other), compute sets and vertex
types (matched by name).
"""
from __future__ import annotations

from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from .report import Report

_CATEGORY_NAMES = {"compute_including_idle": "compute (including idle threads)",
                   "compute_excluding_idle": "compute (excluding idle threads)",
                   "ipu_exchange": "IPU exchange", "global_exchange": "global exchange",
                   "host_exchange": "host exchange", "sync": "sync", "control": "control"}


def _num(x: float) -> str:
    return f"{x:,.0f}" if float(x).is_integer() or abs(x) >= 100 else f"{x:,.1f}"


def _change(a: float, b: float) -> Tuple[str, str]:
    """The absolute and relative change from a to b."""
    d = b - a
    if d == 0:
        return "0", ""
    if a == 0:
        rel = "(new)"
    elif a > 0 and b > 0 and abs(d) >= 10 * a:  # e.g. (x1,472.0) reads better than (+147100.0%)
        rel = f"(x{b / a:,.1f})"
    else:
        rel = f"({100.0 * d / abs(a):+.1f}%)"
    return ("+" if d > 0 else "-") + _num(abs(d)), rel


def _table(title: str, headers: Sequence[str], rows: List[List[str]]) -> List[str]:
    """A titled table: the first column left-aligned, the others right-aligned."""
    if not rows:
        return []
    widths = [max(len(str(r[k])) for r in [list(headers)] + rows) for k in range(len(headers))]

    def fmt(r):
        cells = [str(r[0]).ljust(widths[0])] + [str(c).rjust(w) for c, w in zip(r[1:], widths[1:])]
        return ("  " + "  ".join(cells)).rstrip()

    return [title, fmt(headers)] + [fmt(r) for r in rows] + [""]


def _row(name: str, a: Optional[float], b: Optional[float], note_a: str = "", note_b: str = "") -> List[str]:
    """A row of a figure present in both (or only one: None for the other)."""
    sa = "-" if a is None else _num(a) + note_a
    sb = "-" if b is None else _num(b) + note_b
    if a is None or b is None:
        return [name, sa, sb, "only in " + ("B" if a is None else "A"), ""]
    return [name, sa, sb, *_change(a, b)]


_HEAD = ["", "A", "B", "change", "relative"]


def _target(a: Report, b: Report) -> List[str]:
    ta, tb = a.target, b.target
    fields = [("type", "type"), ("architecture", "arch"), ("IPUs", "num_ipus"), ("tiles per IPU", "tiles_per_ipu"),
              ("total tiles", "num_tiles"), ("memory per tile (bytes)", "bytes_per_tile"), ("clock (Hz)", "clock"),
              ("worker contexts", "num_worker_contexts")]
    rows = []
    for label, name in fields:
        va, vb = getattr(ta, name), getattr(tb, name)
        if name == "bytes_per_tile" and "CPU" in (ta.type, tb.type):  # a CPU target's memory has no limit
            va, vb = ("unlimited" if t.type == "CPU" else v for t, v in ((ta, va), (tb, vb)))
        if va != vb:
            if isinstance(va, str) or isinstance(vb, str):
                rows.append([label] + [v if isinstance(v, str) else _num(v) for v in (va, vb)] + ["", ""])
            else:
                rows.append([label, _num(va), _num(vb), *_change(va, vb)])
    if not rows:
        memory = "unlimited memory" if ta.type == "CPU" else f"{ta.bytes_per_tile:,} bytes per tile"
        return ["Target: the same (" + f"{ta.type} {ta.arch}, {ta.num_ipus} IPU(s) x {ta.tiles_per_ipu:,} tiles, "
                f"{memory}, {ta.clock / 1e6:,.1f} MHz)", ""]
    return _table("Target (differences):", _HEAD, rows)


def _graph(a: Report, b: Report) -> List[str]:
    rows = [_row(label, getattr(a.graph, name), getattr(b.graph, name))
            for label, name in (("vertices", "num_vertices"), ("edges", "num_edges"), ("variables", "num_variables"),
                                ("compute sets", "num_compute_sets"))]
    return _table("Graph:", _HEAD, rows)


def _union(first: Iterable[str], second: Iterable[str]) -> List[str]:
    out = list(dict.fromkeys(first))
    out += [k for k in dict.fromkeys(second) if k not in out]
    return out


def _memory(a: Report, b: Report) -> List[str]:
    ma, mb = a.memory, b.memory
    rows = [_row("total", ma.total, mb.total)]
    for name in _union(ma.by_category, mb.by_category):
        rows.append(_row("  " + name.replace("_", " "), ma.category_total(name) if name in ma.by_category else None,
                         mb.category_total(name) if name in mb.by_category else None))
    rows.append(_row("fullest tile", ma.max_bytes, mb.max_bytes, f" (tile {ma.max_tile})", f" (tile {mb.max_tile})"))
    rows.append(_row("tiles out of memory", len(ma.tiles_out_of_memory), len(mb.tiles_out_of_memory)))
    rows.append(_row("always live", ma.always_live, mb.always_live))
    rows.append(_row("not always live", ma.not_always_live, mb.not_always_live))
    rows.append(_row("most live in a step", max(ma.liveness, default=0), max(mb.liveness, default=0)))
    return _table("Memory (bytes):", _HEAD, rows)


def _execution(a: Report, b: Report) -> List[str]:
    ea, eb = a.execution, b.execution
    runs_a = sum(int(p.get("runs", 0)) for p in ea.programs_executed)
    runs_b = sum(int(p.get("runs", 0)) for p in eb.programs_executed)
    rows = [_row("program runs", runs_a, runs_b), _row("total cycles", ea.total_cycles, eb.total_cycles)]
    for name in _union(ea.categories, eb.categories):
        rows.append(_row("  " + _CATEGORY_NAMES.get(name, name.replace("_", " ")), ea.categories.get(name),
                         eb.categories.get(name)))
    out = _table("Execution (cycles; activities are tile averages):", _HEAD, rows)
    cpu = [label for label, r in zip("AB", (a, b)) if r.target.type == "CPU"]
    if cpu:
        out.insert(-1, f"  ({' and '.join(cpu)}: a CPU target has no cost model and counts no cycles)")
    return out


def _matched_steps(a: Report, b: Report) -> List[Tuple[str, Optional[float], Optional[float]]]:
    """Steps matched by name: the k-th step called X in a with the k-th called X in b."""
    def keyed(r: Report) -> Dict[Tuple[str, int], float]:
        seen: Dict[str, int] = {}
        out = {}
        for s in r.execution.steps:
            k = seen.get(s.name, 0)
            seen[s.name] = k + 1
            out[(s.name, k)] = s.cycles
        return out

    ka, kb = keyed(a), keyed(b)
    return [(name if k == 0 else f"{name} [{k + 1}]", ka.get((name, k)), kb.get((name, k)))
            for name, k in _union(ka, kb)]


def _steps(a: Report, b: Report, max_steps: Optional[int]) -> List[str]:
    steps = _matched_steps(a, b)
    shown = steps
    if max_steps is not None and len(steps) > max_steps:
        def size(s):
            return abs((s[2] or 0) - (s[1] or 0))
        keep = set(sorted(range(len(steps)), key=lambda i: -size(steps[i]))[:max_steps])
        shown = [s for i, s in enumerate(steps) if i in keep]
    rows = [_row(name, ca, cb) for name, ca, cb in shown]
    title = "Execution steps (cycles over all runs; matched by name):"
    out = _table(title, _HEAD, rows)
    if len(shown) < len(steps):
        out.insert(-1, f"  ... and {len(steps) - len(shown):,} more steps with smaller changes (show all with --steps)")
    return out


def _named(title: str, a_items, b_items, fields: Sequence[Tuple[str, str]]) -> List[str]:
    ia, ib = {x.name: x for x in a_items}, {x.name: x for x in b_items}
    rows = []
    for name in _union(ia, ib):
        xa, xb = ia.get(name), ib.get(name)
        for k, (label, attr) in enumerate(fields):
            rows.append(_row(name + " " + label if k == 0 else "  " + label, None if xa is None else getattr(xa, attr),
                             None if xb is None else getattr(xb, attr)))
    return _table(title, _HEAD, rows)


def compare(a: Report, b: Report, labels: Optional[Tuple[str, str]] = None, max_steps: Optional[int] = 50) -> str:
    """What changed from report ``a`` to report ``b``, as text.

    :param a: the first report (the baseline).
    :param b: the second report.
    :param labels: what a and b are (e.g. their paths), for the heading.
    :param max_steps: list at most this many execution steps (those that changed most);
        None lists them all.
    """
    head = [f"Comparing two popsim reports: A = {labels[0]}, B = {labels[1]}" if labels else
            "Comparing two popsim reports, A and B",
            "  (change = B - A; relative = the change as a percentage of A)", ""]
    body = (_target(a, b) + _graph(a, b) + _memory(a, b) + _execution(a, b) + _steps(a, b, max_steps)
            + _named("Compute sets (cycles over all runs):", a.execution.compute_sets, b.execution.compute_sets,
                     [("cycles", "cycles"), ("vertices", "vertices"), ("runs", "runs")])
            + _named("Vertex types (cycles of all instances):", a.execution.vertex_types, b.execution.vertex_types,
                     [("cycles", "cycles"), ("instances", "instances")]))
    return "\n".join(head + body).rstrip("\n") + "\n"
