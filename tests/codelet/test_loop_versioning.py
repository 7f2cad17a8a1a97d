"""Loop versioning (popsim.codelet.loop_versioning): counted loops get a fast C body
without the index checks one test before the loop makes redundant, and without the
per-iteration cycle count; everything observable stays as the checked loop and the
interpreter have it: results, cycle counts, index errors (field, index, size, line, the
iteration they happen in, and the stores before them)."""
import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import popsim
from popsim.codelet import abi, compiler
from popsim.codelet.interpret import run_interpreted
from popsim.codelet.python_compile import translation_of, vertex_types_from_classes
from popsim.codelet.typed_ir import ForEach, ForRange, RowAt, walk_stmts

import loop_programs
from sample_vertices import Dot, MultiScale, Sum
from vertex_harness import F32, I32, arr, load_vertex, run_both, vt

pytestmark = pytest.mark.compiler

_modules = itertools.count()


def loops(cls):
    return [s for s in walk_stmts(translation_of(cls).function.body) if isinstance(s, (ForRange, ForEach))]


def compiled_and_interpreted(cls, values):
    """Both modes on copies of ``values``; returns (compiled values, ctx, interpreted
    values, the interpreted IndexError or None)."""
    (t,) = vertex_types_from_classes([cls])
    cv = [v.copy() for v in values]
    iv = [v.copy() for v in values]
    ret, ctx = abi.run_compiled(t, cv)
    try:
        run_interpreted(t, iv)
        error = None
    except popsim.IndexError as e:
        error = e
    return cv, (ret, ctx), iv, error


def test_the_benchmark_loop_runs_without_checks_or_per_iteration_counting():
    code = translation_of(Dot).c_code
    fast, slow = code.split("} else {")
    assert "popsim_py_fits_i(" in fast                       # one test before the loop ...
    assert "popsim_py_uld_f32(s1, (int64_t)(j_k0))" in fast   # ... then b[i] unchecked, a 64-bit index
    assert "cyc += 5u * (e_k0 - k0);" in fast                # counted once per chunk
    assert "popsim_py_ld_f32(s1" not in fast and "goto popsim_fail" not in fast
    assert "popsim_py_ld_f32(s1, (int64_t)(v_i), &E" in slow  # the checked loop is as before
    assert "cyc += 5u;" in slow and fast.count("if (*stop)") == 1 == slow.count("if (*stop)")
    (guarded,) = loops(Dot)
    assert [(g.view.field, g.low, g.high) for g in guarded.guards] == [(1, 0, 0)]


def test_a_short_vector_fails_at_the_same_iteration_after_the_same_stores(tmp_path):
    cls, first = load_vertex(tmp_path, """
        for i in range(len(self.a)):
            self.out[i] = self.a[i] * self.b[i]
        """, fields=("a: Input[Vector[float]]", "b: Input[Vector[float]]", "out: Output[Vector[float]]"))
    assert loops(cls)[0].guards
    a, b = arr([1, 2, 3, 4, 5]), arr([10, 20, 30])
    cv, (ret, ctx), iv, error = compiled_and_interpreted(cls, [a, b, np.zeros(5, F32)])
    assert ret == -1 and (ctx.error_field, ctx.error_index, ctx.error_size, ctx.error_line) == (1, 3, 3, first + 1)
    assert "index 3 is out of range for field 'b' of size 3" in str(error) and f"at line {first + 1} " in str(error)
    assert cv[2].tolist() == [10, 40, 90, 0, 0] == iv[2].tolist()
    cv, (ret, ctx), iv, error = compiled_and_interpreted(cls, [a, arr([1, 1, 1, 1, 1, 1]), np.zeros(5, F32)])
    assert ret == 1 and error is None and cv[2].tolist() == [1, 2, 3, 4, 5] == iv[2].tolist()


def test_constant_offsets_are_covered_by_one_guard(tmp_path):
    cls, first = load_vertex(tmp_path, """
        for i in range(len(self.out)):
            self.out[i] = self.a[i + 1] - self.a[i] + self.a[2 + i] * 0.0
        for i in range(1, len(self.a)):
            s = self.a[i - 1]
        """, fields=("a: Input[Vector[float]]", "out: Output[Vector[float]]"))
    first_loop, second_loop = loops(cls)
    assert [(g.view.field, g.low, g.high) for g in first_loop.guards] == [(0, 0, 2)]   # out: proven
    assert [(g.low, g.high) for g in second_loop.guards] == [(-1, -1)]
    a = arr([1, 4, 9, 16, 25])
    (_, out), cycles, ok = run_both(cls, [a, np.zeros(3, F32)])
    assert out.tolist() == np.diff(a)[:3].tolist()
    cv, (ret, ctx), iv, error = compiled_and_interpreted(cls, [a, np.zeros(4, F32)])
    assert (ret, ctx.error_index, ctx.error_size, ctx.error_line) == (-1, 5, 5, first + 1)
    assert "index 5 is out of range for field 'a' of size 5" in str(error)
    assert cv[1].tolist() == [3, 5, 7, 0] == iv[1].tolist()       # the iteration that failed stored nothing


def test_a_local_the_loop_does_not_change_is_a_base_its_guards_cover(tmp_path):
    # v[at + j], at computed by the enclosing loop (a block's first element, as popnn's
    # NormStatisticOp1D): one guard per view and base, tested before each inner loop.
    cls, first = load_vertex(tmp_path, """
        for blk in range(2):
            at = self.lo + blk * 3
            for j in range(3):
                self.out[at + j] = self.a[j + at] * 2.0 + self.a[at + j]
        """, fields=("a: Input[Vector[float]]", "out: Output[Vector[float]]", "lo: int"))
    outer, inner = loops(cls)
    assert sorted((g.view.field, g.low, g.high, g.base.name) for g in inner.guards) == [(0, 0, 0, "at"),
                                                                                        (1, 0, 0, "at")]
    fast = translation_of(cls).c_code.split("} else {")[0]
    assert "popsim_py_uld_f32(s0, (int64_t)((j_k1 + (int64_t)v_at)))" in fast
    a = arr(np.arange(8))
    (_, out, _), _, _ = run_both(cls, [a, np.zeros(8, F32), arr([1], I32)])
    assert out.tolist() == [0] + (np.arange(1, 7) * 3).tolist() + [0]
    # the second block reaches past a: the same error, after the same stores, in both modes
    cv, (ret, ctx), iv, error = compiled_and_interpreted(cls, [arr(np.arange(6)), np.zeros(8, F32), arr([1], I32)])
    assert (ret, ctx.error_field, ctx.error_index, ctx.error_size, ctx.error_line) == (-1, 0, 6, 6, first + 3)
    assert "index 6 is out of range for field 'a' of size 6" in str(error)
    assert cv[1].tolist() == [0, 3, 6, 9, 12, 15, 0, 0] == iv[1].tolist()
    # negative bases and bases at int32's ends (the guard's sums are 64-bit): checked, in both modes
    for lo, index in ((-1, -1), (2 ** 31 - 2, 2 ** 31 - 2), (-2 ** 31, -2 ** 31)):
        cv, (ret, ctx), iv, error = compiled_and_interpreted(cls, [a, np.zeros(8, F32), arr([lo], I32)])
        assert (ret, ctx.error_index) == (-1, index) and f"index {index} is out of range" in str(error)
        assert cv[1].tolist() == iv[1].tolist()


def test_indices_that_would_wrap_around_take_the_checked_loop(tmp_path):
    cls, first = load_vertex(tmp_path, """
        s = 0.0
        for i in range(self.lo, self.hi):
            s += self.a[i + 2]
        for u in range(self.ulo, self.uhi):
            s += self.a[u + 2]
        self.out[0] = s
        """, fields=("a: Input[Vector[float]]", "out: Output[Vector[float]]", "lo: int", "hi: int",
                     "ulo: popsim.UNSIGNED_INT", "uhi: popsim.UNSIGNED_INT"))
    assert all(loop.guards for loop in loops(cls))

    def values(lo, hi, ulo, uhi):
        return [arr([1, 10, 100]), np.zeros(1, F32), arr([lo], I32), arr([hi], I32), arr([ulo], np.uint32),
                arr([uhi], np.uint32)]
    # uint32: u + 2 wraps to 0 and 1, valid indices in both modes
    (_, out, *_), _, _ = run_both(cls, values(0, 0, 2 ** 32 - 2, 2 ** 32 - 1))
    assert out[0] == 1
    # int32: i + 2 wraps to a negative index: the same error in both modes
    cv, (ret, ctx), iv, error = compiled_and_interpreted(cls, values(2 ** 31 - 2, 2 ** 31 - 1, 0, 0))
    assert (ret, ctx.error_index, ctx.error_line) == (-1, -2 ** 31, first + 2)
    assert f"index {-2 ** 31} is out of range for field 'a' of size 3" in str(error)
    (_, out, *_), _, _ = run_both(cls, values(-2, 1, 0, 1))
    assert out[0] == 1 + 10 + 100 + 100


def test_hoisted_cycles_are_the_cost_tables_for_every_length():
    for n in (0, 1, 5, 16384, 40000):      # 40000: three polling chunks
        (_, _), cycles, _ = run_both(Sum, [np.ones(n, F32), np.zeros(1, F32)])
        assert cycles == 6 + 2 + n * (1 + 1 + 1) + 1    # the documented example
    ret, ctx = abi.run_compiled(vt(Sum), [np.ones(50, F32), np.zeros(1, F32)], interrupted=True)
    assert (ret, ctx.error, ctx.cycles) == (-1, abi.INTERRUPTED, 6 + 2)  # stopped before the first chunk


def test_what_keeps_the_checks_or_the_per_iteration_count(tmp_path):
    cls, _ = load_vertex(tmp_path, """
        v = self.in_
        for i in range(len(self.out)):
            self.out[i] = v[i]
            i += 1
        for i in range(len(self.in_)):
            self.out[i] = v[i]
            v = self.in_
        for i in range(len(self.out)):
            if self.in_[i] > self.k:
                break
        for x in self.in_:
            self.out[0] = x
        """)
    assigned, reassigned_view, breaks, each = loops(cls)
    assert assigned.fast is None                            # the loop variable changes: checked, counted
    assert [g.view.field for g in reassigned_view.guards] == [1]   # out only: v changes in the body
    assert breaks.guards and breaks.hoisted == 0            # a break: counted per iteration
    assert each.fast is None                                # a checked store: counted per iteration


def test_rows_and_enclosing_loop_variables(tmp_path):
    cls, first = load_vertex(tmp_path, """
        s = 0.0
        for r in range(len(self.in_)):
            for j in range(len(self.out)):
                s += self.rows[r][j] + self.in_[r]
        self.out[0] = s
        """, fields=("in_: Input[Vector[float]]", "rows: Input[VectorList[float]]", "out: Output[Vector[float]]"))
    outer, inner = loops(cls)[:2]
    assert isinstance(inner.guards[0].view, RowAt) and "popsim_py_row_size(s1" in translation_of(cls).c_code
    assert [g.view.field for g in outer.guards] == [1]      # rows[r] inside the inner loop, both versions
    rows = [arr([1, 2]), arr([3, 4]), arr([5])]
    (_, _, out), cycles, _ = run_both(cls, [arr([0, 0]), rows, np.zeros(2, F32)])
    assert out[0] == 10
    cv, (ret, ctx), iv, error = compiled_and_interpreted(cls, [arr([0, 0, 0]), rows, np.zeros(2, F32)])
    assert (ret, ctx.error_field, ctx.error_index, ctx.error_size, ctx.error_line) == (-1, 1, 1, 1, first + 3)
    assert "index 1 is out of range for field 'rows' of size 1" in str(error)


def test_multivertex_strided_loops_are_versioned():
    (loop,) = loops(MultiScale)
    assert [(g.view.field, g.low, g.high) for g in loop.guards] == [(0, 0, 0)]
    assert loop.hoisted == 5            # iteration, two loads, a multiplication, a store
    data = arr(np.arange(13))
    (out, _), _, _ = run_both(MultiScale, [data, arr([2])], num_workers=4)
    assert out.tolist() == (np.arange(13) * 2).tolist()


# -- the guard arithmetic (codelet/include/popsim_python_runtime.h) -------------------------
_GUARDS = r"""
#include "popsim_python_runtime.h"
int fits_i(int64_t lo, int64_t hi, int64_t low, int64_t high, int64_t max, uint64_t size) {
  return popsim_py_fits_i(lo, hi, low, high, max, size);
}
int fits_u(uint64_t lo, uint64_t hi, int64_t low, int64_t high, uint64_t max, uint64_t size) {
  return popsim_py_fits_u(lo, hi, low, high, max, size);
}
"""


@pytest.fixture(scope="module")
def guards():
    import ctypes
    lib = ctypes.CDLL(str(compiler.compile_library({"guards.c": _GUARDS}, "c", "guard_tests")))
    i64, u64 = ctypes.c_int64, ctypes.c_uint64
    lib.fits_i.argtypes = [i64, i64, i64, i64, i64, u64]
    lib.fits_u.argtypes = [u64, u64, i64, i64, u64, u64]
    return lib


_MAXES = {"i32": 2 ** 31 - 1, "i64": 2 ** 63 - 1, "u32": 2 ** 32 - 1, "u64": 2 ** 64 - 1}


@st.composite
def guard_cases(draw):
    ty = draw(st.sampled_from(sorted(_MAXES)))
    top = _MAXES[ty]
    bottom = -top - 1 if ty.startswith("i") else 0
    near = st.one_of(st.integers(bottom, top), st.integers(-5, 20).map(lambda d: max(bottom, min(top, top - d))),
                     st.integers(bottom, bottom + 20), st.integers(0, 20))
    lo, hi = sorted([draw(near), draw(near)])
    offset = st.one_of(st.integers(-5, 5), st.integers(-2 ** 31 + 1, 2 ** 31 - 1))
    low, high = sorted([draw(offset), draw(offset)])
    size = draw(st.one_of(st.integers(0, 40), st.integers(0, 2 ** 64 - 1), st.just(max(0, hi + high + 1))))
    return ty, lo, hi, low, high, top, min(size, 2 ** 64 - 1)


@given(guard_cases())
@settings(max_examples=400, deadline=None)
def test_guards_hold_exactly_when_every_index_is_valid_and_nothing_wraps(guards, case):
    ty, lo, hi, low, high, top, size = case
    fits = guards.fits_i if ty.startswith("i") else guards.fits_u
    expected = lo + low >= 0 and hi + high <= top and hi + high < size
    assert bool(fits(lo, hi, low, high, top, size)) == expected


# -- random loop programs, compiled against interpreted ---------------------------------------
# Each example compiles a library of 5 vertices (about 1.5 s): the default run draws 3 (the
# seeded test below covers 60 programs), the slow run 40.
_LOOP_HEALTH = [HealthCheck.too_slow, HealthCheck.data_too_large]


@given(st.data())
@settings(max_examples=3, deadline=None, suppress_health_check=_LOOP_HEALTH)
def test_random_loop_programs_agree_in_both_modes(tmp_path_factory, data):
    _random_loop_programs_agree(tmp_path_factory, data)


@pytest.mark.slow
@given(st.data())
@settings(max_examples=40, deadline=None, suppress_health_check=_LOOP_HEALTH)
def test_many_random_loop_programs_agree_in_both_modes(tmp_path_factory, data):
    _random_loop_programs_agree(tmp_path_factory, data)


def _random_loop_programs_agree(tmp_path_factory, data):
    ch = loop_programs.DrawChoices(data.draw)
    sources = [loop_programs.program(ch, f"L{k}") for k in range(5)]
    classes = loop_programs.load_classes(tmp_path_factory.mktemp("loops"), sources, f"loops_h{next(_modules)}")
    for t in vertex_types_from_classes(classes):
        for _ in range(3):
            loop_programs.run_both_modes(t, loop_programs.values(ch))


def test_seeded_random_loop_programs_agree_and_exercise_versioning(tmp_path):
    ch = loop_programs.RandomChoices(7)
    classes = loop_programs.load_classes(tmp_path, [loop_programs.program(ch, f"L{k}") for k in range(60)],
                                         f"loops_s{next(_modules)}")
    outcomes = []
    for t in vertex_types_from_classes(classes):
        outcomes += [loop_programs.run_both_modes(t, loop_programs.values(ch)) for _ in range(4)]
    versioned = [s for cls in classes for s in loops(cls) if getattr(s, "guards", None)]
    hoisted = [s for cls in classes for s in loops(cls) if s.hoisted]
    assert len(versioned) >= 40 and len(hoisted) >= 40
    assert outcomes.count("ok") >= 60 and outcomes.count("error") >= 60
