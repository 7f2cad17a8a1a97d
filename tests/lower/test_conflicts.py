"""Data hazards in a compute set (src/popsim/lower/conflicts.py): the read-after-write race
check (option popsim.checkRaces, POPSIM_CHECK_RACES; on for the whole test suite)."""
import numpy as np
import pytest

import popsim
from popsim import FLOAT, InOut, Input, Output, Vector, Vertex
from popsim.program import Execute

pytestmark = pytest.mark.compiler


class Fill(Vertex):
    out: Output[Vector[float]]

    def compute(self):
        for i in range(len(self.out)):
            self.out[i] = 1.0


class Total(Vertex):
    a: Input[Vector[float]]
    out: Output[float]

    def compute(self):
        s = 0.0
        for x in self.a:
            s += x
        self.out = s


class Twice(Vertex):
    a: Input[Vector[float]]
    b: Output[Vector[float]]

    def compute(self):
        for i in range(len(self.a)):
            self.b[i] = 2 * self.a[i]


class Bump(Vertex):
    data: InOut[Vector[float]]

    def compute(self):
        for i in range(len(self.data)):
            self.data[i] = self.data[i] + 1


def graph(device):
    g = popsim.Graph(device)
    g.add_codelets([Fill, Total, Twice, Bump])
    y = g.add_variable(FLOAT, [8], "y")
    g.set_tile_mapping(y[:4], 0)
    g.set_tile_mapping(y[4:], 1)
    s = g.add_variable(FLOAT, [2], "s")
    g.set_tile_mapping(s, 2)
    return g, y, s


def vertex(g, cs, kind, fields, tile):
    v = g.add_vertex(cs, kind, fields)
    g.set_tile_mapping(v, tile)
    return v


def racy(device):
    """Fill writes y[0:4] on tile 0 while Total on tile 3 reads y[2:6]."""
    g, y, s = graph(device)
    cs = g.add_compute_set("racy")
    vertex(g, cs, "Fill", {"out": y[0:4]}, 0)
    vertex(g, cs, "Total", {"a": y[2:6], "out": s[0]}, 3)
    return g, cs


def test_reading_what_another_vertex_writes_is_a_race(small_device):
    g, cs = racy(small_device)
    with pytest.raises(popsim.GraphCycleError) as e:
        popsim.Engine(g, Execute(cs))
    message = str(e.value)
    assert ("in compute set 'racy', field 'a' of vertex 'Total' (#1 of compute set 'racy', tile 3) reads elements "
            "[2:4) of variable 'y', which field 'out' of vertex 'Fill' (#0 of compute set 'racy', tile 0) writes: "
            "a read-after-write race") in message
    assert "separate compute sets" in message and "popsim.checkRaces" in message


def test_the_check_is_off_by_default_and_set_by_option_or_environment(small_device, monkeypatch):
    monkeypatch.delenv("POPSIM_CHECK_RACES")
    g, cs = racy(small_device)
    popsim.Engine(g, Execute(cs))  # Poplar accepts the graph, and so does popsim by default
    with pytest.raises(popsim.GraphCycleError, match="read-after-write race"):
        popsim.Engine(g, Execute(cs), {"popsim.checkRaces": "true"})
    monkeypatch.setenv("POPSIM_CHECK_RACES", "false")  # the environment wins over the program
    popsim.Engine(g, Execute(cs), {"popsim.checkRaces": "true"})
    monkeypatch.setenv("POPSIM_CHECK_RACES", "maybe")
    with pytest.raises(popsim.InvalidOptionError, match="POPSIM_CHECK_RACES must be true or false"):
        popsim.Engine(g, Execute(cs))


def test_separate_compute_sets_are_the_fix(small_device):
    g, y, s = graph(small_device)
    write, read = g.add_compute_set("write"), g.add_compute_set("read")
    vertex(g, write, "Fill", {"out": y[0:4]}, 0)
    vertex(g, read, "Total", {"a": y[2:6], "out": s[0]}, 3)
    g.create_host_write("y", y)
    g.create_host_read("s", s)
    e = popsim.Engine(g, popsim.program.Sequence(Execute(write), Execute(read)))
    e.load(small_device)
    e.write_tensor("y", np.zeros(8, np.float32))
    e.run()
    assert e.read_tensor("s")[0] == 2.0  # y[2:4] = 1 written first, y[4:6] = 0


def test_inout_reading_its_own_writes_is_not_a_race(small_device):
    g, y, s = graph(small_device)
    cs = g.add_compute_set("bump")
    vertex(g, cs, "Bump", {"data": y[0:4]}, 0)
    vertex(g, cs, "Bump", {"data": y[4:8]}, 3)  # remote, through a buffer: still its own elements
    popsim.Engine(g, Execute(cs))


def test_input_and_output_of_one_vertex_on_the_same_elements(small_device):
    g, y, s = graph(small_device)
    cs = g.add_compute_set("inplace")
    vertex(g, cs, "Twice", {"a": y[0:4], "b": y[0:4]}, 0)
    with pytest.raises(popsim.GraphCycleError) as e:
        popsim.Engine(g, Execute(cs))
    assert ("field 'a' of vertex 'Twice' (#0 of compute set 'inplace', tile 0) reads elements [0:4) of variable "
            "'y', which its field 'b' writes") in str(e.value)
    assert "one InOut field" in str(e.value)


def test_scattered_reads_are_checked(small_device):
    g, y, s = graph(small_device)
    cs = g.add_compute_set("strided")
    vertex(g, cs, "Fill", {"out": y[5:6]}, 1)
    vertex(g, cs, "Total", {"a": y[::2], "out": s[0]}, 2)  # reads y[0], y[2], y[4], y[6]
    popsim.Engine(g, Execute(cs))  # y[5] is not among them
    vertex(g, cs, "Total", {"a": y[1::2], "out": s[1]}, 2)  # y[1], y[3], y[5], y[7]
    with pytest.raises(popsim.GraphCycleError, match=r"field 'a' of vertex 'Total' \(#2 .*reads elements \[5:6\) "
                                                     r"of variable 'y', which field 'out' of vertex 'Fill' \(#0"):
        popsim.Engine(g, Execute(cs))


def test_write_write_conflicts_are_still_reported_first(small_device):
    g, y, s = graph(small_device)
    cs = g.add_compute_set("clash")
    vertex(g, cs, "Fill", {"out": y[0:4]}, 0)
    vertex(g, cs, "Fill", {"out": y[3:5]}, 1)
    vertex(g, cs, "Total", {"a": y, "out": s[0]}, 2)
    with pytest.raises(popsim.GraphCycleError, match=r"both write elements \[3:4\) of variable 'y'"):
        popsim.Engine(g, Execute(cs))


def test_the_executable_cache_does_not_skip_the_check(small_device, monkeypatch, tmp_path):
    """The check changes what compiles: an executable cached without it is not reused with it."""
    g, cs = racy(small_device)
    options = {"popsim.cacheDir": str(tmp_path)}
    monkeypatch.setenv("POPSIM_CHECK_RACES", "false")
    exe = popsim.compile_graph(g, Execute(cs), options)
    assert exe.options["popsim.checkRaces"] == "false"
    assert popsim.compile_graph(g, Execute(cs), options).compilation.from_cache
    monkeypatch.setenv("POPSIM_CHECK_RACES", "true")
    with pytest.raises(popsim.GraphCycleError, match="read-after-write race"):
        popsim.compile_graph(g, Execute(cs), options)
