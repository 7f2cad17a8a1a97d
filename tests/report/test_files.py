"""autoReport files: written where autoReport.directory says, or a clear error."""
import json

import pytest

import popsim
from popsim import FLOAT
from popsim.program import Copy, Execute, Repeat, Sequence
from popsim.report.html import render_html


def build(device):
    g = popsim.Graph(device)
    x = g.add_variable(FLOAT, [4], "x")
    g.set_tile_mapping(x, 0)
    return g, popsim.Sequence(popsim.Copy(x, g.clone(x)))


def test_report_files_go_to_the_directory(small_device, tmp_path):
    g, prog = build(small_device)
    directory = tmp_path / "report"
    e = popsim.Engine(g, prog, {"autoReport.all": "true", "autoReport.directory": str(directory)})
    assert str(directory / "profile.json") in e.report_files
    assert json.loads((directory / "profile.json").read_text())


def test_unwritable_directory_names_the_option_path_and_reason(small_device, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    bad = blocker / "report"  # under a regular file: fails for any user, root included
    g, prog = build(small_device)
    with pytest.raises(popsim.InvalidOptionError) as info:  # before: a raw FileExistsError/NotADirectoryError
        popsim.Engine(g, prog, {"autoReport.all": "true", "autoReport.directory": str(bad)})
    msg = str(info.value)
    assert f"option 'autoReport.directory' is '{bad}', where the report cannot be written" in msg
    assert "Not a directory" in msg or "File exists" in msg
    assert "set it to a directory you can write to" in msg


def test_unwritable_directory_from_the_environment(small_device, tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("POPLAR_ENGINE_OPTIONS", json.dumps({"autoReport.all": "true",
                                                             "autoReport.directory": str(blocker)}))
    g, prog = build(small_device)
    with pytest.raises(popsim.InvalidOptionError, match="option 'autoReport.directory' is .*a-file'"):
        popsim.Engine(g, prog)


# -- what the files hold: the report as built and saved afresh, write after write ----------------------
class SumVertex(popsim.Vertex):
    """Sums its input into its output."""

    in_: popsim.Input[popsim.Vector[float]]
    out: popsim.Output[float]

    def compute(self):
        total = 0.0
        for x in self.in_:
            total += x
        self.out = total
        return True


def _fresh(engine):
    """What the files should hold now: the engine's report built and saved afresh (the
    plain way: Report.to_json_text and render_html, which serialise on their own)."""
    report = engine.get_report()
    return report.to_json_text(), render_html(report)


def _on_disk(directory):
    return ((directory / "profile.json").read_text(encoding="utf-8"),
            (directory / "report.html").read_text(encoding="utf-8"))


def _check_every_write(engine, device, directory, runs=3):
    """After the engine is built and after each run up to executionProfileProgramRunCount
    (2), the files are the fresh report; later runs leave them as they were."""
    assert _on_disk(directory) == _fresh(engine)
    engine.load(device)
    expected = None
    for run in range(1, runs + 1):
        engine.run(0)
        if run <= 2:
            expected = _fresh(engine)
        assert _on_disk(directory) == expected, f"after run {run}"
    assert json.loads(expected[0])["execution"]["programs_executed"][0]["runs"] == 2


def test_each_write_holds_the_report_saved_afresh(device, tmp_path):
    g = popsim.Graph(device)
    a = g.add_variable(FLOAT, [1472 * 2], "a", mapping=popsim.VariableMappingMethod.LINEAR)
    b = g.add_variable(FLOAT, [1472 * 2], "b")
    g.set_tile_mapping(b, 7)
    cs = g.add_compute_set("empty")
    prog = Sequence(Copy(a, b), Repeat(2, Sequence(Execute(cs), Copy(b, a))))
    directory = tmp_path / "rep"
    e = popsim.Engine(g, prog, {"autoReport.all": "true", "autoReport.directory": str(directory)})
    _check_every_write(e, device, directory)


@pytest.mark.compiler
def test_each_write_holds_the_report_saved_afresh_with_vertices(device, tmp_path):
    g = popsim.Graph(device)
    g.add_codelets(SumVertex)
    a = g.add_variable(FLOAT, [64], "a", mapping=popsim.VariableMappingMethod.LINEAR)
    out = g.add_variable(FLOAT, [8], "out")
    sums = g.add_compute_set("sums")
    for i in range(8):
        g.set_tile_mapping(out[i], 100 + i)
        v = g.add_vertex(sums, "SumVertex", {"in": a.slice(8 * i, 8 * i + 8), "out": out[i]})
        g.set_tile_mapping(v, 100 + i)
    directory = tmp_path / "rep"
    e = popsim.Engine(g, Sequence(Execute(sums), Copy(out, a.slice(0, 8))),
                      {"autoReport.all": "true", "autoReport.directory": str(directory)})
    _check_every_write(e, device, directory)
    report = popsim.open_report(directory)
    assert [(t.name, t.instances) for t in report.execution.vertex_types] == [("SumVertex", 8)]
    assert [(c.name, c.vertices, c.runs) for c in report.execution.compute_sets] == [("sums", 8, 2)]


def test_a_directory_in_the_way_of_a_file_is_named(small_device, tmp_path):
    directory = tmp_path / "report"
    (directory / "profile.json").mkdir(parents=True)  # the old file is removed before writing: not this
    g, prog = build(small_device)
    with pytest.raises(popsim.InvalidOptionError) as info:
        popsim.Engine(g, prog, {"autoReport.all": "true", "autoReport.directory": str(directory)})
    assert "Is a directory" in str(info.value) and str(directory / "profile.json") in str(info.value)
