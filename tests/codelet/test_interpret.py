"""Interpreted mode (popsim.codelet.interpret) against compiled mode: print() output,
breakpoint() on the user's line, and bit-for-bit equal results and cycle counts on
hypothesis-generated inputs and on random programs (index errors included); both modes
through the engine."""
import importlib.util
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import popsim
from popsim.codelet.abi import run_compiled
from popsim.codelet.interpret import run_interpreted
from popsim.codelet.python_compile import vertex_types_from_classes

import sample_vertices
from sample_vertices import (ClipScale, Dot, FirstAbove, HalfAxpy, IntDivMod, LongDivMod, MultiScale, Printer, RowSums,
                             Sum, WithBreakpoint)
from vertex_harness import F32, I32, arr, assert_same, clip_reference, clone, f32, floor_divmod, run_both, vt


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
    assert seen and seen[0][:3] == (sample_vertices.__file__, line, 2.5) and isinstance(seen[0][3], WithBreakpoint)
    assert out[0] == 2.5
    seen.clear()
    ret, _ = run_compiled(vt(WithBreakpoint), [out])        # a no-op when compiled
    assert ret == 1 and not seen


@pytest.mark.compiler
@pytest.mark.parametrize("mode", ["compiled", "interpreted"])
def test_engine_runs_python_vertices(monkeypatch, mode, run_and_read):
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
    got, = run_and_read(graph, device, popsim.program.Execute(cs), [s], {x: data})
    assert got.tolist() == [3.0, 11.0]



HYPO = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


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
