"""Python vertices: field declarations, the supported subset checked against numpy /
plain-Python references, compiled vs interpreted runs compared bit for bit (outputs
and cycle counts, also on hypothesis-generated inputs), index errors in both modes, and
the CodeletSyntaxError raised for everything outside the subset.

All the vertex classes below are compiled into ONE shared library (vertex_types_from_
classes with the whole list), so a cold run compiles once.
"""
import functools
import importlib.util
import itertools
import math
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import popsim
from popsim import InOut, Input, MultiVertex, Output, Vector, VectorList, Vertex
from popsim.codelet import compiler, pyruntime
from popsim.codelet.abi import run_compiled
from popsim.codelet.fields import Direction, FieldKind
from popsim.codelet.interpret import run_all_workers, run_interpreted
from popsim.codelet.op_costs import CYCLES
from popsim.codelet.python_vertex import fields_of, is_vertex_class, translation_of, vertex_types_from_classes
from popsim.codelet.typed_ir import T


F32, I32 = np.float32, np.int32
SCALE = 3                # module-level constants are captured at translation time
OFFSET = 0.25
HYPO = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ==== the vertices ================================================================================
class Sum(Vertex):
    in_: Input[Vector[float]]
    out: Output[float]

    def compute(self):
        s = 0                    # widened to float by s += x (its widest assignment)
        for x in self.in_:
            s += x
        self.out = s


class Dot(Vertex):
    a: Input[Vector[float]]
    b: Input[Vector[float]]
    out: Output[Vector[float]]

    def compute(self):
        acc = 0.0
        for i in range(len(self.a)):
            acc += self.a[i] * self.b[i]
        self.out[0] = acc
        return True


class ClipScale(Vertex):
    in_: Input[Vector[float]]
    out: Output[Vector[float]]
    k: float
    lo: float
    hi: float

    def compute(self):
        for i in range(len(self.in_)):
            v = self.in_[i] * self.k
            if v < self.lo:
                v = self.lo
            elif v > self.hi:
                v = self.hi
            else:
                v = v + 0.5 if v >= 0 else v - 0.5
            self.out[i] = v


class IntDivMod(Vertex):
    a: Input[Vector[int]]
    b: Input[Vector[int]]
    q: Output[Vector[int]]
    r: Output[Vector[int]]

    def compute(self):
        for i in range(len(self.a)):
            self.q[i] = self.a[i] // self.b[i]
            self.r[i] = self.a[i] % self.b[i]


class LongDivMod(Vertex):
    a: Input[Vector[popsim.LONGLONG]]
    b: Input[Vector[popsim.LONGLONG]]
    q: Output[Vector[popsim.LONGLONG]]
    r: Output[Vector[popsim.LONGLONG]]

    def compute(self):
        for i in range(len(self.a)):
            self.q[i] = self.a[i] // self.b[i]
            self.r[i] = self.a[i] % self.b[i]


class FloatDivMod(Vertex):
    a: Input[Vector[float]]
    b: Input[Vector[float]]
    q: Output[Vector[float]]
    r: Output[Vector[float]]

    def compute(self):
        for i in range(len(self.a)):
            self.q[i] = self.a[i] // self.b[i]
            self.r[i] = self.a[i] % self.b[i]


class HalfAxpy(Vertex):
    x: Input[Vector[popsim.HALF]]
    y: InOut[Vector[popsim.HALF]]
    a: float

    def compute(self):
        for i in range(len(self.y)):
            self.y[i] = self.a * self.x[i] + self.y[i]


class HalfToFloat(Vertex):
    h: Input[Vector[popsim.HALF]]
    f: Output[Vector[np.float32]]

    def compute(self):
        for i, v in enumerate(self.h):
            self.f[i] = v


class FloatToHalf(Vertex):
    f: Input[Vector[float]]
    h: Output[Vector[popsim.HALF]]

    def compute(self):
        for i in range(len(self.f)):
            self.h[i] = self.f[i]


class RowSums(Vertex):
    rows: Input[VectorList[float]]
    out: Output[Vector[float]]

    def compute(self):
        i = 0
        for row in self.rows:
            s = 0.0
            for j in range(len(row)):
                s += row[j]
            self.out[i] = s
            i += 1


class EdgeMax(Vertex):
    ins: Vector[Input[Vector[float]]]
    outs: Vector[Output[float]]

    def compute(self):
        for i in range(len(self.ins)):
            m = -math.inf
            for j in range(len(self.ins[i])):
                m = max(m, self.ins[i][j])
            self.outs[i] = m


class ScalarEdges(Vertex):
    ins: Vector[Input[float]]
    total: Output[float]
    doubled: Vector[Output[float]]

    def compute(self):
        t = 0.0
        for x in self.ins:
            t += x
        for i in range(len(self.ins)):
            self.doubled[i] = self.ins[i] * 2
        self.total = t


class MultiScale(MultiVertex):
    data: InOut[Vector[float]]
    k: float

    def compute(self, worker_id):
        n = len(self.data)
        for i in range(worker_id, n, self.num_workers()):
            self.data[i] = self.data[i] * self.k


class FirstAbove(Vertex):
    in_: Input[Vector[float]]
    limit: float
    out: Output[int]
    skipped: Output[int]

    def compute(self):
        i = 0
        found = -1
        skipped = 0
        while i < len(self.in_):
            x = self.in_[i]
            i += 1
            if x != x:                  # NaN: skip it
                skipped += 1
                continue
            if x > self.limit:
                found = i - 1
                break
        self.out = found
        self.skipped = skipped


class IntOps(Vertex):
    a: Input[int]
    b: Input[int]
    out: Output[Vector[int]]

    def compute(self):
        a = self.a
        b = self.b
        self.out[0] = a + b
        self.out[1] = a - b
        self.out[2] = a * b
        self.out[3] = a // b
        self.out[4] = a % b
        self.out[5] = -a
        self.out[6] = a ** 3
        self.out[7] = a & b
        self.out[8] = a | b
        self.out[9] = a ^ b
        self.out[10] = ~a
        self.out[11] = a << 3
        self.out[12] = a >> 2
        self.out[13] = abs(a)
        self.out[14] = min(a, b)
        self.out[15] = max(a, b, 7)
        self.out[16] = a if a > b else b
        self.out[17] = b ** -1
        self.out[18] = +a
        c = a
        c += b
        c -= 1
        c *= 2
        c //= 3
        c %= 1000
        self.out[19] = c


class FloatOps(Vertex):
    x: Input[float]
    y: Input[float]
    i: Input[int]
    out: Output[Vector[float]]
    iout: Output[Vector[int]]

    def compute(self):
        x, y, i = self.x, self.y, self.i
        self.out[0] = x + y
        self.out[1] = x - y
        self.out[2] = x * y
        self.out[3] = x / y
        self.out[4] = x // y
        self.out[5] = x % y
        self.out[6] = x ** 2
        self.out[7] = -x
        self.out[8] = abs(x)
        self.out[9] = i / 4
        self.out[10] = min(x, y)
        self.out[11] = max(x, y, 0.5)
        self.out[12] = float(i)
        self.out[13] = x * 2 + i
        self.out[14] = x / 3 * 3
        self.iout[0] = int(x)
        self.iout[1] = round(x)
        self.iout[2] = math.floor(x)
        self.iout[3] = math.ceil(x)
        self.iout[4] = int(x > y)
        self.iout[5] = math.trunc(y)


class Logic(Vertex):
    a: Input[int]
    x: Input[float]
    out: Output[Vector[bool]]

    def compute(self):
        a, x = self.a, self.x
        self.out[0] = a < 10
        self.out[1] = 0 <= a < 10
        self.out[2] = -5 < a <= x < 100
        self.out[3] = a > 0 and x > 0
        self.out[4] = a > 0 or x > 0
        self.out[5] = not a
        self.out[6] = bool(x)
        self.out[7] = math.isnan(x)
        self.out[8] = math.isinf(x)
        self.out[9] = x == a
        self.out[10] = x != 0.5
        self.out[11] = (a > 0) & (x > 0)
        self.out[12] = (a > 0) ^ (x > 0)
        self.out[13] = not (a > 3 or x < 1.0) and a != 7


class MathFns(Vertex):
    in_: Input[Vector[float]]
    out: Output[VectorList[float]]

    def compute(self):
        for i in range(len(self.in_)):
            x = self.in_[i]
            self.out[0][i] = math.exp(x)
            self.out[1][i] = math.log(x)
            self.out[2][i] = math.sqrt(x)
            self.out[3][i] = math.tanh(x)
            self.out[4][i] = math.sin(x)
            self.out[5][i] = math.cos(x)
            self.out[6][i] = math.pow(x, 1.5)
            self.out[7][i] = math.fabs(x)
            self.out[8][i] = x ** 0.5
            self.out[9][i] = math.atan2(x, 2.0)
            self.out[10][i] = math.pi * x + math.e
            self.out[11][i] = math.log10(x) + math.log2(x) + math.exp2(x)


class Casts(Vertex):
    f: Input[Vector[float]]
    i32: Output[Vector[int]]
    u32: Output[Vector[popsim.UNSIGNED_INT]]
    i64: Output[Vector[popsim.LONGLONG]]
    b: Output[Vector[bool]]
    back: Output[Vector[float]]

    def compute(self):
        for i in range(len(self.f)):
            x = self.f[i]
            self.i32[i] = int(x)              # truncates; saturates; NaN -> 0
            self.u32[i] = x                   # implicit conversion at the store
            self.i64[i] = np.int64(x)
            self.b[i] = bool(x)
            self.back[i] = float(int(x))


class WideInts(Vertex):
    big: Input[Vector[popsim.LONGLONG]]
    f: Output[Vector[float]]
    u: InOut[Vector[popsim.UNSIGNED_LONGLONG]]

    def compute(self):
        for i in range(len(self.big)):
            self.f[i] = self.big[i]           # int64 -> float32, rounded to nearest
            self.u[i] = self.u[i] * 3 + 1     # wraps modulo 2**64


class Narrow(Vertex):
    s: InOut[Vector[popsim.SHORT]]
    u8: InOut[Vector[popsim.UNSIGNED_CHAR]]
    flags: InOut[Vector[bool]]

    def compute(self):
        for i in range(len(self.s)):
            self.s[i] = self.s[i] * 300
        for i in range(len(self.u8)):
            self.u8[i] = self.u8[i] + 200
        for i in range(len(self.flags)):
            self.flags[i] = not self.flags[i]


class Unsigned(Vertex):
    n: popsim.UNSIGNED_INT
    out: Output[Vector[bool]]
    wrap: Output[popsim.UNSIGNED_INT]
    as_int: Output[int]

    def compute(self):
        self.out[0] = -1 < self.n           # exact comparison, unlike C
        self.out[1] = self.n > 4000000000
        self.out[2] = self.n == 4294967295
        self.wrap = self.n - 1              # unsigned arithmetic wraps
        self.as_int = int(self.n) - 1


class Misc(Vertex):
    in_: Input[Vector[float]]
    out: Output[Vector[float]]
    BIAS = 1.5

    def compute(self):
        a = b = 0.0
        a, b = 1.0, 2.0
        a, b = b, a                          # swap: a = 2, b = 1
        total: int = 0
        for i, x in enumerate(self.in_):
            self.out[i] = x * SCALE + OFFSET + self.BIAS + a - b
            total += 1.9                     # annotated int: converted (truncated) at each assignment
        return total == len(self.in_)


class Accumulate(Vertex):
    acc: InOut[Vector[float]]
    total: InOut[float]
    rows: InOut[VectorList[int]]

    def compute(self):
        for i in range(len(self.acc)):
            self.acc[i] += i * 0.5
            self.total += self.acc[i]
        for r in range(len(self.rows)):
            for j in range(len(self.rows[r])):
                self.rows[r][j] *= 2
        for row in self.rows:
            if len(row) > 0:
                row[0] -= 1


class Ranges(Vertex):
    out: Output[Vector[int]]
    start: int
    stop: int
    step: int

    def compute(self):
        n = 0
        for i in range(self.start, self.stop, self.step):
            if n < len(self.out):
                self.out[n] = i
            n += 1
            i = 1000                          # does not change the iteration
        k = -1
        for k in range(3):  # noqa: B007 - its last value is used after the loop
            pass
        for j in range(10, 0, -3):
            n += j * 100
        self.out[len(self.out) - 1] = n * 10 + k


class Fails(Vertex):
    in_: Input[Vector[int]]

    def compute(self):
        for x in self.in_:
            if x < 0:
                return False
        return None


class MultiFails(MultiVertex):
    out: Output[Vector[int]]

    def compute(self, wid):
        self.out[wid] = wid
        return wid != 2


class Empty(Vertex):
    def compute(self):
        """Nothing to do."""
        pass


class OutOfRange(Vertex):
    in_: Input[Vector[float]]
    idx: Input[Vector[int]]
    out: InOut[Vector[float]]
    rows: Input[VectorList[float]]
    mode: int

    def compute(self):
        m = self.mode
        if m == 0:
            self.out[0] = self.in_[self.idx[0]]
        elif m == 1:
            self.out[self.idx[0]] = 1.0
        elif m == 2:
            self.out[0] = self.rows[self.idx[0]][0]
        elif m == 3:
            self.out[0] = self.in_[self.idx[0]] + self.in_[self.idx[1]] * self.rows[self.idx[1]][0]
        elif m == 4:
            self.out[0] = self.rows[0][self.idx[0]]
        elif m == 5:
            self.out[self.idx[0]] += 1.0
        elif m == 6:
            for row in self.rows:
                self.out[0] = row[self.idx[0]]
        elif m == 7:
            self.out[0] = 5.0
            self.out[self.idx[0]] = self.in_[self.idx[1]]


class Printer(Vertex):
    x: Input[Vector[float]]
    n: Input[Vector[int]]

    def compute(self):
        print("x:", self.x[0], "n =", self.n[0], sep=" ", end="|\n")
        print(f"[{self.x[0]:.3f}] {self.n[0]:5d} {self.x[1]:+.2e} {self.n[0] > 0} {self.n[0]:+.1f}")
        for v in self.x:
            print(v)
        print("unicode: é ✓ \\ \" ?? %d %s", True)
        print("nul:\0.", end="")
        print()


class WithBreakpoint(Vertex):
    out: Output[float]

    def compute(self):
        y = 2.5
        breakpoint()
        self.out = y


class Named(Vertex):
    vertex_name = "popops::Add<float>"
    a: Input[Vector[float]]
    b: Input[Vector[float]]
    out_: Output[Vector[float]]

    def compute(self):
        for i in range(len(self.out_)):
            self.out_[i] = self.a[i] + self.b[i]


class CNames(Vertex):
    """Locals named like C keywords and with non-ASCII names must still compile."""
    out: Output[Vector[float]]

    def compute(self):
        char = 1
        unsigned = 2.0
        register = char + unsigned
        α = register * 2
        cyc = 1
        E = 2
        self.out[0] = α + cyc + E


class Views(Vertex):
    rows: Input[VectorList[float]]
    vec: Input[Vector[float]]
    offs: Vector[int]
    n: popsim.UNSIGNED_INT
    total: Output[float]
    longest: Output[Vector[float]]
    flags: Input[Vector[bool]]

    def compute(self):
        v = self.vec
        total = 0.0
        for i in range(len(self.rows)):
            row = self.rows[i]
            for x in row:
                total += x * v[i % len(v)]
        for o in self.offs:
            total += o
        for j in range(-2, self.n):          # int32 with uint32: iterates exactly, from -2
            total += j
        for f in self.flags:
            if f:
                total += 1000
        self.total[0] = total
        best = self.rows[0]
        for row in self.rows:
            if len(row) > len(best):
                best = row
        for j in range(len(best)):
            self.longest[j] = best[j]


class SumHalf(Sum):
    """The same compute with other field types: a template instantiation."""
    vertex_name = "Sum<half>"
    in_: Input[Vector[popsim.HALF]]


VERTICES = [Sum, Dot, ClipScale, IntDivMod, LongDivMod, FloatDivMod, HalfAxpy, HalfToFloat, FloatToHalf, RowSums,
            EdgeMax, ScalarEdges, MultiScale, FirstAbove, IntOps, FloatOps, Logic, MathFns, Casts, WideInts, Narrow,
            Unsigned, Misc, Accumulate, Ranges, Fails, MultiFails, Empty, OutOfRange, Printer, WithBreakpoint, Named,
            CNames, Views, SumHalf]


# ==== helpers ======================================================================================
@functools.lru_cache(maxsize=None)
def library():
    return {vt.python_class: vt for vt in vertex_types_from_classes(VERTICES)}


def vt(cls):
    return library()[cls]


def arr(values, dtype=F32):
    return np.array(values, dtype=dtype)


def clone(values):
    return [[a.copy() for a in v] if isinstance(v, list) else v.copy() for v in values]


def assert_same(a, b):
    """Bit-for-bit equality of field values."""
    for x, y in zip(a, b):
        if isinstance(x, list):
            assert_same(x, y)
        else:
            assert x.dtype == y.dtype and x.shape == y.shape
            assert x.tobytes() == y.tobytes(), f"{x!r} != {y!r}"


def run_both(cls, values, num_workers=6, worker=0):
    """Run compiled and interpreted on copies of ``values``; they must agree exactly.
    Returns (compiled values, cycles, ok)."""
    t = vt(cls)
    cv, iv = clone(values), clone(values)
    ret, ctx = run_compiled(t, cv, worker, num_workers)
    assert ret in (0, 1), f"compiled run failed: error {ctx.error} field {ctx.error_field} index {ctx.error_index}"
    ok, cycles = run_all_workers(t, iv, num_workers, worker)
    assert ok == (ret == 1)
    assert cycles == ctx.cycles, f"cycles: interpreted {cycles}, compiled {ctx.cycles}"
    assert_same(cv, iv)
    return cv, ctx.cycles, ok


def f32(x):
    return np.float32(x)


def floor_divmod(a, b, bits=32):
    if b == 0:
        return 0, a
    q, r = a // b, a % b
    q = (q + 2 ** (bits - 1)) % 2 ** bits - 2 ** (bits - 1)
    return q, r


# ==== field declarations ===========================================================================
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
    cls = type("Bad", (Vertex,), {"__annotations__": {"x": eval(annotation, ns)}, "compute": lambda self: None})
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
    assert t.source == f"{__file__}:{Named.compute.__code__.co_firstlineno}"
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


# ==== the subset against references =================================================================
@pytest.mark.compiler
def test_sum_widens_an_int_local_to_float_and_counts_cycles():
    x = arr([1.5, 2.25, -0.5, 1e-3])
    (_, out), cycles, ok = run_both(Sum, [x, arr([0])])
    ref = f32(0)
    for v in x:
        ref = f32(ref + v)
    assert ok and out[0] == ref
    assert translation_of(Sum).function.locals["s"] is T.F32
    # vertex + loop setup, per element (iteration + load + float add), the store
    c = CYCLES
    assert cycles == c["vertex"] + c["loop_setup"] + 4 * (c["loop_iter"] + c["load"] + c["float_op"]) + c["store"]


@pytest.mark.compiler
def test_subclass_with_other_field_types_reuses_compute():
    x = arr([1.5, 2.25, 65504], np.float16)
    (_, out), cycles, _ = run_both(SumHalf, [x, arr([0])])
    assert out[0] == f32(f32(f32(1.5) + f32(2.25)) + f32(65504))
    assert vt(SumHalf).name == "Sum<half>" and vt(SumHalf).fields[0].dtype is popsim.HALF
    assert cycles == CYCLES["vertex"] + CYCLES["loop_setup"] + 3 * (
        CYCLES["loop_iter"] + CYCLES["load"] + CYCLES["half_to_float"] + CYCLES["float_op"]) + CYCLES["store"]


@pytest.mark.compiler
def test_empty_vertex_costs_the_call():
    _, cycles, ok = run_both(Empty, [])
    assert ok and cycles == CYCLES["vertex"]


@pytest.mark.compiler
def test_dot_product():
    a, b = arr([1, 2, 3]), arr([0.5, -1, 4])
    (_, _, out), _, _ = run_both(Dot, [a, b, arr([0])])
    assert out[0] == f32(f32(f32(0.5) + f32(-2)) + f32(12))


def clip_reference(x, k, lo, hi):
    out = []
    for v in x:
        v = f32(v * f32(k))
        if v < f32(lo):
            v = f32(lo)
        elif v > f32(hi):
            v = f32(hi)
        else:
            v = f32(v + f32(0.5)) if v >= 0 else f32(v - f32(0.5))
        out.append(v)
    return arr(out)


@pytest.mark.compiler
def test_clip_scale_if_elif_else_and_conditional_expression():
    x = arr([-10, -0.25, 0, 0.3, 7])
    vals = [x, np.zeros(5, F32), arr([2.0]), arr([-3.0]), arr([3.0])]
    (_, out, *_), _, _ = run_both(ClipScale, vals)
    np.testing.assert_array_equal(out, clip_reference(x, 2.0, -3.0, 3.0))


@pytest.mark.compiler
def test_integer_floor_division_and_modulo_follow_python():
    pairs = [(7, 2), (-7, 2), (7, -2), (-7, -2), (0, 3), (5, 0), (-2 ** 31, -1), (-2 ** 31, 3), (2 ** 31 - 1, -7)]
    a, b = arr([p[0] for p in pairs], I32), arr([p[1] for p in pairs], I32)
    (_, _, q, r), _, _ = run_both(IntDivMod, [a, b, np.zeros(9, I32), np.zeros(9, I32)])
    assert [floor_divmod(x, y) for x, y in pairs] == list(zip(q.tolist(), r.tolist()))


@pytest.mark.compiler
def test_float_floor_division_and_modulo_follow_python():
    pairs = [(7.5, 2), (-7.5, 2), (7.5, -2), (-0.0, 3), (1e-30, -1), (5, 0.5), (3, 0)]
    a, b = arr([p[0] for p in pairs]), arr([p[1] for p in pairs])
    (_, _, q, r), _, _ = run_both(FloatDivMod, [a, b, np.zeros(7, F32), np.zeros(7, F32)])
    for (x, y), qq, rr in zip(pairs, q, r):
        if y == 0:
            assert math.isnan(qq) and math.isnan(rr)   # no exception in vertex code
            continue
        ref_q, ref_r = divmod(float(f32(x)), float(f32(y)))
        assert qq == f32(ref_q) and rr == f32(ref_r)
        assert math.copysign(1, rr) == math.copysign(1, ref_r)


@pytest.mark.compiler
def test_half_fields_compute_in_float_and_round_to_nearest_even():
    x = arr([1, 2, 0.1, 65504, 1e-7, -3], np.float16)
    y = arr([0.5, -1, 0.2, 100, 0, 3], np.float16)
    (_, out, _), _, _ = run_both(HalfAxpy, [x, y, arr([1.5])])
    with np.errstate(over="ignore"):
        ref = (f32(1.5) * x.astype(F32) + y.astype(F32)).astype(np.float16)
    assert out.tobytes() == ref.tobytes()


@pytest.mark.compiler
def test_half_to_float_is_exact_for_every_half():
    h = np.arange(65536, dtype=np.uint16).view(np.float16)
    t = vt(HalfToFloat)
    out = np.zeros(65536, F32)
    ret, _ = run_compiled(t, [h, out])
    assert ret == 1
    ref = h.astype(F32)
    finite = ~np.isnan(ref)
    assert out[finite].tobytes() == ref[finite].tobytes()
    assert np.isnan(out[~finite]).all()
    assert [pyruntime.h2f_bits(int(b)) for b in range(0, 65536, 257)] == \
        out.view(np.uint32)[::257].tolist()


@pytest.mark.compiler
def test_float_to_half_rounds_like_numpy():
    rng = np.random.default_rng(1)
    bits = rng.integers(0, 2 ** 32, 200000, dtype=np.uint64).astype(np.uint32)
    specials = [0x33000000, 0x33000001, 0x387FE000, 0x387FF000, 0x38800000, 0x477FEFFF, 0x477FF000, 0x477FE000,
                0x7F800000, 0xFF800000, 0x80000000, 0x3F800000, 0x33800000, 0x337FFFFF]
    bits = np.concatenate([bits, np.array(specials, np.uint32)])
    f = bits.view(F32)
    out = np.zeros(len(f), np.float16)
    ret, _ = run_compiled(vt(FloatToHalf), [f, out])
    assert ret == 1
    with np.errstate(all="ignore"):
        ref = f.astype(np.float16)
    finite = ~np.isnan(f)
    assert out[finite].tobytes() == ref[finite].tobytes()
    assert np.isnan(out[~finite]).all()
    sample = f[::997]
    assert [pyruntime.f2h_bits(x) for x in sample] == out[::997].view(np.uint16).tolist()


@pytest.mark.compiler
def test_vectorlist_rows_nested_loops():
    rows = [arr([1, 2, 3]), arr([]), arr([-1.5]), arr([0.25, 0.25])]
    (_, out), _, _ = run_both(RowSums, [rows, np.zeros(4, F32)])
    assert out.tolist() == [6, 0, -1.5, 0.5]


@pytest.mark.compiler
def test_vector_of_edges():
    ins = [arr([1, 5, 2]), arr([-3]), arr([])]
    outs = [np.zeros(1, F32) for _ in range(3)]
    (_, got), _, _ = run_both(EdgeMax, [ins, outs])
    assert [g[0] for g in got] == [5, -3, -math.inf]


@pytest.mark.compiler
def test_vector_of_scalar_edges():
    ins = [arr([1.5]), arr([2]), arr([-4])]
    (_, total, doubled), _, _ = run_both(ScalarEdges, [ins, arr([0]), [np.zeros(1, F32) for _ in range(3)]])
    assert total[0] == -0.5 and [d[0] for d in doubled] == [3, 4, -8]


@pytest.mark.compiler
def test_multivertex_splits_work_by_worker():
    data = np.arange(13, dtype=F32)
    (out, _), cycles, _ = run_both(MultiScale, [data, arr([2])], num_workers=4)
    assert out.tolist() == (data * 2).tolist()
    t = vt(MultiScale)
    total = sum(run_interpreted(t, clone([data, arr([2])]), w, 4)[1] for w in range(4))
    assert total == cycles


@pytest.mark.compiler
def test_while_break_continue():
    vals = [arr([0.5, np.nan, 0.2, np.nan, 3, 4]), arr([1.0]), arr([0], I32), arr([0], I32)]
    (_, _, out, skipped), _, _ = run_both(FirstAbove, vals)
    assert out[0] == 4 and skipped[0] == 2
    vals[1][0] = 100
    (_, _, out, skipped), _, _ = run_both(FirstAbove, vals)
    assert out[0] == -1 and skipped[0] == 2


@pytest.mark.compiler
@pytest.mark.parametrize("a, b", [(17, 5), (-17, 5), (2 ** 31 - 1, 2), (-2 ** 31, -1), (6, 0), (-1, -2)])
def test_int_operators(a, b):
    (_, _, out), _, _ = run_both(IntOps, [arr([a], I32), arr([b], I32), np.zeros(20, I32)])

    def w(v):
        return (v + 2 ** 31) % 2 ** 32 - 2 ** 31
    q, r = floor_divmod(a, b)
    c = w(w(w(a + b) - 1) * 2)
    c = floor_divmod(floor_divmod(c, 3)[0], 1000)[1]
    ref = [w(a + b), w(a - b), w(a * b), q, r, w(-a), w(a ** 3), a & b, a | b, a ^ b, ~a, w(a << 3), a >> 2,
           w(abs(a)), min(a, b), max(a, b, 7), a if a > b else b, (1 if b == 1 else (-1 if b == -1 else 0)), a, c]
    assert out.tolist() == ref


@pytest.mark.compiler
@pytest.mark.parametrize("x, y, i", [(7.25, 2.0, 5), (-7.25, 0.5, -3), (1e30, -3.0, 7), (0.1, 0.0, 0),
                                     (2.5, 1.5, 2 ** 31 - 1), (-2.5, 3.5, -1)])
def test_float_operators(x, y, i):
    vals = [arr([x]), arr([y]), arr([i], I32), np.zeros(15, F32), np.zeros(6, I32)]
    (_, _, _, out, iout), _, _ = run_both(FloatOps, vals)
    X, Y = f32(x), f32(y)
    with np.errstate(all="ignore"):
        qf, rf = pyruntime.fdivmod(X, Y)
        ref = [X + Y, X - Y, X * Y, X / Y, qf, rf, f32(float(X) ** 2), -X, abs(X), f32(i) / f32(4), min(X, Y),
               max(X, Y, f32(0.5)), f32(i), X * f32(2) + f32(i), X / f32(3) * f32(3)]
    assert out.tobytes() == arr(ref).tobytes()
    def sat(v):
        return max(-2 ** 31, min(2 ** 31 - 1, v))
    assert iout.tolist() == [sat(int(X)), sat(round(X)), sat(math.floor(X)), sat(math.ceil(X)), int(X > Y),
                             sat(math.trunc(float(Y)))]


@pytest.mark.compiler
@pytest.mark.parametrize("a, x", [(3, 0.5), (0, -2.0), (12, 12.0), (-9, float("nan")), (7, float("inf")), (5, 0.0)])
def test_logic_comparisons_and_chains(a, x):
    (_, _, out), _, _ = run_both(Logic, [arr([a], I32), arr([x]), np.zeros(14, bool)])
    ref = [a < 10, 0 <= a < 10, -5 < a <= x < 100, a > 0 and x > 0, a > 0 or x > 0, not a, bool(x), math.isnan(x),
           math.isinf(x), x == a, x != 0.5, (a > 0) & (x > 0), (a > 0) ^ (x > 0), not (a > 3 or x < 1.0) and a != 7]
    assert out.tolist() == ref


@pytest.mark.compiler
def test_math_functions_use_double_libm_rounded_to_float():
    x = arr([0.5, 1, 2.5, 10, 1e-3, 88.7, -1, 0])
    out = [np.zeros(len(x), F32) for _ in range(12)]
    (_, got), _, _ = run_both(MathFns, [x, out])
    fns = [math.exp, math.log, math.sqrt, math.tanh, math.sin, math.cos, lambda v: math.pow(v, 1.5), math.fabs,
           lambda v: math.pow(v, 0.5), lambda v: math.atan2(v, 2.0)]
    for row, fn in zip(got, fns):
        for v, g in zip(x, row):
            try:
                ref = f32(fn(float(v)))
            except (ValueError, OverflowError):
                assert math.isnan(g) or math.isinf(g)
                continue
            assert g == ref or (math.isnan(g) and math.isnan(ref))
    assert got[1][-2] != got[1][-2] and got[1][-1] == -math.inf       # log(-1) = nan, log(0) = -inf
    assert got[10][0] == f32(f32(f32(math.pi) * f32(0.5)) + f32(math.e))


@pytest.mark.compiler
def test_conversions_saturate_and_nan_is_zero():
    f = arr([1.9, -1.9, 3e9, -3e9, np.nan, np.inf, -np.inf, 0.0, 1e20, -0.0, 4.5e9])
    n = len(f)
    vals = [f, np.zeros(n, I32), np.zeros(n, np.uint32), np.zeros(n, np.int64), np.zeros(n, bool), np.zeros(n, F32)]
    (_, i32, u32, i64, b, back), _, _ = run_both(Casts, vals)
    assert i32.tolist() == [1, -1, 2 ** 31 - 1, -2 ** 31, 0, 2 ** 31 - 1, -2 ** 31, 0, 2 ** 31 - 1, 0, 2 ** 31 - 1]
    assert u32.tolist() == [1, 0, 3000000000, 0, 0, 2 ** 32 - 1, 0, 0, 2 ** 32 - 1, 0, 2 ** 32 - 1]
    assert i64.tolist() == [1, -1, 3000000000, -3000000000, 0, 2 ** 63 - 1, -2 ** 63, 0, 2 ** 63 - 1, 0,
                            int(f32(4.5e9))]
    assert b.tolist() == [True, True, True, True, True, True, True, False, True, False, True]
    assert back.tolist() == [float(f32(v)) for v in i32]       # int32 max rounds up to 2**31


@pytest.mark.compiler
def test_wide_integers_round_and_wrap():
    big = arr([2 ** 60 + 2 ** 36 + 1, -(2 ** 40) - 1, 3, 2 ** 63 - 1], np.int64)
    u = arr([2 ** 64 - 1, 2 ** 63, 5, 0], np.uint64)
    (_, f, uo), _, _ = run_both(WideInts, [big, np.zeros(4, F32), u])
    assert f.tolist() == [float(f32(v)) for v in [2 ** 60 + 2 ** 37, -(2 ** 40), 3, 2 ** 63]]
    assert uo.tolist() == [(int(v) * 3 + 1) % 2 ** 64 for v in u]


@pytest.mark.compiler
def test_narrow_integer_and_bool_fields_wrap_on_store():
    s = arr([1, -200, 32767], np.int16)
    u8 = arr([0, 56, 255], np.uint8)
    flags = arr([True, False], bool)
    (s2, u82, f2), _, _ = run_both(Narrow, [s, u8, flags])
    assert s2.tolist() == [300, (-200 * 300 + 2 ** 15) % 2 ** 16 - 2 ** 15, (32767 * 300 + 2 ** 15) % 2 ** 16 - 2 ** 15]
    assert u82.tolist() == [200, 0, 199] and f2.tolist() == [False, True]


@pytest.mark.compiler
@pytest.mark.parametrize("n", [0, 5, 4000000001, 4294967295])
def test_unsigned_comparisons_are_exact_and_arithmetic_wraps(n):
    vals = [arr([n], np.uint32), np.zeros(3, bool), arr([0], np.uint32), arr([0], I32)]
    (_, out, wrap, as_int), _, _ = run_both(Unsigned, vals)
    assert out.tolist() == [True, n > 4000000000, n == 4294967295]
    assert wrap[0] == (n - 1) % 2 ** 32
    assert as_int[0] == ((n + 2 ** 31) % 2 ** 32 - 2 ** 31) - 1


@pytest.mark.compiler
def test_globals_class_constants_tuples_enumerate_and_annotations():
    x = arr([1, 2, 3])
    (_, out), _, ok = run_both(Misc, [x, np.zeros(3, F32)])
    assert ok          # total: int stays an int: 1 + 1 + 1 == 3
    ref = [f32(f32(f32(f32(f32(v * f32(3)) + f32(0.25)) + f32(1.5)) + f32(2)) - f32(1)) for v in x]
    assert out.tolist() == ref
    assert translation_of(Misc).function.locals["total"] is T.I32


@pytest.mark.compiler
def test_augmented_assignment_to_inout_elements_scalars_and_rows():
    acc = arr([1, 2, 3])
    rows = [arr([1, 2], I32), arr([], I32), arr([5], I32)]
    (acc2, total, rows2), _, _ = run_both(Accumulate, [acc, arr([10]), rows])
    assert acc2.tolist() == [1, 2.5, 4] and total[0] == 10 + 1 + 2.5 + 4
    assert [r.tolist() for r in rows2] == [[1, 4], [], [9]]


@pytest.mark.compiler
@pytest.mark.parametrize("start, stop, step", [(0, 5, 1), (5, 0, -1), (10, -3, -4), (3, 3, 1), (0, 10, 3), (2, 1, 1),
                                               (-2 ** 31, 2 ** 31 - 1, 2 ** 30), (0, 5, 0)])
def test_range_loops_match_python(start, stop, step):
    vals = [np.zeros(12, I32), arr([start], I32), arr([stop], I32), arr([step], I32)]
    (out, *_), _, _ = run_both(Ranges, vals)
    seq = list(range(start, stop, step)) if step else []
    n = len(seq) + sum(j * 100 for j in range(10, 0, -3))
    assert out[:min(len(seq), 11)].tolist() == seq[:11]
    assert out[-1] == n * 10 + 2


@pytest.mark.compiler
def test_return_false_fails_the_vertex():
    assert run_both(Fails, [arr([1, 2], I32)])[2] is True
    assert run_both(Fails, [arr([1, -2], I32)])[2] is False
    (out,), _, ok = run_both(MultiFails, [np.full(6, -1, I32)])
    assert not ok and out.tolist() == [0, 1, 2, -1, -1, -1]     # stops at the failing worker


@pytest.mark.compiler
def test_c_keywords_and_unicode_locals():
    (out,), _, _ = run_both(CNames, [np.zeros(1, F32)])
    assert out[0] == 9


@pytest.mark.compiler
def test_view_locals_state_vectors_and_bool_fields():
    rows = [arr([1, 2]), arr([3, 4, 5]), arr([])]
    vals = [rows, arr([10, 100]), arr([7, -2], I32), arr([3], np.uint32), arr([0]), np.zeros(3, F32),
            arr([True, False, True], bool)]
    (_, _, _, _, total, longest, _), _, _ = run_both(Views, vals)
    ref = f32(0)
    for i, row in enumerate(rows):
        for x in row:
            ref = f32(ref + x * vals[1][i % 2])
    for v in [7, -2, -2, -1, 0, 1, 2, 1000, 1000]:
        ref = f32(ref + f32(v))
    assert total[0] == ref and longest.tolist() == [3, 4, 5]


# ==== index errors ================================================================================
def oob_values(mode, idx):
    return [arr([1, 2, 3]), arr(idx, I32), np.zeros(2, F32), [arr([7]), arr([8, 9])], arr([mode], I32)]


@pytest.mark.compiler
@pytest.mark.parametrize("mode, idx, field, index, size", [
    (0, [3, 0], "in", 3, 3), (0, [-1, 0], "in", -1, 3), (1, [2, 0], "out", 2, 2), (2, [5, 0], "rows", 5, 2),
    (3, [9, 8], "in", 9, 3), (3, [0, 8], "in", 8, 3), (3, [1, 2], "rows", 2, 2), (4, [1, 0], "rows", 1, 1),
    (5, [-3, 0], "out", -3, 2), (6, [1, 0], "rows", 1, 1), (7, [0, 4], "in", 4, 3), (7, [4, 4], "in", 4, 3),
])
def test_index_errors_in_both_modes(mode, idx, field, index, size):
    t = vt(OutOfRange)
    cv, iv = oob_values(mode, idx), oob_values(mode, idx)
    before = iv[2].copy()
    ret, ctx = run_compiled(t, cv)
    assert ret == -1 and ctx.error == 1
    assert (t.fields[ctx.error_field].name, ctx.error_index, ctx.error_size) == (field, index, size)
    with pytest.raises(popsim.IndexError) as e:
        run_interpreted(t, iv)
    line = ctx.error_line
    assert isinstance(e.value, IndexError)
    msg = str(e.value)
    assert f"vertex type 'OutOfRange': index {index} is out of range for field '{field}' of size {size}" in msg
    assert f"at line {line} of {__file__}" in msg
    assert line > OutOfRange.compute.__code__.co_firstlineno
    if mode == 7:     # the value is evaluated first: nothing is stored when it fails
        assert cv[2].tolist() == [5, 0] == iv[2].tolist()
    else:
        assert cv[2].tolist() == before.tolist() == iv[2].tolist()
    if index < 0:
        assert "negative indices do not wrap" in msg


@pytest.mark.compiler
def test_loop_indices_proven_in_range_skip_checks_but_others_keep_them():
    code = translation_of(Dot).c_code
    assert "popsim_py_uld_f32(s0" in code            # a[i] for i in range(len(self.a)): no check
    assert "popsim_py_ld_f32(s1" in code             # b[i]: b may be shorter
    code = translation_of(RowSums).c_code
    assert "popsim_py_uld_f32(v_row" in code         # row[j] for j in range(len(row))
    t = vt(Dot)
    ret, ctx = run_compiled(t, [arr([1, 2, 3]), arr([1]), arr([0])])
    assert ret == -1 and (t.fields[ctx.error_field].name, ctx.error_index, ctx.error_size) == ("b", 1, 1)
    with pytest.raises(popsim.IndexError, match="index 1 is out of range for field 'b' of size 1"):
        run_interpreted(t, [arr([1, 2, 3]), arr([1]), arr([0])])


def test_modified_loop_variables_stay_checked(tmp_path):
    cls, _ = load_vertex(tmp_path, """
        for i in range(len(self.in_)):
            self.out[0] = self.in_[i]
        for i in range(len(self.in_)):
            i += 1
            self.out[0] = self.in_[i]
        """)
    fn = translation_of(cls).function
    assert [s.line for s in fn.sites] == [12, 15, 15]     # out[0] twice, and the modified in_[i]


# ==== print, breakpoint =========================================================================
@pytest.mark.compiler
def test_print_is_identical_in_both_modes(capfd):
    values = [arr([0.1, 123456.7, 1e-5, -0.0, np.inf]), arr([42], I32)]
    run_compiled(vt(Printer), clone(values))
    compiled = capfd.readouterr().out
    run_interpreted(vt(Printer), clone(values))
    interpreted = capfd.readouterr().out
    assert compiled == interpreted
    lines = compiled.split("\n")
    assert lines[0] == "x: 0.1 n = 42|"
    assert lines[1] == f"[0.100] {42:5d} {float(f32(123456.7)):+.2e} True +42.0"
    assert lines[2:7] == [str(v) for v in values[0]]
    assert lines[7] == "unicode: é ✓ \\ \" ?? %d %s True"
    assert lines[8] == "nul:\0." and lines[9] == ""


def test_cost_table_in_the_docs_matches_op_costs():
    import re
    doc = (Path(__file__).resolve().parents[2] / "docs" / "python_vertices.md").read_text()
    rows = re.findall(r"^\| (.+?) \| `(\w+)`( \.\.\.)? \| (\d+) \|$", doc, re.M)
    assert len(rows) > 20
    seen = set()
    for what, key, group, cycles in rows:
        names = [key] + (re.findall(r"[a-z0-9]+", what) if group else [])
        for name in names:
            if name in CYCLES:
                assert CYCLES[name] == int(cycles), name
                seen.add(name)
    assert seen == set(CYCLES)


def test_float32_printing_matches_numpy():
    rng = np.random.default_rng(7)
    values = np.concatenate([(rng.standard_normal(300) * 10.0 ** rng.integers(-12, 12, 300)).astype(F32),
                             arr([1e6, 999999.94, 1e-4, 9.99e-5, 1e16, 3.4028235e38, 1e-45, 16777216, 0.5, 65504])])
    for v in values:
        assert pyruntime.format_f32(v) == str(v)


@pytest.mark.compiler
def test_breakpoint_stops_on_the_users_line_in_interpreted_mode(monkeypatch):
    seen = []

    def hook(*args, **kwargs):
        frame = sys._getframe(1)
        seen.append((frame.f_code.co_filename, frame.f_lineno, float(frame.f_locals["y"]), frame.f_locals["self"]))

    monkeypatch.setattr(sys, "breakpointhook", hook)
    out = np.zeros(1, F32)
    assert run_interpreted(vt(WithBreakpoint), [out])[0]
    line = WithBreakpoint.compute.__code__.co_firstlineno + 2
    assert seen and seen[0][:3] == (__file__, line, 2.5) and isinstance(seen[0][3], WithBreakpoint)
    assert out[0] == 2.5
    seen.clear()
    ret, _ = run_compiled(vt(WithBreakpoint), [out])        # a no-op when compiled
    assert ret == 1 and not seen


# ==== through the engine, both modes ===============================================================
@pytest.mark.compiler
@pytest.mark.parametrize("mode", ["compiled", "interpreted"])
def test_engine_runs_python_vertices(monkeypatch, mode):
    monkeypatch.setenv("POPSIM_CODELET_MODE", mode)
    device = popsim.IPUModel().create_device()
    graph = popsim.Graph(device.target)
    graph.add_codelets([Sum, HalfAxpy])
    x = graph.add_variable(popsim.FLOAT, [8], "x")
    s = graph.add_variable(popsim.FLOAT, [2], "s")
    graph.set_tile_mapping(x, 0)
    graph.set_tile_mapping(s, 1)
    cs = graph.add_compute_set("sums")
    for i in range(2):
        v = graph.add_vertex(cs, "Sum", {"in": x.slice(4 * i, 4 * i + 4), "out": s[i]})
        graph.set_tile_mapping(v, i)
    data = np.arange(8, dtype=F32) * F32(0.5)
    got, = run_engine(graph, device, popsim.program.Execute(cs), {x: data}, [s])
    assert got.tolist() == [3.0, 11.0]


def run_engine(graph, device, program, writes, reads):
    for i, t in enumerate(reads):
        graph.create_host_read(f"r{i}", t)
    for i, tensor in enumerate(writes):
        graph.create_host_write(f"w{i}", tensor)
    engine = popsim.Engine(graph, program)
    engine.load(device)
    for i, value in enumerate(writes.values()):
        engine.write_tensor(f"w{i}", value)
    engine.run(0)
    return [engine.read_tensor(f"r{i}") for i in range(len(reads))]


# ==== hypothesis: compiled == interpreted on random data ===========================================
def f32_arrays(max_size=24, **kw):
    return hnp.arrays(F32, st.integers(0, max_size), elements=st.floats(width=32, allow_nan=False, **kw))


@pytest.mark.compiler
@HYPO
@given(f32_arrays())
def test_hypothesis_sum(x):
    (_, out), cycles, _ = run_both(Sum, [x, arr([0])])
    assert cycles == 9 + 3 * len(x)


@pytest.mark.compiler
@HYPO
@given(st.integers(0, 20).flatmap(lambda n: st.tuples(
    hnp.arrays(F32, n, elements=st.floats(-2.0 ** 60, 2.0 ** 60, width=32)),
    hnp.arrays(F32, n, elements=st.floats(-2.0 ** 60, 2.0 ** 60, width=32)))))
def test_hypothesis_dot(ab):
    a, b = ab
    (_, _, out), _, _ = run_both(Dot, [a, b, arr([0])])
    ref = f32(0)
    with np.errstate(all="ignore"):
        for x, y in zip(a, b):
            ref = f32(ref + x * y)
    assert out.tobytes() == arr([ref]).tobytes()


@pytest.mark.compiler
@HYPO
@given(f32_arrays(), st.floats(-4, 4, width=32), st.floats(-100, 0, width=32), st.floats(0, 100, width=32))
def test_hypothesis_clip_scale(x, k, lo, hi):
    vals = [x, np.zeros(len(x), F32), arr([k]), arr([lo]), arr([hi])]
    (_, out, *_), _, _ = run_both(ClipScale, vals)
    with np.errstate(all="ignore"):
        assert out.tobytes() == clip_reference(x, k, lo, hi).tobytes()


@pytest.mark.compiler
@HYPO
@given(st.lists(st.tuples(st.integers(-2 ** 31, 2 ** 31 - 1), st.sampled_from([0, 1, -1, 2, -3, 7, 2 ** 31 - 1,
                                                                                 -2 ** 31]) | st.integers(-50, 50)),
                max_size=30))
def test_hypothesis_int_divmod(pairs):
    a, b = arr([p[0] for p in pairs], I32), arr([p[1] for p in pairs], I32)
    n = len(pairs)
    (_, _, q, r), _, _ = run_both(IntDivMod, [a, b, np.zeros(n, I32), np.zeros(n, I32)])
    assert list(zip(q.tolist(), r.tolist())) == [floor_divmod(x, y) for x, y in pairs]


@pytest.mark.compiler
@HYPO
@given(st.lists(st.tuples(st.integers(-2 ** 63, 2 ** 63 - 1), st.integers(-2 ** 63, 2 ** 63 - 1) | st.integers(-9, 9)),
                max_size=20))
def test_hypothesis_long_divmod(pairs):
    a, b = arr([p[0] for p in pairs], np.int64), arr([p[1] for p in pairs], np.int64)
    n = len(pairs)
    (_, _, q, r), _, _ = run_both(LongDivMod, [a, b, np.zeros(n, np.int64), np.zeros(n, np.int64)])
    assert list(zip(q.tolist(), r.tolist())) == [floor_divmod(x, y, 64) for x, y in pairs]


@pytest.mark.compiler
@HYPO
@given(st.integers(0, 24).flatmap(lambda n: st.tuples(hnp.arrays(np.uint16, n), hnp.arrays(np.uint16, n))),
       st.floats(-8, 8, width=32))
def test_hypothesis_half_axpy(xy, a):
    x, y = xy[0].view(np.float16), xy[1].view(np.float16)     # every bit pattern: NaNs, infs, subnormals
    (_, out, _), _, _ = run_both(HalfAxpy, [x, y, arr([a])])
    with np.errstate(all="ignore"):
        ref = (f32(a) * x.astype(F32) + y.astype(F32)).astype(np.float16)
    nan = np.isnan(ref)
    assert out[~nan].tobytes() == ref[~nan].tobytes() and np.isnan(out[nan]).all()


@pytest.mark.compiler
@HYPO
@given(st.lists(f32_arrays(8, min_value=-1e6, max_value=1e6), max_size=6))
def test_hypothesis_vectorlist_rows(rows):
    (_, out), _, _ = run_both(RowSums, [rows, np.zeros(len(rows), F32)])
    ref = []
    for row in rows:
        s = f32(0)
        for v in row:
            s = f32(s + v)
        ref.append(s)
    assert out.tobytes() == arr(ref).tobytes()


@pytest.mark.compiler
@HYPO
@given(f32_arrays(40), st.floats(-3, 3, width=32), st.integers(1, 8))
def test_hypothesis_multivertex(data, k, workers):
    (out, _), _, _ = run_both(MultiScale, [data, arr([k])], num_workers=workers)
    with np.errstate(all="ignore"):
        assert out.tobytes() == (data * f32(k)).tobytes()


@pytest.mark.compiler
@HYPO
@given(hnp.arrays(F32, st.integers(0, 20), elements=st.floats(-10, 10, width=32) | st.just(float("nan"))),
       st.floats(-10, 10, width=32))
def test_hypothesis_while_break_continue(x, limit):
    (_, _, out, skipped), _, _ = run_both(FirstAbove, [x, arr([limit]), arr([0], I32), arr([0], I32)])
    found, skip = -1, 0
    for i, v in enumerate(x):
        if v != v:
            skip += 1
            continue
        if v > limit:
            found = i
            break
    assert (out[0], skipped[0]) == (found, skip)


# ==== random programs: compiled == interpreted, index errors included =============================
_LEAVES = ["a", "b", "x", "y", "u", "w", "f", "self.ia[0]", "self.fa[(a + b) % 4]", "self.ia[int(x) % 3]", "3", "-7",
           "2.5", "0.1", "0", "1e10", "2147483647", "True", "math.pi"]
_FUNCS = ["abs", "int", "float", "bool", "round", "math.floor", "math.ceil", "math.exp", "math.sqrt", "math.log",
          "math.tanh", "math.fabs", "np.uint32", "np.int64"]


def _random_expr(r, depth):
    if depth == 0 or r.random() < 0.2:
        return r.choice(_LEAVES)
    k, sub = r.random(), (lambda: _random_expr(r, depth - 1))
    if k < 0.35:
        op = r.choice(["+", "-", "*", "/", "//", "%"])
        return f"({sub()} {op} {sub()})"
    if k < 0.45:
        return f"(int({sub()}) {r.choice(['&', '|', '^', '<<', '>>'])} int({sub()}))"
    if k < 0.5:
        return f"({sub()} ** {r.choice(['2', '3', '0.5', '-1'])})"
    if k < 0.6:
        return f"({sub()} {r.choice(['<', '<=', '>', '>=', '==', '!='])} {sub()})"
    if k < 0.68:
        return f"({sub()} {r.choice(['and', 'or'])} not {sub()})"
    if k < 0.76:
        return f"({sub()} if {sub()} else {sub()})"
    if k < 0.84:
        return f"{r.choice(['min', 'max'])}({sub()}, {sub()})"
    if k < 0.9:
        return f"({sub()} < {sub()} <= {sub()})"
    return f"{r.choice(_FUNCS)}({sub()})"


def _random_module(seed, count):
    import random
    r = random.Random(seed)
    out = ["import math", "import numpy as np", "import popsim", "from popsim import *", ""]
    for n in range(count):
        out += [f"class R{n}(Vertex):", "    ia: Input[Vector[int]]", "    fa: Input[Vector[float]]",
                "    u: popsim.UNSIGNED_INT", "    w: popsim.LONGLONG", "    f: bool", "    fo: Output[Vector[float]]",
                "    io: Output[Vector[int]]", "    uo: Output[Vector[popsim.UNSIGNED_INT]]",
                "    bo: Output[Vector[bool]]",
                "    def compute(self):",
                "        a, b, x, y = self.ia[0], self.ia[1], self.fa[0], self.fa[2]",
                "        u, w, f = self.u, self.w, self.f"]
        for k in range(4):
            e = _random_expr(r, 4)
            if r.random() < 0.3:
                out += [f"        t{k} = {e}", f"        t{k} += {_random_expr(r, 2)}"]
                e = f"t{k}"
            out += [f"        self.{o}[{k}] = {e}" for o in ("fo", "io", "uo", "bo")]
        out.append("")
    return "\n".join(out)


@pytest.mark.compiler
def test_random_programs_agree_bit_for_bit(tmp_path):
    path = tmp_path / "random_vertices.py"
    path.write_text(_random_module(2024, 40))
    spec = importlib.util.spec_from_file_location("random_vertices", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["random_vertices"] = module
    spec.loader.exec_module(module)
    types = vertex_types_from_classes([getattr(module, f"R{n}") for n in range(40)])
    rng = np.random.default_rng(5)
    pool = np.concatenate([arr([0.0, -0.0, 1.5, -2.25, 1e30, -1e-30, np.inf, -np.inf, np.nan, 3.0, 0.1]),
                           np.array([0xFFC00000, 0x7FC00123], np.uint32).view(F32)])
    errors = 0
    for t in types:
        for _ in range(8):
            values = [rng.choice(arr([0, 1, -1, 2, 7, -2 ** 31, 2 ** 31 - 1, -100], I32), 2), rng.choice(pool, 3),
                      arr([rng.choice([0, 1, 2 ** 32 - 1])], np.uint32), arr([rng.choice([0, -1, 2 ** 62])], np.int64),
                      arr([rng.random() < 0.5], bool), np.zeros(4, F32), np.zeros(4, I32), np.zeros(4, np.uint32),
                      np.zeros(4, bool)]
            cv, iv = clone(values), clone(values)
            ret, ctx = run_compiled(t, cv)
            try:
                ok, cycles = run_interpreted(t, iv)
            except popsim.IndexError as e:
                assert ret == -1
                name = t.fields[ctx.error_field].name
                assert (f"index {ctx.error_index} is out of range for field '{name}' of size {ctx.error_size} "
                        f"(") in str(e) and f"at line {ctx.error_line} " in str(e)
                errors += 1
            else:
                assert ok == (ret == 1) and cycles == ctx.cycles
            assert_same(cv, iv)
    assert errors > 10


# ==== CodeletSyntaxError ============================================================================
HEADER = "import math\nimport popsim\nfrom popsim import *\nLIMIT = 'text'\n\n"
_counter = itertools.count()


def load_vertex(tmp_path, body, fields=("in_: Input[Vector[float]]", "out: Output[Vector[float]]", "k: float"),
                base="Vertex", params="self"):
    """Write a module with one vertex class; returns (class, line of compute's first
    body statement)."""
    lines = [f"class V({base}):"] + [f"    {f}" for f in fields] + [f"    def compute({params}):"]
    first = HEADER.count("\n") + len(lines) + 1
    source = HEADER + "\n".join(lines) + "\n" + textwrap.indent(textwrap.dedent(body).strip("\n"), " " * 8) + "\n"
    path = tmp_path / f"vmod{next(_counter)}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module.V, first


SYNTAX_ERRORS = [
    ("try:\n    x = 1\nexcept Exception:\n    pass", 0, "'try' is not supported in vertex codelets", "return False"),
    ("self.out[0] = [x * 2 for x in self.in_]", 0, "comprehensions are not supported", "for loop"),
    ("self.in_[0] = 1.0", 0, "field 'in' is an Input and cannot be written", "InOut"),
    ("if self.k > 0:\n    y = 1.0\nself.out[0] = y", 2, "local variable 'y' may be read before it is assigned",
     "on every path"),
    ("self.out[0] = zz + 1", 0, "name 'zz' is not defined", "module level"),
    ("self.out[0] = sorted(3)", 0, "calling 'sorted' is not supported in vertex code", "math.*"),
    ("for x in 5:\n    pass", 0, "for-loops in vertex code cannot run over '5'", "range"),
    ("for a in zip(self.in_, self.in_):\n    pass", 0, "for-loops cannot run over zip(...)", "enumerate"),
    ("x = self.out[0]", 0, "field 'out' is an Output: reading it gives undefined values", "InOut"),
    ("self.out[0] = self.in_[1.5]", 0, "an index must be an integer, found a float", "int(...)"),
    ("self.out[0] = self.in_[-1]", 0, "negative indices do not wrap around", "len(self.a) - 1"),
    ("self.out[0] = self.in_[1:3]", 0, "slicing is not supported", "loop"),
    ("while self.k > 0:\n    break\nelse:\n    pass", 3, "'else' on loops is not supported", "flag"),
    ("with open('f') as f:\n    pass", 0, "'with' is not supported", None),
    ("f = lambda v: v", 0, "lambda is not supported", None),
    ("import os", 0, "'import' is not supported inside compute", "top of the file"),
    ("assert self.k > 0", 0, "'assert' is not supported", "return False"),
    ("raise ValueError('x')", 0, "'raise' is not supported", "return False"),
    ("self.out[0] = self.nope", 0, "has no field 'nope'", "declare it"),
    ("self.k = 2.0", 0, "state field 'k' is read-only", "InOut"),
    ("r = self.in_\nr = self.out", 1, "a local keeps one type for its whole life", "different name"),
    ("x = self.in_.sum()", 0, "has no methods in vertex code", "loop"),
    ("if self.k:\n    pass\nelif self.k > 1:\n    x = 1\nx += math", 4, "'math' is a module", None),
    ("x = 'abc'", 0, "strings can only be printed", "print"),
    ("x = 1.0 in self.in_", 0, "'in' is not supported", "loop"),
    ("x = self.k & 1", 0, "bitwise operator & needs integers or bools", "int(...)"),
    ("for i in range(self.k):\n    pass", 0, "a range() argument must be an integer", "int(...)"),
    ("print(1, file=None)", 0, "print(file=...) is not supported", None),
    ("global LIMIT", 0, "'global' is not supported", "module-level constants"),
    ("x = [1, 2]", 0, "lists, tuples, sets and dicts cannot be created", "scalar locals"),
    ("a, b = 1", 0, "unpacking is only supported from a tuple", None),
    ("for i in range(0, 4, 0):\n    pass", 0, "range() step must not be zero", None),
    ("x = LIMIT", 0, "'LIMIT' is a str: only numbers", None),
    ("print(f'{self.k:>5}')", 0, "format spec ':>5' is not supported", "precision"),
    ("x = self", 0, "'self' can only be used to reach fields", None),
    ("x = range(3)", 0, "range() can only be used in a for statement", "for i in range"),
    ("x = print(1)", 0, "print() is a statement in vertex code", None),
    ("def helper():\n    pass", 0, "functions cannot be defined inside compute", "inline"),
    ("x = self.k @ self.k", 0, "matrix product operator @ is not supported", "loops"),
    ("x = self.k is None", 0, "'is' is not supported", "=="),
    ("self.out = 1.0", 0, "field 'out' is a vector edge: assign its elements", "self.out[i]"),
    ("x = (y := 2)", 0, "assignment expressions (:=) are not supported", "separate line"),
    ("x: str = 'a'", 0, "'str' is not a type for a local", "float, int, bool"),
    ("x = len(self.k)", 0, "field 'k' is a scalar: it has no len()", None),
    ("for a, b in self.in_:\n    pass", 0, "the loop variable must be a name", None),
    ("x = self.in_ + 1", 0, "vector field 'in' is not a number", "index it"),
    ("x = math.gamma(self.k)", 0, "calling 'math.gamma' is not supported", "math.*"),
    ("x = self.k\nx = self.in_", 1, "local 'x' holds a float (32-bit) number", "different name"),
    ("x = 1180591620717411303424", 0, "does not fit in 64 bits", None),
    ("self.out[0, 1] = 1.0", 0, "multi-dimensional indexing", "a[i][j]"),
    ("x = self.num_workers", 0, "num_workers is a method", "self.num_workers()"),
    ("x = round(self.k, 2)", 0, "round() with a number of digits is not supported", None),
    ("math.exp(1.0)", 0, "this expression's value is not used", None),
    ("del x", 0, "'del' is not supported", None),
    ("x = self.in_.size", 0, "'self.in_' has no attribute 'size' in vertex code", "len(...)"),
    ("_p_x = 1", 0, "names starting with _p_ are reserved", "rename"),
]


@pytest.mark.parametrize("body, line, message, fix", SYNTAX_ERRORS, ids=[m for _, _, m, _ in SYNTAX_ERRORS])
def test_codelet_syntax_errors(tmp_path, body, line, message, fix):
    cls, first = load_vertex(tmp_path, body)
    with pytest.raises(popsim.CodeletSyntaxError) as e:
        vertex_types_from_classes([cls])
    err = e.value
    assert isinstance(err, SyntaxError)
    assert message in str(err)
    if fix:
        assert "fix:" in str(err) and fix in str(err).split("fix:")[1]
    assert err.lineno == first + line
    assert err.filename.endswith(".py") and Path(err.filename).exists()
    assert err.text is not None and err.offset >= 9
    assert err.text.strip() in str(err) and "^" in str(err)


@pytest.mark.compiler
def test_module_of_vertices_through_the_registry(tmp_path):
    from popsim.codelet.registry import CodeletRegistry
    cls, _ = load_vertex(tmp_path, "for i in range(len(self.in_)):\n    self.out[i] = self.in_[i] * self.k")
    module = sys.modules[cls.__module__]
    found = CodeletRegistry().add(module)
    assert [t.name for t in found] == ["V"] and found[0].python_class is cls


def test_compute_signatures(tmp_path):
    cls, _ = load_vertex(tmp_path, "pass", base="MultiVertex", params="self")
    with pytest.raises(popsim.CodeletSyntaxError, match=r"MultiVertex.compute must take exactly \(self, worker_id\)"):
        vertex_types_from_classes([cls])
    cls, _ = load_vertex(tmp_path, "pass", params="self, w")
    with pytest.raises(popsim.CodeletSyntaxError, match=r"Vertex.compute must take exactly \(self\)"):
        vertex_types_from_classes([cls])


def test_source_must_be_available():
    namespace = {"Vertex": Vertex, "Output": Output}
    exec("class X(Vertex):\n    out: Output[float]\n    def compute(self):\n        self.out = 1.0\n", namespace)
    with pytest.raises(popsim.CodeletSyntaxError, match="cannot read the source"):
        vertex_types_from_classes([namespace["X"]])
