"""Vertex building (popsim/vertices.py): sizes and estimates are whole numbers, never
coerced; perf estimators only for vertex types the graph knows."""
import numpy as np
import pytest

import popsim
from popsim import FLOAT, Input, Output, Vector, VectorList, Vertex
from popsim.program import Execute


class RowTotal(Vertex):
    rows: Input[VectorList[float]]
    out: Output[float]

    def compute(self):
        total = 0.0
        for i in range(len(self.rows)):
            for j in range(len(self.rows[i])):
                total += self.rows[i][j]
        self.out = total


class Copy1(Vertex):
    x: Input[Vector[float]]
    y: Output[float]

    def compute(self):
        self.y = self.x[0]


@pytest.fixture
def graph(small_device):
    g = popsim.Graph(small_device)
    g.add_codelets([RowTotal, Copy1])
    return g


def vertex(graph):
    cs = graph.add_compute_set("cs")
    v = graph.add_vertex(cs, "RowTotal")
    graph.set_tile_mapping(v, 0)
    return v


@pytest.mark.parametrize("cycles,found", [(2.5, "float 2.5"), ("20", "str '20'"), (True, "bool True"),
                                          (20.0, "float 20.0"), (None, "NoneType None")])
def test_perf_estimate_must_be_an_integer(graph, cycles, found):
    v = vertex(graph)
    with pytest.raises(popsim.GraphConnectionError) as info:  # before: 2.5 was silently truncated to 2
        graph.set_perf_estimate(v, cycles)
    assert f"set_perf_estimate of vertex 'RowTotal' (#0 of compute set 'cs', tile 0): cycles must be an integer, " \
           f"found {found}" in str(info.value)
    assert graph.get_perf_estimate(v) is None


def test_perf_estimate_takes_numpy_integers_and_checks_flops(graph):
    v = vertex(graph)
    graph.set_perf_estimate(v, np.int64(25), np.uint32(3))
    assert graph.get_perf_estimate(v) == 25 and type(graph.get_perf_estimate(v)) is int
    with pytest.raises(popsim.GraphConnectionError, match="cycles must be a non-negative integer, found -1"):
        graph.set_perf_estimate(v, -1)
    with pytest.raises(popsim.GraphConnectionError, match="flops must be an integer, found float 0.5"):
        graph.set_perf_estimate(v, 5, 0.5)


@pytest.mark.parametrize("size,found", [(2.7, "float 2.7"), ("4", "str '4'"), (False, "bool False")])
def test_field_size_must_be_an_integer(graph, size, found):
    v = vertex(graph)
    with pytest.raises(popsim.GraphConnectionError, match=f"size must be an integer, found {found}"):
        graph.set_field_size(v["rows"], size)
    graph.set_field_size(v["rows"], np.int32(2))
    assert graph.get_field_size(v["rows"]) == 2
    with pytest.raises(popsim.GraphConnectionError, match="sub-edge index of field 'rows'.*must be an integer, "
                                                          "found float 1.5"):
        v["rows"][1.5]


def test_field_size_counts_sub_edges(graph, small_device, run_and_read):
    v = vertex(graph)
    data = graph.add_variable(FLOAT, [6], "data")
    graph.set_tile_mapping(data, 1)
    graph.set_initial_value(data, np.arange(6))
    out = graph.add_variable(FLOAT, [1], "out")
    graph.set_tile_mapping(out, 0)
    graph.set_field_size(v["rows"], np.int64(data.num_elements() // 3))
    graph.connect(v["rows"][0], data[0:3])
    graph.connect(v["rows"][np.int64(1)], data[3:6])
    graph.connect(v["out"], out[0])
    [res] = run_and_read(graph, small_device, Execute(v.compute_set), [out])
    assert res[0] == 15


def test_perf_estimator_for_an_unknown_type_is_refused(small_device):
    g = popsim.Graph(small_device)
    estimate = lambda info, target: (7, 0)  # noqa: E731
    # Registering before add_codelets is the usual mistake: Poplar requires the type to exist.
    with pytest.raises(popsim.UnknownVertexTypeError) as info:
        g.register_perf_estimator("RowTotal", estimate)
    assert "register_perf_estimator: unknown vertex type 'RowTotal'" in str(info.value)
    assert "add its codelets with graph.add_codelets(...) before registering" in str(info.value)
    g.add_codelets([RowTotal, Copy1])
    with pytest.raises(popsim.UnknownVertexTypeError, match="unknown vertex type 'RowTotl': did you mean "
                                                            "'RowTotal'"):
        g.register_perf_estimator("RowTotl", estimate)
    with pytest.raises(popsim.UnknownVertexTypeError, match="must be a registered name, found type"):
        g.register_perf_estimator(RowTotal, estimate)


def test_perf_estimator_registered_after_add_codelets_is_used(small_device):
    g = popsim.Graph(small_device)
    g.add_codelets([RowTotal, Copy1])
    g.register_perf_estimator("Copy1", lambda info, target: (40 + info.field_size("x"), 0))
    x = g.add_variable(FLOAT, [3], "x")
    y = g.add_variable(FLOAT, [1], "y")
    g.set_tile_mapping(x, 0)
    g.set_tile_mapping(y, 0)
    cs = g.add_compute_set("cs")
    v = g.add_vertex(cs, "Copy1", {"x": x, "y": y[0]})
    g.set_tile_mapping(v, 0)
    e = popsim.Engine(g, Execute(cs))
    e.load(small_device)
    e.run()
    by_type = {t.name: t.cycles for t in e.get_report().execution.vertex_types}
    assert by_type["Copy1"] == 43


def test_another_graphs_vertex_is_refused_everywhere(small_device):
    """g1.connect(v2[...], t1) used to wire graph 2's vertex to graph 1's tensor, which
    graph 2's engine then ran on its own variable of the same index."""
    class Two(popsim.Vertex):
        x: popsim.InOut[popsim.Vector[float]]
        ins: popsim.Input[popsim.VectorList[float]]
        n: int

        def compute(self):
            return True

    g1, g2 = popsim.Graph(small_device), popsim.Graph(small_device)
    for g in (g1, g2):
        g.add_codelets(Two)
    t1 = g1.add_variable(FLOAT, [4], "t1")
    v2 = g2.add_vertex(g2.add_compute_set("cs"), "Two")
    for call in (lambda: g1.connect(v2["x"], t1), lambda: g1.set_field_size(v2["ins"], 2),
                 lambda: g1.set_perf_estimate(v2, 10), lambda: g1.set_initial_value(v2["n"], 3),
                 lambda: g1.connect(v2["n"], 3)):
        with pytest.raises(popsim.GraphConnectionError, match="the vertex belongs to another graph"):
            call()
    assert v2.connection(0) is None and v2.perf_estimate is None


class Scale(Vertex):
    x: Input[Vector[float]]
    y: Output[Vector[float]]
    k: popsim.INT

    def compute(self):
        for i in range(len(self.y)):
            self.y[i] = self.x[i] * self.k


def test_a_typed_array_for_a_plain_member_is_copied_and_others_are_checked(small_device):
    """set_initial_value of a plain member takes a 1-element array of the member's type as
    it is (libraries setting many vertices pass one), copied: changing the array later
    changes nothing; anything else is converted and checked as before."""
    g = popsim.Graph(small_device)
    g.add_codelets([Scale])
    x, y = g.add_variable(FLOAT, [4], "x"), g.add_variable(FLOAT, [4], "y")
    g.set_tile_mapping(x, 0)
    g.set_tile_mapping(y, 0)
    g.set_initial_value(x, [1.0, 2.0, 3.0, 4.0])
    cs = g.add_compute_set("cs")
    v = g.add_vertex(cs, "Scale", {"x": x, "y": y})
    g.set_tile_mapping(v, 0)
    k = np.array([3], np.int32)
    g.set_initial_value(v["k"], k)
    k[0] = 100
    g.create_host_read("y", y)
    engine = popsim.Engine(g, Execute(cs))
    engine.load(small_device)
    engine.run(0)
    np.testing.assert_array_equal(engine.read_tensor("y"), [3.0, 6.0, 9.0, 12.0])
    with pytest.raises(popsim.GraphConnectionError, match="non-integral"):
        g.set_initial_value(v["k"], np.array([1.5]))


@pytest.mark.parametrize("call, message", [
    (lambda g, cs: g.has_codelet([]), "has_codelet: a vertex type is named by a string, found list"),
    (lambda g, cs: g.vertex_type(1), "vertex_type: a vertex type is named by a string, found int 1"),
    (lambda g, cs: g.add_vertex(cs, "Copy1", "٣"), r"add_vertex: connections must be a dict \{field name: tensor\}, "
                                                   "found str '٣'"),
    (lambda g, cs: g.get_field_size(3), r"get_field_size: expected a vertex field \(v\['name'\]\), found int"),
    (lambda g, cs: g.get_perf_estimate("v"), "get_perf_estimate: expected a vertex, found str"),
    (lambda g, cs: g.add_codelets(Copy1, ["-O3"]), "add_codelets: compile_flags must be a string such as '-O3', "
                                                   "found list"),
    (lambda g, cs: g.add_codelets(float), "add_codelets: float is not a popsim.Vertex"),
])
def test_arguments_of_the_wrong_kind(graph, call, message):
    """Found by tests/test_api_fuzz.py: Python's TypeError (unhashable type, difflib on an
    int) or AttributeError ('str' object has no attribute 'items')."""
    cs = graph.add_compute_set("cs")
    with pytest.raises(popsim.TypeError, match=message):
        call(graph, cs)
    assert len(cs.vertices) == 0  # refused before a vertex was added
