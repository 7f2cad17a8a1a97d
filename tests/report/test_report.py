"""The report object, its JSON round trip, and the text summary."""
import io
import json

import numpy as np
import pytest

import popsim
from popsim import FLOAT
from popsim.program import Copy, PrintTensor, Repeat, Sequence
from popsim.report.report import MemoryInfo, part_json_text, report_json_text


@pytest.fixture
def ran_engine(device):
    g = popsim.Graph(device)
    a = g.add_variable(FLOAT, [64], "a", mapping=popsim.VariableMappingMethod.LINEAR)
    b = g.add_variable(FLOAT, [64], "b")
    g.set_tile_mapping(b, 5)
    s = g.add_host_to_device_fifo("in", FLOAT, 64)
    e = popsim.Engine(g, [Sequence(Copy(s, a), Repeat(3, Copy(a, b))), PrintTensor(b)],
                      {"debug.retainDebugInformation": "true"})
    e.load(device)
    e.connect_stream("in", np.ones(64, np.float32))
    e.run(0, debug_name="main")
    e.run(0)
    return e


def test_report_contents(ran_engine, device):
    r = ran_engine.get_report()
    assert r.target.num_tiles == 1472 and r.target.bytes_per_tile == 638976 and r.target.clock == 1.33e9
    assert r.graph.num_variables == 2 and r.graph.num_vertices == 0
    assert r.execution.programs_executed == [{"index": 0, "name": "main", "runs": 2}]
    kinds = [(s.kind, s.count) for s in r.execution.steps]
    assert kinds == [("StreamCopy", 2), ("Copy", 6), ("Repeat", 6), ("PrintTensor", 0)]
    assert r.execution.total_cycles == pytest.approx(sum(s.cycles for s in r.execution.steps))
    assert r.memory.category_total("variables") == 2 * 64 * 4
    assert r.options == {"debug.retainDebugInformation": "true"}


def test_report_json_round_trip(ran_engine, tmp_path):
    r = ran_engine.get_report()
    path = tmp_path / "profile.json"
    r.to_json(path)
    back = popsim.open_report(path)
    assert back.to_dict() == r.to_dict()


def test_open_report_rejects_other_versions(ran_engine, tmp_path):
    import json
    path = tmp_path / "old.json"
    d = ran_engine.get_report().to_dict()
    d["schema_version"] = 0
    path.write_text(json.dumps(d))
    with pytest.raises(popsim.PopsimError, match="schema version 0"):
        popsim.open_report(path)
    with pytest.raises(popsim.PopsimError, match="cannot open report"):
        popsim.open_report(tmp_path / "missing.json")


def test_reset_execution_profile(ran_engine):
    ran_engine.reset_execution_profile()
    r = ran_engine.get_report()
    assert r.execution.total_cycles == 0 and r.execution.programs_executed == []


def test_summary_sections(ran_engine):
    out = io.StringIO()
    ran_engine.print_profile_summary(out, {"showExecutionSteps": "true"})
    text = out.getvalue()
    for heading in ("Target:", "Graph:", "Memory Usage:", "Execution:", "Programs executed:"):
        assert heading in text
    assert "Total Tiles:" in text and "1,472" in text
    assert "Memory Per-Tile:" in text and "624.0 kB" in text
    assert "Total Memory:" in text and "897.0 MB" in text
    assert "Clock Speed (approx):" in text and "1,330.0 MHz" in text
    assert "Number of variables:" in text
    assert "Total cycles:" in text and "microseconds" in text
    for line in ("Tile average compute cycles (including idle threads):",
                 "Tile average compute cycles (excluding idle threads):",
                 "Tile average IPU exchange cycles:", "Tile average host exchange cycles:",
                 "Tile average sync cycles:"):
        assert line in text
    assert "Copy a -> b" in text  # a step line, with showExecutionSteps
    r = ran_engine.get_report()
    assert f"{r.execution.total_cycles:,.0f}" in text


def test_summary_without_steps_by_default(ran_engine, capsys):
    ran_engine.print_profile_summary()
    assert "Copy a -> b" not in capsys.readouterr().out


# -- the JSON text: the C encoder in one pass, the same bytes as the pure-Python encoder ----------------
def _python_encoder_text(data):
    """json.dump to a file runs the pure-Python encoder: an independent reference."""
    out = io.StringIO()
    json.dump(data, out, separators=(",", ":"))
    return out.getvalue()


def test_json_text_is_the_pure_python_encoders(ran_engine, tmp_path):
    r = ran_engine.get_report()
    r.execution.steps[0].cycles = float("nan")  # written as NaN, as json.dump writes it
    r.execution.total_cycles = float("inf")
    r.execution.steps[1].categories["sync"] = -0.0
    r.warnings.append("caf\u00e9 \u2013 \"quoted\" </script>")
    expected = _python_encoder_text(r.to_dict())
    assert r.to_json_text() == expected
    r.to_json(tmp_path / "profile.json")
    assert (tmp_path / "profile.json").read_text(encoding="utf-8") == expected
    assert "NaN" in expected and "Infinity" in expected and "-0.0" in expected


def test_report_json_text_takes_the_known_parts(ran_engine):
    r = ran_engine.get_report()
    assert report_json_text(r, {}) == r.to_json_text()
    assert report_json_text(r, {"memory": part_json_text(r.memory)}) == r.to_json_text()
    assert json.loads(report_json_text(r, {"memory": "[7]"}))["memory"] == [7]  # used as given, not recomputed


# -- per-tile figures -------------------------------------------------------------------------------
def test_memory_figures_match_numpy(ran_engine):
    m = ran_engine.get_report().memory
    per_category = np.array(list(m.by_category.values()), np.int64)
    tiles = per_category.sum(axis=0)
    f = m.figures()
    assert np.array_equal(f.tiles, tiles) and f.total == int(tiles.sum()) == m.total
    assert f.max_tile == int(np.argmax(tiles)) == m.max_tile and f.max_bytes == int(tiles.max()) == m.max_bytes
    assert f.out_of_memory == [] == m.tiles_out_of_memory
    assert f.category_totals == {k: int(np.sum(v)) for k, v in m.by_category.items()}
    assert f.category_totals["variables"] == m.category_total("variables") == 2 * 64 * 4


def test_memory_figures_follow_changes_to_a_report(ran_engine):
    m = ran_engine.get_report().memory
    before = m.figures()
    m.by_category["variables"][1000] += 10 ** 7  # a report the caller changes: nothing is remembered
    assert m.max_tile == 1000 and m.tiles_out_of_memory == [1000] and m.total == before.total + 10 ** 7
    assert MemoryInfo(bytes_per_tile=8, by_category={}).figures().tiles.size == 0
