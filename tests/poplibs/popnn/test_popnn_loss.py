"""popnn.calc_loss and popnn.calc_accuracy on the engine against numpy (float64): both
loss types, FLOAT and HALF, UNSIGNED_INT and INT labels, masked rows, delta scaling (numbers
and tensors), num_correct accumulating, outputs cut between tiles, the batch 32 x 10
training case, deltas against finite differences of the numpy forward, PopLibs'
positional overloads, hypothesis over small shapes, labels out of range stopping the
run, the estimates, and bad arguments naming the tensor and the expected shape."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import popsim
from popsim import FLOAT, HALF, INT, UNSIGNED_INT, popnn, poputil
from popsim.popnn import LossType
from popsim.popnn.loss_vertices import calc_accuracy_cycles, loss_transform_cycles
from popsim.poputil import PoplibsError

from popnn_loss_harness import (MASKED, on_tile, reference_correct, reference_loss, run, scattered,
                                small_device)

CE, SSQ = LossType.CROSS_ENTROPY_LOSS, LossType.SUM_SQUARED_LOSS


def probabilities(rng, shape, dtype=FLOAT):
    z = rng.standard_normal(shape)
    p = np.exp(z) / np.exp(z).sum(1, keepdims=True)
    return p.astype(dtype.numpy)


def labels_for(rng, rows, classes, label_type, masked=()):
    y = rng.integers(0, classes, rows).astype(np.int64)
    y[list(masked)] = MASKED
    return y.astype(np.uint32).astype(label_type.numpy)


def build(g, rng, rows, classes, dtype=FLOAT, label_type=UNSIGNED_INT):
    p = scattered(g, dtype, (rows, classes), "probs", rng)
    y = scattered(g, label_type, (rows,), "labels", rng)
    loss = scattered(g, dtype, (rows,), "loss", rng)
    deltas = scattered(g, dtype, (rows, classes), "deltas", rng)
    return p, y, loss, deltas


@pytest.mark.parametrize("loss_type", [CE, SSQ], ids=lambda t: t.name)
@pytest.mark.parametrize("dtype,label_type", [(FLOAT, UNSIGNED_INT), (FLOAT, INT), (HALF, UNSIGNED_INT)],
                         ids=["float-uint", "float-int", "half-uint"])
def test_loss_deltas_and_num_correct(loss_type, dtype, label_type):
    device = small_device()
    g = popsim.Graph(device)
    rng = np.random.default_rng(11)
    p, y, loss, deltas = build(g, rng, 9, 7, dtype, label_type)
    nc = on_tile(g, UNSIGNED_INT, (), "numCorrect", 3)
    prog = popnn.calc_loss(g, p, y, loss, deltas, num_correct=nc, loss_type=loss_type)
    host_p = probabilities(rng, (9, 7), dtype)
    host_y = labels_for(rng, 9, 7, label_type, masked=(2, 6))
    host_y[0] = np.argmax(host_p[0])  # at least one correct row
    _, (got_loss, got_d, got_nc) = run(g, device, prog, [loss, deltas, nc], {p: host_p, y: host_y, nc: 5})
    want_loss, want_d = reference_loss(host_p, host_y, loss_type == CE, dtype=dtype.name)
    tol = dict(rtol=2e-3, atol=2e-3) if dtype == HALF else dict(rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_loss, want_loss, **tol)
    np.testing.assert_allclose(got_d, want_d, **tol)
    assert not got_d[[2, 6]].any() and not got_loss[[2, 6]].any()
    assert int(got_nc) == 5 + reference_correct(host_p, host_y)  # PopLibs' numCorrect accumulates


@pytest.mark.parametrize("loss_type", [CE, SSQ], ids=lambda t: t.name)
def test_compiled_and_interpreted_vertices_give_the_same_bits(monkeypatch, loss_type):
    """The transforms (eps is a constant of each FPType's instantiation), the accuracy
    count and the label check (MASKED_LABEL_CODE one of each LabelType's) run as translated
    C and as Python (debug mode): the same bits, a zero probability and masked rows included."""
    got = {}
    for mode in ("compiled", "interpreted"):
        monkeypatch.setenv("POPSIM_CODELET_MODE", mode)
        for dtype, label_type in ((HALF, INT), (FLOAT, UNSIGNED_INT)):
            device = small_device()
            g = popsim.Graph(device)
            rng = np.random.default_rng(19)
            p, y, loss, deltas = build(g, rng, 6, 5, dtype, label_type)
            nc = on_tile(g, UNSIGNED_INT, (), "numCorrect", 3)
            prog = popnn.calc_loss(g, p, y, loss, deltas, num_correct=nc, loss_type=loss_type)
            host_p = probabilities(rng, (6, 5), dtype)
            host_y = labels_for(rng, 6, 5, label_type, masked=(4,))
            host_y[0] = np.argmax(host_p[0])
            host_p[1, int(host_y[1])] = 0  # the expected class at probability 0: log(0 + eps)
            _, values = run(g, device, prog, [loss, deltas, nc], {p: host_p, y: host_y, nc: 1})
            assert int(values[2]) == 1 + reference_correct(host_p, host_y)
            got.setdefault((dtype, label_type), []).append([np.asarray(v).tobytes() for v in values])
    for compiled, interpreted in got.values():
        assert compiled == interpreted


@pytest.mark.parametrize("as_tensors", [False, True])
def test_cross_entropy_scaling(as_tensors):
    device = small_device()
    g = popsim.Graph(device)
    rng = np.random.default_rng(12)
    p, y, loss, deltas = build(g, rng, 6, 5)
    if as_tensors:
        ds, mos = on_tile(g, FLOAT, (1,), "deltasScale", 1), on_tile(g, FLOAT, (), "scaling", 2)
        prog = popnn.calc_loss(g, p, y, loss, deltas, ds, mos, CE)  # PopLibs' overload
        writes = {ds: [0.25], mos: 62000.0}
    else:
        prog = popnn.calc_loss(g, p, y, loss, deltas, deltas_scale=0.25, model_output_scaling=62000.0)
        writes = {}
    host_p = probabilities(rng, (6, 5)) * np.float32(62000.0)  # SOFTMAX_SCALED outputs
    host_y = labels_for(rng, 6, 5, UNSIGNED_INT, masked=(4,))
    _, (got_loss, got_d) = run(g, device, prog, [loss, deltas], {p: host_p, y: host_y, **writes})
    want_loss, want_d = reference_loss(host_p, host_y, True, 0.25, 62000.0)
    np.testing.assert_allclose(got_loss, want_loss, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got_d, want_d, rtol=1e-5, atol=1e-6)


def test_batch_32_by_10_training_step_repeats():
    device = popsim.IPUModel("ipu2").create_device()
    g = popsim.Graph(device)
    p = g.add_variable(FLOAT, (32, 10), "probs")
    poputil.map_tensor_linearly(g, p)
    deltas = g.clone(p, "deltas")
    y, loss, nc = on_tile(g, UNSIGNED_INT, (32,), "labels"), on_tile(g, FLOAT, (32,), "loss"), \
        on_tile(g, UNSIGNED_INT, (1,), "numCorrect")
    prog = popnn.calc_loss(g, p, y, loss, deltas, nc, LossType.CROSS_ENTROPY_LOSS)
    rng = np.random.default_rng(13)
    host_p, host_y = probabilities(rng, (32, 10)), labels_for(rng, 32, 10, UNSIGNED_INT)
    _, (got_loss, got_d, got_nc) = run(g, device, prog, [loss, deltas, nc], {p: host_p, y: host_y, nc: [0]}, runs=3)
    want_loss, want_d = reference_loss(host_p, host_y, True)
    np.testing.assert_allclose(got_loss, want_loss, rtol=1e-5)
    np.testing.assert_allclose(got_d, want_d, atol=1e-7)
    assert int(got_nc[0]) == 3 * reference_correct(host_p, host_y)


def _numeric_gradient(f, x, h=1e-6):
    grad = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[idx] += h
        down[idx] -= h
        grad[idx] = (f(up) - f(down)) / (2 * h)
    return grad


def test_deltas_are_the_gradients_by_finite_differences():
    """Sum squared: deltas = d(sum loss)/dp. Cross entropy: deltas = d(sum loss)/dz for
    p = softmax(z), the gradient the softmax layer below receives."""
    device = small_device()
    g = popsim.Graph(device)
    rng = np.random.default_rng(14)
    p, y, loss, deltas = build(g, rng, 4, 6)
    d2 = scattered(g, FLOAT, (4, 6), "deltas2", rng)
    loss2 = scattered(g, FLOAT, (4,), "loss2", rng)
    prog = popsim.program.Sequence([popnn.calc_loss(g, p, y, loss, deltas, SSQ),
                                    popnn.calc_loss(g, p, y, loss2, d2, CE)])
    z = rng.standard_normal((4, 6))
    host_p = (np.exp(z) / np.exp(z).sum(1, keepdims=True)).astype(np.float32)
    host_y = labels_for(rng, 4, 6, UNSIGNED_INT, masked=(1,))
    _, (got_ssq, got_ce) = run(g, device, prog, [deltas, d2], {p: host_p, y: host_y})
    pz = host_p.astype(np.float64)
    ssq = _numeric_gradient(lambda q: reference_loss(q, host_y, False)[0].sum(), pz)
    ce = _numeric_gradient(lambda w: reference_loss(np.exp(w) / np.exp(w).sum(1, keepdims=True), host_y,
                                                    True)[0].sum(), z)
    np.testing.assert_allclose(got_ssq, ssq, atol=1e-5)
    np.testing.assert_allclose(got_ce, ce, atol=1e-5)


def test_poplibs_overloads_and_calc_accuracy_forms():
    device = small_device()
    g = popsim.Graph(device)
    rng = np.random.default_rng(15)
    p, y, loss, deltas = build(g, rng, 5, 4)
    ncs = [on_tile(g, UNSIGNED_INT, (), f"nc{i}", i) for i in range(4)]
    prog = popsim.program.Sequence()
    prog.add(popnn.calc_loss(g, p, y, loss, deltas, SSQ))
    prog.add(popnn.calc_loss(g, p, y, loss, deltas, ncs[0], SSQ, "withName"))
    prog.add(popnn.calc_loss(g, p, y, loss, deltas, 1.0, 1.0, ncs[1], CE))
    popnn.calc_accuracy(g, p, y, ncs[2], prog)                     # popsim's API: appended to prog
    prog.add(popnn.calc_accuracy(g, p, y, ncs[3], "accuracy"))   # PopLibs: a returned Program
    host_p, host_y = probabilities(rng, (5, 4)), labels_for(rng, 5, 4, UNSIGNED_INT, masked=(0,))
    host_y[1] = np.argmax(host_p[1])
    _, got = run(g, device, prog, ncs, {p: host_p, y: host_y, **{nc: 0 for nc in ncs}})
    assert [int(v) for v in got] == [reference_correct(host_p, host_y)] * 4


@settings(max_examples=10, deadline=None)
@given(rows=st.integers(1, 6), classes=st.integers(1, 12), ce=st.booleans(), masked=st.booleans(),
       seed=st.integers(0, 2**16))
def test_hypothesis_small_shapes(rows, classes, ce, masked, seed):
    device = small_device()
    g = popsim.Graph(device)
    rng = np.random.default_rng(seed)
    p, y, loss, deltas = build(g, rng, rows, classes)
    nc = on_tile(g, UNSIGNED_INT, (), "nc", 1)
    prog = popnn.calc_loss(g, p, y, loss, deltas, num_correct=nc, loss_type=CE if ce else SSQ)
    host_p = probabilities(rng, (rows, classes))
    host_y = labels_for(rng, rows, classes, UNSIGNED_INT, masked=(0,) if masked else ())
    _, (got_loss, got_d, got_nc) = run(g, device, prog, [loss, deltas, nc], {p: host_p, y: host_y, nc: 0})
    want_loss, want_d = reference_loss(host_p, host_y, ce)
    np.testing.assert_allclose(got_loss, want_loss, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_d, want_d, rtol=1e-5, atol=1e-7)
    assert int(got_nc) == reference_correct(host_p, host_y)


@pytest.mark.parametrize("label_type,bad", [(UNSIGNED_INT, 7), (INT, -2), (INT, 9)])
def test_labels_out_of_range_stop_the_run(label_type, bad):
    device = small_device()
    g = popsim.Graph(device)
    rng = np.random.default_rng(16)
    p, y, loss, deltas = build(g, rng, 4, 7, FLOAT, label_type)
    prog = popnn.calc_loss(g, p, y, loss, deltas)
    g.create_host_write("p", p)
    g.create_host_write("y", y)
    g.create_host_read("loss", loss)
    engine = popsim.Engine(g, prog)
    engine.load(device)
    engine.write_tensor("p", probabilities(rng, (4, 7)))
    engine.write_tensor("y", np.array([0, bad, 3, -1], dtype=np.int64).astype(np.uint32).astype(label_type.numpy))
    with pytest.raises(popsim.ApplicationRuntimeError, match=r"labels tensor 'labels' holds a label outside \[0, 7\)"):
        engine.run(0)
    engine.write_tensor("y", np.array([0, 6, 3, -1], dtype=np.int64).astype(np.uint32).astype(label_type.numpy))
    engine.run(0)  # the engine stays usable; MASKED (-1) rows are fine
    assert engine.read_tensor("loss")[3] == 0


def test_estimates():
    # getLossTransformCycles: float 19 (+1 CE) set-up + 4 (9) a float + 1; half per pair plus the odd one
    assert loss_transform_cycles(True, False, 10) == 5 + 5 + 5 + 2 + 1 + 40 + 1
    assert loss_transform_cycles(True, True, 10) == 5 + 6 + 5 + 2 + 1 + 90 + 1
    assert loss_transform_cycles(False, True, 7) == 5 + 6 + 5 + 1 + 2 + 1 + 27 + 2 + 11 + 1
    assert calc_accuracy_cycles(32) == 13 + 128 + 1


def test_vertices_in_the_report():
    device = small_device()
    g = popsim.Graph(device)
    rng = np.random.default_rng(17)
    p, y, loss, deltas = build(g, rng, 3, 4, HALF)
    nc = on_tile(g, UNSIGNED_INT, (), "nc")
    prog = popnn.calc_loss(g, p, y, loss, deltas, num_correct=nc)
    engine, _ = run(g, device, prog, [], {p: probabilities(rng, (3, 4), HALF), y: [0, 1, 2], nc: 0})
    names = {v["name"] for v in engine.get_report().to_dict()["execution"]["vertex_types"]}
    assert {"popnn::LossCrossEntropyTransform<half>", "popnn::CalcAccuracy<unsigned int>",
            "popnn::ReduceMaxClassGather<half,unsigned int>", "popnn::LabelsOutOfRange<unsigned int>"} <= names


def _bad_setup():
    g = popsim.Graph(small_device())
    rng = np.random.default_rng(18)
    return (g,) + build(g, rng, 4, 3)


def test_bad_shapes_and_types_name_the_tensor_and_the_expected_shape():
    g, p, y, loss, deltas = _bad_setup()
    cube = g.add_variable(FLOAT, (4, 3, 1), "cube")
    with pytest.raises(PoplibsError, match=r"model outputs must be a 2-D tensor.*'cube'.*rank 3"):
        popnn.calc_loss(g, cube, y, loss, deltas)
    with pytest.raises(PoplibsError, match=r"model outputs must be one of FLOAT, HALF.*'ints'"):
        popnn.calc_loss(g, g.add_variable(INT, (4, 3), "ints"), y, loss, deltas)
    long_labels = g.add_variable(UNSIGNED_INT, (5,), "long_labels")
    with pytest.raises(PoplibsError, match=r"labels tensor 'long_labels'.*expected shape \(4,\)"):
        popnn.calc_loss(g, p, long_labels, loss, deltas)
    float_labels = g.add_variable(FLOAT, (4,), "float_labels")
    with pytest.raises(PoplibsError, match=r"1-D UNSIGNED_INT or INT tensor of 4 elements.*'float_labels'"):
        popnn.calc_loss(g, p, float_labels, loss, deltas)
    with pytest.raises(PoplibsError, match=r"1-D UNSIGNED_INT or INT.*'grid'"):
        popnn.calc_loss(g, p, g.add_variable(UNSIGNED_INT, (4, 1), "grid"), loss, deltas)
    wide = g.add_variable(FLOAT, (4, 5), "wide")
    with pytest.raises(PoplibsError, match=r"deltas must be a FLOAT tensor of shape \(4, 3\).*'wide'"):
        popnn.calc_loss(g, p, y, loss, wide)
    with pytest.raises(PoplibsError, match=r"deltas must be a FLOAT tensor.*'halves'"):
        popnn.calc_loss(g, p, y, loss, g.add_variable(HALF, (4, 3), "halves"))
    with pytest.raises(PoplibsError, match=r"loss must be a 1-D FLOAT or HALF tensor of shape \(4,\).*'short'"):
        popnn.calc_loss(g, p, y, g.add_variable(FLOAT, (3,), "short"), deltas)
    const = g.add_constant(FLOAT, (4,), 0.0, "const")
    with pytest.raises(PoplibsError, match="loss tensor 'const'.*must be a variable"):
        popnn.calc_loss(g, p, y, const, deltas)


def test_bad_arguments():
    g, p, y, loss, deltas = _bad_setup()
    with pytest.raises(PoplibsError, match="CROSS_ENTROPY_LOSS only"):
        popnn.calc_loss(g, p, y, loss, deltas, deltas_scale=2.0, loss_type=SSQ)
    with pytest.raises(PoplibsError, match="loss_type must be a popnn.LossType"):
        popnn.calc_loss(g, p, y, loss, deltas, loss_type="CE")
    with pytest.raises(PoplibsError, match=r"PopLibs' arguments .*found 3 positional"):
        popnn.calc_loss(g, p, y, loss, deltas, 1.0, 2.0, 3.0)
    half_scale = g.add_variable(HALF, (), "half_scale")
    with pytest.raises(PoplibsError, match=r"deltas_scale must be a number or a one-element FLOAT.*'half_scale'"):
        popnn.calc_loss(g, p, y, loss, deltas, deltas_scale=half_scale)
    signed = g.add_variable(INT, (), "signed")
    with pytest.raises(PoplibsError, match=r"num_correct must be an UNSIGNED_INT scalar.*'signed'"):
        popnn.calc_loss(g, p, y, loss, deltas, num_correct=signed)
    pair = g.add_variable(UNSIGNED_INT, (2,), "pair")
    with pytest.raises(PoplibsError, match=r"num_correct.*'pair'"):
        popnn.calc_accuracy(g, p, y, pair, popsim.program.Sequence())
    with pytest.raises(PoplibsError, match=r"labels tensor 'long'.*expected shape \(4,\)"):
        popnn.calc_accuracy(g, p, g.add_variable(INT, (6,), "long"), g.add_variable(UNSIGNED_INT, (), "n"))
