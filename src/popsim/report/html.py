"""The report as one self-contained HTML page: ``write_html(report, path)``.

The page needs nothing from the network: its CSS and JavaScript (our own small SVG
plotting code, in the package data files ``html_page.css``, ``html_plots.js`` and
``html_page.js``) are inlined, and the report's data is embedded as JSON. The facts and
the text summary are written here, escaped, so they read without JavaScript; the plots
(memory per tile, liveness, where the cycles go, the execution trace, one step per tile,
cycles by compute set and by vertex type) are drawn by the script from the embedded data.
The trace's rows are ``[step, IPU, start, cycles]``: with one IPU the page draws a lane per
kind of step, with several a lane per IPU (its own clock), each bar coloured by its kind.

For tests in a headless browser the page records JavaScript errors in
``<body data-js-errors>`` and, when it has drawn, the number of plots in
``<body data-plots-drawn>`` (``data-plots-expected`` says how many there are).
"""
from __future__ import annotations

import functools
import html
import json
import math
import os
from typing import Iterable, List, Optional, Tuple

from .report import Report
from .summary import ipu_busy_cycles

PLOTS = ("memory-plot", "liveness-plot", "cycles-parts", "trace-plot", "step-plot", "cs-plot", "vt-plot")
_HERE = os.path.dirname(os.path.abspath(__file__))


@functools.lru_cache(maxsize=None)
def _asset(name: str) -> str:
    with open(os.path.join(_HERE, name), encoding="utf-8") as f:
        text = f.read()
    return text.replace("</", "<\\/") if name.endswith(".js") else text  # never end the <script> early


def _finite(value):
    """NaN and infinities have no JSON spelling: they become null."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def page_data(report: Report) -> dict:
    """What the page embeds: the report, as ``report.to_dict()`` would give it."""
    return report.to_dict()


def _script_json(report: Report, text: Optional[str] = None) -> str:
    """The report's data as JSON that is safe inside <script>: strict JSON (NaN and
    infinities become null) in which no '<', '>' or '&' can close or open a tag.

    ``text``: the report's JSON as profile.json holds it (``Report.to_json_text()``),
    when the caller has it. Without NaN or Infinity in it, it is strict JSON already and
    is embedded as it is, rather than serialised again (a string holding those words
    only sends us the slow way, which gives the same page)."""
    if text is None or "NaN" in text or "Infinity" in text:
        data = page_data(report)
        try:
            text = json.dumps(data, separators=(",", ":"), allow_nan=False)
        except ValueError:
            text = json.dumps(_finite(data), separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _e(value) -> str:
    return html.escape(str(value), quote=True)


def _bytes(n: float) -> str:
    for unit, scale in (("GB", 1 << 30), ("MB", 1 << 20), ("kB", 1 << 10)):
        if abs(n) >= scale:
            return f"{n / scale:,.1f} {unit}"
    return f"{int(n):,} B"


def _facts(title: str, rows: Iterable[Tuple[str, str]]) -> str:
    body = "".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in rows)
    return f'<div><h3>{_e(title)}</h3><table class="facts">{body}</table></div>'


def _overview(r: Report) -> str:
    t, g, m, x, c = r.target, r.graph, r.memory, r.execution, r.compilation
    cpu = t.type == "CPU"
    fig = m.figures()
    target = [("type", f"{t.type} ({t.arch})"), ("IPUs", f"{t.num_ipus:,}"), ("tiles per IPU", f"{t.tiles_per_ipu:,}"),
              ("total tiles", f"{t.num_tiles:,}"),
              ("memory per tile", "unlimited" if cpu else _bytes(t.bytes_per_tile)),
              ("total memory", "unlimited" if cpu else _bytes(t.total_memory)),
              ("clock", f"{t.clock / 1e6:,.1f} MHz"), ("worker contexts", f"{t.num_worker_contexts}")]
    graph = [("vertices", f"{g.num_vertices:,}"), ("edges", f"{g.num_edges:,}"), ("variables", f"{g.num_variables:,}"),
             ("compute sets", f"{g.num_compute_sets:,}")]
    over = fig.out_of_memory
    memory = [("total", _bytes(fig.total)),
              ("fullest tile", f"{_bytes(fig.max_bytes)} on tile {fig.max_tile}" if fig.tiles.size else "none"),
              ("tiles out of memory",
               f"{len(over):,}" + (f" (first: {', '.join(map(str, over[:8]))})" if over else "")),
              ("always live", _bytes(m.always_live)),
              ("not always live (shared)", _bytes(m.not_always_live)),
              ("most live in a step", _bytes(max(m.liveness)) if m.liveness else "no steps")]
    ran = ", ".join(f"{p.get('name')} ({p.get('runs')} run{'s' if p.get('runs') != 1 else ''})"
                    for p in x.programs_executed) or "none yet"
    if cpu:
        cycles = "not counted (a CPU target has no cost model)"
    else:
        cycles = f"{x.total_cycles:,.0f} (about {x.total_cycles / t.clock * 1e6:,.1f} microseconds)" if t.clock else \
            f"{x.total_cycles:,.0f}"
    execution = [("programs executed", ran), ("total cycles", cycles)]
    busy = [] if cpu else ipu_busy_cycles(r)
    if busy:
        execution.append(("IPUs busy until", ", ".join(
            f"IPU {i}: {c:,.0f} ({100.0 * c / x.total_cycles if x.total_cycles else 0.0:.1f}%)"
            for i, c in enumerate(busy))))
    execution += [("steps", f"{len(x.steps):,}"),
                  ("trace", f"{len(x.trace):,} entries" + (" (truncated)" if x.trace_truncated else "")
                   + (", one per step and IPU it charged" if t.num_ipus > 1 else ""))]
    compilation = [("executable", "loaded from the executable cache" if c.from_cache else "compiled")]
    if c.cache_reason:
        compilation.append(("cache", c.cache_reason))
    if c.cache_key:
        compilation.append(("cache key", c.cache_key))
    phases = [(name, f"{secs:.3f} s") for name, secs in c.phases.items()] or [("(none recorded)", "")]
    parts = [_facts("Target", target), _facts("Graph", graph), _facts("Memory", memory),
             _facts("Execution", execution), _facts("Compilation", compilation),
             _facts("Compilation phases", phases)]
    warnings = ("<ul class=\"warnings\">" + "".join(f"<li>{_e(w)}</li>" for w in r.warnings) + "</ul>") \
        if r.warnings else "<p>None.</p>"
    options = _facts("Engine options", sorted(r.options.items())) if r.options else \
        "<div><h3>Engine options</h3><p>None set (all defaults).</p></div>"
    return (f'<div class="grid-facts">{"".join(parts)}{options}</div>'
            f"<h3>Warnings</h3>{warnings}")


_SECTIONS: List[Tuple[str, str, str]] = [
    ("memory", "Memory per tile",
     ("Bytes on each tile, stacked by category. The dashed red line is the tile's memory; a red mark above a "
      "column flags a tile over it. Drag across the plot to zoom into a range of tiles, double-click to see them "
      "all again; hover a column for its breakdown. With more tiles than columns, a column shows the fullest "
      "of the tiles it stands for.")),
    ("liveness", "Liveness",
     ("Bytes live (all tiles together) while each step runs: what is always live (variables, constants, vertex "
      "state, code) and what only that step needs (its exchange buffers). Click a column to see that step per "
      "tile.")),
    ("execution", "Execution",
     ("Where the cycles go (tile averages over the whole execution), then the trace: the steps executed, over "
      "cycles, one lane per kind of step; with several IPUs, one lane per IPU (each keeps its own clock), each "
      "step coloured by its kind. Drag to zoom, double-click to reset, click a step to see it per tile. "
      "The table lists every step; click a heading to sort, a row to see the step per tile.")),
    ("step", "One step, tile by tile",
     ("For the chosen step, the cycles of one run on each tile: compute, exchange, and sync (the rest of the "
      "step's duration, waiting for the slowest tile).")),
    ("compute-sets", "Cycles by compute set", "All runs of each compute set's Execute steps."),
    ("vertex-types", "Cycles by vertex type",
     "Cycles of all vertices of a type, summed over their workers and runs, with the number of instances."),
]


def _section_body(key: str) -> str:
    if key == "memory":
        return '<div id="memory-plot"></div><div id="memory-largest"></div>'
    if key == "liveness":
        return '<div id="liveness-plot"></div>'
    if key == "execution":
        return ('<h3>Where the cycles go</h3><div id="cycles-parts"></div><h3>Trace</h3><div id="trace-plot"></div>'
                '<h3>All steps</h3><div class="scroll" id="steps-table"></div>')
    if key == "step":
        return '<select id="step-select" aria-label="step"></select><div id="step-plot"></div>'
    return f'<div id="{"cs" if key == "compute-sets" else "vt"}-plot"></div>'


_ON_ERROR = ("window.onerror=function(m,s,l){var b=document.body,p=b.getAttribute('data-js-errors')||'';"
             "b.setAttribute('data-js-errors',(p?p+' | ':'')+m+' (line '+l+')');"
             "var e=document.getElementById('js-errors');"
             "if(e){e.hidden=false;e.textContent='JavaScript error: '+b.getAttribute('data-js-errors');}};")


def render_html(report: Report, data_text: Optional[str] = None) -> str:
    """The page, as text. ``data_text``: ``report.to_json_text()``, when the caller has
    it (autoReport writes it to profile.json too), to embed without serialising again."""
    t = report.target
    try:
        summary = report.summary({"showExecutionSteps": "true"})
    except Exception as e:  # noqa: BLE001 -- the plots and facts are still worth a page
        summary = f"The text summary could not be made: {type(e).__name__}: {e}"
    title = f"popsim profile: {t.type} {t.arch}, {t.num_tiles:,} tiles"
    nav = "".join(f'<a href="#{key}">{_e(name)}</a>' for key, name, _ in
                  [("overview", "Overview", "")] + _SECTIONS + [("summary", "Text summary", "")])
    sections = "".join(f'<section id="{key}"><h2>{_e(name)}</h2><p class="help">{_e(help_)}</p>'
                       f"{_section_body(key)}</section>" for key, name, help_ in _SECTIONS)
    return "".join([
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_e(title)}</title><style>{_asset('html_page.css')}</style></head>\n",
        f'<body data-plots-drawn="0" data-plots-expected="{len(PLOTS)}" data-js-errors="">',
        f"<script>{_ON_ERROR}</script>\n",
        (f'<header><h1>{_e(title)}</h1><div class="sub">popsim {_e(report.popsim_version or "?")} '
         f"\u00b7 report schema version {_e(report.schema_version)}</div></header>"),
        '<div id="js-errors" hidden></div>',
        f"<nav>{nav}</nav><main>",
        '<noscript><p>The plots need JavaScript; the facts and the text summary do not.</p></noscript>',
        f'<section id="overview"><h2>Overview</h2>{_overview(report)}</section>\n',
        sections,
        f'\n<section id="summary"><h2>Text summary</h2><pre class="summary">{_e(summary)}</pre></section>',
        "</main>\n",
        f'<script type="application/json" id="popsim-data">{_script_json(report, data_text)}</script>\n',
        f"<script>{_asset('html_plots.js')}</script>\n<script>{_asset('html_page.js')}</script>\n",
        "</body></html>\n"])


def write_html(report: Report, path, data_text: Optional[str] = None) -> None:
    """Write ``report`` as one self-contained HTML page to ``path``.

    :param report: a Report (``engine.get_report()`` or ``popsim.open_report(path)``).
    :param path: the file to write (usually ``report.html`` beside ``profile.json``).
    :param data_text: ``report.to_json_text()``, when the caller has it.
    """
    text = render_html(report, data_text)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
