"""The HTML report page: self-contained, escaped, and drawn without errors in a real
headless browser (Debian's chromium; those tests are marked ``browser``)."""
import json
import os
import re
import shutil
import subprocess
import time

import pytest

import popsim
from popsim import FLOAT, Input, Output, Vector
from popsim.program import Copy, Execute, Repeat, Sequence

from test_summary import two_ipu_report
from popsim.report.html import PLOTS, page_data, render_html, write_html

INJECTED = '</script><b>bold</b>&"'  # a variable name that would break out of a <script> or make markup
INJECTED_CS = '<img src=x onerror="document.body.dataset.pwned=1">'
INTERPRETED = {"popsim.codeletMode": "interpreted"}  # Python vertices without a C compiler


class SumVertex(popsim.Vertex):
    """Sums its input into its output."""

    in_: Input[Vector[float]]
    out: Output[float]

    def compute(self):
        total = 0.0
        for x in self.in_:
            total += x
        self.out = total
        return True


# -- programs whose reports the page must show ------------------------------------------------------
# Vertices need a C compiler (Python vertices are translated to C when added), so the
# programs with vertices, and the tests that use them, are marked ``compiler``; the others
# cover the same ground without vertices.
def _named(device):
    """Names that try to inject markup: a variable, and a compute set (with no vertices)."""
    g = popsim.Graph(device)
    a = g.add_variable(FLOAT, [64], INJECTED, mapping=popsim.VariableMappingMethod.LINEAR)
    b = g.add_variable(FLOAT, [8], "b")
    g.set_tile_mapping(b, 3)
    cs = g.add_compute_set(INJECTED_CS)
    e = popsim.Engine(g, Sequence(Copy(b, a.slice(0, 8)), Repeat(3, Sequence(Execute(cs), Copy(a.slice(0, 8), b)))))
    e.load(device)
    e.run(0)
    return e.get_report()


def _vertices(device):
    """Vertices on 8 tiles in a compute set run 3 times, and the injected names."""
    g = popsim.Graph(device)
    g.add_codelets(SumVertex)
    a = g.add_variable(FLOAT, [64], INJECTED, mapping=popsim.VariableMappingMethod.LINEAR)
    b = g.add_variable(FLOAT, [8], "b")
    cs = g.add_compute_set(INJECTED_CS)
    for i in range(8):
        g.set_tile_mapping(b[i], i)
        g.set_tile_mapping(g.add_vertex(cs, "SumVertex", {"in": a.slice(i * 8, i * 8 + 8), "out": b[i]}), i)
    e = popsim.Engine(g, Sequence(Copy(b, a.slice(0, 8)), Repeat(3, Execute(cs))), INTERPRETED)
    e.load(device)
    e.run(0)
    return e.get_report()


def _out_of_memory(device):
    """200,000 floats on one tile: over its memory; built with debug.allowOutOfMemory, not run."""
    g = popsim.Graph(device)
    big = g.add_variable(FLOAT, [200000], "big")
    g.set_tile_mapping(big, 0)
    c = g.add_variable(FLOAT, [1472 * 4], "c", mapping=popsim.VariableMappingMethod.LINEAR)
    return popsim.Engine(g, Copy(c, c), {"debug.allowOutOfMemory": "true"}).get_report()


def _not_run(device):
    g = popsim.Graph(device)
    a = g.add_variable(FLOAT, [100], "a", mapping=popsim.VariableMappingMethod.LINEAR)
    return popsim.Engine(g, Copy(a, a)).get_report()


def _cpu(_device):
    device = popsim.Device.create_cpu_device()
    g = popsim.Graph(device)
    a = g.add_variable(FLOAT, [10], "a")
    g.set_tile_mapping(a, 0)
    e = popsim.Engine(g, Copy(a, a))
    e.load(device)
    e.run(0)
    return e.get_report()


def _empty(device):
    """No variables, no vertices, an empty program."""
    return popsim.Engine(popsim.Graph(device), Sequence()).get_report()


def _large(device, steps=100, vertices=True):
    """1472 tiles, 100 steps that all touch every tile: Copy and Execute alternating
    (``vertices``) or Copies only."""
    n = device.target.num_tiles
    g = popsim.Graph(device)
    a = g.add_variable(FLOAT, [n * 4], "a", mapping=popsim.VariableMappingMethod.LINEAR)
    b = g.add_variable(FLOAT, [n * 4], "b")
    out = g.add_variable(FLOAT, [n], "out")
    for t in range(n):
        g.set_tile_mapping(b.slice(t * 4, t * 4 + 4), (t + 1) % n)  # every Copy crosses tiles
        g.set_tile_mapping(out[t], t)
    if vertices:
        g.add_codelets(SumVertex)
        cs = g.add_compute_set("sum")
        for t in range(n):
            g.set_tile_mapping(g.add_vertex(cs, "SumVertex", {"in": b.slice(t * 4, t * 4 + 4), "out": out[t]}), t)
        prog = Sequence(*[Copy(a, b) if k % 2 == 0 else Execute(cs) for k in range(steps)])
    else:
        prog = Sequence(*[Copy(a, b) if k % 2 == 0 else Copy(b, a) for k in range(steps)])
    e = popsim.Engine(g, prog, INTERPRETED)
    e.load(device)
    e.run(0)
    return e.get_report()


def _large_copies(device):
    return _large(device, vertices=False)


def _two_ipus(_device):
    """2 IPUs of 8 tiles: copies inside IPU 0 (IPU 1 has nothing to do meanwhile), then one
    across the IPU-Link that joins the two clocks (test_summary.two_ipu_report)."""
    return two_ipu_report()


BUILDERS = {"named": _named, "vertices": _vertices, "out_of_memory": _out_of_memory, "not_run": _not_run,
            "cpu": _cpu, "empty": _empty, "large": _large, "large_copies": _large_copies, "two_ipus": _two_ipus}
NEEDS_COMPILER = {"vertices", "large"}


def _names(*names, quick=None):
    """Report names as test parameters, those with vertices marked ``compiler``; given
    ``quick``, those outside it are also marked ``slow`` (a browser test loads each page in
    a new chromium, about 1.5 s: the default run loads a sample, the slow run every page)."""
    def marks(n):
        return ([pytest.mark.compiler] if n in NEEDS_COMPILER else []) + \
            ([pytest.mark.slow] if quick is not None and n not in quick else [])
    return [pytest.param(n, marks=marks(n)) for n in names or BUILDERS]


class _Lazy(dict):
    """Builds each report (and its page) when a test first asks for it."""

    def __init__(self, make):
        super().__init__()
        self._make = make

    def __missing__(self, name):
        self[name] = value = self._make(name)
        return value


@pytest.fixture(scope="module")
def reports():
    device = popsim.IPUModel("ipu2").create_device()
    return _Lazy(lambda name: BUILDERS[name](device))


@pytest.fixture(scope="module")
def pages(reports, tmp_path_factory):
    """Each report written as report.html (and profile.json) in its own directory."""
    def make(name):
        d = tmp_path_factory.mktemp(name)
        reports[name].to_json(d / "profile.json")
        write_html(reports[name], d / "report.html")
        return d / "report.html"
    return _Lazy(make)


def _embedded(text):
    m = re.search(r'<script type="application/json" id="popsim-data">(.*?)</script>', text, re.DOTALL)
    assert m, "the page embeds the report as JSON"
    return m.group(1)


# -- without a browser -------------------------------------------------------------------------------
@pytest.mark.parametrize("name", _names())
def test_page_embeds_the_whole_report(name, reports):
    report = reports[name]
    assert json.loads(_embedded(render_html(report))) == json.loads(json.dumps(report.to_dict()))


def test_page_is_self_contained(pages):
    text = pages["named"].read_text(encoding="utf-8")
    assert "<link" not in text and "@import" not in text and "url(" not in text
    assert not re.search(r"<script[^>]+src=", text) and not re.search(r"<img[^>]+src=", text)
    # the only address in it is the SVG namespace, which is a name, not something fetched
    assert set(re.findall(r"https?://[^\s\"']+", text)) == {"http://www.w3.org/2000/svg"}


def test_names_are_escaped_in_the_markup(reports):
    text = render_html(reports["named"])
    assert "<b>bold</b>" not in text and "</script><b>" not in text and "<img src=x" not in text
    assert "&lt;/script&gt;&lt;b&gt;bold&lt;/b&gt;&amp;&quot;" in text  # in the text summary and the facts
    assert text.count("</script>") == text.count("<script")  # no name closes a script


def test_non_finite_numbers_become_null(reports):
    report = reports["not_run"]
    report.execution.steps[0].cycles = float("nan")
    try:
        block = _embedded(render_html(report))
    finally:
        report.execution.steps[0].cycles = 0.0
    assert json.loads(block, parse_constant=lambda c: pytest.fail(f"{c} is not JSON"))["execution"]["steps"][0][
        "cycles"] is None


def test_page_facts(reports):
    text = render_html(reports["out_of_memory"])
    assert "tiles out of memory</th><td>1 (first: 0)" in text
    assert "Memory Usage:" in text and "<pre class=\"summary\">" in text
    assert f'data-plots-expected="{len(PLOTS)}"' in text
    named = render_html(reports["named"])
    assert "executable</th><td>compiled" in named and "<th>lower graph</th><td>" in named


def test_auto_report_writes_the_page(tmp_path, device):
    g = popsim.Graph(device)
    a = g.add_variable(FLOAT, [16], "a", mapping=popsim.VariableMappingMethod.LINEAR)
    e = popsim.Engine(g, Copy(a, a), {"autoReport.outputGraphProfile": "true",
                                      "autoReport.outputExecutionProfile": "true",
                                      "autoReport.directory": str(tmp_path / "rep")})
    e.load(device)
    e.run(0)
    assert sorted(os.listdir(tmp_path / "rep")) == ["profile.json", "report.html"]  # the profile's two files
    text = (tmp_path / "rep" / "report.html").read_text(encoding="utf-8")
    assert json.loads(_embedded(text))["execution"]["programs_executed"][0]["runs"] == 1


@pytest.mark.parametrize("name", _names("large", "large_copies"))
def test_large_program_files_stay_small(name, reports, pages):
    report = reports[name]
    assert report.target.num_tiles == 1472 and len(report.execution.steps) == 100
    assert all(len(s.tile_exchange) == len(s.tile_compute) == 1472 for s in report.execution.steps)
    assert all(s.count == 1 for s in report.execution.steps)
    json_size = os.path.getsize(pages[name].parent / "profile.json")
    html_size = os.path.getsize(pages[name])
    assert json_size < 5 * 1024 * 1024, f"profile.json is {json_size:,} bytes"
    assert html_size < json_size + 512 * 1024, f"report.html is {html_size:,} bytes"
    start = time.perf_counter()
    render_html(report)
    assert time.perf_counter() - start < 1.0


@pytest.mark.parametrize("name", _names("named", "not_run", "cpu", "large_copies"))
def test_page_from_the_saved_text_is_the_same_page(name, reports):
    """autoReport hands the page profile.json's text to embed: the page is the one
    render_html makes on its own, and strict JSON even when the text is not."""
    report = reports[name]
    assert render_html(report, report.to_json_text()) == render_html(report)
    step, cycles, warnings = report.execution.steps[0], report.execution.steps[0].cycles, list(report.warnings)
    report.warnings.append("NaN and Infinity in a name")  # the words alone: the page is still the same
    try:
        assert render_html(report, report.to_json_text()) == render_html(report)
        step.cycles = float("nan")  # profile.json writes NaN; the page embeds null
        text = report.to_json_text()
        assert "NaN" in text and render_html(report, text) == render_html(report)
        assert json.loads(_embedded(render_html(report, text)), parse_constant=pytest.fail)["execution"]["steps"][0][
            "cycles"] is None
    finally:
        step.cycles, report.warnings[:] = cycles, warnings


def test_page_data_of_several_ipus(reports):
    """Several IPUs: the page embeds the rows of each IPU's lane ([step, IPU, start,
    cycles], each IPU's rows one after another on its own clock) and each step's cycles
    per IPU; the facts say how long each IPU was busy."""
    report = reports["two_ipus"]
    text = render_html(report)
    data = json.loads(_embedded(text))
    steps, trace = data["execution"]["steps"], data["execution"]["trace"]
    assert data["target"]["num_ipus"] == 2 and all(len(row) == 4 for row in trace)
    lanes = {ipu: [row for row in trace if row[1] == ipu] for ipu in (0, 1)}
    assert {row[1] for row in trace} == {0, 1} and all(lanes.values())
    for rows in lanes.values():  # one IPU's clock: its entries never overlap
        assert all(later[2] >= row[2] + row[3] for row, later in zip(rows, rows[1:]))
    kinds = {steps[int(row[0])]["name"]: row[1] for row in trace if steps[int(row[0])]["name"] == "Copy a -> b"}
    assert kinds == {"Copy a -> b": 0}  # a copy inside IPU 0 is in IPU 0's lane only
    joined = [row for row in trace if steps[int(row[0])]["name"] == "Copy b -> c"]
    assert [row[1] for row in joined] == [0, 1] and joined[0][2] == joined[1][2]  # the clocks met
    ends = [max(row[2] + row[3] for row in rows) for rows in lanes.values()]
    assert max(ends) == data["execution"]["total_cycles"] > min(ends)
    for s in steps:
        assert len(s["ipu_cycles"]) == 2 and s["cycles"] == max(s["ipu_cycles"])
    assert "IPUs busy until</th><td>IPU 0: " in text and "one per step and IPU it charged" in text
    assert "IPU 1 cycles:" in text  # the text summary


def test_page_data_is_the_report(reports):
    assert page_data(reports["cpu"]) == reports["cpu"].to_dict()


# -- in a headless browser ---------------------------------------------------------------------------
def _chromium():
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


browser = pytest.mark.browser
needs_chromium = pytest.mark.skipif(_chromium() is None, reason="no chromium binary: install Debian's chromium "
                                    "package (apt-get install -y chromium) to test the HTML page in a browser")


def _load(path, tmp_path):
    """The page's DOM after its scripts ran, and the console messages, from headless chromium."""
    cmd = [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
           f"--user-data-dir={tmp_path / 'chromium-profile'}", "--virtual-time-budget=10000",
           "--enable-logging=stderr", "--v=0", "--dump-dom", path.resolve().as_uri()]
    run = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    console = [line for line in run.stderr.splitlines() if ":CONSOLE" in line]
    body = re.search(r"<body([^>]*)>", run.stdout)
    assert body, run.stdout[:2000]
    attrs = dict(re.findall(r'([\w-]+)="([^"]*)"', body.group(1)))
    return run.stdout, attrs, console


@browser
@needs_chromium
@pytest.mark.parametrize("name", _names(quick=("two_ipus",)))
def test_page_draws_without_errors(name, pages, tmp_path):
    dom, attrs, console = _load(pages[name], tmp_path)
    assert attrs.get("data-js-errors") == "", attrs.get("data-js-errors")
    assert console == []
    assert attrs["data-plots-drawn"] == attrs["data-plots-expected"] == str(len(PLOTS))
    assert "Memory Usage:" in dom and "Execution:" in dom  # the text summary


@browser
@needs_chromium
@pytest.mark.parametrize("name", _names("named", "vertices", quick=("vertices",)))
def test_page_content(name, pages, tmp_path):
    dom, attrs, _ = _load(pages[name], tmp_path)
    svgs = len(PLOTS) if name == "vertices" else len(PLOTS) - 1  # no vertex types: a sentence says so
    assert len(re.findall(r"<svg[^>]*class=\"plot", dom)) == svgs
    assert len(re.findall(r"<path d=\"M", dom)) >= 10  # bars, trace blocks, stacked columns
    assert "Fullest tile:" in dom and "Slowest step:" in dom and "What the fullest tiles hold" in dom
    assert "runs)</text>" in dom  # a compute set's bar: its vertices and runs
    # the injected names show as text: no element made of them, no handler ran
    assert "<b>bold</b>" not in dom and "data-pwned" not in attrs and "<img" not in dom
    assert "&lt;/script&gt;&lt;b&gt;bold&lt;/b&gt;&amp;" in dom and "&lt;img src=x onerror=" in dom
    if name == "vertices":
        assert "SumVertex" in dom and "8 instances" in dom
    else:
        assert "This graph has no vertices." in dom


@browser
@needs_chromium
def test_trace_lanes(pages, tmp_path):
    """One IPU: a lane per kind of step; several: a lane per IPU, bars coloured by kind."""
    dom, attrs, _ = _load(pages["two_ipus"], tmp_path)
    assert attrs["data-js-errors"] == ""
    trace = dom.split('id="trace-plot"')[1].split('id="steps-table"')[0]
    labels = re.findall(r'<text[^>]*text-anchor="end"[^>]*>([^<]*)</text>', trace)
    assert labels == ["IPU 0", "IPU 1"] and "One lane per IPU" in trace
    assert sorted(re.findall(r'class="legend-item">.*?</span><span>([^<]*)</span>', trace)) == ["Copy", "Repeat"]
    assert len(re.findall(r'<path d="M[^"]*" fill="[^"]*" class="series"', trace)) == 2  # one path per kind
    dom, _, _ = _load(pages["named"], tmp_path)
    trace = dom.split('id="trace-plot"')[1].split('id="steps-table"')[0]
    labels = re.findall(r'<text[^>]*text-anchor="end"[^>]*>([^<]*)</text>', trace)
    assert sorted(labels) == ["Copy", "Execute", "Repeat"] and "IPU 0" not in trace


@browser
@needs_chromium
def test_page_shows_tiles_over_the_limit(pages, tmp_path):
    dom, attrs, _ = _load(pages["out_of_memory"], tmp_path)
    assert attrs["data-js-errors"] == ""
    assert 'class="over"' in dom and "1 tile is over the limit" in dom
    assert "The trace is empty: no program has run yet." in dom


@browser
@needs_chromium
def test_empty_reports_say_so(pages, tmp_path):
    dom, _, _ = _load(pages["cpu"], tmp_path)
    assert "a CPU target has no cost model" in dom
    dom, _, _ = _load(pages["empty"], tmp_path)
    assert "This graph has no compute sets." in dom and "This graph has no vertices." in dom


_INTERACT = """<script>
window.addEventListener("load", function () {
  var tipTexts = [];
  document.querySelectorAll("rect.overlay").forEach(function (r) {
    var b = r.getBoundingClientRect();
    r.dispatchEvent(new MouseEvent("mousemove", {clientX: b.left + b.width / 3, clientY: b.top + b.height / 2,
                                                  bubbles: true}));
    var tip = document.querySelector(".tip");
    if (tip) tipTexts.push(tip.textContent);
  });
  var mem = document.querySelector("#memory-plot rect.overlay"), b = mem.getBoundingClientRect();
  mem.dispatchEvent(new MouseEvent("mousedown", {clientX: b.left + 10, clientY: b.top + 50, bubbles: true}));
  mem.dispatchEvent(new MouseEvent("mousemove", {clientX: b.left + 90, clientY: b.top + 50, bubbles: true}));
  mem.dispatchEvent(new MouseEvent("mouseup", {clientX: b.left + 90, clientY: b.top + 50, bubbles: true}));
  var zoomed = document.querySelector("#memory-plot .range").textContent;
  document.querySelectorAll(".controls button, button.link, table.sortable th").forEach(function (x) { x.click(); });
  var sel = document.getElementById("step-select");
  for (var i = 0; i < sel.options.length; i++) {
    sel.value = sel.options[i].value; sel.dispatchEvent(new Event("change"));
  }
  document.querySelectorAll("#steps-table tr.pick").forEach(function (x, k) { if (k < 5) x.click(); });
  document.body.setAttribute("data-tips", tipTexts.join(" | "));
  document.body.setAttribute("data-zoomed", zoomed);
  document.body.setAttribute("data-interactions", "done");
});
</script></body>"""


@browser
@needs_chromium
@pytest.mark.parametrize("name", _names("named", "vertices", "large", "two_ipus", quick=("large",)))
def test_page_interactions(name, pages, tmp_path):
    """Hover, drag-zoom, every button, every step: the handlers run without errors."""
    page = tmp_path / "interact.html"
    page.write_text(pages[name].read_text(encoding="utf-8").replace("</body>", _INTERACT), encoding="utf-8")
    _, attrs, console = _load(page, tmp_path)
    assert attrs.get("data-interactions") == "done" and attrs["data-js-errors"] == ""
    assert console == []
    assert "Tile " in attrs["data-tips"] and "total" in attrs["data-tips"]  # the memory breakdown on hover
    assert not attrs["data-zoomed"].startswith("tiles 0\u20131471 ")


@browser
@needs_chromium
def test_errors_are_recorded(pages, tmp_path):
    """The error hook works, so the tests above would see a failing script."""
    page = tmp_path / "broken.html"
    text = pages["not_run"].read_text(encoding="utf-8")
    page.write_text(text.replace("</body>", "<script>throw new Error('boom from the test')</script></body>"),
                    encoding="utf-8")
    _, attrs, _ = _load(page, tmp_path)
    assert "boom from the test" in attrs["data-js-errors"]


@browser
@needs_chromium
@pytest.mark.parametrize("name", _names("large", "large_copies", quick=("large",)))
def test_large_page_is_fast(name, pages, tmp_path):
    pages[name]  # written before the clock starts
    start = time.perf_counter()
    _, attrs, _ = _load(pages[name], tmp_path)
    assert attrs["data-plots-drawn"] == str(len(PLOTS))
    assert time.perf_counter() - start < 30
    assert float(attrs["data-render-ms"]) < 5000
