"""The supported subset of Python in vertex code, translated (popsim.codelet.translate)
and run compiled and interpreted, checked against numpy / plain-Python references:
both modes must agree bit for bit, outputs and cycle counts."""
import inspect
import math
import re
from pathlib import Path

import numpy as np
import pytest

import popsim
from popsim.codelet import pyruntime
from popsim.codelet.abi import run_compiled
from popsim.codelet.interpret import run_interpreted
from popsim.codelet.op_costs import CYCLES
from popsim.codelet.python_compile import translation_of
from popsim.codelet.typed_ir import T

from sample_vertices import (Accumulate, CNames, Casts, EveryUnaryMath, ClipScale, Dot, EdgeMax, Empty, Fails,
                             FirstAbove, FloatDivMod, FloatOps, FloatToHalf, HalfAxpy, HalfToFloat, IntDivMod, IntOps,
                             Logic, MathFns, Misc, MultiFails, MultiScale, Narrow, Ranges, RowSums, ScalarEdges, Sum,
                             SumHalf, Unsigned, Views, WideInts)
from vertex_harness import F32, I32, arr, clip_reference, clone, f32, floor_divmod, run_both, vt


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
def test_every_unary_math_function_is_libm_in_double_rounded_to_float_in_both_modes():
    """The runtime's list (pyruntime.UNARY_MATH, and its C twin POPSIM_PY_MATH1 in
    popsim_python_runtime.h) against a vertex calling each, compiled and interpreted."""
    source = inspect.getsource(EveryUnaryMath)
    assert tuple(re.findall(r"math\.(\w+)\(x\)", source)) == pyruntime.UNARY_MATH
    header = (Path(pyruntime.__file__).parent / "include" / "popsim_python_runtime.h").read_text()
    assert set(re.findall(r"POPSIM_PY_MATH1\((\w+)\)", header)) - {"NAME"} == set(pyruntime.UNARY_MATH)
    x = arr([0.5, -0.25, 1e-7, 3.0, 0.0, -1e-30])
    out = [np.zeros(len(x), F32) for _ in pyruntime.UNARY_MATH]
    (_, got), _, _ = run_both(EveryUnaryMath, [x, out])
    for name, row in zip(pyruntime.UNARY_MATH, got):
        for v, g in zip(x, row):
            try:
                ref = f32(getattr(math, name)(float(v)))
            except ValueError:  # Python's math raises where libm gives NaN (log(-1)) or -inf (log(0))
                assert math.isnan(g) or math.isinf(g), (name, v, g)
                continue
            assert g == ref or (math.isnan(g) and math.isnan(ref)), (name, v, g, ref)


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
