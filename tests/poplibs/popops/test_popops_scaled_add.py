"""popops scaled_add_to and scaled_subtract_from, one- and two-scale forms, with number
and tensor scales, on the engine against numpy; vertex names and PopLibs' estimators."""
import numpy as np
import pytest

from popsim import FLOAT, HALF, INT, UNSIGNED_INT, popops, poputil
from popsim.popops import scaled_add_vertices as sav
from popsim.program import Sequence

from popops_harness import mapped, run


def scalar(g, dtype, name, tile=0):
    s = g.add_variable(dtype, (), name)
    g.set_tile_mapping(s, tile)
    return s


A = np.arange(24).reshape(4, 6) - 7
B = (2 * np.arange(24).reshape(4, 6)) % 5 - 1


# (call, numpy reference of the new a): scales 3 and 2 as numbers (const) or tensors s3, s2
CASES = {
    "add": (lambda g, a, b, s: popops.scaled_add_to(g, a, b, s[3], s["prog"]), lambda a, b: a + 3 * b),
    "add_ab": (lambda g, a, b, s: popops.scaled_add_to(g, a, s[2], b, s[3], s["prog"]), lambda a, b: 2 * a + 3 * b),
    "sub": (lambda g, a, b, s: popops.scaled_subtract_from(g, a, b, s[3], s["prog"]), lambda a, b: a - 3 * b),
    "sub_ab": (lambda g, a, b, s: popops.scaled_subtract_from(g, a, s[2], b, s[3], s["prog"]),
               lambda a, b: 2 * a - 3 * b),
}


@pytest.mark.parametrize("dtype", [FLOAT, HALF, INT, UNSIGNED_INT], ids=lambda t: t.name)
@pytest.mark.parametrize("tensor_scales", [False, True], ids=["numbers", "tensors"])
def test_scaled_arithmetic_against_numpy(g, small_device, dtype, tensor_scales):
    prog = Sequence()
    b = mapped(g, dtype, "b")
    s = {"prog": prog, 2: 2, 3: 3}
    if tensor_scales:
        s[2], s[3] = scalar(g, dtype, "s2", 1), scalar(g, dtype, "s3", 2)
    accumulators = {}
    for case, (call, _) in CASES.items():
        accumulators[case] = mapped(g, dtype, case)
        call(g, accumulators[case], b, s)
    a_values = np.abs(A) if dtype == UNSIGNED_INT else A
    b_values = np.abs(B) if dtype == UNSIGNED_INT else B
    writes = {t: a_values for t in accumulators.values()}
    writes[b] = b_values
    if tensor_scales:
        writes.update({s[2]: 2, s[3]: 3})
    _, got = run(g, small_device, prog, list(accumulators.values()), writes)
    for (case, (_, reference)), result in zip(CASES.items(), got):
        expected = reference(a_values.astype(np.int64), b_values.astype(np.int64)).astype(dtype.numpy)
        np.testing.assert_array_equal(result, expected, err_msg=case)


def test_fractional_scales_and_b_of_another_type(g, small_device):
    a, b = mapped(g, FLOAT, "a"), mapped(g, HALF, "b")
    h, hb = mapped(g, HALF, "h"), mapped(g, HALF, "hb")
    prog = Sequence()
    popops.scaled_add_to(g, a, b, 0.1, prog)          # b cast to FLOAT first
    popops.scaled_add_to(g, h, hb, 0.1, prog)         # 0.1 is not a half: a FLOAT scale
    av, bv = (A * 0.25).astype(np.float32), (B * 0.5).astype(np.float16)
    engine, (got_a, got_h) = run(g, small_device, prog, [a, h], {a: av, b: bv, h: av.astype(np.float16), hb: bv})
    np.testing.assert_array_equal(got_a, av + np.float32(0.1) * bv.astype(np.float32))
    expected_h = (av.astype(np.float16).astype(np.float32) + np.float32(0.1) * bv.astype(np.float32))
    np.testing.assert_array_equal(got_h, expected_h.astype(np.float16))
    names = {v["name"] for v in engine.get_report().to_dict()["execution"]["vertex_types"]}
    assert "popops::ScaledAdd2D<half,half,float,true,false>" in names
    assert "popops::Cast1D<half,float>" in names


def test_vertex_names_and_estimates(g, small_device):
    a, b = mapped(g, FLOAT, "a"), mapped(g, FLOAT, "b")
    s = scalar(g, FLOAT, "s")
    prog = Sequence()
    popops.scaled_add_to(g, a, b, 0.5, prog)
    popops.scaled_subtract_from(g, a, b, s, prog)
    engine, _ = run(g, small_device, prog, [], {})
    kinds = {v["name"]: v for v in engine.get_report().to_dict()["execution"]["vertex_types"]}
    sup = "popops::ScaledAddSupervisor<float,float,float,true,false>"
    assert kinds[sup]["instances"] == 2  # tiles 0 and 3 hold one region each
    assert kinds["popops::ScaledAdd2D<float,float,float,true,false>"]["instances"] >= 2
    assert "popops::ScaledSubtractSupervisor<float,float,float,false>" in kinds
    assert "popops::ScaledSubtract2D<float,float,false>" in kinds
    vw = g.target.vector_width  # FLOAT 2, HALF 4
    # PopLibs' cycle estimators by hand: float, n = 4 (tile 0): 2 vectors, no remainder,
    # 0 vectors per worker, 2 left over: supervisor 21 + 11 + 7 + 12, worker 2 the
    # remainder worker: 15 + 2 + 1 + 1 = 19; total 51 + 6 * 19
    assert sav.supervisor_cycles("add", FLOAT, True, 4, 6, vw(FLOAT)) == 51 + 6 * 19
    # n = 6 (tile 3): 3 vectors, worker 3 takes the (empty) tail: the same figure
    assert sav.supervisor_cycles("add", FLOAT, True, 6, 6, vw(FLOAT)) == 51 + 6 * 19
    per_worker = -(-(51 + 6 * 19) // 6)
    assert kinds[sup]["cycles"] == 2 * 6 * per_worker
    # n = 100 half: 25 vectors, 4 per worker, 1 left: worker 15 + 6 + 3*3 + 2 (+1 for wid 1) + 1
    assert sav.supervisor_cycles("add", HALF, True, 100, 6, vw(HALF)) == 21 + 11 + 7 + 12 + 6 * (15 + 6 + 9 + 2 + 1 + 1)
    # a tensor scale to subtract: + 7 + 6 on the supervisor
    assert sav.supervisor_cycles("subtract", FLOAT, False, 4, 6, vw(FLOAT)) == 51 + 13 + 6 * 19
    assert sav.supervisor_cycles("add", INT, True, 7, 6, vw(INT)) == 53 + 26 * 2 + 6 + 26 + 8
    # 2D: 9 + per region 15 + (5 if vectors) + 3 per vector + float tail 7
    assert sav.two_d_cycles("add", FLOAT, True, [2, 5], vw(FLOAT)) == 9 + (15 + 5 + 3) + (15 + 5 + 6 + 7)
    assert sav.two_d_cycles("add", HALF, False, [7], vw(HALF)) == 10 + 15 + 5 + 3 + 4 + 6 + 7
    assert sav.two_d_cycles("axpby", HALF, True, [4], vw(HALF)) == 13 + 15 + 5 + 3
    assert sav.two_d_cycles("subtract", INT, False, [3], vw(INT)) == 8 + 7 + 15 + 2


def test_errors(g, small_device):
    a, b = mapped(g, FLOAT, "a"), mapped(g, FLOAT, "b")
    prog = Sequence()
    with pytest.raises(poputil.PoplibsError, match="popops.scaled_add_to: tensor 'a'.*and tensor 'w'.*same shape"):
        popops.scaled_add_to(g, a, g.add_variable(FLOAT, (6,), "w"), 1.0, prog)
    with pytest.raises(poputil.PoplibsError, match="the scales must both be numbers or both be scalar tensors"):
        popops.scaled_add_to(g, a, 1.0, b, scalar(g, FLOAT, "s"), prog)
    with pytest.raises(poputil.PoplibsError, match="the scale of b must be a scalar tensor .one element., found "
                                                   "tensor 'v'"):
        popops.scaled_subtract_from(g, a, b, g.add_variable(FLOAT, (2,), "v"), prog)
    with pytest.raises(poputil.PoplibsError, match="the scale of b 0.5 is not a whole number, which INT data"):
        popops.scaled_add_to(g, mapped(g, INT, "i"), mapped(g, INT, "j"), 0.5, prog)
    with pytest.raises(poputil.PoplibsError, match="accumulated tensor a tensor 'c'.*contains constants"):
        popops.scaled_add_to(g, g.add_constant(FLOAT, (4, 6), 0.0, "c"), b, 1.0, prog)
    with pytest.raises(TypeError, match=r"expected \(graph, a, b, scale, prog\[, name\]\)"):
        popops.scaled_add_to(g, a, b, prog)
    with pytest.raises(TypeError, match="the scale of b must be a number or a scalar tensor, found str"):
        popops.scaled_add_to(g, a, b, "0.5", prog)
    with pytest.raises(poputil.PoplibsError, match="the scale of b 1000000000.* is too large for a floating-point"):
        popops.scaled_add_to(g, a, b, 10 ** 400, prog)  # was float()'s OverflowError
    assert g.num_vertices == 0
