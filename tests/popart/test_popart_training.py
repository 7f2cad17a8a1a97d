"""popart.TrainingSession: losses, autodiff and SGD on the tiles, checked against numpy
references (a hand-written backward pass and SGD, finite differences)."""
import numpy as np
import pytest

from popsim import popart

onnx = pytest.importorskip("onnx", reason="popsim.popart's model tests need the onnx package")

G = popart.reservedGradientPrefix()


def _device(tiles=4):
    return popart.DeviceManager().createIpuModelDevice({"numIPUs": 1, "tilesPerIPU": tiles})


def _mlp(rng, batch=4, d=5, h=6, c=3):
    b = popart.Builder()
    x = b.addInputTensor(popart.TensorInfo("FLOAT", [batch, d]), "x")
    label = b.addInputTensor(popart.TensorInfo("INT32", [batch]), "label")
    init = {"w1": rng.normal(0, 0.5, (d, h)), "b1": rng.normal(0, 0.1, (h,)), "w2": rng.normal(0, 0.5, (h, c)),
            "b2": rng.normal(0, 0.1, (c,))}
    init = {k: v.astype(np.float32) for k, v in init.items()}
    ids = {k: b.addInitializedInputTensor(v, k) for k, v in init.items()}
    hidden = b.aiOnnx.relu([b.aiOnnx.add([b.aiOnnx.matmul([x, ids["w1"]]), ids["b1"]])])
    probs = b.aiOnnx.softmax([b.aiOnnx.add([b.aiOnnx.matmul([hidden, ids["w2"]]), ids["b2"]])], axis=1)
    loss = b.aiGraphcore.nllloss([probs, label], popart.ReductionType.Mean)
    b.addOutputTensor(loss)
    return b, x, label, loss, init


def _mlp_grads(w, x, label):
    """The numpy reference: the MLP's loss and its gradients (mean NLL of softmax)."""
    h = x @ w["w1"] + w["b1"]
    r = np.maximum(h, 0)
    z = r @ w["w2"] + w["b2"]
    p = np.exp(z - z.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    n = len(label)
    loss = -np.log(p[np.arange(n), label]).mean()
    dz = p.copy()
    dz[np.arange(n), label] -= 1
    dz /= n
    dr = dz @ w["w2"].T
    dh = dr * (h > 0)
    return loss, {"w1": x.T @ dh, "b1": dh.sum(0), "w2": r.T @ dz, "b2": dz.sum(0)}


def _session(builder, loss, optimizer, anchors, tiles=4, bps=1, options=None):
    session = popart.TrainingSession(fnModel=builder.getModelProto(), dataFlow=popart.DataFlow(bps, anchors),
                                     loss=loss, optimizer=optimizer, deviceInfo=_device(tiles), userOptions=options)
    session.prepareDevice()
    session.weightsFromHost()
    return session


def test_mlp_trains_as_numpy_sgd_with_momentum_and_weight_decay(rng):
    builder, x, label, loss, init = _mlp(rng)
    lr, mm, wd, dm = 0.1, 0.9, 0.01, 0.1
    opt = popart.SGD({"defaultLearningRate": (lr, False), "defaultMomentum": (mm, True),
                      "defaultWeightDecay": (wd, True), "defaultDampening": (dm, True)})
    art = popart.AnchorReturnType("ALL")
    session = _session(builder, loss, opt, {loss: art, G + "w2": art}, bps=2)
    anchors = session.initAnchorArrays()
    assert anchors[loss].shape == (2,) and anchors[G + "w2"].shape == (2, 6, 3)
    w = {k: v.astype(np.float64) for k, v in init.items()}
    v = {k: np.zeros_like(a) for k, a in w.items()}
    for step in range(2):
        if step == 1:   # a non-const learning rate changes from the host
            lr = 0.05
            session.updateOptimizerFromHost(popart.SGD({"defaultLearningRate": (lr, False),
                                                        "defaultMomentum": (mm, True),
                                                        "defaultWeightDecay": (wd, True),
                                                        "defaultDampening": (dm, True)}))
        xs = rng.normal(size=(2, 4, 5)).astype(np.float32)
        labels = rng.integers(0, 3, (2, 4)).astype(np.int32)
        session.run(popart.PyStepIO({x: xs, label: labels}, anchors))
        for b in range(2):
            want_loss, grads = _mlp_grads(w, xs[b].astype(np.float64), labels[b])
            np.testing.assert_allclose(anchors[loss][b], want_loss, rtol=1e-4)
            np.testing.assert_allclose(anchors[G + "w2"][b], grads["w2"], rtol=1e-3, atol=1e-5)
            for k in w:
                v[k] = mm * v[k] + (1 - dm) * (grads[k] + wd * w[k])
                w[k] = w[k] - lr * v[k]
    got = session.weightsToHost()
    for k in w:
        np.testing.assert_allclose(got[k], w[k], rtol=1e-3, atol=1e-5, err_msg=k)


def _scaled_model(loss_kind, reduction):
    b = popart.Builder()
    x = b.addInputTensor(popart.TensorInfo("FLOAT", [2, 3]), "x")
    w = b.addInitializedInputTensor(np.array([0.5, -1.0, 2.0], np.float32), "w")
    y = b.aiOnnx.mul([x, w])
    loss = b.aiGraphcore.l1loss([y], 0.5, reduction) if loss_kind == "l1" else \
        b.aiGraphcore.identityloss([b.aiOnnx.tanh([y])], reduction)
    b.addOutputTensor(loss)
    return b, x, w, loss


@pytest.mark.parametrize("kind,reduction", [("l1", popart.ReductionType.Sum), ("l1", popart.ReductionType.Mean),
                                            ("identity", popart.ReductionType.Sum),
                                            ("identity", popart.ReductionType.Mean)])
def test_l1_and_identity_losses_with_const_sgd(kind, reduction):
    builder, x, w, loss = _scaled_model(kind, reduction)
    session = _session(builder, loss, popart.ConstSGD(0.1, weight_decay=0.01), {loss: popart.AnchorReturnType("ALL")})
    anchors = session.initAnchorArrays()
    xs = np.array([[1.0, 2.0, -1.0], [0.5, -0.25, 0.75]], np.float32)
    session.run(popart.PyStepIO({x: xs}, anchors))
    w0 = np.array([0.5, -1.0, 2.0])
    y = xs * w0
    scale = 1.0 / y.size if reduction == popart.ReductionType.Mean else 1.0
    if kind == "l1":
        want, g = 0.5 * np.abs(y).sum() * scale, (0.5 * np.sign(y) * xs).sum(0) * scale
    else:
        want, g = np.tanh(y).sum() * scale, ((1 - np.tanh(y) ** 2) * xs).sum(0) * scale
    np.testing.assert_allclose(anchors[loss], want, rtol=1e-5)
    np.testing.assert_allclose(session.weightsToHost()[w], w0 * (1 - 0.1 * 0.01) - 0.1 * g, rtol=1e-5)


def test_gradient_accumulation_sums_micro_batches_before_the_update(rng):
    builder, x, label, loss, init = _mlp(rng, batch=2)
    options = popart.SessionOptions()
    options.enableGradientAccumulation, options.accumulationFactor = True, 3
    session = _session(builder, loss, popart.ConstSGD(0.2), {loss: popart.AnchorReturnType("ALL")}, bps=2,
                       options=options)
    anchors = session.initAnchorArrays()
    assert anchors[loss].shape == (2, 3)
    xs = rng.normal(size=(2, 3, 2, 5)).astype(np.float32)
    labels = rng.integers(0, 3, (2, 3, 2)).astype(np.int32)
    session.run(popart.PyStepIO({x: xs, label: labels}, anchors))
    w = {k: v.astype(np.float64) for k, v in init.items()}
    for b in range(2):
        total = {k: np.zeros_like(a) for k, a in w.items()}
        for m in range(3):
            want_loss, grads = _mlp_grads(w, xs[b, m].astype(np.float64), labels[b, m])
            np.testing.assert_allclose(anchors[loss][b, m], want_loss, rtol=1e-4)
            total = {k: total[k] + grads[k] for k in w}
        w = {k: w[k] - 0.2 * total[k] for k in w}
    got = session.weightsToHost()
    for k in w:
        np.testing.assert_allclose(got[k], w[k], rtol=1e-3, atol=1e-5, err_msg=k)
    with pytest.raises(popart.popart_exception, match=r"expected float32 of 60 elements, shaped \(2, 3, 2, 5\)"):
        session.run(popart.PyStepIO({x: xs[:, 0], label: labels}, anchors))


def _conv_forward(w, x, label):
    """The conv net in numpy (float64): Conv (pads 1) + bias, Tanh, MaxPool 2x2, Flatten, Gemm, Softmax, Nll Sum."""
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    windows = np.lib.stride_tricks.sliding_window_view(xp, (3, 3), axis=(2, 3))
    y = np.tanh(np.einsum("ncijkl,mckl->nmij", windows, w["wc"]) + w["bc"][None, :, None, None])
    n, m = y.shape[:2]
    pooled = y.reshape(n, m, 2, 2, 2, 2).max((3, 5)).reshape(n, -1)
    z = pooled @ w["w2"] + w["b2"]
    p = np.exp(z - z.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    return -np.log(p[np.arange(n), label]).sum()


def _finite_difference(w, key, x, label, eps=1e-6):
    out = np.zeros_like(w[key])
    for i in np.ndindex(*w[key].shape):
        hi, lo = {k: v.copy() for k, v in w.items()}, {k: v.copy() for k, v in w.items()}
        hi[key][i] += eps
        lo[key][i] -= eps
        out[i] = (_conv_forward(hi, x, label) - _conv_forward(lo, x, label)) / (2 * eps)
    return out


def test_conv_net_step_matches_finite_differences(rng):
    b = popart.Builder()
    x = b.addInputTensor(popart.TensorInfo("FLOAT", [2, 2, 4, 4]), "x")
    label = b.addInputTensor(popart.TensorInfo("INT32", [2]), "label")
    init = {"wc": rng.normal(0, 0.4, (3, 2, 3, 3)), "bc": rng.normal(0, 0.1, (3,)), "w2": rng.normal(0, 0.4, (12, 4)),
            "b2": rng.normal(0, 0.1, (4,))}
    init = {k: v.astype(np.float32) for k, v in init.items()}
    ids = {k: b.addInitializedInputTensor(v, k) for k, v in init.items()}
    y = b.aiOnnx.tanh([b.aiOnnx.conv([x, ids["wc"], ids["bc"]], pads=[1, 1, 1, 1], kernel_shape=[3, 3])])
    pooled = b.aiOnnx.maxpool([y], num_outputs=1, kernel_shape=[2, 2], strides=[2, 2])[0]
    z = b.aiOnnx.gemm([b.aiOnnx.flatten([pooled], axis=1), ids["w2"], ids["b2"]])
    loss = b.aiGraphcore.nllloss([b.aiOnnx.softmax([z], axis=1), label], popart.ReductionType.Sum)
    art = popart.AnchorReturnType("ALL")
    session = _session(b, loss, popart.ConstSGD(0.05), {loss: art, **{G + k: art for k in init}})
    anchors = session.initAnchorArrays()
    xs = rng.normal(size=(2, 2, 4, 4)).astype(np.float32)
    labels = np.array([1, 3], np.int32)
    session.run(popart.PyStepIO({x: xs, label: labels}, anchors))
    w = {k: v.astype(np.float64) for k, v in init.items()}
    np.testing.assert_allclose(anchors[loss], _conv_forward(w, xs.astype(np.float64), labels), rtol=1e-4)
    got = session.weightsToHost()
    for k in init:
        want = _finite_difference(w, k, xs.astype(np.float64), labels)
        np.testing.assert_allclose(anchors[G + k], want, rtol=1e-3, atol=1e-4, err_msg=k)
        np.testing.assert_allclose(got[k], w[k] - 0.05 * want, rtol=1e-3, atol=1e-5, err_msg=k)


def test_model_to_host_writes_the_trained_weights(tmp_path):
    builder, x, w, loss = _scaled_model("l1", popart.ReductionType.Sum)
    session = _session(builder, loss, popart.ConstSGD(0.1), {})
    session.run(popart.PyStepIO({x: np.ones((2, 3), np.float32)}, session.initAnchorArrays()))
    path = tmp_path / "trained.onnx"
    session.modelToHost(str(path))
    saved = {t.name: onnx.numpy_helper.to_array(t) for t in onnx.load(str(path)).graph.initializer}
    np.testing.assert_allclose(saved[w], session.weightsToHost()[w])
    np.testing.assert_allclose(saved[w], [0.5 - 0.1, -1.0 + 0.1, 2.0 - 0.1], rtol=1e-6)
    assert [n.domain for n in onnx.load(str(path)).graph.node][-1] == "ai.graphcore"


def test_bad_training_inputs_are_refused():
    builder, x, w, loss = _scaled_model("l1", popart.ReductionType.Sum)
    proto, flow = builder.getModelProto(), popart.DataFlow(1, {})
    with pytest.raises(popart.popart_exception, match="loss 'nope' is no tensor of the model"):
        popart.TrainingSession(fnModel=proto, dataFlow=flow, loss="nope", optimizer=popart.ConstSGD(0.1),
                               deviceInfo=_device())
    with pytest.raises(popart.popart_exception, match="must be a popart.SGD or popart.ConstSGD, found dict"):
        popart.TrainingSession(fnModel=proto, dataFlow=flow, loss=loss, optimizer={"lr": 0.1}, deviceInfo=_device())
    with pytest.raises(popart.popart_exception, match="unknown key 'learningRate'"):
        popart.SGD({"learningRate": (0.1, True)})
    b = popart.Builder()
    xi = b.addInputTensor(popart.TensorInfo("FLOAT", [3]), "x")
    wi = b.addInitializedInputTensor(np.ones(3, np.float32), "w")
    floor_loss = b.aiGraphcore.identityloss([b.aiOnnx.floor([b.aiOnnx.mul([xi, wi])], debugContext="myfloor")])
    session = popart.TrainingSession(fnModel=b.getModelProto(), dataFlow=flow, loss=floor_loss,
                                     optimizer=popart.ConstSGD(0.1), deviceInfo=_device())
    with pytest.raises(popart.popart_exception, match=r"node 'myfloor' \(Floor\) lies between a weight and the loss"):
        session.prepareDevice()
    options = popart.SessionOptions()
    options.accumulationFactor = 2
    with pytest.raises(popart.popart_exception, match="needs enableGradientAccumulation"):
        popart.TrainingSession(fnModel=proto, dataFlow=flow, loss=loss, optimizer=popart.ConstSGD(0.1),
                               deviceInfo=_device(), userOptions=options)
    options.enableGradientAccumulation = True
    with pytest.raises(popart.popart_exception, match="outside a TrainingSession"):
        popart.InferenceSession(fnModel=proto, dataFlow=flow, deviceInfo=_device(), userOptions=options)
    session = _session(builder, loss, popart.ConstSGD(0.1), {})
    with pytest.raises(popart.popart_exception, match="defaultLearningRate was given as const"):
        session.updateOptimizerFromHost(popart.ConstSGD(0.2))


@pytest.mark.parametrize("reduction,ignore,log_probs", [(popart.ReductionType.Mean, None, False),
                                                        (popart.ReductionType.Mean, 2, False),
                                                        (popart.ReductionType.Sum, 2, True),
                                                        (popart.ReductionType.NoReduction, None, False)])
def test_nll_loss_and_gradient_as_popart(reduction, ignore, log_probs):
    b = popart.Builder()
    label = b.addInputTensor(popart.TensorInfo("INT32", [4]), "label")
    probs0 = np.array([[0.1, 0.2, 0.3, 0.4], [0.25, 0.25, 0.25, 0.25], [0.7, 0.1, 0.1, 0.1], [0.2, 0.5, 0.2, 0.1]],
                      np.float32)
    probs = b.addInitializedInputTensor(probs0, "probs")
    loss = b.aiGraphcore.nllloss([probs, label], reduction, ignoreIndex=ignore, inputIsLogProbability=log_probs)
    if reduction == popart.ReductionType.NoReduction:
        loss = b.aiGraphcore.identityloss([loss], popart.ReductionType.Sum)
    art = popart.AnchorReturnType("ALL")
    session = _session(b, loss, popart.ConstSGD(0.0), {loss: art, G + probs: art})
    anchors = session.initAnchorArrays()
    labels = np.array([3, 2, 0, 1], np.int32)
    session.run(popart.PyStepIO({label: labels}, anchors))
    kept = labels != ignore if ignore is not None else np.ones(4, bool)
    picked = probs0[np.arange(4), labels].astype(np.float64)
    terms = np.where(kept, -picked if log_probs else -np.log(picked), 0.0)
    n = kept.sum() if reduction == popart.ReductionType.Mean else 1
    np.testing.assert_allclose(anchors[loss], terms.sum() / n, rtol=1e-5)
    grad = np.zeros((4, 4))
    grad[np.arange(4), labels] = np.where(kept, -1.0 if log_probs else -1.0 / picked, 0.0) / n
    np.testing.assert_allclose(anchors[G + probs], grad, rtol=1e-5)


def test_velocity_and_loss_scaling_leave_the_update_unchanged_and_anchors_sum_and_final():
    builder, x, w, loss = _scaled_model("identity", popart.ReductionType.Sum)
    lr, mm, wd = 0.1, 0.5, 0.05
    opt = popart.SGD({"defaultLearningRate": (lr, True), "defaultMomentum": (mm, True),
                      "defaultWeightDecay": (wd, True), "defaultVelocityScaling": (2.0, True),
                      "lossScaling": (4.0, False)})
    session = _session(builder, loss, opt, {loss: popart.AnchorReturnType("SUM"),
                                            G + w: popart.AnchorReturnType("FINAL")}, bps=3)
    anchors = session.initAnchorArrays()
    assert anchors[loss].shape == () and anchors[G + w].shape == (3,)
    xs = np.random.default_rng(3).normal(size=(3, 2, 3)).astype(np.float32)
    session.run(popart.PyStepIO({x: xs}, anchors))
    wv, v, total = np.array([0.5, -1.0, 2.0]), np.zeros(3), 0.0
    for b in range(3):
        y = xs[b] * wv
        total += np.tanh(y).sum()
        g = ((1 - np.tanh(y) ** 2) * xs[b]).sum(0)
        v = mm * v + g + wd * wv
        wv = wv - lr * v
    np.testing.assert_allclose(anchors[loss], total, rtol=1e-5)
    np.testing.assert_allclose(anchors[G + w], 4.0 * g, rtol=1e-5)   # gradients carry the loss scaling
    np.testing.assert_allclose(session.weightsToHost()[w], wv, rtol=1e-5)


def test_batch_normalization_trains_and_keeps_its_running_statistics():
    b = popart.Builder(opsets={"ai.onnx": 11})
    x = b.addInputTensor(popart.TensorInfo("FLOAT", [4, 2, 3]), "x")
    r = b.addInputTensor(popart.TensorInfo("FLOAT", [4, 2, 3]), "r")
    init = {"scale": np.array([1.5, 0.5], np.float32), "bias": np.array([0.1, -0.2], np.float32),
            "mean": np.array([0.2, -0.1], np.float32), "var": np.array([1.0, 2.0], np.float32)}
    ids = [b.addInitializedInputTensor(v, k) for k, v in init.items()]
    y = b.aiOnnx.batchnormalization([x] + ids, num_outputs=5, epsilon=1e-3, momentum=0.8)[0]
    loss = b.aiGraphcore.identityloss([b.aiOnnx.mul([y, r])], popart.ReductionType.Sum)
    art = popart.AnchorReturnType("ALL")
    session = _session(b, loss, popart.ConstSGD(0.1), {G + x: art, G + "scale": art, G + "bias": art})
    anchors = session.initAnchorArrays()
    rng = np.random.default_rng(11)
    xs, rs = rng.normal(size=(4, 2, 3)), rng.normal(size=(4, 2, 3))
    session.run(popart.PyStepIO({x: xs.astype(np.float32), r: rs.astype(np.float32)}, anchors))
    mu, var = xs.mean((0, 2)), xs.var((0, 2))
    xhat = (xs - mu[None, :, None]) / np.sqrt(var + 1e-3)[None, :, None]
    g_y = rs
    g_scale, g_bias = (g_y * xhat).sum((0, 2)), g_y.sum((0, 2))
    g_xhat = g_y * init["scale"][None, :, None]
    g_x = (g_xhat - g_xhat.mean((0, 2))[None, :, None] - xhat * (g_xhat * xhat).mean((0, 2))[None, :, None]) \
        / np.sqrt(var + 1e-3)[None, :, None]
    np.testing.assert_allclose(anchors[G + x], g_x, rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(anchors[G + "scale"], g_scale, rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(anchors[G + "bias"], g_bias, rtol=1e-3, atol=1e-4)
    got = session.weightsToHost()
    np.testing.assert_allclose(got["scale"], init["scale"] - 0.1 * g_scale, rtol=1e-4)
    np.testing.assert_allclose(got["mean"], init["mean"] * 0.8 + mu * 0.2, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(got["var"], init["var"] * 0.8 + var * 0.2, rtol=1e-3)


def test_embedding_gather_with_streamed_indices_adds_repeated_rows():
    b = popart.Builder()
    ids = b.addInputTensor(popart.TensorInfo("INT32", [4]), "ids")
    r = b.addInputTensor(popart.TensorInfo("FLOAT", [4, 3]), "r")
    table = b.addInitializedInputTensor(np.arange(15, dtype=np.float32).reshape(5, 3), "table")
    loss = b.aiGraphcore.identityloss([b.aiOnnx.mul([b.aiOnnx.gather([table, ids], axis=0), r])],
                                      popart.ReductionType.Sum)
    session = _session(b, loss, popart.ConstSGD(0.5), {G + table: popart.AnchorReturnType("ALL")})
    anchors = session.initAnchorArrays()
    idx, rs = np.array([1, 4, 1, -2], np.int32), np.random.default_rng(5).normal(size=(4, 3)).astype(np.float32)
    session.run(popart.PyStepIO({ids: idx, r: rs}, anchors))
    want = np.zeros((5, 3))
    np.add.at(want, idx % 5, rs)
    np.testing.assert_allclose(anchors[G + table], want, rtol=1e-6)
    np.testing.assert_allclose(session.weightsToHost()[table], np.arange(15).reshape(5, 3) - 0.5 * want, rtol=1e-6)


def test_a_weight_read_twice_sums_its_gradients_and_weights_io_round_trips():
    b = popart.Builder()
    x = b.addInputTensor(popart.TensorInfo("FLOAT", [2, 3]), "x")
    w = b.addInitializedInputTensor(np.array([1.0, 2.0, 3.0], np.float32), "w")
    loss = b.aiGraphcore.identityloss([b.aiOnnx.add([b.aiOnnx.mul([x, w]), w])], popart.ReductionType.Sum)
    session = _session(b, loss, popart.ConstSGD(0.1), {G + w: popart.AnchorReturnType("ALL")})
    anchors = session.initAnchorArrays()
    xs = np.array([[1.0, -2.0, 0.5], [3.0, 1.0, -1.0]], np.float32)
    session.run(popart.PyStepIO({x: xs}, anchors))
    np.testing.assert_allclose(anchors[G + w], xs.sum(0) + 2.0, rtol=1e-6)   # x through Mul, twice 1 through Add
    io = popart.PyWeightsIO({w: np.zeros(3, np.float32)})
    session.readWeights(io)
    np.testing.assert_allclose(io.weights[w], [1.0, 2.0, 3.0] - 0.1 * (xs.sum(0) + 2.0), rtol=1e-6)
    session.writeWeights(popart.PyWeightsIO({w: np.full(3, 7.0, np.float32)}))
    session.weightsFromHost()
    np.testing.assert_allclose(session.weightsToHost()[w], 7.0)
    with pytest.raises(popart.popart_exception, match="'v' is no weight of the model"):
        session.readWeights(popart.PyWeightsIO({"v": np.zeros(3, np.float32)}))


def test_multi_ipu_options_without_placed_ops_are_refused():
    """Manual virtual graphs and pipelining train (test_popart_pipelined_training.py) once
    every op has an IPU; without one they are refused, naming what is missing."""
    builder, x, w, loss = _scaled_model("l1", popart.ReductionType.Sum)
    for key, value, match in (("virtualGraphMode", popart.VirtualGraphMode.Manual, "every op needs an IPU"),
                              ("enablePipelining", True, "enablePipelining needs virtualGraphMode = Manual")):
        options = popart.SessionOptions()
        setattr(options, key, value)
        with pytest.raises(popart.popart_exception, match=match):
            popart.TrainingSession(fnModel=builder.getModelProto(), dataFlow=popart.DataFlow(1, {}), loss=loss,
                                   optimizer=popart.ConstSGD(0.1), deviceInfo=_device(), userOptions=options)


def test_an_inference_session_runs_a_loss_forward(rng):
    builder, x, label, loss, init = _mlp(rng)
    session = popart.InferenceSession(fnModel=builder.getModelProto(),
                                      dataFlow=popart.DataFlow(1, {loss: popart.AnchorReturnType("ALL")}),
                                      deviceInfo=_device())
    session.prepareDevice()
    session.weightsFromHost()
    anchors = session.initAnchorArrays()
    xs, labels = rng.normal(size=(4, 5)).astype(np.float32), np.array([0, 2, 1, 2], np.int32)
    session.run(popart.PyStepIO({x: xs, label: labels}, anchors))
    want, _ = _mlp_grads({k: v.astype(np.float64) for k, v in init.items()}, xs.astype(np.float64), labels)
    np.testing.assert_allclose(anchors[loss], want, rtol=1e-5)


def test_nesterov_and_weight_specific_values_as_popart_states_them():
    b = popart.Builder()
    x = b.addInputTensor(popart.TensorInfo("FLOAT", [2, 3]), "x")
    w1 = b.addInitializedInputTensor(np.array([0.5, -1.0, 2.0], np.float32), "w1")
    w2 = b.addInitializedInputTensor(np.array([0.1, 0.2, -0.3], np.float32), "w2")
    loss = b.aiGraphcore.identityloss([b.aiOnnx.tanh([b.aiOnnx.add([b.aiOnnx.mul([x, w1]), w2])])],
                                      popart.ReductionType.Sum)

    def optimizer(lr2):
        opt = popart.SGD({"defaultLearningRate": (0.2, True), "defaultMomentum": (0.5, True),
                          "defaultWeightDecay": (0.1, True), "defaultVelocityScaling": (4.0, True),
                          "nesterov": (1, True), "lossScaling": (2.0, True)})
        opt.insertSpecific(w2, {"learningRate": (lr2, False), "momentum": (0.0, True), "nesterov": (0, True),
                                "dampening": (0.25, True)})
        return opt
    session = _session(b, loss, optimizer(0.3), {}, bps=2)
    anchors = session.initAnchorArrays()
    xs = np.random.default_rng(9).normal(size=(2, 2, 3)).astype(np.float32)
    w = {w1: np.array([0.5, -1.0, 2.0]), w2: np.array([0.1, 0.2, -0.3])}
    v1 = np.zeros(3)
    for step, lr2 in enumerate((0.3, 0.05)):
        if step:
            session.updateOptimizerFromHost(optimizer(lr2))
        session.run(popart.PyStepIO({x: xs}, anchors))
        for batch in range(2):
            d = 1 - np.tanh(xs[batch] * w[w1] + w[w2]) ** 2
            g1, g2 = (d * xs[batch]).sum(0), d.sum(0)
            v1 = 0.5 * v1 + g1 + 0.1 * w[w1]
            w[w1] = w[w1] - 0.2 * (g1 + 0.1 * w[w1] + 0.5 * v1)
            w[w2] = w[w2] - lr2 * 0.75 * (g2 + 0.1 * w[w2])
    got = session.weightsToHost()
    for k in w:
        np.testing.assert_allclose(got[k], w[k], rtol=1e-5, err_msg=k)
    with pytest.raises(popart.popart_exception, match="must be the same weights"):
        session.updateOptimizerFromHost(popart.SGD({"defaultLearningRate": (0.2, True)}))
    with pytest.raises(popart.popart_exception, match="nesterov needs momentum"):
        popart.SGD({"nesterov": (1, True)})


def test_softmax_then_nll_are_differentiated_at_once_as_popart_patterns_do():
    """p - onehot: right where the label's probability underflows to 0 (the chain through
    -1/p would give 0)."""
    b = popart.Builder()
    label = b.addInputTensor(popart.TensorInfo("INT32", [2]), "label")
    z = b.addInitializedInputTensor(np.array([[60.0, -60.0], [1.0, 2.0]], np.float32), "z")
    probs = b.aiOnnx.softmax([z], axis=1)
    loss = b.aiGraphcore.nllloss([probs, label], popart.ReductionType.Mean)
    art = popart.AnchorReturnType("ALL")
    session = _session(b, loss, popart.ConstSGD(0.0), {loss: art, G + z: art})
    anchors = session.initAnchorArrays()
    session.run(popart.PyStepIO({label: np.array([1, 0], np.int32)}, anchors))
    p1 = np.exp([1.0, 2.0]) / np.exp([1.0, 2.0]).sum()
    want = np.array([[1.0, -1.0], [p1[0] - 1, p1[1]]]) / 2
    np.testing.assert_allclose(anchors[G + z], want, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(anchors[loss], (-np.log(1e-7) - np.log(p1[0])) / 2, rtol=1e-5)
