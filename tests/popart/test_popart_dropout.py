"""Dropout in a TrainingSession, as PopART runs it: a random mask (each element dropped with
probability ratio, the survivors scaled by 1 / (1 - ratio)) drawn by poprand from the
session's seed, the same mask in the backward pass, a new one each micro-batch and step,
the same ones again after setRandomSeed with the same seed; the identity in inference."""
import sys
from pathlib import Path

import numpy as np
import pytest

from onnx_models import NO_ONNX

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "poplibs" / "poprand"))
import poprand_reference as R  # poprand's host reference (Philox), independent of the codelets

pytest.importorskip("onnx", reason=NO_ONNX)

from popsim import popart

G = popart.reservedGradientPrefix()
N = 2048
ALL = popart.AnchorReturnType("ALL")


def _model(ratio=0.5, opset=None, mask=False, two=False):
    """y = dropout(x * w) (w ones); with ``two``, z = dropout(x * w) too (another node), and
    the loss sums y (and z)."""
    b = popart.Builder(opsets={"ai.onnx": opset, "ai.graphcore": 1}) if opset else popart.Builder()
    x = b.addInputTensor(popart.TensorInfo("FLOAT", [N]), "x")
    w = b.addInitializedInputTensor(np.ones(N, np.float32), "w")
    h = b.aiOnnx.mul([x, w])
    outs = b.aiOnnx.dropout([h], num_outputs=2 if mask else 1, ratio=ratio)
    ids = {"y": outs[0], "mask": outs[1] if mask else None}
    total = outs[0]
    if two:
        ids["z"] = b.aiOnnx.dropout([h], num_outputs=1, ratio=ratio)[0]
        total = b.aiOnnx.add([total, ids["z"]])
    loss = b.aiGraphcore.identityloss([total], popart.ReductionType.Sum)
    return b, x, loss, ids


def _session(b, loss, anchors, bps=1, options=None, ipus=1, tiles=4):
    device = popart.DeviceManager().createIpuModelDevice({"numIPUs": ipus, "tilesPerIPU": tiles})
    s = popart.TrainingSession(b.getModelProto(), popart.DataFlow(bps, {a: ALL for a in anchors}), loss,
                               popart.ConstSGD(0.0), device, userOptions=options)
    s.prepareDevice()
    s.weightsFromHost()
    return s


def _run(s, feeds):
    out = s.initAnchorArrays()
    s.run(popart.PyStepIO(feeds, out))
    return out


def _data(rng, *lead):
    return rng.uniform(1.0, 2.0, lead + (N,)).astype(np.float32)   # never 0: a 0 output means dropped


def test_training_drops_scales_and_the_gradient_uses_the_same_mask(rng):
    b, x, loss, ids = _model(ratio=0.25)
    s = _session(b, loss, [ids["y"], G + x])
    s.setRandomSeed(11)
    xs = _data(rng)
    out = _run(s, {x: xs})
    y, gx = out[ids["y"]], out[G + x]
    dropped = y == 0
    assert abs(dropped.mean() - 0.25) < 0.04   # 4 standard deviations over 2048 draws
    np.testing.assert_array_equal(y[~dropped], xs[~dropped] * np.float32(1 / 0.75))
    np.testing.assert_array_equal(gx == 0, dropped)   # d(sum y)/dx: the mask, scaled (w is 1)
    np.testing.assert_array_equal(gx[~dropped], np.float32(1 / 0.75))


def test_the_masks_are_poprands_draws_for_the_documented_seeds(rng):
    """setRandomSeed(2**32 + 7) is [7, 1]; micro-batch m (from 1) draws with [7 + m, 1 + m]
    and the node's index (1: after the Mul) as seed modifier; getRandomSeed reads the seed back."""
    b, x, loss, ids = _model(ratio=0.5)
    s = _session(b, loss, [ids["y"]], bps=2)
    s.setRandomSeed(2 ** 32 + 7)
    y = _run(s, {x: _data(rng, 2)})[ids["y"]]
    for m in range(2):
        np.testing.assert_array_equal(y[m] != 0, R.bernoulli(N, (8 + m, 2 + m), 1, 0.5), err_msg=m)
    assert s.getRandomSeed() == 9 + (3 << 32)   # moved on by the two micro-batches


def test_a_new_mask_each_batch_and_step_and_the_same_ones_for_the_same_seed(rng):
    b, x, loss, ids = _model(two=True)
    s = _session(b, loss, [ids["y"], ids["z"]], bps=2)
    xs = _data(rng, 2)
    s.setRandomSeed(3)
    first, second = _run(s, {x: xs}), _run(s, {x: xs})
    masks = [o[k] == 0 for o in (first, second) for k in (ids["y"], ids["z"])]
    m = np.stack([mk[i] for mk in masks for i in range(2)])   # 8 masks: step x node x batch
    for i in range(len(m)):
        for j in range(i):
            assert (m[i] != m[j]).mean() > 0.3, (i, j)   # independent masks differ in about half
    s.setRandomSeed(3)
    again = _run(s, {x: xs})
    np.testing.assert_array_equal(again[ids["y"]], first[ids["y"]])
    np.testing.assert_array_equal(again[ids["z"]], first[ids["z"]])


def test_the_mask_output_matches_the_output_and_the_gradient(rng):
    b, x, loss, ids = _model(ratio=0.5, mask=True)
    s = _session(b, loss, [ids["y"], ids["mask"], G + x])
    s.setRandomSeed(2)
    xs = _data(rng)
    out = _run(s, {x: xs})
    keep = out[ids["mask"]]
    assert keep.dtype == np.bool_ and 0.45 < keep.mean() < 0.55
    np.testing.assert_array_equal(out[ids["y"]], np.where(keep, xs * np.float32(2.0), np.float32(0)))
    np.testing.assert_array_equal(out[G + x], np.where(keep, np.float32(2.0), np.float32(0)))


def test_ratio_zero_is_the_identity_and_inference_is_unchanged(rng):
    xs = _data(rng)
    b, x, loss, ids = _model(ratio=0.0)
    out = _run(_session(b, loss, [ids["y"], G + x]), {x: xs})
    np.testing.assert_array_equal(out[ids["y"]], xs)
    np.testing.assert_array_equal(out[G + x], np.ones(N, np.float32))
    b, x, loss, ids = _model(ratio=0.5)
    device = popart.DeviceManager().createIpuModelDevice({"numIPUs": 1, "tilesPerIPU": 4})
    s = popart.InferenceSession(b.getModelProto(), popart.DataFlow(1, {ids["y"]: ALL}), device)
    s.prepareDevice()
    s.weightsFromHost()
    np.testing.assert_array_equal(_run(s, {x: xs})[ids["y"]], xs)


@pytest.mark.parametrize("initializers", [False, True])
def test_opset_13_drops_only_with_a_constant_true_training_mode(rng, initializers):
    xs = _data(rng)
    for mode, drops in ((True, True), (False, False)):
        b = popart.Builder(opsets={"ai.onnx": 13, "ai.graphcore": 1})
        x = b.addInputTensor(popart.TensorInfo("FLOAT", [N]), "x")
        w = b.addInitializedInputTensor(np.ones(N, np.float32), "w")
        const = b.addInitializedInputTensor if initializers else b.aiOnnx.constant
        r = const(np.array(0.5, np.float32), "ratio")
        t = const(np.array(mode), "mode")
        y = b.aiOnnx.dropout([b.aiOnnx.mul([x, w]), r, t], num_outputs=1)[0]
        loss = b.aiGraphcore.identityloss([y], popart.ReductionType.Sum)
        s = _session(b, loss, [y, G + x])
        s.setRandomSeed(4)
        out = _run(s, {x: xs})
        assert (out[y] == 0).any() == drops
        np.testing.assert_array_equal(out[G + x] == 0, out[y] == 0)


def test_replicas_draw_different_masks(rng):
    b, x, loss, ids = _model()
    opts = popart.SessionOptions()
    opts.enableReplicatedGraphs, opts.replicatedGraphCount = True, 2
    s = _session(b, loss, [ids["y"], G + x], options=opts, ipus=2)
    s.setRandomSeed(5)
    xs = _data(rng, 2)
    out = _run(s, {x: xs})
    y, gx = out[ids["y"]], out[G + x]
    assert (y[0] == 0).mean() > 0.4 and ((y[0] == 0) != (y[1] == 0)).mean() > 0.3
    np.testing.assert_array_equal(gx == 0, y == 0)
    for r in range(2):   # replica r starts at [5 + r, 0] and moves on by [2, 1]
        np.testing.assert_array_equal(y[r] != 0, R.bernoulli(N, (7 + r, 1), 1, 0.5), err_msg=r)
    assert s.getRandomSeed() == 7 + (1 << 32)   # replica 0's


def test_pipelined_and_manual_dropout_draw_the_masks_of_the_one_ipu_run(rng):
    """Two stages on two IPUs, each with a Dropout: every micro-batch's masks (forward and
    gradient) are those one IPU draws for it, the seed copied to the second IPU (Manual) and
    handed on with the micro-batch (pipelined)."""
    b = popart.Builder()
    x = b.addInputTensor(popart.TensorInfo("FLOAT", [N]), "x")
    w = b.addInitializedInputTensor(np.ones(N, np.float32), "w")
    with b.virtualGraph(0), b.pipelineStage(0):
        a = b.aiOnnx.dropout([b.aiOnnx.mul([x, w])], num_outputs=1, ratio=0.5)[0]
    with b.virtualGraph(1), b.pipelineStage(1):
        y = b.aiOnnx.dropout([b.aiOnnx.relu([a])], num_outputs=1, ratio=0.5)[0]
        loss = b.aiGraphcore.identityloss([y], popart.ReductionType.Sum)
    xs = _data(rng, 4)
    outs = []
    for manual, pipelined in ((False, False), (True, True), (True, False)):
        opts = popart.SessionOptions()
        opts.enableGradientAccumulation, opts.accumulationFactor = True, 4
        if manual:
            opts.virtualGraphMode, opts.enablePipelining = popart.VirtualGraphMode.Manual, pipelined
        s = _session(b, loss, [a, y, G + x], options=opts, ipus=2 if manual else 1)
        s.setRandomSeed(9)
        outs.append(_run(s, {x: xs}))
    for k in (a, y, G + x):
        for other in outs[1:]:
            np.testing.assert_array_equal(other[k], outs[0][k], err_msg=k)
    both = (outs[0][a] != 0) & (outs[0][y] != 0)
    np.testing.assert_array_equal(outs[0][G + x] != 0, both)
    assert 0.15 < both.mean() < 0.35 and len({m.tobytes() for m in both}) == 4


def test_bad_seeds_and_ratios_are_refused(rng):
    b, x, loss, ids = _model()
    device = popart.DeviceManager().createIpuModelDevice({"numIPUs": 1, "tilesPerIPU": 4})
    s = popart.TrainingSession(b.getModelProto(), popart.DataFlow(1, {ids["y"]: ALL}), loss, popart.ConstSGD(0.0),
                               device)
    with pytest.raises(popart.popart_exception, match=r"setRandomSeed: call prepareDevice\(\) first"):
        s.setRandomSeed(1)
    s.prepareDevice()
    for bad in (-1, 2 ** 64, 1.5, True):
        with pytest.raises(popart.popart_exception, match=r"setRandomSeed: the seed must be an int in \[0, 2\*\*64\)"):
            s.setRandomSeed(bad)
    b, x, loss, ids = _model(ratio=1.0)
    with pytest.raises(popart.popart_exception, match=r"\(Dropout\): ratio 1.0 is not valid; use a value in the "
                                                       r"interval \[0, 1\)"):
        _session(b, loss, [ids["y"]])


def test_a_streamed_training_mode_in_inference_passes_through_or_stops_the_run(rng):
    """Inference with training_mode (and ratio) streamed: the input through and the mask all
    true where ONNX defines no dropping (training_mode false, or ratio 0); a true
    training_mode with a nonzero ratio stops the step (AbortOnCondition) with why."""
    xs = _data(rng)
    b = popart.Builder(opsets={"ai.onnx": 13, "ai.graphcore": 1})
    x = b.addInputTensor(popart.TensorInfo("FLOAT", [N]), "x")
    r = b.addInputTensor(popart.TensorInfo("FLOAT", []), "r")
    t = b.addInputTensor(popart.TensorInfo("BOOL", []), "t")
    y, m = b.aiOnnx.dropout([x, r, t], num_outputs=2)
    device = popart.DeviceManager().createIpuModelDevice({"numIPUs": 1, "tilesPerIPU": 4})
    s = popart.InferenceSession(b.getModelProto(), popart.DataFlow(1, {y: ALL, m: ALL}), device)
    s.prepareDevice()
    s.weightsFromHost()
    for ratio, mode in ((0.5, False), (0.0, True), (0.0, False)):
        out = s.initAnchorArrays()
        s.run(popart.PyStepIO({x: xs, r: np.array(ratio, np.float32), t: np.array(mode)}, out))
        np.testing.assert_array_equal(out[y], xs)
        assert out[m].all()
    for ratio, mode, why in ((0.5, True, "training_mode is true with a nonzero ratio"), (1.5, False, "outside")):
        with pytest.raises(popart.popart_exception, match=why):
            s.run(popart.PyStepIO({x: xs, r: np.array(ratio, np.float32), t: np.array(mode)}, s.initAnchorArrays()))
