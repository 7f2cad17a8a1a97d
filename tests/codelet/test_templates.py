"""Vertex templates (popsim.codelet.templates): Python vertices instantiated per element
type and per op, and C++ class templates, registered under the names PopLibs gives them
(poputil::templateVertex), run in an engine against numpy.

This module uses ``from __future__ import annotations`` on purpose: field annotations
naming a factory's parameters must resolve."""
from __future__ import annotations

import enum
from pathlib import Path

import numpy as np
import pytest

import popsim
from popsim import FLOAT, HALF, INT, UNSIGNED_INT, InOut, Input, MultiVertex, Output, Vector, Vertex
from popsim.codelet import compiler
from popsim.program import Execute, Sequence

pytestmark = pytest.mark.compiler

DATA = Path(__file__).resolve().parent / "data"


@popsim.vertex_template("popops::ScaledAdd", dtype=[FLOAT, HALF, INT], constrained=[True, False])
def ScaledAdd(dtype, constrained):
    class ScaledAdd(Vertex):
        data: InOut[Vector[dtype]]
        deltas: Input[Vector[dtype]]
        scale: float

        def compute(self):
            for i in range(len(self.data)):
                self.data[i] = self.data[i] + self.scale * self.deltas[i]
    return ScaledAdd


class BinaryOpType(enum.Enum):
    ADD = 0
    MULTIPLY = 1

    @property
    def cpp(self):
        return f"popops::expr::BinaryOpType::{self.name}"


@popsim.vertex_template("popops::BinaryOp1D", op=list(BinaryOpType), dtype=[FLOAT, INT])
def BinaryOp1D(op, dtype):
    is_add = op is BinaryOpType.ADD  # compute sees numbers and bools from the factory as constants

    class BinaryOp1D(MultiVertex):
        in1: Input[Vector[dtype]]
        in2: Input[Vector[dtype]]
        out: Output[Vector[dtype]]

        def compute(self, worker_id):
            for i in range(worker_id, len(self.out), self.num_workers()):
                if is_add:
                    self.out[i] = self.in1[i] + self.in2[i]
                else:
                    self.out[i] = self.in1[i] * self.in2[i]
    return BinaryOp1D


def one_tile_graph(small_device, n, dtype, names):
    graph = popsim.Graph(small_device)
    tensors = [graph.add_variable(dtype, [n], name) for name in names]
    for t in tensors:
        graph.set_tile_mapping(t, 0)
    return graph, tensors


# ---- names --------------------------------------------------------------------------------------
@pytest.mark.parametrize("t,spelling", [
    (popsim.BOOL, "bool"), (popsim.CHAR, "char"), (popsim.SIGNED_CHAR, "signed char"),
    (popsim.UNSIGNED_CHAR, "unsigned char"), (popsim.SHORT, "short"), (popsim.UNSIGNED_SHORT, "unsigned short"),
    (INT, "int"), (UNSIGNED_INT, "unsigned int"), (popsim.LONGLONG, "long long"),
    (popsim.UNSIGNED_LONGLONG, "unsigned long long"), (HALF, "half"), (FLOAT, "float")])
def test_template_vertex_spells_types_as_poplar(t, spelling):
    assert popsim.template_vertex("X", t) == f"X<{spelling}>"


def test_template_vertex_spells_arguments_as_templateVertex():
    assert popsim.template_vertex("popops::ScaledAdd", FLOAT, True) == "popops::ScaledAdd<float,true>"
    assert popsim.template_vertex("popops::Fill", float, False, 4) == "popops::Fill<float,false,4>"
    assert popsim.template_vertex("popops::Cast", np.float16, np.uint32) == "popops::Cast<half,unsigned int>"
    assert popsim.template_vertex("popops::BinaryOp1D", BinaryOpType.ADD, INT) == \
        "popops::BinaryOp1D<popops::expr::BinaryOpType::ADD,int>"
    assert popsim.template_vertex("X", enum.Enum("Op", "MIN MAX").MAX) == "X<Op::MAX>"
    assert popsim.template_vertex("Plain") == "Plain"
    with pytest.raises(popsim.PopsimError, match="cannot be a vertex template argument"):
        popsim.template_vertex("X", 1.5)


def test_instantiations_are_memoised_classes_named_by_the_template():
    cls = ScaledAdd[FLOAT, True]
    assert cls is ScaledAdd(FLOAT, True) is ScaledAdd(float, constrained=True) is ScaledAdd["float", True]
    assert cls.vertex_name == "popops::ScaledAdd<float,true>"
    assert ScaledAdd[HALF, True] is not cls
    assert ScaledAdd.vertex_name(INT, False) == "popops::ScaledAdd<int,false>"
    assert "popops::ScaledAdd<half,false>" in ScaledAdd.names() and len(ScaledAdd.names()) == 6


def test_template_arguments_outside_the_declared_values_are_refused():
    with pytest.raises(popsim.PopsimError, match=r"dtype=unsigned int is not one of .*float, half, int"):
        ScaledAdd[UNSIGNED_INT, True]
    with pytest.raises(popsim.PopsimError, match="takes 2 argument"):
        ScaledAdd[FLOAT, True, 3]
    with pytest.raises(popsim.PopsimError, match="missing argument.*constrained"):
        ScaledAdd(FLOAT)
    with pytest.raises(popsim.PopsimError, match="no parameter 'dtyp'.*did you mean 'dtype'"):
        popsim.vertex_template("T", dtyp=[FLOAT])(lambda dtype: None)


def test_a_factory_must_make_a_vertex_class_and_leave_its_name_to_the_template():
    @popsim.vertex_template("NotAVertex")
    def not_a_vertex(dtype):
        return int

    with pytest.raises(popsim.CodeletSyntaxError, match="must return a popsim.Vertex"):
        not_a_vertex[FLOAT]

    @popsim.vertex_template("Named")
    def named(dtype):
        class Named(Vertex):
            vertex_name = "Other"
            x: InOut[dtype]

            def compute(self):
                pass
        return Named

    with pytest.raises(popsim.CodeletSyntaxError, match="sets vertex_name = 'Other'"):
        named[FLOAT]


def test_a_plain_factory_resolves_its_locals_in_string_annotations(small_device, run_and_read):
    # Before templates, this failed: "cannot evaluate the annotation 'Input[Vector[dtype]]'".
    def make_sum(dtype):
        class Sum(Vertex):
            vertex_name = f"Sum<{dtype.cpp}>"
            in_: Input[Vector[dtype]]
            out: Output[dtype]

            def compute(self):
                s = 0
                for x in self.in_:
                    s += x
                self.out = s
        return Sum

    graph, (a, out) = one_tile_graph(small_device, 5, INT, ["a", "out"])
    graph.add_codelets(make_sum(INT))
    cs = graph.add_compute_set("sum")
    v = graph.add_vertex(cs, "Sum<int>", {"in": a, "out": out[0]})
    graph.set_tile_mapping(v, 0)
    values = np.array([3, -1, 4, 1, 5], np.int32)
    (result,) = run_and_read(graph, small_device, Execute(cs), [out], writes={a: values})
    assert result[0] == values.sum()


# ---- Python templates in an engine ----------------------------------------------------------------
@pytest.mark.parametrize("dtype", [FLOAT, HALF, INT])
def test_python_template_found_by_its_poplibs_name(small_device, run_and_read, dtype):
    graph, (data, deltas) = one_tile_graph(small_device, 40, dtype, ["data", "deltas"])
    assert graph.add_codelets(ScaledAdd) == []   # instantiations register on first use
    name = popsim.template_vertex("popops::ScaledAdd", dtype, True)
    assert graph.has_codelet(name) and not graph.has_codelet("popops::ScaledAdd<double,true>")
    cs = graph.add_compute_set("scaled add")
    v = graph.add_vertex(cs, name, {"data": data, "deltas": deltas})
    graph.set_initial_value(v["scale"], 2.0)
    graph.set_tile_mapping(v, 0)
    rng = np.random.default_rng(1)
    x = rng.integers(-50, 50, 40).astype(dtype.numpy)
    y = rng.integers(-50, 50, 40).astype(dtype.numpy)
    (result,) = run_and_read(graph, small_device, Execute(cs), [data], writes={data: x, deltas: y})
    expected = (x.astype(np.float32) + np.float32(2.0) * y.astype(np.float32)).astype(dtype.numpy)
    np.testing.assert_array_equal(result, expected)
    assert v.type.name == name


def test_python_template_per_op_with_an_estimator_by_templated_name(small_device):
    graph, (a, b, s, p) = one_tile_graph(small_device, 30, FLOAT, ["a", "b", "s", "p"])
    graph.add_codelets(BinaryOp1D)
    add = popsim.template_vertex("popops::BinaryOp1D", BinaryOpType.ADD, FLOAT)
    mul = popsim.template_vertex("popops::BinaryOp1D", BinaryOpType.MULTIPLY, FLOAT)
    assert add == "popops::BinaryOp1D<popops::expr::BinaryOpType::ADD,float>"
    cs = graph.add_compute_set("ops")
    for name, out in ((add, s), (mul, p)):
        graph.set_tile_mapping(graph.add_vertex(cs, name, {"in1": a, "in2": b, "out": out}), 0)
    graph.register_perf_estimator(add, lambda info, target: 100)
    x, y = np.linspace(-3, 3, 30, dtype=np.float32), np.linspace(1, 2, 30, dtype=np.float32)
    graph.set_initial_value(a, x)
    graph.set_initial_value(b, y)
    for t in (s, p):
        graph.create_host_read(t.name, t)
    engine = popsim.Engine(graph, Execute(cs))
    engine.load(small_device)
    engine.run(0)
    np.testing.assert_array_equal(engine.read_tensor("s"), x + y)
    np.testing.assert_array_equal(engine.read_tensor("p"), x * y)
    cycles = {t.name: t.cycles for t in engine.get_report().execution.vertex_types}
    workers = small_device.target.num_worker_contexts
    assert cycles[add] == 100 * workers     # the estimate, on each of the MultiVertex's workers
    assert cycles[mul] != 100 * workers     # counted by the translated code


def test_each_instantiation_compiles_once(small_device):
    @popsim.vertex_template("test::Negate", dtype=[FLOAT, INT])
    def negate(dtype):
        class Negate(Vertex):
            x: InOut[Vector[dtype]]

            def compute(self):
                for i in range(len(self.x)):
                    self.x[i] = -self.x[i]
        return Negate

    def libraries_looked_up():
        return compiler.stats["compiled"] + compiler.stats["cache_hits"]

    for built in (2, 0):  # two graphs, each instantiating both types
        before = libraries_looked_up()
        graph = popsim.Graph(small_device)
        graph.add_codelets(negate)
        cs = graph.add_compute_set("cs")
        graph.add_vertex(cs, "test::Negate<float>")
        graph.add_vertex(cs, "test::Negate<int>")
        # one library per instantiation, built (or found in the disk cache) once per process
        assert libraries_looked_up() - before == built
    assert set(negate.instances) == {"test::Negate<float>", "test::Negate<int>"}


def test_unknown_instantiation_names_what_the_template_can_make(small_device):
    graph = popsim.Graph(small_device)
    graph.add_codelets(ScaledAdd)
    cs = graph.add_compute_set("cs")
    with pytest.raises(popsim.UnknownVertexTypeError, match=r"popops::ScaledAdd<float, true>.*did you mean "
                                                            r"'popops::ScaledAdd<float,true>'"):
        graph.add_vertex(cs, "popops::ScaledAdd<float, true>")
    with pytest.raises(popsim.UnknownVertexTypeError, match="it can make popops::ScaledAdd<float,true>"):
        graph.add_vertex(cs, "popops::ScaledAdd<double,true>")


def test_templates_without_declared_values_register_explicit_instantiations(small_device):
    @popsim.vertex_template("test::Fill")
    def fill(dtype, value):
        class Fill(Vertex):
            out: Output[Vector[dtype]]

            def compute(self):
                for i in range(len(self.out)):
                    self.out[i] = value
        return Fill

    graph, (out,) = one_tile_graph(small_device, 4, INT, ["out"])
    graph.add_codelets(fill)
    cs = graph.add_compute_set("cs")
    with pytest.raises(popsim.UnknownVertexTypeError, match=r"register the instantiation with "
                                                            r"graph.add_codelets\(fill\[dtype, value\]\)"):
        graph.add_vertex(cs, "test::Fill<int,7>")
    graph.add_codelets(fill[INT, 7])
    graph.set_tile_mapping(graph.add_vertex(cs, "test::Fill<int,7>", {"out": out}), 0)
    graph.create_host_read("out", out)
    engine = popsim.Engine(graph, Sequence(Execute(cs)))
    engine.load(small_device)
    engine.run(0)
    np.testing.assert_array_equal(engine.read_tensor("out"), [7, 7, 7, 7])


def test_a_module_registers_its_templates(small_device):
    import sys
    graph = popsim.Graph(small_device)
    graph.add_codelets(sys.modules[__name__])
    assert graph.has_codelet("popops::BinaryOp1D<popops::expr::BinaryOpType::MULTIPLY,int>")


# ---- C++ templates named as PopLibs names them --------------------------------------------------
def test_cpp_templates_run_under_poplibs_names(small_device):
    graph = popsim.Graph(small_device)
    names = graph.add_codelets(DATA / "poplibs_templates.cpp", "-Wall -Wextra -Werror")
    assert names == [
        "popops::BinaryOp1D<popops::expr::BinaryOpType::ADD,float>",
        "popops::BinaryOp1D<popops::expr::BinaryOpType::MULTIPLY,float>",
        "popops::BinaryOp1D<popops::expr::BinaryOpType::ADD,int>",
        "popops::ScaledAdd<float,true>", "popops::ScaledAdd<half,true>", "popops::ScaledAdd<unsigned int,false>"]
    a, b, out = (graph.add_variable(FLOAT, [12], n) for n in ("a", "b", "out"))
    h, hd = (graph.add_variable(HALF, [12], n) for n in ("h", "hd"))
    for t in (a, b, out, h, hd):
        graph.set_tile_mapping(t, 1)
    cs = graph.add_compute_set("cs")
    mul = popsim.template_vertex("popops::BinaryOp1D", BinaryOpType.MULTIPLY, FLOAT)
    scaled = popsim.template_vertex("popops::ScaledAdd", HALF, True)
    graph.set_tile_mapping(graph.add_vertex(cs, mul, {"in1": a, "in2": b, "out": out}), 1)
    v = graph.add_vertex(cs, scaled, {"data": h, "deltas": hd})
    graph.set_initial_value(v["K"], -0.5)
    graph.set_tile_mapping(v, 1)
    graph.register_perf_estimator(scaled, lambda info, target: 7 * info.field_size("data"))
    x, y = np.arange(12, dtype=np.float32), np.full(12, 1.5, np.float32)
    for t, value in ((a, x), (b, y), (h, x.astype(np.float16)), (hd, y.astype(np.float16))):
        graph.set_initial_value(t, value)
    graph.create_host_read("out", out)
    graph.create_host_read("h", h)
    engine = popsim.Engine(graph, Execute(cs))
    engine.load(small_device)
    engine.run(0)
    np.testing.assert_array_equal(engine.read_tensor("out"), x * y)
    np.testing.assert_array_equal(engine.read_tensor("h"), (x - 0.5 * y).astype(np.float16))
    cycles = {t.name: t.cycles for t in engine.get_report().execution.vertex_types}
    assert cycles[scaled] == 7 * 12


# ---- constant conditions --------------------------------------------------------------------------
@popsim.vertex_template("test::Affine", terms=[1, 2])
def Affine(terms):
    TERMS = terms  # a constant of compute

    class Affine(Vertex):
        x: InOut[Vector[FLOAT]]
        a: float
        if TERMS == 2:   # a field only the two-term instantiation has
            b: float

        def compute(self):
            for i in range(len(self.x)):
                if TERMS == 2:
                    self.x[i] = self.x[i] * self.a + self.b
                elif not TERMS > 1:
                    self.x[i] = self.x[i] * self.a
    return Affine


@pytest.mark.parametrize("terms", [1, 2])
def test_a_constant_condition_compiles_only_the_branch_it_takes(small_device, run_and_read, terms):
    graph, (x,) = one_tile_graph(small_device, 12, FLOAT, ["x"])
    name = popsim.template_vertex("test::Affine", terms)
    graph.add_codelets(Affine)
    cs = graph.add_compute_set("affine")
    v = graph.add_vertex(cs, name, {"x": x})
    graph.set_initial_value(v["a"], 3.0)
    if terms == 2:
        graph.set_initial_value(v["b"], 0.5)
    else:
        assert "b" not in [f.name for f in v.type.fields]
    graph.set_tile_mapping(v, 0)
    host = np.arange(12, dtype=np.float32)
    (got,) = run_and_read(graph, small_device, Execute(cs), [x], writes={x: host})
    np.testing.assert_array_equal(got, host * 3 + (0.5 if terms == 2 else 0))


def test_a_branch_on_data_is_checked_whole(small_device):
    """Only constants fold: a condition on a field still checks both branches."""
    class Uses(Vertex):
        x: InOut[Vector[FLOAT]]
        a: float

        def compute(self):
            if self.a > 0:
                self.x[0] = self.a
            else:
                self.x[0] = self.b
    graph = popsim.Graph(small_device)
    with pytest.raises(popsim.CodeletSyntaxError, match="has no field 'b'"):
        graph.add_codelets(Uses)
