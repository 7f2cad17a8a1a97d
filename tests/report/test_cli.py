"""popsim-report on saved reports (run as a separate process, its error cases in this one), and
compare()."""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import popsim
from popsim import FLOAT
from popsim.program import Copy, Repeat, Sequence
from popsim.report import cli
from popsim.report.compare import compare


def _run_copies(device, size, repeats, directory):
    """A program streaming ``size`` floats in and copying them around; saved by autoReport."""
    g = popsim.Graph(device)
    a = g.add_variable(FLOAT, [size], "a", mapping=popsim.VariableMappingMethod.LINEAR)
    b = g.add_variable(FLOAT, [size], "b")
    g.set_tile_mapping(b, 3)
    s = g.add_host_to_device_fifo("in", FLOAT, size)
    prog = Sequence(Copy(s, a), Repeat(repeats, Sequence(Copy(a, b), Copy(b, a))), Copy(a, b))
    e = popsim.Engine(g, prog, {"autoReport.all": "true", "autoReport.directory": str(directory)})
    e.load(device)
    e.connect_stream("in", np.ones(size, np.float32))
    e.run(0, debug_name="copies")
    return e.get_report()


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """Two runs of the same program at two sizes, saved in two directories."""
    device = popsim.IPUModel("ipu2").create_device()
    root = tmp_path_factory.mktemp("reports")
    small = _run_copies(device, 1000, 2, root / "small")
    large = _run_copies(device, 20000, 3, root / "large")
    return {"small": root / "small", "large": root / "large", "reports": (small, large)}


def _cli():
    """The installed console script when it sits beside this Python, else the module."""
    script = os.path.join(os.path.dirname(sys.executable), "popsim-report")
    if os.path.exists(script):
        return [script]
    found = shutil.which("popsim-report")
    return [found] if found and os.path.dirname(found) == os.path.dirname(sys.executable) else \
        [sys.executable, "-m", "popsim.report.cli"]


def _run(*args, module=False):
    cmd = [sys.executable, "-m", "popsim.report.cli"] if module else _cli()
    return subprocess.run(cmd + [str(a) for a in args], check=False, capture_output=True, text=True, timeout=120)


def test_summary_of_a_directory_and_a_file(saved):
    for path in (saved["small"], saved["small"] / "profile.json"):
        r = _run(path)
        assert r.returncode == 0, r.stderr
        for heading in ("Target:", "Graph:", "Memory Usage:", "Execution:", "Total cycles:", "copies (1 run)"):
            assert heading in r.stdout
        assert "Execution steps" not in r.stdout and r.stderr == ""


def test_summary_with_steps(saved):
    r = _run(saved["small"], "--steps")
    assert r.returncode == 0, r.stderr
    assert "Execution steps" in r.stdout and "Copy a -> b" in r.stdout and "Copy in -> a" in r.stdout


def test_module_entry_point(saved):
    r = _run(saved["small"], module=True)
    assert r.returncode == 0 and "Memory Usage:" in r.stdout


def test_html(saved, tmp_path):
    out = tmp_path / "page.html"
    r = _run(saved["large"], "--html", out)
    assert r.returncode == 0, r.stderr
    assert f"Wrote {out}" in r.stdout
    text = out.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>") and 'id="popsim-data"' in text and "Memory Usage:" in text


def test_compare_two_runs(saved):
    r = _run(saved["small"], "--compare", saved["large"])
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert f"A = {saved['small'] / 'profile.json'}" in out and f"B = {saved['large'] / 'profile.json'}" in out
    for heading in ("Target: the same", "Graph:", "Memory (bytes):", "Execution (cycles", "Execution steps"):
        assert heading in out
    small, large = saved["reports"]
    line = next(x for x in out.splitlines() if x.strip().startswith("total cycles"))
    a, b = small.execution.total_cycles, large.execution.total_cycles
    assert f"{a:,.0f}" in line and f"{b:,.0f}" in line and f"+{b - a:,.0f}" in line
    assert f"(x{b / a:,.1f})" in line or f"({100 * (b - a) / a:+.1f}%)" in line
    variables = next(x for x in out.splitlines() if x.strip().startswith("variables") and "," in x)
    assert "8,000" in variables and "160,000" in variables and "+152,000" in variables and "(x20.0)" in variables
    # the Repeat body ran 2 and 3 times: matched by name, its step shows the change
    assert any(x.strip().startswith("Copy a -> b ") for x in out.splitlines())


def test_compare_function():
    device = popsim.IPUModel("ipu2").create_device()
    g = popsim.Graph(device)
    a = g.add_variable(FLOAT, [64], "a", mapping=popsim.VariableMappingMethod.LINEAR)
    e = popsim.Engine(g, Sequence(Copy(a, a), Copy(a, a)))
    e.load(device)
    before = e.get_report()
    e.run(0)
    after = e.get_report()
    text = compare(before, after)
    assert text.startswith("Comparing two popsim reports, A and B")
    cycles = after.execution.steps[0].cycles
    steps = [x.split() for x in text.splitlines() if x.startswith("  Copy a -> a")]
    # two steps of the same name: the first matched with the first, the second with the second
    assert steps == [["Copy", "a", "->", "a", "0", f"{cycles:,.0f}", f"+{cycles:,.0f}", "(new)"],
                     ["Copy", "a", "->", "a", "[2]", "0", f"{cycles:,.0f}", f"+{cycles:,.0f}", "(new)"]]
    same = compare(after, after, labels=("x", "y"))
    assert "A = x, B = y" in same and "+" not in same.split("Graph:")[1] and "(new)" not in same


def test_compare_cpu_and_ipu(tmp_path):
    cpu = popsim.Device.create_cpu_device()
    g = popsim.Graph(cpu)
    a = g.add_variable(FLOAT, [10], "a")
    g.set_tile_mapping(a, 0)
    e = popsim.Engine(g, Copy(a, a))
    e.load(cpu)
    e.run(0)
    ipu = popsim.IPUModel("ipu2").create_device()
    g = popsim.Graph(ipu)
    a = g.add_variable(FLOAT, [10], "a")
    g.set_tile_mapping(a, 0)
    f = popsim.Engine(g, Copy(a, a))
    text = compare(e.get_report(), f.get_report())
    assert "Target (differences):" in text and "unlimited" in text and "a CPU target has no cost model" in text


@pytest.mark.parametrize("case, message", [
    ("missing", "cannot open report"),
    ("not_json", "cannot open report"),
    ("not_an_object", "not a popsim report"),
    ("old_version", "schema version 1 is not supported"),
    ("missing_fields", "malformed"),
    ("wrong_types", "malformed"),
])
def test_errors(case, message, saved, tmp_path, capsys):
    """The command's error path, called in this process (the tests above start the command)."""
    path = tmp_path / "profile.json"
    good = json.loads((saved["small"] / "profile.json").read_text())
    if case == "not_json":
        path.write_text('{"target": ')
    elif case == "not_an_object":
        path.write_text("[1, 2]")
    elif case == "old_version":
        path.write_text(json.dumps(dict(good, schema_version=1)))
    elif case == "missing_fields":
        path.write_text(json.dumps({"schema_version": good["schema_version"], "target": good["target"]}))
    elif case == "wrong_types":
        good["memory"]["by_category"] = 5
        path.write_text(json.dumps(good))
    for args in ([path], [saved["small"], "--compare", path]):
        status = cli.main([str(a) for a in args])
        out, err = capsys.readouterr()
        assert status == 2, (case, out)
        assert err.startswith("popsim-report: error:") and message in err, err
        assert str(path) in err


def test_unwritable_html(saved, tmp_path):
    r = _run(saved["small"], "--html", tmp_path / "no" / "such" / "dir" / "x.html")
    assert r.returncode == 2 and "cannot write" in r.stderr and "Traceback" not in r.stderr


def test_usage_errors():
    r = _run()
    assert r.returncode == 2 and "PATH" in r.stderr
    r = _run("--help")
    assert r.returncode == 0 and "--compare" in r.stdout and "--html" in r.stdout and "--steps" in r.stdout
