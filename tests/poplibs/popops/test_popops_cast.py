"""popops cast and cast_with_output on the engine against numpy (C conversions: float to
integer truncates toward zero, to HALF rounds to nearest even), on tensors over tiles with
one region (Cast1D) and several (Cast2D), with PopLibs' estimators."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import popsim
from popsim import BOOL, FLOAT, HALF, INT, SHORT, UNSIGNED_CHAR, UNSIGNED_INT, popops, poputil
from popsim.popops.cast import cast1d_cycles, cast2d_cycles, cast_worker_cycles
from popsim.program import Sequence

from popops_harness import mapped, run, vertex_kinds


SOURCE = (np.arange(24).reshape(4, 6) - 11.5) * 1.37  # negative and positive fractions


@pytest.mark.parametrize("src,dst", [(FLOAT, HALF), (HALF, FLOAT), (FLOAT, INT), (HALF, INT), (FLOAT, UNSIGNED_INT),
                                     (INT, FLOAT), (INT, HALF), (FLOAT, BOOL), (BOOL, FLOAT), (INT, SHORT),
                                     (INT, UNSIGNED_CHAR), (UNSIGNED_INT, FLOAT)],
                         ids=lambda t: t.name)
def test_cast_against_numpy(g, small_device, src, dst):
    a = mapped(g, src, "a")
    prog = Sequence()
    out = popops.cast(g, a, dst, prog)
    values = SOURCE if src in (FLOAT, HALF) else np.round(SOURCE * 1000)
    if src == UNSIGNED_INT:
        values = np.abs(values) * 1000
    values = values.astype(src.numpy) if src != BOOL else (np.arange(24).reshape(4, 6) % 3 == 0)
    engine, (got,) = run(g, small_device, prog, [out], {a: values})
    if dst == BOOL:
        expected = values != 0
    elif src in (FLOAT, HALF) and dst not in (FLOAT, HALF):
        limits = np.iinfo(dst.numpy)  # truncated toward zero, saturating at the type's limits
        expected = np.clip(np.trunc(values.astype(np.float32)), limits.min, limits.max).astype(dst.numpy)
    else:
        expected = values.astype(dst.numpy)  # numpy's int narrowing wraps, float rounding is to nearest even
    assert got.dtype == dst.numpy
    np.testing.assert_array_equal(got, expected)
    assert g.get_tile_mapping(out) == g.get_tile_mapping(a)
    kinds = vertex_kinds(engine)
    assert kinds[f"popops::Cast1D<{src.cpp},{dst.cpp}>"]["instances"] == 2  # tiles 0 and 3: one region
    assert kinds[f"popops::Cast2D<{src.cpp},{dst.cpp}>"]["instances"] >= 2


def test_cast_rounds_half_to_nearest_even_and_truncates_negative_floats(g, small_device):
    a = g.add_variable(FLOAT, (6,), "a")
    g.set_tile_mapping(a, 0)
    prog = Sequence()
    h, i = popops.cast(g, a, HALF, prog), popops.cast(g, a, INT, prog)
    values = np.array([1 + 2 ** -11, 1 + 3 * 2 ** -11, -2.7, 2.7, -0.5, 65520.0], np.float32)
    _, (got_h, got_i) = run(g, small_device, prog, [h, i], {a: values})
    with np.errstate(over="ignore"):  # 65520 rounds up to inf in fp16
        np.testing.assert_array_equal(got_h, values.astype(np.float16))  # ties to even
    np.testing.assert_array_equal(got_i, [1, 1, -2, 2, 0, 65520])


def test_cast_to_same_type_and_int_unsigned_is_a_copy(g, small_device):
    a = mapped(g, INT, "a")
    prog = Sequence()
    same, u = popops.cast(g, a, INT, prog), popops.cast(g, a, UNSIGNED_INT, prog)
    assert g.num_vertices == 0  # Copies, as in PopLibs
    values = np.arange(24, dtype=np.int32).reshape(4, 6) - 12
    _, (got_s, got_u) = run(g, small_device, prog, [same, u], {a: values})
    np.testing.assert_array_equal(got_s, values)
    np.testing.assert_array_equal(got_u, values.view(np.uint32))


def test_cast_with_output(g, small_device):
    a, out = mapped(g, HALF, "a"), mapped(g, FLOAT, "out")
    prog = Sequence()
    popops.cast_with_output(g, a, out, prog)
    values = SOURCE.astype(np.float16)
    _, (got,) = run(g, small_device, prog, [out], {a: values})
    np.testing.assert_array_equal(got, values.astype(np.float32))


@settings(max_examples=8, deadline=None)
@given(st.lists(st.integers(1, 9), min_size=1, max_size=3), st.sampled_from([(FLOAT, HALF), (HALF, INT)]),
       st.integers(0, 2 ** 31))
def test_cast_over_linear_mappings(shape, types, seed):
    model = popsim.IPUModel("ipu2")
    model.tiles_per_ipu = 4
    device = model.create_device()
    graph = popsim.Graph(device)
    a = graph.add_variable(types[0], tuple(shape), "a")
    poputil.map_tensor_linearly(graph, a, 1, 1)
    prog = Sequence()
    out = popops.cast(graph, a, types[1], prog)
    values = (np.random.default_rng(seed).uniform(-100, 100, shape)).astype(types[0].numpy)
    _, (got,) = run(graph, device, prog, [out], {a: values})
    expected = values.astype(np.float16) if types[1] == HALF else np.trunc(values.astype(np.float32))
    np.testing.assert_array_equal(got, expected.astype(types[1].numpy))


def test_cast_estimators_match_the_reference_formulas(g, small_device):
    # PopLibs' cycle estimators, evaluated by hand
    assert cast_worker_cycles(FLOAT, HALF, 7) == 19 + 2 * 1 + (1 + 2) + (1 + 2)  # 7 = 4 + 0b11
    assert cast_worker_cycles(HALF, FLOAT, 5) == 19 + 1 * 2 + (1 + 2)
    assert cast_worker_cycles(FLOAT, INT, 5) == 19 + 2 * 5
    assert cast1d_cycles(FLOAT, HALF, 24, 6) == 12 + 6 * (19 + 2 * 1 + 1 + 1 + 18)
    assert cast2d_cycles(HALF, FLOAT, [2, 4]) == 5 + (11 + 19 + 1 + 1) + (11 + 19 + 2 + 1)
    # and the engine charges them: tile 0 holds [0, 4) as one region (Cast1D of 4 elements)
    a = mapped(g, FLOAT, "a")
    prog = Sequence()
    popops.cast(g, a, HALF, prog)
    engine, _ = run(g, small_device, prog, [], {})
    kinds = vertex_kinds(engine)
    tile0, tile3 = cast1d_cycles(FLOAT, HALF, 4, 6), cast1d_cycles(FLOAT, HALF, 6, 6)
    assert kinds["popops::Cast1D<float,half>"]["cycles"] == 6 * (-(-tile0 // 6)) + 6 * (-(-tile3 // 6))


def test_errors(g, small_device):
    a = mapped(g, FLOAT, "a")
    prog = Sequence()
    with pytest.raises(poputil.PoplibsError, match="popops.cast_with_output: the source tensor 'a'.*and the "
                                                   "destination tensor 'o'.*same shape"):
        popops.cast_with_output(g, a, g.add_variable(HALF, (3,), "o"), prog)
    with pytest.raises(poputil.PoplibsError, match="popops.cast: casting tensor 'a'.*to LONGLONG is not supported"):
        popops.cast(g, a, popsim.LONGLONG, prog)
    with pytest.raises(popsim.TypeError, match="popops.cast: dtype must be a popsim type"):
        popops.cast(g, a, "half", prog)
    with pytest.raises(poputil.PoplibsError, match="prog must be a popsim.Sequence"):
        popops.cast(g, a, HALF, None)
    assert g.num_vertices == 0
