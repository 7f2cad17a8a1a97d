"""Python vertices through the engine: compiled and interpreted runs of one program give
the same tensors and the same cycle report; errors name vertex, field, tile."""
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import popsim
from popsim import FLOAT, HALF, INT, InOut, Input, MultiVertex, Output, Vector, VectorList, Vertex
from popsim.program import Execute, Repeat

ROOT = pathlib.Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.compiler


class ScaleClip(Vertex):
    """out[i] = clip(k * x[i], -limit, limit), counting the clipped elements."""

    x: Input[Vector[float]]
    out: Output[Vector[float]]
    clipped: InOut[int]
    k: float
    limit: float

    def compute(self):
        for i in range(len(self.x)):
            y = self.k * self.x[i]
            if y > self.limit:
                y = self.limit
                self.clipped += 1
            elif y < -self.limit:
                y = -self.limit
                self.clipped += 1
            self.out[i] = y
        return True


class RowSums(Vertex):
    rows: Input[VectorList[HALF]]
    sums: Output[Vector[float]]

    def compute(self):
        r = 0
        for row in self.rows:
            s = 0.0
            for v in row:
                s += v
            self.sums[r] = s
            r += 1


class Halve(MultiVertex):
    data: InOut[Vector[int]]

    def compute(self, worker_id):
        i = worker_id
        while i < len(self.data):
            self.data[i] = self.data[i] // 2
            i += self.num_workers()


class Peek(Vertex):
    v: Input[Vector[int]]
    at: int
    out: Output[int]

    def compute(self):
        self.out = self.v[self.at]


class Shout(Vertex):
    x: Input[float]

    def compute(self):
        print("x is", self.x)


def build(device):
    rng = np.random.default_rng(3)
    g = popsim.Graph(device)
    g.add_codelets([ScaleClip, RowSums, Halve])
    x = g.add_variable(FLOAT, [6, 10], "x", mapping=popsim.VariableMappingMethod.LINEAR)
    out = g.add_variable(FLOAT, [6, 10], "out")
    clipped = g.add_variable(INT, [6], "clipped")
    h = g.add_variable(HALF, [40], "h", mapping=popsim.VariableMappingMethod.LINEAR)
    sums = g.add_variable(FLOAT, [3], "sums")
    data = g.add_variable(INT, [25], "data")
    g.set_initial_value(x, rng.normal(size=(6, 10)) * 3)
    g.set_initial_value(h, rng.random(40))
    g.set_initial_value(data, rng.integers(-1000, 1000, 25))
    cs = g.add_compute_set("work")
    for r in range(6):
        g.set_tile_mapping(out[r], r)
        g.set_tile_mapping(clipped[r], r)
        v = g.add_vertex(cs, ScaleClip, {"x": x[r], "out": out[r], "clipped": clipped[r]})
        g.set_initial_value(v["k"], 1.5)
        g.set_initial_value(v["limit"], 2.0)
        g.set_tile_mapping(v, r)
    g.set_tile_mapping(sums, 9)
    v = g.add_vertex(cs, "RowSums", {"sums": sums})
    g.connect(v["rows"], [h[0:7], h[20:40:3], h[39:10:-4]])
    g.set_tile_mapping(v, 9)
    g.set_tile_mapping(data, 11)
    v = g.add_vertex(cs, "Halve", {"data": data})
    g.set_tile_mapping(v, 11)
    for i, t in enumerate((out, clipped, sums, data)):
        g.create_host_read(f"r{i}", t)
    return g, Repeat(2, Execute(cs))


def run_mode(mode):
    device = popsim.IPUModel().create_device()
    g, prog = build(device)
    e = popsim.Engine(g, prog, {"popsim.codeletMode": mode})
    e.load(device)
    e.run()
    return [e.read_tensor(f"r{i}") for i in range(4)], e.get_report()


def test_compiled_and_interpreted_agree_through_the_engine():
    compiled, rc = run_mode("compiled")
    interpreted, ri = run_mode("interpreted")
    for a, b in zip(compiled, interpreted):
        np.testing.assert_array_equal(a, b)
    assert rc.execution.total_cycles == ri.execution.total_cycles
    assert [(t.name, t.cycles) for t in rc.execution.vertex_types] == \
        [(t.name, t.cycles) for t in ri.execution.vertex_types]
    assert all(t.cycles > 0 for t in rc.execution.vertex_types)  # counted, not estimated


def test_results_match_numpy():
    (out, clipped, sums, data), _ = run_mode("compiled")
    rng = np.random.default_rng(3)
    x = (rng.normal(size=(6, 10)) * 3).astype(np.float32)
    h = rng.random(40).astype(np.float16)
    d = rng.integers(-1000, 1000, 25).astype(np.int32)
    np.testing.assert_array_equal(out, np.clip(np.float32(1.5) * x, -2, 2))
    np.testing.assert_array_equal(clipped, 2 * (np.abs(np.float32(1.5) * x) > 2).sum(axis=1))  # two runs
    rows = [h[0:7], h[20:40:3], h[39:10:-4]]
    for s, row in zip(sums, rows):
        expected = np.float32(0)
        for value in row.astype(np.float32):
            expected = np.float32(expected + value)
        assert s == expected
    np.testing.assert_array_equal(data, (d // 2) // 2)


@pytest.mark.parametrize("mode", ["compiled", "interpreted"])
def test_index_error_names_vertex_field_and_index(mode):
    device = popsim.IPUModel().create_device()
    g = popsim.Graph(device)
    v4 = g.add_variable(INT, [4], "v4")
    out = g.add_variable(INT, [], "out")
    g.set_tile_mapping(v4, 2)
    g.set_tile_mapping(out, 2)
    cs = g.add_compute_set("peeks")
    v = g.add_vertex(cs, Peek, {"v": v4, "out": out})
    g.set_initial_value(v["at"], 7)
    g.set_tile_mapping(v, 2)
    e = popsim.Engine(g, Execute(cs), {"popsim.codeletMode": mode})
    e.load(device)
    with pytest.raises(popsim.IndexError, match=r"compute set 'peeks', vertex #0 on tile 2: vertex type 'Peek': "
                                                r"index 7 is out of range for field 'v' of size 4"):
        e.run()


def test_print_works_in_interpreted_mode(capsys):
    device = popsim.IPUModel().create_device()
    g = popsim.Graph(device)
    x = g.add_variable(FLOAT, [], "x")
    g.set_tile_mapping(x, 0)
    g.set_initial_value(x, 2.5)
    cs = g.add_compute_set("cs")
    v = g.add_vertex(cs, Shout, {"x": x})
    g.set_tile_mapping(v, 0)
    e = popsim.Engine(g, Execute(cs), {"popsim.codeletMode": "interpreted"})
    e.load(device)
    e.run()
    assert "x is 2.5" in capsys.readouterr().out


def test_mode_from_environment(monkeypatch):
    monkeypatch.setenv("POPSIM_CODELET_MODE", "interpreted")
    device = popsim.IPUModel().create_device()
    g, prog = build(device)
    e = popsim.Engine(g, prog)
    assert e._interpreted
    monkeypatch.setenv("POPSIM_CODELET_MODE", "sometimes")
    with pytest.raises(popsim.InvalidOptionError, match="POPSIM_CODELET_MODE"):
        popsim.Engine(g, prog)


def test_tutorial3_python_both_modes():
    for mode in ("compiled", "interpreted"):
        result = subprocess.run([sys.executable, str(ROOT / "tutorials" / "tut3_vertices_python.py")],
                                capture_output=True, text=True, timeout=300,
                                env={**__import__("os").environ, "POPSIM_CODELET_MODE": mode})
        assert result.returncode == 0, result.stderr
        assert "v2: [7.0000000 6.0000000 4.5000000 2.5000000]" in result.stdout
