"""Poplar C++ codelet files (popsim.codelet.cpp): the dialect, field classification,
templates, the half type, and errors. Every codelet is a real file under data/ (or
tutorials/codelets/) compiled by the host compiler and run through the codelet ABI
with numpy arrays (popsim.codelet.abi.run_compiled); results are checked against numpy."""
from pathlib import Path

import numpy as np
import pytest

import popsim
from popsim.codelet import compiler, cpp
from popsim.codelet.abi import run_compiled
from popsim.codelet.fields import Direction, FieldKind
from popsim.errors import CodeletCompileError, CodeletSyntaxError


pytestmark = pytest.mark.compiler

DATA = Path(__file__).resolve().parent / "data"
TUTORIALS = Path(__file__).resolve().parents[2] / "tutorials" / "codelets"
STRICT = "-Wall -Wextra -Werror -pedantic"

SE, VE, EV, VL, ST, SV = (FieldKind.SCALAR_EDGE, FieldKind.VECTOR_EDGE, FieldKind.EDGE_VECTOR,
                          FieldKind.VECTOR_LIST, FieldKind.STATE, FieldKind.STATE_VECTOR)
IN, OUT, IO, NONE = Direction.INPUT, Direction.OUTPUT, Direction.INOUT, Direction.NONE


def load(path, flags=""):
    return {vt.name: vt for vt in cpp.vertex_types_from_file(path, flags)}


@pytest.fixture(scope="module")
def dialect():
    # -Wno-uninitialized: PrivateFields has a const member and no constructor, on purpose.
    return load(DATA / "dialect_codelets.cpp", f"-DOFFSET=1 {STRICT} -Wno-uninitialized")


@pytest.fixture(scope="module")
def templates():
    return load(DATA / "template_codelets.cpp", STRICT)


@pytest.fixture(scope="module")
def halves():
    return load(DATA / "half_codelets.cpp", STRICT)


def f32(*values):
    return np.array(values, dtype=np.float32)


def zeros(n, dtype=np.float32):
    return np.zeros(n, dtype=dtype)


def scalar(value, dtype):
    return np.array([value], dtype=dtype)


def run_ok(vt, values, **kw):
    ret, ctx = run_compiled(vt, values, **kw)
    assert ret == 1 and ctx.error == 0
    return ctx


def shape(vt):
    return [(f.name, f.kind, f.direction, f.dtype, f.element_kind, f.layout) for f in vt.fields]


# ---- the tutorials' codelets -------------------------------------------------------

def test_tutorial3_sum_vertex_computes_suffix_sums():
    (vt,) = cpp.vertex_types_from_file(TUTORIALS / "tut3_codelets.cpp")
    assert vt.name == "SumVertex" and not vt.multi and vt.language == "c++"
    assert shape(vt) == [("in", VE, IN, popsim.FLOAT, None, "SPAN"), ("out", SE, OUT, popsim.FLOAT, None, "")]
    assert vt.source.endswith("tut3_codelets.cpp:7")
    v1 = f32(1.0, 1.5, 2.0, 2.5)
    v2 = zeros(4)
    for i in range(4):
        out = v2[i:i + 1]
        run_ok(vt, [v1[i:].copy(), out])
    np.testing.assert_array_equal(v2, f32(7.0, 6.0, 4.5, 2.5))


def test_matrix_mul_codelets_multiply_and_reduce():
    types = load(TUTORIALS / "matrix_mul_codelets.cpp")
    assert list(types) == ["DotProductVertex", "ReduceVertex"]
    dot, red = types["DotProductVertex"], types["ReduceVertex"]
    assert [f.name for f in dot.fields] == ["a", "b", "out"]
    assert shape(red) == [("in", VE, IN, popsim.FLOAT, None, "SPAN"), ("out", SE, OUT, popsim.FLOAT, None, "")]
    rows, cols = 40, 50
    matrix = np.outer(np.arange(rows), np.arange(cols)).astype(np.float32)
    vector = np.arange(cols, dtype=np.float32)
    result = zeros(rows)
    for r in range(rows):
        run_ok(dot, [matrix[r].copy(), vector, result[r:r + 1]])
    np.testing.assert_array_equal(result, matrix @ vector)
    partials = f32(1.5, 2.25, -4.0, 8.0)
    out = zeros(1)
    run_ok(red, [partials, out])
    assert out[0] == partials.sum()


# ---- field classification ----------------------------------------------------------

def test_dialect_field_classification(dialect):
    assert list(dialect) == ["ScalarEdges", "VectorEdges", "Layouts", "EdgeVectors", "Lists", "State", "Multi",
                             "Supervisor", "Checked", "CtorOutOfLine", "CtorDefaulted", "CtorDeclaredOnly",
                             "PrivateFields", "Mixed", "Printer", "Idioms", "Throws"]
    F, H, I, U = popsim.FLOAT, popsim.HALF, popsim.INT, popsim.UNSIGNED_INT
    assert shape(dialect["ScalarEdges"]) == [
        ("in", SE, IN, F, None, ""), ("count", SE, IN, I, None, ""), ("doubled", SE, OUT, F, None, ""),
        ("viaStar", SE, OUT, F, None, ""), ("acc", SE, IO, F, None, ""), ("counter", SE, IO, I, None, ""),
        ("implicit", SE, OUT, F, None, "")]
    assert shape(dialect["Layouts"]) == [
        ("a", VE, IN, F, None, "ONE_PTR"), ("b", VE, IN, F, None, "SPAN"), ("out", VE, OUT, H, None, "COMPACT_PTR"),
        ("c", VE, IO, I, None, "SCALED_PTR64"), ("n", ST, NONE, U, None, "")]
    assert shape(dialect["EdgeVectors"]) == [
        ("rows", EV, IN, F, VE, "SPAN"), ("firsts", EV, IN, F, VE, "ONE_PTR"), ("scalars", EV, IN, F, SE, "SPAN"),
        ("rowSums", EV, OUT, F, SE, "SPAN"), ("scaled", EV, IO, F, VE, "SPAN"), ("total", SE, OUT, F, None, ""),
        ("count", SE, OUT, U, None, "")]
    assert shape(dialect["Lists"])[:2] == [("in", VL, IN, F, None, "DELTANELEMENTS"), ("io", VL, IO, I, None, "DELTAN")]
    assert shape(dialect["State"]) == [
        ("n", ST, NONE, U, None, ""), ("k", ST, NONE, F, None, ""), ("flag", ST, NONE, popsim.BOOL, None, ""),
        ("h", ST, NONE, H, None, ""), ("idx", SV, NONE, U, None, "SPAN"), ("offsets", SV, NONE, I, None, "SPAN"),
        ("small", ST, NONE, popsim.SHORT, None, ""), ("in", VE, IN, F, None, "SPAN"), ("out", VE, OUT, F, None, "SPAN")]
    assert [f.name for f in dialect["Mixed"].fields] == ["in", "out", "mode", "first", "second"]
    assert [f.name for f in dialect["PrivateFields"].fields] == ["in", "k", "out"]
    assert [f.kind for f in dialect["PrivateFields"].fields] == [VE, ST, SE]
    assert dialect["Multi"].multi and not dialect["Supervisor"].multi and not dialect["State"].multi
    lines = (DATA / "dialect_codelets.cpp").read_text().splitlines()
    line = next(n for n, text in enumerate(lines, 1) if text.startswith("struct [[poplar::constraint"))
    assert dialect["Mixed"].source == f"{DATA / 'dialect_codelets.cpp'}:{line}"


def test_state_size_is_the_class_size(dialect):
    # Every edge and Vector field is a popsim_span (16 bytes); plain state adds its value.
    assert dialect["ScalarEdges"].state_size == 7 * 16
    assert dialect["Checked"].state_size == 16
    assert dialect["Layouts"].state_size == 4 * 16 + 8
    assert all(vt.library.exists() and vt.symbol.startswith("popsim_vt") for vt in dialect.values())


def test_template_instantiation_names_and_fields(templates):
    copies = ["float", "half", "int", "unsigned int", "short", "unsigned short", "char", "signed char",
              "unsigned char", "bool", "long long", "unsigned long long"]
    assert list(templates) == [f"Copy<{t}>" for t in copies] + [
        "Gather<half,int>", "Gather<float,unsigned short>", "FixedWidth", "ns::Scale<float>",
        "ns::Scale<float,true>", "ns::inner::Plain", "ns::Scale<half>", "Special<int>", "Special<half>",
        "Part<float,false>", "Part<int,true>", "Accumulate<float,true>", "Accumulate<half,false>"]
    assert shape(templates["Copy<unsigned short>"]) == [
        ("in", VE, IN, popsim.UNSIGNED_SHORT, None, "SPAN"), ("out", VE, OUT, popsim.UNSIGNED_SHORT, None, "SPAN"),
        ("offset", ST, NONE, popsim.UNSIGNED_SHORT, None, "")]
    assert shape(templates["Gather<half,int>"]) == [
        ("in", VE, IN, popsim.HALF, None, "ONE_PTR"), ("indices", VE, IN, popsim.INT, None, "SPAN"),
        ("out", VE, OUT, popsim.HALF, None, "SPAN"), ("scale", SE, IN, popsim.FLOAT, None, "")]
    assert [f.dtype for f in templates["FixedWidth"].fields] == [
        popsim.SIGNED_CHAR, popsim.UNSIGNED_CHAR, popsim.SHORT, popsim.UNSIGNED_SHORT, popsim.INT,
        popsim.UNSIGNED_INT, popsim.LONGLONG, popsim.UNSIGNED_LONGLONG]
    assert templates["ns::Scale<half>"].multi
    assert shape(templates["ns::Scale<half>"]) == [("data", VE, IO, popsim.HALF, None, "SPAN"),
                                                   ("factor", ST, NONE, popsim.HALF, None, "")]
    # The explicit specialisation's own fields, and the partial specialisation's.
    assert templates["Special<half>"].fields[1].dtype == popsim.FLOAT
    assert templates["Special<int>"].fields[1].dtype == popsim.INT
    assert [f.name for f in templates["Part<float,false>"].fields] == ["in", "out"]
    assert [f.name for f in templates["Part<int,true>"].fields] == ["in", "out", "again"]
    assert templates["Special<half>"].source != templates["Special<int>"].source
    # Types only the compiler can resolve (an alias template over std::conditional, decltype).
    assert shape(templates["Accumulate<float,true>"]) == [
        ("in", VL, IN, popsim.FLOAT, None, "DELTANELEMENTS"), ("out", VL, IO, popsim.FLOAT, None, "DELTAN"),
        ("scale", ST, NONE, popsim.FLOAT, None, "")]
    assert shape(templates["Accumulate<half,false>"]) == [
        ("in", VL, IN, popsim.HALF, None, "DELTANELEMENTS"), ("out", VL, OUT, popsim.HALF, None, "DELTANELEMENTS"),
        ("scale", ST, NONE, popsim.HALF, None, "")]


# ---- the dialect, run ----------------------------------------------------------------

def test_scalar_edges_as_values(dialect):
    vt = dialect["ScalarEdges"]
    x, count = 2.25, 3
    doubled, via, acc, counter, implicit = zeros(1), zeros(1), f32(10.0), scalar(5, np.int32), zeros(1)
    run_ok(vt, [f32(x), scalar(count, np.int32), doubled, via, acc, counter, implicit])
    assert doubled[0] == 2 * x
    assert via[0] == x + count + 1          # OFFSET=1 from the compile flags
    assert acc[0] == 10.0 + x
    assert counter[0] == 5 + count
    assert implicit[0] == np.float32(x + x + np.sqrt(np.float32(x)) + x * x)


def test_vector_edges(dialect):
    vt = dialect["VectorEdges"]
    a = f32(3.0, -1.0, 7.5, 2.0, 0.5)
    out, data = zeros(5), np.array([1, 2, 3], np.int32)
    s, largest, size = zeros(1), zeros(1), zeros(1, np.uint32)
    run_ok(vt, [a, out, data, s, largest, size])
    np.testing.assert_array_equal(out, a * np.arange(5, dtype=np.float32))
    np.testing.assert_array_equal(data, [2, 3, 4])
    assert s[0] == a.sum() and largest[0] == a.max() and size[0] == 5


def test_layout_and_alignment_arguments_change_nothing(dialect):
    vt = dialect["Layouts"]
    a, b = f32(1.0, 2.0, 3.0), f32(0.5, 0.25, 0.125)
    out, c = zeros(3, np.float16), np.array([4, 5, 6], np.int32)
    run_ok(vt, [a, b, out, c, scalar(3, np.uint32)])
    np.testing.assert_array_equal(out, (a + b).astype(np.float16))
    np.testing.assert_array_equal(c, [8, 10, 12])


def test_vectors_of_edges(dialect):
    vt = dialect["EdgeVectors"]
    rows = [f32(1.0, 2.0, 3.0), f32(), f32(4.5, -1.0)]
    firsts = [f32(10.0, 99.0), f32(20.0)]
    scalars = [f32(0.25), f32(0.5), f32(0.125)]
    row_sums = [zeros(1) for _ in rows]
    scaled = [f32(1.0, 2.0), f32(3.0), f32(4.0, 5.0, 6.0)]
    before = [s.copy() for s in scaled]
    total, count = zeros(1), zeros(1, np.uint32)
    run_ok(vt, [rows, firsts, scalars, row_sums, scaled, total, count])
    assert [r[0] for r in row_sums] == [r.sum() for r in rows]
    for i, (s, b) in enumerate(zip(scaled, before)):
        np.testing.assert_array_equal(s, b * (i + 1))
    expected = sum(r.sum() for r in rows) + sum(s[0] for s in scalars) + 10.0 + 20.0
    assert total[0] == np.float32(expected)
    assert count[0] == sum(len(r) for r in rows)


def test_vector_lists(dialect):
    vt = dialect["Lists"]
    lists = [f32(1.0, 2.0), f32(3.0), f32(4.0, 5.0, 6.0, 7.0)]
    io = [np.array([1, -2], np.int32), np.array([3], np.int32)]
    sums, count = zeros(3), zeros(1, np.uint32)
    run_ok(vt, [lists, io, sums, count])
    np.testing.assert_array_equal(sums, [x.sum() for x in lists])
    assert count[0] == 3
    np.testing.assert_array_equal(io[0], [-1, 2])
    np.testing.assert_array_equal(io[1], [-3])


def test_plain_state_const_and_vectors(dialect):
    vt = dialect["State"]
    a = f32(1.0, 2.0, 3.0, 4.0)
    idx = np.array([3, 0, 2], np.uint32)
    offsets = np.array([10, 20, 30], np.int32)
    for flag in (False, True):
        out = zeros(3)
        run_ok(vt, [scalar(3, np.uint32), f32(0.5), scalar(flag, np.bool_), scalar(0.25, np.float16), idx, offsets,
                    scalar(-7, np.int16), a, out])
        expected = a[idx] * np.float32(0.5) + np.float32(0.25) + offsets - 7
        np.testing.assert_array_equal(out, -expected if flag else expected)


def test_supervisor_vertex_is_single_worker(dialect):
    out = zeros(1)
    run_ok(dialect["Supervisor"], [f32(1.0, 2.0, 3.5), out])
    assert out[0] == 6.5


def test_compute_returning_false(dialect):
    vt = dialect["Checked"]
    assert run_compiled(vt, [f32(1.0)])[0] == 1
    assert run_compiled(vt, [f32(-1.0)])[0] == 0


def test_exception_is_reported_as_an_error(dialect, capfd):
    assert run_compiled(dialect["Throws"], [scalar(1, np.int32)])[0] == 1
    ret, ctx = run_compiled(dialect["Throws"], [scalar(-1, np.int32)])
    assert ret == -1 and ctx.error == 2  # POPSIM_EXCEPTION
    assert "popsim: vertex Throws threw an exception: negative input" in capfd.readouterr().err


def test_constructors(dialect):
    out = zeros(1, np.int32)
    run_ok(dialect["CtorOutOfLine"], [out])
    first = out[0]
    assert first >= 1                      # the out-of-line constructor ran in init
    run_ok(dialect["CtorOutOfLine"], [out])
    assert out[0] == first + 1
    # Defaulted constructor and default member initialisers; bound state replaces them.
    out = zeros(1)
    run_ok(dialect["CtorDefaulted"], [f32(2.0), out, scalar(5, np.uint32), f32(0.5)])
    assert out[0] == 10.5
    # Declared and never defined: nothing to run, nothing missing at load time.
    run_ok(dialect["CtorDeclaredOnly"], [f32(2.0), out])
    assert out[0] == -2.0


def test_private_fields_and_compute(dialect):
    out = zeros(1)
    run_ok(dialect["PrivateFields"], [f32(1.0, 2.0, 3.0), f32(2.5), out])
    assert out[0] == 15.0


def test_non_fields_are_skipped(dialect):
    vt = dialect["Mixed"]
    a = f32(1.0, 2.0)
    for mode, expected in ((0, a + a * 2), (1, (a + a) * 5)):
        out = zeros(2)
        run_ok(vt, [a, out, scalar(mode, np.uint32), scalar(3, np.uint32), scalar(4, np.uint32)])
        expected = expected.copy()
        expected[0] += 7
        np.testing.assert_array_equal(out, expected)


def test_printf_from_a_codelet(dialect, capfd):
    run_compiled(dialect["Printer"], [scalar(7, np.int32)])
    assert "Printer: value=7" in capfd.readouterr().out


def test_idioms_of_shipped_codelets(dialect):
    vt = dialect["Idioms"]
    assert shape(vt) == [("rows", EV, IN, popsim.FLOAT, VE, "SPAN"), ("sums", VE, OUT, popsim.FLOAT, None, "SPAN"),
                         ("ignored", ST, NONE, popsim.UNSIGNED_INT, None, "")]
    rows = [f32(1.0, 2.0, 3.0, 4.0), f32(0.5, 0.25)]
    sums = zeros(2)
    run_ok(vt, [rows, sums, scalar(0, np.uint32)])
    np.testing.assert_array_equal(sums, [10.0, 0.75])


def test_only_vertex_classes_are_types(dialect, templates):
    assert not {"NotAVertex", "NotAVertexBase", "Plain"} & set(dialect)
    assert not any(name.startswith(("Helper", "Unused")) for name in templates)


# ---- templates, namespaces, element types ------------------------------------------

COPY_TYPES = {"float": np.float32, "half": np.float16, "int": np.int32, "unsigned int": np.uint32,
              "short": np.int16, "unsigned short": np.uint16, "char": np.int8, "signed char": np.int8,
              "unsigned char": np.uint8, "bool": np.bool_, "long long": np.int64,
              "unsigned long long": np.uint64}


@pytest.mark.parametrize("ctype", list(COPY_TYPES))
def test_templated_copy_for_every_element_type(templates, ctype):
    vt = templates[f"Copy<{ctype}>"]
    dt = np.dtype(COPY_TYPES[ctype])
    assert all(f.dtype.numpy == dt for f in vt.fields)
    if dt.kind == "f":
        a, offset = np.array([1.5, -2.25, 100.0, 0.0], dt), dt.type(0.75)
        expected = (a.astype(np.float32) + np.float32(offset)).astype(dt)
    elif dt.kind == "b":
        a, offset = np.array([True, False, True], dt), dt.type(False)
        expected = a.copy()
    else:
        info = np.iinfo(dt)
        a = np.array([0, 1, info.max, info.min], dt)
        offset = dt.type(1)
        expected = (a.astype(object) + 1)   # C++ converts back with wrap-around
        expected = np.array([int(v) % (1 << (8 * dt.itemsize)) for v in expected], np.uint64).astype(dt)
    out = np.zeros_like(a)
    run_ok(vt, [a, out, np.array([offset], dt)])
    np.testing.assert_array_equal(out, expected)


def test_two_parameter_templates_and_aliases(templates):
    data = f32(1.0, 2.0, 3.0, 4.0)
    out = zeros(3, np.float16)
    run_ok(templates["Gather<half,int>"], [data.astype(np.float16), np.array([3, 0, 1], np.int32), out, f32(0.5)])
    np.testing.assert_array_equal(out, np.float16([2.0, 0.5, 1.0]))
    out = zeros(2)
    run_ok(templates["Gather<float,unsigned short>"], [data, np.array([2, 2], np.uint16), out, f32(2.0)])
    np.testing.assert_array_equal(out, [6.0, 6.0])


def test_cstdint_fields(templates):
    values = [np.array([v], t) for v, t in ((-3, np.int8), (200, np.uint8), (-1000, np.int16), (60000, np.uint16),
                                             (-70000, np.int32), (4000000000, np.uint32), (-(1 << 40), np.int64))]
    total = zeros(1, np.uint64)
    run_ok(templates["FixedWidth"], values + [total])
    assert int(total[0]) == sum(int(v[0]) for v in values) % (1 << 64)


@pytest.mark.parametrize("name,dtype,sign", [("ns::Scale<float>", np.float32, 1),
                                              ("ns::Scale<float,true>", np.float32, -1),
                                              ("ns::Scale<half>", np.float16, 1)])
def test_namespaced_multivertex_templates(templates, name, dtype, sign):
    data = np.arange(1, 14).astype(dtype)
    expected = (data * dtype(1.5) * sign).astype(dtype)
    run_ok(templates[name], [data, np.array([1.5], dtype)])
    np.testing.assert_array_equal(data, expected)


def test_nested_namespace_and_specialisations(templates):
    out = zeros(1, np.int32)
    run_ok(templates["ns::inner::Plain"], [out])
    assert out[0] == 42
    run_ok(templates["Special<int>"], [scalar(41, np.int32), out])
    assert out[0] == 42
    outf = zeros(1)
    run_ok(templates["Special<half>"], [scalar(1.5, np.float16), outf])
    assert outf[0] == 3.0
    out, again = zeros(1, np.int32), zeros(1, np.int32)
    run_ok(templates["Part<int,true>"], [scalar(9, np.int32), out, again])
    assert out[0] == again[0] == 9


def test_fields_the_compiler_resolved(templates):
    ins = [f32(1.0, 2.0), f32(3.0)]
    outs = [f32(10.0, 20.0), f32(30.0)]
    run_ok(templates["Accumulate<float,true>"], [ins, outs, f32(0.5)])
    np.testing.assert_array_equal(outs[0], [10.5, 21.0])
    np.testing.assert_array_equal(outs[1], [31.5])
    ins = [x.astype(np.float16) for x in ins]
    outs = [np.zeros(2, np.float16), np.zeros(1, np.float16)]
    run_ok(templates["Accumulate<half,false>"], [ins, outs, scalar(2.0, np.float16)])
    np.testing.assert_array_equal(outs[0], np.float16([2.0, 4.0]))
    np.testing.assert_array_equal(outs[1], np.float16([6.0]))


# ---- half ----------------------------------------------------------------------------

def _bits_equal(actual, expected):
    """Bit-for-bit, except that any NaN matches any NaN."""
    a, e = np.asarray(actual), np.asarray(expected)
    nan = np.isnan(e.astype(np.float32))
    np.testing.assert_array_equal(np.isnan(a.astype(np.float32)), nan)
    np.testing.assert_array_equal(a[~nan].view(np.uint16 if a.dtype == np.float16 else np.uint32),
                                  e[~nan].view(np.uint16 if e.dtype == np.float16 else np.uint32))


def test_half_conversion_from_float_rounds_to_nearest_even(halves):
    rng = np.random.default_rng(1)
    special = f32(0.0, -0.0, 1.0, 65504.0, 65519.99, 65520.0, 1e9, -1e9, np.inf, -np.inf, np.nan,
                  2.0 ** -24, 2.0 ** -25, 2.0 ** -25 * 1.0001, 2.0 ** -26, 3 * 2.0 ** -25, 2.0 ** -14,
                  1.0 + 2.0 ** -11, 1.0 + 3 * 2.0 ** -11, 6.1e-5, 1e-8)
    # Every float exactly halfway between two halves, and random bit patterns.
    halfway = (np.arange(0, 0x7C00, 7, dtype=np.uint32) << 13 | 0x1000).astype(np.uint32).view(np.float32)
    random = rng.integers(0, 1 << 32, 20000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    values = np.concatenate([special, halfway, -halfway, random]).astype(np.float32)
    out, back = zeros(len(values), np.float16), zeros(len(values))
    run_ok(halves["FromFloat"], [values, out, back])
    with np.errstate(all="ignore"):
        expected = values.astype(np.float16)
    _bits_equal(out, expected)
    _bits_equal(back, expected.astype(np.float32))


def test_half_conversion_from_double_and_int(halves):
    rng = np.random.default_rng(2)
    hi = rng.uniform(-70000, 70000, 5000).astype(np.float32)
    lo = (rng.uniform(-1, 1, 5000) * np.abs(hi) * 2.0 ** -20).astype(np.float32)
    # double sums that a detour through float would round twice
    hi[:3] = f32(1.0 + 2.0 ** -11, 2049.0, 1.0)
    lo[:3] = f32(2.0 ** -40, 2.0 ** -30, 2.0 ** -11 + 2.0 ** -40)
    ints = np.concatenate([np.arange(-2100, 2100, 7), rng.integers(-60000, 60000, 2000)]).astype(np.int32)
    from_double, from_int, to_int = zeros(len(hi), np.float16), zeros(len(ints), np.float16), zeros(len(ints), np.int32)
    run_ok(halves["FromOthers"], [hi, lo, from_double, ints, from_int, to_int])
    with np.errstate(all="ignore"):
        _bits_equal(from_double, (hi.astype(np.float64) + lo.astype(np.float64)).astype(np.float16))
    _bits_equal(from_int, ints.astype(np.float16))
    np.testing.assert_array_equal(to_int, np.trunc(ints.astype(np.float16).astype(np.float64)).astype(np.int32))


def test_half_arithmetic_matches_numpy_float16(halves):
    rng = np.random.default_rng(3)
    n = 4000
    a = (rng.integers(0, 0x7C00, n, dtype=np.uint16).view(np.float16)
         * np.where(rng.random(n) < 0.5, -1, 1).astype(np.float16))
    b = rng.integers(1, 0x7C00, n, dtype=np.uint16).view(np.float16)
    a[:4], b[:4] = np.float16([1.0, 2.0, 0.5, -3.0]), np.float16([1.0, 1.0, 0.25, 0.75])
    outs = [zeros(n, np.float16) for _ in range(7)]
    mixed_float, cmp = zeros(n), zeros(n, np.int32)
    run_ok(halves["Arith"], [a, b] + outs + [mixed_float, cmp])
    sum_, diff, prod, quot, neg, compound, mixed_int = outs
    f16 = np.float16
    with np.errstate(all="ignore"):
        _bits_equal(sum_, a + b)
        _bits_equal(diff, a - b)
        _bits_equal(prod, a * b)
        _bits_equal(quot, a / b)
        _bits_equal(neg, -a)
        c = (a + b) * f16(2)
        c = (c.astype(np.float32) - np.float32(1.5)).astype(f16)
        _bits_equal(compound, c + f16(1))
        _bits_equal(mixed_int, a * f16(3) + f16(1))
        _bits_equal(mixed_float, a.astype(np.float32) * np.float32(0.1))
    expected_cmp = (a < b) + 2 * (a == b) + 4 * (a >= 1) + 8 * (0.5 > b)
    np.testing.assert_array_equal(cmp, expected_cmp)


def test_half_limits_edges_state_and_cmath(halves):
    limits, acc, y, math = zeros(8, np.float16), scalar(1.0, np.float16), zeros(1, np.float16), zeros(6)
    x, h = np.float16(2.5), np.float16(-0.75)
    run_ok(halves["Misc"], [limits, scalar(x, np.float16), acc, y, scalar(h, np.float16), math])
    fi = np.finfo(np.float16)
    np.testing.assert_array_equal(limits[[0, 1, 2, 3, 4, 6, 7]],
                                  np.float16([65504, -65504, fi.smallest_normal, fi.eps, np.inf,
                                              fi.smallest_subnormal, 0.5]))
    assert np.isnan(limits[5])
    assert y[0] == x * h + np.float16(1) and acc[0] == np.float16(1.0) + x
    np.testing.assert_allclose(math, [np.sqrt(2.5), 2.5, 2.5, 1.0, np.exp(-0.75), 1.0], rtol=1e-6)


# ---- caching and the registry ---------------------------------------------------------

def test_second_load_runs_no_compiler(templates, monkeypatch):
    """An unchanged file is not even preprocessed again: its vertex types come from the
    cache (in this process, or from the cache directory in another)."""
    def no_compiler(*args, **kwargs):
        raise AssertionError("the compiler ran for an unchanged codelet file")
    monkeypatch.setattr(cpp.subprocess, "run", no_compiler)
    monkeypatch.setattr(compiler.subprocess, "run", no_compiler)
    again = load(DATA / "template_codelets.cpp", STRICT)
    assert again["Copy<float>"].library == templates["Copy<float>"].library
    cpp._memo.clear()  # as a new process would: from the record in the cache directory
    again = load(DATA / "template_codelets.cpp", STRICT)
    assert again["Copy<float>"].fields == templates["Copy<float>"].fields


def test_registry_loads_cpp_files():
    pytest.importorskip("popsim.codelet.python_vertex")
    from popsim.codelet.registry import CodeletRegistry
    reg = CodeletRegistry()
    reg.add(str(TUTORIALS / "matrix_mul_codelets.cpp"))
    assert "DotProductVertex" in reg and "ReduceVertex" in reg


# ---- bad input ---------------------------------------------------------------------------

def test_syntax_error_names_file_line_and_source():
    with pytest.raises(CodeletCompileError) as err:
        cpp.vertex_types_from_file(DATA / "bad_syntax.cpp")
    message = str(err.value)
    assert "bad_syntax.cpp:13: expected primary-expression" in message
    assert "\n    total += x *;" in message
    assert "compiler output:" in message


def test_unsupported_member_type_names_class_member_and_line():
    with pytest.raises(CodeletSyntaxError) as err:
        cpp.vertex_types_from_file(DATA / "bad_member.cpp")
    e = err.value
    assert "bad_member.cpp:11: vertex type 'app::Weighted': member 'weight' of type 'double'" in str(e)
    assert "use float" in str(e)
    assert e.lineno == 11 and e.filename.endswith("bad_member.cpp") and e.text.strip() == "double weight;"
    assert isinstance(e, SyntaxError)


def test_pointer_member_in_a_template_instantiation():
    with pytest.raises(CodeletSyntaxError, match=r"bad_pointer.cpp:9: vertex type 'Pointer<float>': member 'table': "
                                                 r"pointers and references cannot be fields"):
        cpp.vertex_types_from_file(DATA / "bad_pointer.cpp")


def test_member_type_only_the_compiler_can_reject():
    with pytest.raises(CodeletCompileError) as err:
        cpp.vertex_types_from_file(DATA / "bad_enum.cpp")
    assert ("bad_enum.cpp:9: static assertion failed: popsim: vertex type 'Modal': member 'mode' of type 'Mode' "
            "cannot be a field") in str(err.value)
    assert "\n    Mode mode;" in str(err.value)


def test_missing_include():
    with pytest.raises(CodeletCompileError, match=r"bad_include.cpp:3: no_such_header.hpp: No such file"):
        cpp.vertex_types_from_file(DATA / "bad_include.cpp")


def test_undefined_function_is_reported_at_load_time():
    with pytest.raises(CodeletCompileError, match=r"undefined reference to 'notDefinedAnywhere\(float\)'.*"
                                                  r"used by vertex type 'Caller'"):
        cpp.vertex_types_from_file(DATA / "bad_link.cpp")


def test_vertex_without_compute_points_at_the_class():
    with pytest.raises(CodeletCompileError) as err:
        cpp.vertex_types_from_file(DATA / "bad_no_compute.cpp")
    assert "bad_no_compute.cpp:6: static assertion failed: popsim: this vertex class has no compute()" in str(err.value)
    assert "class Idle : public Vertex {" in str(err.value)


def test_missing_file():
    with pytest.raises(CodeletCompileError, match="not found"):
        cpp.vertex_types_from_file(DATA / "no_such_codelets.cpp")
