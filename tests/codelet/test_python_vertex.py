"""Python vertex classes -> vertex types (popsim.codelet.python_vertex): field
declarations, the vertex type records, the translation cache, and the classes refused."""
import numpy as np
import pytest

import popsim
from popsim import InOut, Input, MultiVertex, Output, Vector, VectorList, Vertex
from popsim.codelet import compiler
from popsim.codelet.fields import Direction, FieldKind
from popsim.codelet.python_vertex import fields_of, is_vertex_class
from popsim.codelet.python_compile import vertex_types_from_classes

import sample_vertices
from sample_vertices import MultiScale, Named, Sum, VERTICES
from vertex_harness import library, load_vertex, vt


def test_field_kinds_directions_dtypes_and_names():
    class Decl(Vertex):
        in_: Input[Vector[float]]
        out: Output[float]
        io: InOut[Vector[popsim.HALF]]
        rows: Input[VectorList[int]]
        ins: Vector[Input[Vector[np.float16]]]
        outs: Vector[Output[bool]]
        k: float
        n: popsim.UNSIGNED_INT
        offs: Vector[int]
        flag: "bool"

        def compute(self):
            pass

    fields, attrs = fields_of(Decl)
    got = [(f.name, f.kind, f.direction, f.dtype, f.element_kind) for f in fields]
    assert got == [
        ("in", FieldKind.VECTOR_EDGE, Direction.INPUT, popsim.FLOAT, None),
        ("out", FieldKind.SCALAR_EDGE, Direction.OUTPUT, popsim.FLOAT, None),
        ("io", FieldKind.VECTOR_EDGE, Direction.INOUT, popsim.HALF, None),
        ("rows", FieldKind.VECTOR_LIST, Direction.INPUT, popsim.INT, None),
        ("ins", FieldKind.EDGE_VECTOR, Direction.INPUT, popsim.HALF, FieldKind.VECTOR_EDGE),
        ("outs", FieldKind.EDGE_VECTOR, Direction.OUTPUT, popsim.BOOL, FieldKind.SCALAR_EDGE),
        ("k", FieldKind.STATE, Direction.NONE, popsim.FLOAT, None),
        ("n", FieldKind.STATE, Direction.NONE, popsim.UNSIGNED_INT, None),
        ("offs", FieldKind.STATE_VECTOR, Direction.NONE, popsim.INT, None),
        ("flag", FieldKind.STATE, Direction.NONE, popsim.BOOL, None),
    ]
    assert attrs[0] == "in_" and attrs[1] == "out"
    assert fields[0].describe() == "Input<Vector<FLOAT>>"


def test_fields_are_inherited_base_first():
    class Base(Vertex):
        a: Input[float]

    class Derived(Base):
        b: Output[float]

        def compute(self):
            self.b = self.a

    assert [f.name for f in fields_of(Derived)[0]] == ["a", "b"]
    assert not is_vertex_class(Base) and is_vertex_class(Derived)
    assert not is_vertex_class(Vertex) and not is_vertex_class(MultiVertex) and not is_vertex_class(3)


@pytest.mark.parametrize("annotation, message", [
    ("Input[Input[float]]", "is not a field type"),
    ("VectorList[float]", "VectorList must be inside an edge"),
    ("Vector[Vector[float]]", "is not a field type"),
    ("Input[Vector[str]]", "must hold an element type"),
    ("str", "is not a field type"),
    ("Vector[Input[VectorList[float]]]", "is not a field type"),
])
def test_bad_field_declarations(annotation, message):
    ns = {"Input": Input, "Output": Output, "Vector": Vector, "VectorList": VectorList, "str": str}
    cls = type("Bad", (Vertex,), {"__annotations__": {"x": eval(annotation, ns)}, "compute": lambda self: None})  # noqa: S307 - the test's own annotation strings
    with pytest.raises(popsim.CodeletSyntaxError, match=message):
        fields_of(cls)


def test_field_default_values_and_duplicate_names_are_refused():
    cls = type("D", (Vertex,), {"__annotations__": {"k": float}, "k": 2.0, "compute": lambda self: None})
    with pytest.raises(popsim.CodeletSyntaxError, match="fields cannot have a default value"):
        fields_of(cls)
    cls = type("D", (Vertex,), {"__annotations__": {"out": Output[float], "out_": Output[float]},
                                "compute": lambda self: None})
    with pytest.raises(popsim.CodeletSyntaxError, match="both declare field 'out'"):
        fields_of(cls)


def test_marker_misuse():
    with pytest.raises(TypeError, match="takes one argument"):
        Input[float, int]
    assert repr(Input[Vector[float]]) == "Input[Vector[float]]"


@pytest.mark.compiler
def test_vertex_types_records():
    t = vt(Named)
    assert t.name == "popops::Add<float>"
    assert t.field_names == ("a", "b", "out")
    assert t.language == "python" and t.counts_cycles and t.python_class is Named and not t.multi
    assert t.state_size == 16 * 3
    assert t.source == f"{sample_vertices.__file__}:{Named.compute.__code__.co_firstlineno}"
    assert vt(MultiScale).multi
    assert len({vt(c).library for c in VERTICES}) == 1          # one library for the whole list
    assert len({vt(c).symbol for c in VERTICES}) == len(VERTICES)


@pytest.mark.compiler
def test_second_translation_is_a_cache_hit():
    library()
    before = dict(compiler.stats)
    again = vertex_types_from_classes(VERTICES)
    assert compiler.stats["compiled"] == before["compiled"]
    assert again[0].library == vt(Sum).library


def test_duplicate_vertex_names_and_non_vertices_are_refused():
    class Other(Vertex):
        vertex_name = "Sum"

        def compute(self):
            pass

    with pytest.raises(popsim.CodeletSyntaxError, match="both named 'Sum'"):
        vertex_types_from_classes([Sum, Other])
    with pytest.raises(TypeError, match="not a popsim.Vertex"):
        vertex_types_from_classes([int])


def test_compute_signatures(tmp_path):
    cls, _ = load_vertex(tmp_path, "pass", base="MultiVertex", params="self")
    with pytest.raises(popsim.CodeletSyntaxError, match=r"MultiVertex.compute must take exactly \(self, worker_id\)"):
        vertex_types_from_classes([cls])
    cls, _ = load_vertex(tmp_path, "pass", params="self, w")
    with pytest.raises(popsim.CodeletSyntaxError, match=r"Vertex.compute must take exactly \(self\)"):
        vertex_types_from_classes([cls])


def test_source_must_be_available():
    namespace = {"Vertex": Vertex, "Output": Output}
    exec("class X(Vertex):\n    out: Output[float]\n    def compute(self):\n        self.out = 1.0\n", namespace)  # noqa: S102 - a class with no source file, on purpose
    with pytest.raises(popsim.CodeletSyntaxError, match="cannot read the source"):
        vertex_types_from_classes([namespace["X"]])
