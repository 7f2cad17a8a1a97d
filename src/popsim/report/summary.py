"""The text profile summary, with Poplar's sections and quantities:
Target, Graph, Memory Usage, Execution."""
from __future__ import annotations

from typing import TYPE_CHECKING, Dict, List

import numpy as np

if TYPE_CHECKING:  # only for annotations: report.py imports this module (Report.summary)
    from .report import Report

_LABEL_WIDTH = 57


def _bytes(n: float) -> str:
    """Poplar's units: binary multiples written kB / MB / GB."""
    for unit, scale in (("GB", 1 << 30), ("MB", 1 << 20), ("kB", 1 << 10)):
        if abs(n) >= scale:
            return f"{n / scale:,.1f} {unit}"
    return f"{int(n):,} B"


def _line(label: str, value: str, indent: int = 2) -> str:
    return f"{' ' * indent}{label + ':':<{_LABEL_WIDTH - indent}}{value}"


def _target(r: Report) -> List[str]:
    t = r.target
    return ["Target:",
            _line("Number of IPUs", f"{t.num_ipus:,}"),
            _line("Tiles per IPU", f"{t.tiles_per_ipu:,}"),
            _line("Total Tiles", f"{t.num_tiles:,}"),
            _line("Memory Per-Tile", "unlimited" if t.type == "CPU" else _bytes(t.bytes_per_tile)),
            _line("Total Memory", "unlimited" if t.type == "CPU" else _bytes(t.total_memory)),
            _line("Clock Speed (approx)", f"{t.clock / 1e6:,.1f} MHz"),
            _line("Architecture", f"{t.arch} ({t.type})")] + \
        ([_line("Replicas", f"{t.replicas:,} (the target above is one replica's)")] if t.replicas > 1 else []) + [""]


def _graph(r: Report) -> List[str]:
    g = r.graph
    return ["Graph:",
            _line("Number of vertices", f"{g.num_vertices:,}"),
            _line("Number of edges", f"{g.num_edges:,}"),
            _line("Number of variables", f"{g.num_variables:,}"),
            _line("Number of compute sets", f"{g.num_compute_sets:,}"),
            ""]


_CATEGORY_LABELS = {
    "variables": "Variables", "constants": "Constants", "vertex_state": "Vertex instances and state",
    "edge_descriptors": "Edge descriptors", "exchange_buffers": "Exchange buffers", "exchange_code": "Exchange code",
    "vertex_code": "Vertex code", "control_code": "Control code", "stack": "Stack",
}


def _label(category: str) -> str:
    return _CATEGORY_LABELS.get(category, category.replace("_", " ").capitalize())


def _share(n: float, of: float) -> str:
    return f"{_bytes(n)} ({100.0 * n / of:.1f}%)" if of else _bytes(n)


def _histogram(tiles: np.ndarray, limit: int) -> List[str]:
    """Tiles per range of bytes, in eighths of the tile memory (or of the fullest tile)."""
    top = max(int(tiles.max()) if tiles.size else 0, 1)
    span = limit if limit and top <= limit else top
    edges = np.linspace(0, span, 9)
    counts, _ = np.histogram(np.minimum(tiles, span), bins=edges)
    lines = [_line(f"{_bytes(lo)} - {_bytes(hi)}", f"{int(c):,} tiles", 6)
             for lo, hi, c in zip(edges[:-1], edges[1:], counts) if c]
    over = int((tiles > limit).sum()) if limit else 0
    if over:
        lines.append(_line(f"over {_bytes(limit)}", f"{over:,} tiles", 6))
    return lines


def _memory(r: Report) -> List[str]:
    m = r.memory
    fig = m.figures()
    tiles = fig.tiles
    cpu = r.target.type == "CPU"
    capacity = 0 if cpu else r.target.total_memory
    out = ["Memory Usage:", _line("Total for all tiles", _share(fig.total, capacity))]
    for name in m.by_category:
        out.append(_line(_label(name), _bytes(fig.category_totals[name]), 4))
        if name == "exchange_buffers" and m.exchange_buffers_shared:
            out.append(_line("Saved by sharing received data", _bytes(m.exchange_buffers_shared), 6))
    limit = 0 if cpu else m.bytes_per_tile
    out += ["  By Tile:",
            _line("Maximum", f"{_share(fig.max_bytes, limit)} on tile {fig.max_tile}", 4),
            _line("Average", _bytes(float(tiles.mean()) if tiles.size else 0), 4),
            _line("Tiles holding data", f"{int((tiles > 0).sum()):,} of {tiles.size:,}", 4),
            _line("Tile(s) out of memory", f"{len(fig.out_of_memory):,}", 4),
            "    Histogram (bytes per tile):"]
    out += _histogram(tiles, limit)
    if m.largest:
        out.append("  Fullest tiles:")
        for entry in m.largest:
            t = entry["tile"]
            parts = ", ".join(f"{_label(k).lower()} {_bytes(v)}" for k, v in m.tile_breakdown(t).items() if v)
            out.append(f"    Tile {t}: {_bytes(int(tiles[t]))} = {parts}")
            names = ", ".join(f"{n} ({_bytes(b)})" for n, b in entry["tensors"])
            if names:
                out.append(f"      largest tensors: {names}")
    out.append("")
    return out


def _pct(x: float, total: float) -> str:
    return f"{x:,.1f} ({100.0 * x / total if total else 0.0:.1f}% of total)"


def ipu_busy_cycles(r: Report) -> List[float]:
    """Per IPU of a replica (a report of several IPUs): the cycles its clock ran, summed
    over the runs, its waits for the last IPU at the ends of runs left out
    (``execution.ipu_cycles``; ``total_cycles`` is the last IPU's clock). Empty with one IPU."""
    return [float(c) for c in r.execution.ipu_cycles] if r.target.num_ipus > 1 else []


def _ipu_lines(r: Report) -> List[str]:
    busy, total = ipu_busy_cycles(r), r.execution.total_cycles
    if not busy:
        return []
    out = ["    The total is the last IPU's clock. Each IPU keeps its own; the cycles it ran (over all runs):"]
    for i, c in enumerate(busy):
        share = 100.0 * c / total if total else 0.0
        out.append(_line(f"IPU {i} cycles", f"{c:,.0f} (busy until {share:.1f}% of total)", 4))
    return out


def _step_ipus(s) -> str:
    """A step's cycles per IPU, compactly: "1,974/0"."""
    return "/".join(f"{c:,.0f}" for c in s.ipu_cycles) if s.ipu_cycles else "-"


def _execution(r: Report, options: Dict[str, str]) -> List[str]:
    e = r.execution
    out = ["Execution:", "", "Programs executed:", ""]
    if not e.programs_executed:
        out += ["  (no program has run yet)", ""]
    for p in e.programs_executed:
        out.append(f"  {p['name']} ({p['runs']:,} run{'s' if p['runs'] != 1 else ''})")
    out.append("")
    if r.target.type == "CPU":
        out += ["  Cycle estimates are not available on a CPU target (it has no cost model).", ""]
        return out
    total = e.total_cycles
    c = e.categories
    micros = total / r.target.clock * 1e6
    out += [_line("Total cycles", f"{total:,.0f} (approx {micros:,.1f} microseconds)")] + _ipu_lines(r)
    out += [_line("Tile average compute cycles (including idle threads)", _pct(c["compute_including_idle"], total)),
            _line("Tile average compute cycles (excluding idle threads)", _pct(c["compute_excluding_idle"], total)),
            _line("Tile average IPU exchange cycles", _pct(c["ipu_exchange"], total)),
            _line("Tile average global exchange cycles", _pct(c["global_exchange"], total)),
            _line("Tile average host exchange cycles", _pct(c["host_exchange"], total)),
            _line("Tile average sync cycles", _pct(c["sync"], total)),
            _line("Tile average control cycles", _pct(c["control"], total)),
            ""]
    if e.vertex_types:
        out.append("  Cycles by vertex type:")
        for t in sorted(e.vertex_types, key=lambda t: -t.cycles):
            out.append(f"    {t.name} ({t.instances:,} instance{'s' if t.instances != 1 else ''}): {t.cycles:,.0f}")
        out.append("")
    if options.get("showExecutionSteps", "false") == "true":
        ran = [(i, s) for i, s in enumerate(e.steps) if s.count]
        per_ipu = any(s.ipu_cycles for _, s in ran)
        if per_ipu:  # several IPUs: each one's cycles (the step's are the most of them)
            out.append("  Execution steps (cycles are totals over all runs of a step; per IPU: IPU 0/IPU 1/...):")
            width = max([len("per IPU")] + [len(_step_ipus(s)) for _, s in ran])
            out.append(f"    {'#':>4}  {'kind':<12}{'runs':>10}{'cycles':>16}  {'per IPU':<{width}}  name")
        else:
            out.append("  Execution steps (cycles are totals over all runs of a step):")
            out.append(f"    {'#':>4}  {'kind':<12}{'runs':>10}{'cycles':>16}  name")
        for i, s in ran:
            ipus = f"{_step_ipus(s):<{width}}  " if per_ipu else ""
            out.append(f"    {i:>4}  {s.kind:<12}{s.count:>10,}{s.cycles:>16,.0f}  {ipus}{s.name}")
        out.append("")
    return out


def _warnings(r: Report) -> List[str]:
    if not r.warnings:
        return []
    return ["Warnings:"] + [f"  {w}" for w in r.warnings] + [""]


def _compilation(r: Report) -> List[str]:
    c = r.compilation
    out = ["Compilation:", _line("Executable", "from the cache" if c.from_cache else "compiled"),
           _line("Cache", c.cache_reason or "-")]
    out += [_line(name, f"{seconds:.3f} s", 4) for name, seconds in c.phases.items()]
    return out + [""]


def format_summary(report: Report, options: Dict[str, str]) -> str:
    lines = (_target(report) + _graph(report) + _memory(report) + _execution(report, options)
             + _compilation(report) + _warnings(report))
    return "\n".join(lines) + "\n"
