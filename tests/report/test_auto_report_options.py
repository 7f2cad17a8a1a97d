"""Every autoReport.* engine option Poplar documents: accepted, and doing what Poplar does
with it in popsim's terms (report/files.py, report/compiled_files.py, docs/profiling.md)."""
import gc
import json
import logging

import numpy as np
import pytest

import popsim
from popsim import FLOAT
from popsim.options import OPTIONS, EngineOptions
from popsim.program import Copy, Execute, Sequence
from popsim.report.files import OUTPUTS

EVERY_FILE = {"profile.json", "report.html", "debug.json", "vars.json", "serialized_graph.json",
              "archive.popsimexe"}


class Double(popsim.Vertex):
    """out = 2 * in (interpreted: no compiler needed)."""

    in_: popsim.Input[popsim.Vector[float]]
    out: popsim.Output[popsim.Vector[float]]

    def compute(self):
        for i in range(len(self.out)):
            self.out[i] = 2 * self.in_[i]
        return True


def build(device, with_vertex=False):
    """x (8 floats: 4 on tile 0, 4 on tile 1) copied to y (tile 2), and the constant c
    (tile 3); with_vertex: a compute set 'doubling' with one Double vertex on tile 2."""
    g = popsim.Graph(device)
    x = g.add_variable(FLOAT, [8], "x")
    g.set_tile_mapping(x.slice(0, 4), 0)
    g.set_tile_mapping(x.slice(4, 8), 1)
    y = g.add_variable(FLOAT, [8], "y")
    g.set_tile_mapping(y, 2)
    c = g.add_constant(FLOAT, [2], [1.0, 2.0], "c")
    g.set_tile_mapping(c, 3)
    steps = [Copy(x, y)]
    if with_vertex:
        g.add_codelets(Double)
        cs = g.add_compute_set("doubling")
        v = g.add_vertex(cs, "Double", {"in": x, "out": y})
        g.set_tile_mapping(v, 2)
        steps.append(Execute(cs))
    g.create_host_write("x", x)
    g.create_host_read("y", y)
    return g, Sequence(*steps, debug_name="main")


def engine(device, tmp_path, options, with_vertex=False):
    g, prog = build(device, with_vertex)
    return popsim.Engine(g, prog, {"autoReport.directory": str(tmp_path), **options})


def files(tmp_path):
    return {p.name for p in tmp_path.iterdir()}


def runs_in(tmp_path):
    executed = popsim.open_report(tmp_path).execution.programs_executed
    return [p["runs"] for p in executed]


def test_every_documented_key_is_an_option():
    keys = {"autoReport.all", "autoReport.directory", "autoReport.streamAtEachRun",
            "autoReport.executionProfileProgramRunCount"} | {"autoReport." + o for o in OUTPUTS}
    assert keys == {k for k in OPTIONS if k.startswith("autoReport.")}
    assert "autoReport.outputArchive" in keys and "autoReport.outputSerializedGraph" in keys


@pytest.mark.parametrize("key, real", [("autoReport.outputExecutionReport", "autoReport.outputExecutionProfile"),
                                       ("autoReport.outputGraphReport", "autoReport.outputGraphProfile")])
def test_a_key_poplar_does_not_have_names_the_one_to_use(key, real):
    with pytest.raises(popsim.InvalidOptionError, match=f"'{key}': Poplar has no such option; use '{real}'"):
        EngineOptions({key: "true"})


def test_flags_are_checked():
    with pytest.raises(popsim.InvalidOptionError, match="autoReport.streamAtEachRun' must be one of true, false"):
        EngineOptions({"autoReport.streamAtEachRun": "sometimes"})


def test_all_writes_every_output(small_device, tmp_path, no_env_options):
    e = engine(small_device, tmp_path, {"autoReport.all": "true"})
    assert files(tmp_path) == EVERY_FILE
    assert sorted(e.report_files) == sorted(str(tmp_path / f) for f in EVERY_FILE)


def test_all_leaves_out_the_outputs_set_to_false(small_device, tmp_path, no_env_options):
    engine(small_device, tmp_path, {"autoReport.all": "true", "autoReport.outputArchive": "false",
                                    "autoReport.outputSerializedGraph": False})
    assert files(tmp_path) == EVERY_FILE - {"archive.popsimexe", "serialized_graph.json"}


@pytest.mark.parametrize("output, name", [("outputDebugInfo", "debug.json"), ("outputLoweredVars", "vars.json"),
                                          ("outputSerializedGraph", "serialized_graph.json"),
                                          ("outputArchive", "archive.popsimexe"),
                                          ("outputGraphProfile", "profile.json")])
def test_each_output_alone_writes_its_file(small_device, tmp_path, no_env_options, output, name):
    e = engine(small_device, tmp_path, {"autoReport." + output: "true"})
    expected = {name, "report.html"} if name == "profile.json" else {name}
    assert files(tmp_path) == expected and {p.split("/")[-1] for p in e.report_files} == expected


def test_debug_info_names_what_the_program_holds(small_device, tmp_path, no_env_options):
    engine(small_device, tmp_path, {"autoReport.outputDebugInfo": "true"}, with_vertex=True)
    doc = json.loads((tmp_path / "debug.json").read_text())
    assert doc["format"] == "popsim-debug-info"
    assert doc["programs"] == [{"index": 0, "name": "main"}]
    assert doc["compute_sets"] == ["doubling"] and doc["vertex_types"] == ["Double"]
    assert doc["variables"] == ["x", "y", "c"]
    assert [s["kind"] for s in doc["steps"] if s["compute_set"] == "doubling"] == ["Execute"]
    assert doc["host_writes"] == ["x"] and doc["host_reads"] == ["y"]


def test_lowered_vars_hold_each_variables_regions(small_device, tmp_path, no_env_options):
    engine(small_device, tmp_path, {"autoReport.outputLoweredVars": "true", "autoReport.outputGraphProfile": "true"})
    doc = json.loads((tmp_path / "vars.json").read_text())
    assert doc["numTiles"] == 4 and doc["targetMemoryInfo"]["tileMemory"] == small_device.target.bytes_per_tile
    tensors = sorted((v["info"]["name"], v["info"]["tile"], v["info"]["sizeBytes"], v["info"]["category"])
                     for v in doc["vars"] if v["info"]["category"] in ("variable", "constant"))
    # 4 floats per tile for x, 8 for y, 2 for c (regions padded to 8 bytes)
    assert tensors == [("c", 3, 8, "constant"), ("x", 0, 16, "variable"), ("x", 1, 16, "variable"),
                       ("y", 2, 32, "variable")]
    # every byte the report counts on a tile is a region of vars.json
    by_category = popsim.open_report(tmp_path).memory.by_category
    per_tile = np.zeros(4, np.int64)
    for v in doc["vars"]:
        per_tile[v["info"]["tile"]] += v["info"]["sizeBytes"]
    assert per_tile.tolist() == np.sum([np.asarray(b) for b in by_category.values()], axis=0).tolist()


def test_serialized_graph_holds_tensors_mappings_and_vertices(small_device, tmp_path, no_env_options):
    engine(small_device, tmp_path, {"autoReport.outputSerializedGraph": "true"}, with_vertex=True)
    doc = json.loads((tmp_path / "serialized_graph.json").read_text())
    tensors = {t["name"]: (t["kind"], t["shape"], t["mapping"]) for t in doc["tensors"]}
    assert tensors == {"x": ("variable", [8], [[0, 4, 0], [4, 8, 1]]), "y": ("variable", [8], [[0, 8, 2]]),
                       "c": ("constant", [2], [[0, 2, 3]])}
    assert doc["vertex_types"] == ["Double"]
    assert doc["compute_sets"] == [{"index": 0, "name": "doubling", "vertex_type": [0], "tile": [2]}]


def test_serialized_graph_needs_the_graph(small_device, tmp_path, no_env_options, caplog):
    g, prog = build(small_device)
    exe = popsim.compile_graph(g, prog)
    with pytest.raises(popsim.InvalidOptionError, match="outputSerializedGraph.*built from an Executable"):
        popsim.Engine(exe, {"autoReport.outputSerializedGraph": "true", "autoReport.directory": str(tmp_path)})
    with caplog.at_level(logging.WARNING, logger="popsim"):
        popsim.Engine(exe, {"autoReport.all": "true", "autoReport.directory": str(tmp_path)})
    assert "serialized_graph.json is not written" in caplog.text
    assert "serialized_graph.json" not in files(tmp_path) and "archive.popsimexe" in files(tmp_path)


def test_archive_is_the_executable(small_device, tmp_path, no_env_options):
    e = engine(small_device, tmp_path, {"autoReport.outputArchive": "true"})
    e2 = popsim.Engine(popsim.Executable.deserialize(tmp_path / "archive.popsimexe"))
    data = np.arange(8, dtype=np.float32)
    for eng in (e, e2):
        eng.load(small_device)
        eng.write_tensor("x", data)
        eng.run(0)
        out = np.zeros(8, np.float32)
        eng.read_tensor("y", out)
        np.testing.assert_array_equal(out, data)


def test_the_report_tools_read_the_archive(small_device, tmp_path, no_env_options, capsys):
    """As Poplar's tools read archive.a without profile.pop: the target, graph and memory."""
    e = engine(small_device, tmp_path, {"autoReport.outputArchive": "true"}, with_vertex=True)
    expected = e.get_report()
    for where in (tmp_path / "archive.popsimexe", tmp_path):  # the file, or its directory (no profile.json)
        report = popsim.open_report(where)
        assert (report.target, report.graph) == (expected.target, expected.graph)
        assert report.memory.by_category == expected.memory.by_category
        assert report.execution.programs_executed == [] and report.execution.total_cycles == 0
    from popsim.report.cli import main
    assert main([str(tmp_path)]) == 0
    assert "Memory Usage:" in capsys.readouterr().out


def test_archive_of_interpreted_vertices_is_refused_clearly(small_device, tmp_path, no_env_options):
    with pytest.raises(popsim.InvalidOptionError, match="outputArchive.*interpreted.*outputArchive=false"):
        engine(small_device, tmp_path, {"autoReport.outputArchive": "true", "popsim.codeletMode": "interpreted"},
               with_vertex=True)


def test_graph_profile_alone_is_not_rewritten_after_runs(small_device, tmp_path, no_env_options):
    e = engine(small_device, tmp_path, {"autoReport.outputGraphProfile": "true"})
    e.load(small_device)
    e.run(0)
    assert runs_in(tmp_path) == []


def test_run_count_is_per_program(small_device, tmp_path, no_env_options):
    g, prog = build(small_device)
    e = popsim.Engine(g, [prog, Sequence(debug_name="other")],
                      {"autoReport.outputExecutionProfile": "true", "autoReport.directory": str(tmp_path),
                       "autoReport.executionProfileProgramRunCount": "1"})
    e.load(small_device)
    e.run(0)
    e.run(1)  # the first run of program 1 is counted although program 0 has run
    assert runs_in(tmp_path) == [1, 1]
    e.run(0)
    assert runs_in(tmp_path) == [1, 1]


def test_stream_at_each_run_false_writes_when_the_engine_closes(small_device, tmp_path, no_env_options):
    e = engine(small_device, tmp_path, {"autoReport.outputExecutionProfile": "true",
                                        "autoReport.streamAtEachRun": "false"})
    e.load(small_device)
    for _ in range(3):
        e.run(0)
    assert runs_in(tmp_path) == []  # written when the engine was built, not after the runs
    e.close()
    assert runs_in(tmp_path) == [2]  # the first executionProfileProgramRunCount runs


def test_stream_at_each_run_false_writes_when_the_engine_is_collected(small_device, tmp_path, no_env_options):
    e = engine(small_device, tmp_path, {"autoReport.all": "true", "autoReport.streamAtEachRun": "false"})
    e.load(small_device)
    e.run(0)
    assert runs_in(tmp_path) == []
    del e
    gc.collect()
    assert runs_in(tmp_path) == [1]


def test_stream_at_each_run_writes_after_each_counted_run(small_device, tmp_path, no_env_options):
    e = engine(small_device, tmp_path, {"autoReport.outputExecutionProfile": "true"})
    e.load(small_device)
    e.run(0)
    assert runs_in(tmp_path) == [1]
    e.run(0)
    e.run(0)
    assert runs_in(tmp_path) == [2]
