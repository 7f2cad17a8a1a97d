"""A TrainingSession on several IPUs: virtualGraphMode Manual (each node, its gradient rule
and each weight's update on the node's or weight's IPU, gradients copied between IPUs) and
enablePipelining (PopART's training pipeline: forward stages, then their backward in
reverse, stashes, gradient accumulation), checked against numpy's SGD and against the same
model trained on one IPU."""
import re

import numpy as np
import pytest

from onnx_models import NO_ONNX

pytest.importorskip("onnx", reason=NO_ONNX)

from popsim import popart

TILES = 8
G = popart.reservedGradientPrefix()
Manual = popart.VirtualGraphMode.Manual


def _mlp(rng, ipus, batch=4, d=6, h=8, c=3):
    """relu(x w0 + b0) -> relu(. w1) -> softmax(. w2) -> nll; layer k (the loss with the last)
    inside virtualGraph(ipus[k]) and pipelineStage(k)."""
    b = popart.Builder()
    x = b.addInputTensor(popart.TensorInfo("FLOAT", [batch, d]), "x")
    label = b.addInputTensor(popart.TensorInfo("INT32", [batch]), "label")
    init = {"w0": rng.normal(0, 0.5, (d, h)), "b0": rng.normal(0, 0.1, (h,)), "w1": rng.normal(0, 0.5, (h, h)),
            "w2": rng.normal(0, 0.5, (h, c))}
    init = {k: v.astype(np.float32) for k, v in init.items()}
    ids = {k: b.addInitializedInputTensor(v, k) for k, v in init.items()}
    with b.virtualGraph(ipus[0]), b.pipelineStage(0):
        h0 = b.aiOnnx.relu([b.aiOnnx.add([b.aiOnnx.matmul([x, ids["w0"]]), ids["b0"]])])
    with b.virtualGraph(ipus[1]), b.pipelineStage(1):
        h1 = b.aiOnnx.relu([b.aiOnnx.matmul([h0, ids["w1"]])])
    with b.virtualGraph(ipus[2]), b.pipelineStage(2):
        probs = b.aiOnnx.softmax([b.aiOnnx.matmul([h1, ids["w2"]])], axis=1)
        loss = b.aiGraphcore.nllloss([probs, label], popart.ReductionType.Mean)
    b.addOutputTensor(loss)
    return b, x, label, loss, init


def _numpy_grads(w, x, label):
    """The loss and the gradients of the MLP (mean NLL of softmax), in float64."""
    a0 = x @ w["w0"] + w["b0"]
    h0 = np.maximum(a0, 0)
    a1 = h0 @ w["w1"]
    h1 = np.maximum(a1, 0)
    z = h1 @ w["w2"]
    p = np.exp(z - z.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    n = len(label)
    dz = p.copy()
    dz[np.arange(n), label] -= 1
    dz /= n
    da1 = (dz @ w["w2"].T) * (a1 > 0)
    da0 = (da1 @ w["w1"].T) * (a0 > 0)
    loss = -np.log(p[np.arange(n), label]).mean()
    return loss, {"w0": x.T @ da0, "b0": da0.sum(0), "w1": h0.T @ da1, "w2": h1.T @ dz}


def _options(manual=True, pipelined=False, accumulation=1):
    opts = popart.SessionOptions()
    if manual:
        opts.virtualGraphMode = Manual
    opts.enablePipelining = pipelined
    if accumulation > 1:
        opts.enableGradientAccumulation, opts.accumulationFactor = True, accumulation
    return opts


def _train(builder, loss, inputs, anchors, bps, ipus, opts, optimizer):
    device = popart.DeviceManager().createIpuModelDevice({"numIPUs": ipus, "tilesPerIPU": TILES})
    session = popart.TrainingSession(builder.getModelProto(), popart.DataFlow(bps, anchors), loss, optimizer,
                                     device, userOptions=opts)
    session.prepareDevice()
    session.weightsFromHost()
    out = session.initAnchorArrays()
    session.run(popart.PyStepIO(inputs, out))
    return out, session.weightsToHost(), session


def _numpy_sgd(init, xs, labels, lr):
    """Plain SGD (mean NLL) over xs [batches, micro-batches, ...]: the micro-batches' gradients summed."""
    w = {k: v.astype(np.float64) for k, v in init.items()}
    losses = []
    for b in range(xs.shape[0]):
        parts = [_numpy_grads(w, xs[b, m].astype(np.float64), labels[b, m]) for m in range(xs.shape[1])]
        losses.append([p[0] for p in parts])
        w = {k: w[k] - lr * sum(p[1][k] for p in parts) for k in w}
    return np.array(losses), w


def _ipus_running(report, word):
    """The IPUs whose tiles compute in the Execute steps whose compute set's name holds ``word``."""
    ipus = set()
    for step in report.execution.steps:
        # "MatMul:0" but not "MatMul:0/1" (PopART's id of the next MatMul)
        if step.kind == "Execute" and re.search(re.escape(word) + r"(?!/\d)", step.compute_set or ""):
            ipus |= {tile // TILES for tile, cycles in enumerate(step.tile_compute) if cycles > 0}
    return ipus


def test_manual_training_runs_each_gradient_on_its_nodes_ipu_as_one_ipu_does(rng):
    builder, x, label, loss, init = _mlp(rng, ipus=[0, 1, 1])
    bps, accl, lr = 2, 2, 0.2
    xs = rng.normal(size=(bps, accl, 4, 6)).astype(np.float32)
    labels = rng.integers(0, 3, (bps, accl, 4)).astype(np.int32)
    inputs, anchors = {x: xs, label: labels}, {loss: popart.AnchorReturnType("ALL"),
                                              G + "w0": popart.AnchorReturnType("FINAL")}
    out, weights, session = _train(builder, loss, inputs, anchors, bps, 2, _options(accumulation=accl),
                                   popart.ConstSGD(lr))
    one, one_weights, _ = _train(builder, loss, inputs, anchors, bps, 1, _options(False, accumulation=accl),
                                 popart.ConstSGD(lr))
    np.testing.assert_array_equal(out[loss], one[loss])
    np.testing.assert_array_equal(out[G + "w0"], one[G + "w0"])
    for k in init:
        np.testing.assert_array_equal(weights[k], one_weights[k], err_msg=k)
    losses, want = _numpy_sgd(init, xs, labels, lr)
    np.testing.assert_allclose(out[loss], losses, rtol=1e-5)
    for k in init:
        np.testing.assert_allclose(weights[k], want[k], rtol=1e-4, atol=1e-5, err_msg=k)
    report = session.getReport()
    assert _ipus_running(report, "w0/update") == {0} and _ipus_running(report, "w2/update") == {1}
    assert _ipus_running(report, "MatMul:0") == {0}   # its forward and its gradient rule's matmuls
    links = [s for s in report.execution.steps if s.kind == "Copy" and all(c > 0 for c in s.ipu_cycles)]
    assert len(links) >= 2, "activations go to IPU 1 and their gradient comes back to IPU 0"


def test_manual_training_with_momentum_on_three_ipus_matches_one_ipu(rng):
    builder, x, label, loss, init = _mlp(rng, ipus=[0, 2, 1])   # IPU 2 between the other two
    xs = rng.normal(size=(2, 4, 6)).astype(np.float32)
    labels = rng.integers(0, 3, (2, 4)).astype(np.int32)
    sgd = {"defaultLearningRate": (0.1, False), "defaultMomentum": (0.9, True), "defaultWeightDecay": (0.01, True)}
    results = []
    for ipus, manual in ((3, True), (1, False)):
        results.append(_train(builder, loss, {x: xs, label: labels}, [loss], 2, ipus, _options(manual),
                              popart.SGD(sgd))[:2])
    np.testing.assert_array_equal(results[0][0][loss], results[1][0][loss])
    for k in init:
        np.testing.assert_array_equal(results[0][1][k], results[1][1][k], err_msg=k)


def test_pipelined_training_equals_the_accumulated_run_in_fewer_cycles(rng):
    builder, x, label, loss, init = _mlp(rng, ipus=[0, 1, 2])
    bps, accl, lr = 2, 6, 0.1            # 3 stages: accumulationFactor >= 2 * 3 - 1
    xs = rng.normal(size=(bps, accl, 4, 6)).astype(np.float32)
    labels = rng.integers(0, 3, (bps, accl, 4)).astype(np.int32)
    inputs = {x: xs, label: labels}
    anchors = {loss: popart.AnchorReturnType("ALL"), G + "w1": popart.AnchorReturnType("ALL")}
    piped, piped_w, session = _train(builder, loss, inputs, anchors, bps, 3,
                                     _options(pipelined=True, accumulation=accl), popart.ConstSGD(lr))
    plain, plain_w, plain_session = _train(builder, loss, inputs, anchors, bps, 3, _options(accumulation=accl),
                                           popart.ConstSGD(lr))
    assert piped[loss].shape == (bps, accl)
    np.testing.assert_array_equal(piped[loss], plain[loss])
    np.testing.assert_array_equal(piped[G + "w1"], plain[G + "w1"])
    for k in init:
        np.testing.assert_array_equal(piped_w[k], plain_w[k], err_msg=k)
    losses, want = _numpy_sgd(init, xs, labels, lr)
    np.testing.assert_allclose(piped[loss], losses, rtol=1e-5)
    for k in init:
        np.testing.assert_allclose(piped_w[k], want[k], rtol=1e-4, atol=1e-5, err_msg=k)
    assert session.getCycleCount() < plain_session.getCycleCount()
    report = session.getReport()
    assert _ipus_running(report, "w0/update") == {0} and _ipus_running(report, "w1/update") == {1}


def test_pipelined_training_with_momentum_and_a_tensor_skipping_a_stage(rng):
    """Stage 2 also reads stage 0's output (handed on two stages, its gradient back two)."""
    b = popart.Builder()
    x = b.addInputTensor(popart.TensorInfo("FLOAT", [2, 4]), "x")
    ws = [rng.normal(0, 0.5, (4, 4)).astype(np.float32) for _ in range(3)]
    ids = [b.addInitializedInputTensor(w, f"w{k}") for k, w in enumerate(ws)]
    with b.virtualGraph(0), b.pipelineStage(0):
        h0 = b.aiOnnx.tanh([b.aiOnnx.matmul([x, ids[0]])])
    with b.virtualGraph(1), b.pipelineStage(1):
        h1 = b.aiOnnx.tanh([b.aiOnnx.matmul([h0, ids[1]])])
    with b.virtualGraph(0), b.pipelineStage(2):
        y = b.aiOnnx.add([b.aiOnnx.matmul([h1, ids[2]]), h0])
        loss = b.aiGraphcore.l1loss([y], 0.5, popart.ReductionType.Sum)
    xs = rng.normal(size=(1, 5, 2, 4)).astype(np.float32)
    sgd = {"defaultLearningRate": (0.05, False), "defaultMomentum": (0.5, True)}
    results = []
    for pipelined in (True, False):
        results.append(_train(b, loss, {x: xs[0]}, [loss], 1, 2, _options(pipelined=pipelined, accumulation=5),
                              popart.SGD(sgd))[:2])
    np.testing.assert_array_equal(results[0][0][loss], results[1][0][loss])
    for k in range(3):
        np.testing.assert_array_equal(results[0][1][f"w{k}"], results[1][1][f"w{k}"])
    w = [v.astype(np.float64) for v in ws]   # numpy: the summed gradient, velocity from 0
    g = [np.zeros_like(v) for v in w]
    for m in range(5):
        a = xs[0, m].astype(np.float64)
        t0 = np.tanh(a @ w[0])
        t1 = np.tanh(t0 @ w[1])
        dy = 0.5 * np.sign(t1 @ w[2] + t0)
        g[2] += t1.T @ dy
        d1 = (dy @ w[2].T) * (1 - t1 ** 2)
        g[1] += t0.T @ d1
        d0 = (d1 @ w[1].T + dy) * (1 - t0 ** 2)
        g[0] += a.T @ d0
    for k in range(3):   # v = g (1 - dampening) / ls, then w -= lr v
        np.testing.assert_allclose(results[0][1][f"w{k}"], w[k] - 0.05 * g[k], rtol=1e-4, atol=1e-5)


def test_pipelining_stashes_batch_norm_statistics_and_input_gradients_and_sums_a_shared_weight(rng):
    """BatchNormalization (its saved statistics stashed, its running statistics copied each
    micro-batch), an anchored input gradient (the input stashed) and a weight read on both
    IPUs (its gradients summed across them): the one-IPU, Manual and pipelined runs agree."""
    b = popart.Builder(opsets={"ai.onnx": 11})
    x = b.addInputTensor(popart.TensorInfo("FLOAT", [4, 2, 3]), "x")
    r = b.addInputTensor(popart.TensorInfo("FLOAT", [4, 6]), "r")
    init = {"scale": np.array([1.5, 0.5], np.float32), "bias": np.array([0.1, -0.2], np.float32),
            "mean": np.array([0.2, -0.1], np.float32), "var": np.array([1.0, 2.0], np.float32),
            "w": rng.normal(0, 0.5, (6, 6)).astype(np.float32)}
    ids = {k: b.addInitializedInputTensor(v, k) for k, v in init.items()}
    with b.virtualGraph(0), b.pipelineStage(0):
        y = b.aiOnnx.batchnormalization([x] + [ids[k] for k in ("scale", "bias", "mean", "var")], num_outputs=5,
                                        epsilon=1e-3, momentum=0.8)[0]
        h0 = b.aiOnnx.tanh([b.aiOnnx.matmul([b.aiOnnx.flatten([y], axis=1), ids["w"]])])
    with b.virtualGraph(1), b.pipelineStage(1):
        loss = b.aiGraphcore.identityloss([b.aiOnnx.mul([b.aiOnnx.matmul([h0, ids["w"]]), r])],
                                          popart.ReductionType.Sum)
    inputs = {x: rng.normal(size=(2, 3, 4, 2, 3)).astype(np.float32),
              r: rng.normal(size=(2, 3, 4, 6)).astype(np.float32)}
    anchors = {loss: popart.AnchorReturnType("ALL"), G + x: popart.AnchorReturnType("ALL")}
    runs = [_train(b, loss, inputs, anchors, 2, ipus, opts, popart.ConstSGD(0.1))[:2]
            for ipus, opts in ((1, _options(False, accumulation=3)), (2, _options(accumulation=3)),
                               (2, _options(pipelined=True, accumulation=3)))]
    for out, weights in runs[1:]:
        for tid in anchors:
            np.testing.assert_array_equal(out[tid], runs[0][0][tid], err_msg=tid)
        for k in init:
            np.testing.assert_array_equal(weights[k], runs[0][1][k], err_msg=k)
    assert not np.array_equal(runs[0][1]["mean"], init["mean"])


def test_replicated_pipelines_sum_their_gradients(rng):
    """2 replicas of a 3-stage pipeline over 2 IPUs each: as the 2 replicas unpipelined, and
    as one replica accumulating both replicas' micro-batches (to rounding: the sums' order)."""
    builder, x, label, loss, init = _mlp(rng, ipus=[0, 1, 1])
    bps, accl = 2, 5
    xs = rng.normal(size=(bps, accl, 2, 4, 6)).astype(np.float32)
    labels = rng.integers(0, 3, (bps, accl, 2, 4)).astype(np.int32)
    runs = []
    for pipelined in (True, False):
        opts = _options(pipelined=pipelined, accumulation=accl)
        opts.enableReplicatedGraphs, opts.replicatedGraphCount = True, 2
        runs.append(_train(builder, loss, {x: xs, label: labels}, [loss], bps, 4, opts, popart.ConstSGD(0.1))[:2])
    np.testing.assert_array_equal(runs[0][0][loss], runs[1][0][loss])
    one = _train(builder, loss, {x: xs.reshape(bps, 2 * accl, 4, 6), label: labels.reshape(bps, 2 * accl, 4)},
                 [loss], bps, 1, _options(False, accumulation=2 * accl), popart.ConstSGD(0.1))[1]
    for k in init:
        np.testing.assert_array_equal(runs[0][1][k], runs[1][1][k], err_msg=k)
        np.testing.assert_allclose(runs[0][1][k], one[k], rtol=1e-5, atol=1e-6, err_msg=k)


def test_pipelined_training_refuses_what_popart_refuses(rng):
    builder, x, label, loss, init = _mlp(rng, ipus=[0, 1, 2])
    device = popart.DeviceManager().createIpuModelDevice({"numIPUs": 3, "tilesPerIPU": TILES})

    def make(opts):
        return popart.TrainingSession(builder.getModelProto(), popart.DataFlow(2, [loss]), loss,
                                      popart.ConstSGD(0.1), device, userOptions=opts)
    with pytest.raises(popart.popart_exception, match="needs enableGradientAccumulation"):
        make(_options(pipelined=True))
    with pytest.raises(popart.popart_exception, match=r"depth \(gradient accumulation factor\).*\(5\)"):
        make(_options(pipelined=True, accumulation=4))
    with pytest.raises(popart.popart_exception, match="needs virtualGraphMode = Manual"):
        make(_options(manual=False, pipelined=True, accumulation=5))
    with pytest.raises(popart.popart_exception, match="every op needs an IPU"):
        unplaced, _, _, unplaced_loss, _ = __import__("test_popart_training")._mlp(rng)
        popart.TrainingSession(unplaced.getModelProto(), popart.DataFlow(1, [unplaced_loss]), unplaced_loss,
                               popart.ConstSGD(0.1), device, userOptions=_options())


def test_pipelined_everyn_anchors_are_the_unpipelined_ones(rng):
    """EVERYN N with gradient accumulation: every micro-batch of batches N, 2N, ..., shaped
    [batches_per_step / N, accumulation_factor, ...] as PopART shapes them; pipelined, as the
    unpipelined run and as the matching rows of an ALL anchor."""
    b, x, label, loss, init = _mlp(rng, (0, 1, 2))
    bps, accl = 4, 5
    inputs = {x: rng.standard_normal((bps, accl, 4, 6)).astype(np.float32),
              label: rng.integers(0, 3, (bps, accl, 4)).astype(np.int32)}
    arts = {loss: popart.AnchorReturnType("EVERYN", 2), G + "w1": popart.AnchorReturnType("EVERYN", 2)}
    runs = [_train(b, loss, inputs, arts, bps, 3, _options(pipelined=p, accumulation=accl), popart.ConstSGD(0.1))
            for p in (False, True)]
    everything, _, _ = _train(b, loss, inputs, {loss: popart.AnchorReturnType("ALL")}, bps, 3,
                              _options(pipelined=True, accumulation=accl), popart.ConstSGD(0.1))
    (plain, plain_w, _), (piped, piped_w, _) = runs
    assert piped[loss].shape == (2, accl) and piped[G + "w1"].shape == (2, accl, 8, 8)
    for tid in arts:
        np.testing.assert_array_equal(piped[tid], plain[tid], err_msg=tid)
    np.testing.assert_array_equal(piped[loss], everything[loss][1::2])
    for k in init:
        np.testing.assert_array_equal(piped_w[k], plain_w[k], err_msg=k)
