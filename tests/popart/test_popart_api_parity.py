"""PopART's Python API as a PopART script meets it: Graphcore's MNIST tutorial
(simple_applications/popart/mnist) ported line by line on small data and checked against
numpy, and PopART habits that either work as in PopART or raise a popart_exception saying
what to write instead."""
import numpy as np
import pytest

from onnx_models import NO_ONNX

pytest.importorskip("onnx", reason=NO_ONNX)

from popsim import popart

ROWS, COLS, CLASSES = 4, 4, 10


def create_model(batch_size):
    """The tutorial's create_model: a linear model and an Nll loss (Sum)."""
    builder = popart.Builder()
    np.random.seed(0)
    input_shape = popart.TensorInfo("FLOAT", [batch_size, ROWS * COLS])
    x = builder.addInputTensor(input_shape)
    init_weights = np.random.normal(0, 1, [ROWS * COLS, CLASSES]).astype(np.float32)
    W = builder.addInitializedInputTensor(init_weights)  # the tutorial's name
    y = builder.aiOnnx.matmul([x, W])
    init_biases = np.random.normal(0, 1, [CLASSES]).astype(np.float32)
    b = builder.addInitializedInputTensor(init_biases)
    output = builder.aiOnnx.add([y, b], "output")       # debugContext given by position
    builder.addOutputTensor(output)
    probs = builder.aiOnnx.softmax([output])
    label_shape = popart.TensorInfo("INT32", [batch_size])
    label = builder.addInputTensor(label_shape)
    loss = builder.aiGraphcore.nllloss([probs, label], popart.ReductionType.Sum, debugContext="nllLossVal")
    proto = builder.getModelProto()
    return proto, x, label, output, loss, (W, init_weights), (b, init_biases)


def _softmax(z):
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def test_mnist_tutorial_port_trains_and_validates_like_numpy(tmp_path):
    batch_size, batches_per_step = 4, 3
    proto, data_in, labels_in, output, loss, (w_id, w0), (b_id, b0) = create_model(batch_size)
    assert (data_in, w_id, b_id, labels_in) == ("input", "init_input", "init_input/1", "input/1")   # PopART's ids
    assert output == "Add:0"
    anchor_desc = {output: popart.AnchorReturnType("ALL"), loss: popart.AnchorReturnType("ALL")}
    dataFlow = popart.DataFlow(batches_per_step, anchor_desc)
    userOpts = popart.SessionOptions()
    userOpts.constantWeights = False
    options = {"compileIPUCode": True, "numIPUs": 1, "tilesPerIPU": 16}
    with popart.DeviceManager().createIpuModelDevice(options) as device:
        training = popart.TrainingSession(fnModel=proto, loss=loss, deviceInfo=device,
                                          optimizer=popart.ConstSGD(0.01), dataFlow=dataFlow, userOptions=userOpts)
        early = training.initAnchorArrays()       # PopART's anchors exist before prepareDevice too
        training.prepareDevice()
        training.setRandomSeed(1)
        t_anchors = training.initAnchorArrays()
        assert {k: (v.shape, v.dtype) for k, v in early.items()} == \
            {k: (v.shape, v.dtype) for k, v in t_anchors.items()} == \
            {output: ((batches_per_step, batch_size, CLASSES), np.float32), loss: ((batches_per_step,), np.float32)}
        validation = popart.InferenceSession(fnModel=proto, deviceInfo=device, dataFlow=dataFlow,
                                             userOptions=userOpts)
        validation.prepareDevice()
        validation.setRandomSeed(1)
        v_anchors = validation.initAnchorArrays()
        onnx_file_name = str(tmp_path / "weights.onnx")

        rng = np.random.default_rng(1)
        data = rng.random((batches_per_step, batch_size, ROWS * COLS)).astype(np.float32)
        labels = rng.integers(0, CLASSES, (batches_per_step, batch_size)).astype(np.int32)
        training.weightsFromHost()
        training.run(popart.PyStepIO({data_in: data, labels_in: labels}, t_anchors), "Epoch 0 training step0")
        training.modelToHost(onnx_file_name)
        validation.resetHostWeights(onnx_file_name)
        validation.weightsFromHost()
        validation.run(popart.PyStepIO({data_in: data, labels_in: labels}, v_anchors), "Epoch 0 evaluation step 0")
    assert not device.isAttached

    w, b, outs, losses = w0.astype(np.float64), b0.astype(np.float64), [], []
    for x, lab in zip(data, labels):          # numpy: SGD over the step, one batch at a time
        z = x @ w + b
        p = _softmax(z)
        outs.append(z)
        losses.append(-np.log(p[np.arange(batch_size), lab]).sum())
        g = p - np.eye(CLASSES)[lab]
        w, b = w - 0.01 * x.T @ g, b - 0.01 * g.sum(0)
    np.testing.assert_allclose(t_anchors[output], outs, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(t_anchors[loss], losses, rtol=1e-4, atol=1e-4)
    z = data @ w + b                          # validation runs with the trained weights
    np.testing.assert_allclose(v_anchors[output], z, rtol=1e-4, atol=1e-4)
    want = [-np.log(_softmax(zz)[np.arange(batch_size), lab]).sum() for zz, lab in zip(z, labels)]
    np.testing.assert_allclose(v_anchors[loss], want, rtol=1e-4, atol=1e-4)
    assert validation.getInfo(output).shape() == [batch_size, CLASSES]
    assert validation.getInfo(labels_in).data_type() == "INT32"
    assert training.getCycleCount() > 0 and validation.getCycleCount() > 0


def test_conv_tutorial_model_inference_matches_numpy():
    """popart_mnist_conv's layers (conv with dilations/kernel_shape/strides/pads, maxpool with
    num_outputs=1, reshape through an int64 constant, matmul) on an 8x8 image."""
    builder = popart.Builder()
    rng = np.random.default_rng(0)
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [2, 1, 8, 8]))
    w1 = rng.standard_normal((3, 1, 3, 3)).astype(np.float32)
    b1 = rng.standard_normal(3).astype(np.float32)
    t = builder.aiOnnx.conv([x, builder.addInitializedInputTensor(w1), builder.addInitializedInputTensor(b1)],
                            dilations=[1, 1], kernel_shape=[3, 3], strides=[1, 1], pads=[0, 0, 0, 0])
    t = builder.aiOnnx.relu([t])
    (t,) = builder.aiOnnx.maxpool([t], num_outputs=1, kernel_shape=[2, 2], pads=[0, 0, 0, 0], strides=[2, 2])
    shape = builder.aiOnnx.constant(np.asarray([2, 3 * 3 * 3]))
    t = builder.aiOnnx.reshape([t, shape])
    w2 = rng.standard_normal((27, 5)).astype(np.float32)
    out = builder.aiOnnx.matmul([t, builder.addInitializedInputTensor(w2)])
    builder.addOutputTensor(out)
    session = popart.InferenceSession(builder.getModelProto(), popart.DataFlow(1, [out]),
                                      popart.DeviceManager().createIpuModelDevice({"tilesPerIPU": 8}))
    session.prepareDevice()
    session.weightsFromHost()
    anchors = session.initAnchorArrays()
    data = rng.standard_normal((2, 1, 8, 8)).astype(np.float32)
    session.run(popart.PyStepIO({x: data}, anchors))
    conv = np.zeros((2, 3, 6, 6))
    for i in range(6):
        for j in range(6):
            conv[:, :, i, j] = np.einsum("nchw,ochw->no", data[:, :, i:i + 3, j:j + 3], w1)
    conv = np.maximum(conv + b1[None, :, None, None], 0)
    pooled = conv.reshape(2, 3, 3, 2, 3, 2).max(axis=(3, 5))
    np.testing.assert_allclose(anchors[out], pooled.reshape(2, 27) @ w2, rtol=1e-4, atol=1e-4)


def test_builder_habits_work_as_in_popart():
    builder = popart.Builder()
    x = builder.addInputTensor("FLOAT", [2, 6], "x")
    with builder.nameScope("enc"):
        assert builder.getNameScope("y") == "enc/y"
        a = builder.aiOnnx.relu([x])
        with builder.nameScope("inner"):
            parts = builder.aiOnnx.split([a], 2, 1, [2, 4])     # num_outputs, axis, split by position
    r2 = builder.aiOnnx.relu([x])
    assert (a, parts, r2) == ("enc/Relu:0", ["enc/inner/Split:0", "enc/inner/Split:1"], "Relu:0")
    r3 = builder.aiOnnx.relu([x])
    assert r3 == "Relu:0/1"
    s = builder.aiOnnxOpset11.softmax([r3], 1, "probs")          # axis, debugContext by position
    assert builder.getTensorShape(s) == [2, 6] and builder.getTensorShape(parts[1]) == [2, 4]
    c = builder.aiOnnx.cast([x], "INT32")                        # PopART's type name
    assert builder.getTensorDtypeString(c) == "int32"
    assert builder.getInputTensorIds() == ["x"] and x in builder.getAllTensorIds()
    assert s in builder.getValueTensorIds() and builder.getTrainableTensorIds() == []
    with pytest.raises(popart.popart_exception, match="opset for domain ai.onnx is already 11"):
        builder.aiOnnxOpset10.relu([x])
    with pytest.raises(popart.popart_exception, match="needs num_outputs"):
        builder.aiOnnx.split([x])
    with pytest.raises(popart.popart_exception, match="no parameter 'axes'"):
        builder.aiOnnx.softmax([x], axes=[1])
    t = builder.aiOnnx.transpose([x], [1, 0])                    # perm by position
    assert builder.getInt64VectorNodeAttribute("perm", t) == [1, 0]
    builder.addNodeAttribute("__note", "hello", {t})
    assert builder.getStringNodeAttribute("__note", [t]) == "hello"
    assert builder.getAllNodeAttributeNames(t) == ["__note", "perm"]
    builder.removeNodeAttribute("__note", [t])
    with pytest.raises(popart.popart_exception, match=r"has no attribute '__note'"):
        builder.getStringNodeAttribute("__note", t)
    fresh = popart.Builder()                                     # the first aiOnnxOpsetN used picks the opset
    y = fresh.aiOnnxOpset10.relu([fresh.addInputTensor(popart.TensorInfo("FLOAT", [3]))])
    assert fresh._opset == 10 and y == "Relu:0"
    info = popart.TensorInfo("FLOAT16", [2, 3])
    assert (info.data_type(), info.data_type_lcase(), info.shape(), info.nelms(), info.rank(), info.nbytes()) == \
        ("FLOAT16", "float16", [2, 3], 6, 2, 12)
    assert popart.TensorInfo("FLOAT", [1]).data_type_lcase() == "float32"
    assert popart.TensorInfo(np.zeros((4, 1), np.int32)) == popart.TensorInfo("INT32", [4, 1]) == \
        popart.TensorInfo(np.int32, (4, 1)) == popart.TensorInfo(np.dtype("int32"), [4, 1])


@pytest.mark.parametrize("call, match", [
    (lambda b, t: b.setAvailableMemoryProportion(t, 0.3), r"node 'Relu:0' is Relu; popsim.popart plans MatMul"),
    (lambda b, t: b.setAvailableMemoryProportion(t, 0), r"must be in \(0, 1\]"),
    (lambda b, t: b.recomputeOutputInBackwardPass(t, popart.RecomputeType.Recompute), "recomputation"),
    (lambda b, t: b.setPartialsType(t, "half"), "FLOAT partials"),
    (lambda b, t: b.setSerializeMatMul({t}, "output_channels", 2), "not serialized"),
    (lambda b, t: b.addUntypedInputTensor(), "static input shapes"),
    (lambda b, t: b.outputTensorLocation(t, None), "on the chip"),
    (lambda b, t: b.customOp("LeakyRelu", 1, [t], 1, {}), "custom ops are not supported"),
])
def test_builder_hints_popsim_does_not_act_on_are_refused(call, match):
    builder = popart.Builder()
    t = builder.aiOnnx.relu([builder.addInputTensor(popart.TensorInfo("FLOAT", [2]))])
    with pytest.raises(popart.popart_exception, match=match):
        call(builder, t)


@pytest.mark.parametrize("call, match", [
    (lambda: popart.DeviceManager().acquireAvailableDevice(2), r"no IPU hardware.*'numIPUs': 2"),
    (lambda: popart.DeviceManager().tryAcquireAvailableDevice(1), "createIpuModelDevice"),
    (lambda: popart.DeviceManager().acquireDeviceById(0), "createIpuModelDevice"),
    (lambda: popart.DeviceManager().enumerateDevices(), "no IPU hardware"),
    (lambda: popart.DeviceManager().createIpuModelDevice({"numTiles": 4}), "unknown option"),
    (lambda: popart.DeviceManager().createIpuModelDevice({"ipuVersion": "mk2"}), "'ipu2' \\(Mk2"),
    (lambda: popart.AnchorReturnType("all"), "did you mean 'ALL'"),
    (lambda: popart.TensorInfo("float32", [2]), "did you mean 'FLOAT'"),
    (lambda: popart.TensorInfo("int32", [2]), "did you mean 'INT32'"),
    (lambda: popart.AnchorReturnType("EVERYN"), "return period"),
    (lambda: setattr(popart.SessionOptions(), "enableExplicitMainLoops", True), "does not implement"),
    (lambda: setattr(popart.SessionOptions(), "notAnOption", 1), "has no field"),
    (lambda: popart.getLogger().setLevel("VERBOSE"), "unknown level"),
    (lambda: popart.Patterns("Default"), "PatternsLevel"),
])
def test_popart_habits_without_a_meaning_here_raise_clearly(call, match):
    with pytest.raises(popart.popart_exception, match=match):
        call()


def test_popart_habits_that_work():
    popart.getLogger().setLevel("TRACE")
    popart.getLogger("session").setLevel("OFF")
    patterns = popart.Patterns(popart.PatternsLevel.Default)
    patterns.InPlace = False
    assert not patterns.InPlace and patterns.isPatternEnabled("PreUniRepl")
    assert popart.reservedGradientPrefix() == "Gradient___"
    opts = popart.SessionOptions()
    opts.enablePrefetchDatastreams, opts.reportOptions = False, {"showExecutionSteps": "true"}
    device = popart.DeviceManager().createIpuModelDevice({"numIPUs": "1", "tilesPerIPU": "4"})
    assert (device.numIpus, device.tilesPerIPU, device.type) == (1, 4, popart.DeviceType.IpuModel)
    assert device.attach() and device.isAttached
    assert popart.DataFlow(2, ["a"], popart.AnchorReturnType("FINAL")).art("a").id() == "FINAL"


def test_popart_names_not_implemented_say_so():
    with pytest.raises(AttributeError, match="weightTensorLocationSettings is PopART's option but popsim.popart"):
        popart.SessionOptions().weightTensorLocationSettings.location = None
    with pytest.raises(AttributeError, match="popart.Adam is PopART's but popsim.popart does not implement it yet"):
        popart.Adam({})
    with pytest.raises(AttributeError, match="aiGraphcore.gelu: popsim.popart runs PopART's losses"):
        popart.Builder().aiGraphcore.gelu
    with pytest.raises(AttributeError, match="aiOnnx has no op 'topk' that popsim.popart runs"):
        popart.Builder().aiOnnx.topk


def test_available_memory_proportion_reaches_poplin_plans(monkeypatch):
    """setAvailableMemoryProportion sets PopART's node attribute; the MatMul, Gemm and Conv
    lowerings (and the layout of the weights they read) plan with it."""
    from popsim import poplin
    seen = []
    for name in ("mat_mul", "convolution", "create_mat_mul_input_rhs", "create_weights"):
        real = getattr(poplin, name)
        monkeypatch.setattr(poplin, name, lambda *a, _real=real, _name=name, **k: (
            seen.append((_name, (k.get("options") or {}).get("availableMemoryProportion"))), _real(*a, **k))[1])
    b = popart.Builder()
    x = b.addInputTensor(popart.TensorInfo("FLOAT", [4, 8]), "x")
    y = b.aiOnnx.matmul([x, b.addInitializedInputTensor(np.ones((8, 8), np.float32), "w")])
    g = b.aiOnnx.gemm([y, b.addInitializedInputTensor(np.ones((8, 2), np.float32), "w2")])
    img = b.addInputTensor(popart.TensorInfo("FLOAT", [1, 2, 6, 6]), "img")
    c = b.aiOnnx.conv([img, b.addInitializedInputTensor(np.ones((3, 2, 3, 3), np.float32), "k")], kernel_shape=[3, 3])
    b.setAvailableMemoryProportion(y, 0.25)
    b.setAvailableMemoryProportion({c, g}, 0.5)
    assert b.nodeHasAttribute("__available_memory_proportion", [y])
    session = popart.InferenceSession(b.getModelProto(), popart.DataFlow(1, [g, c]),
                                      popart.DeviceManager().createIpuModelDevice({"tilesPerIPU": 8}))
    session.prepareDevice()
    assert set(seen) == {("create_mat_mul_input_rhs", 0.25), ("mat_mul", 0.25), ("create_mat_mul_input_rhs", 0.5),
                         ("mat_mul", 0.5), ("create_weights", 0.5), ("convolution", 0.5)}
    anchors = session.initAnchorArrays()
    session.run(popart.PyStepIO({x: np.ones((4, 8), np.float32), img: np.ones((1, 2, 6, 6), np.float32)}, anchors))
    np.testing.assert_allclose(anchors[g], np.full((4, 2), 64.0))
    np.testing.assert_allclose(anchors[c], np.full((1, 3, 4, 4), 18.0))


def test_an_inference_session_reads_its_weights_back_with_replicas(tmp_path):
    b = popart.Builder()
    x = b.addInputTensor(popart.TensorInfo("FLOAT", [2, 3]), "x")
    w = np.arange(6, dtype=np.float32).reshape(3, 2)
    y = b.aiOnnx.matmul([x, b.addInitializedInputTensor(w, "w")])
    opts = popart.SessionOptions()
    opts.enableReplicatedGraphs, opts.replicatedGraphCount = True, 2
    session = popart.InferenceSession(b.getModelProto(), popart.DataFlow(1, [y]),
                                      popart.DeviceManager().createIpuModelDevice({"numIPUs": 2}), userOptions=opts)
    assert session.replicationFactor == 2 and session.accumulationFactor == 1
    session.prepareDevice()
    session.weightsFromHost()
    np.testing.assert_array_equal(session.weightsToHost()["w"], w)      # replica 0's, as PopART
    io = popart.PyWeightsIO({"w": np.zeros((3, 2), np.float32)})
    session.readWeights(io)
    np.testing.assert_array_equal(io.weights["w"], w)
    session.modelToHost(str(tmp_path / "m.onnx"))
    assert popart.Builder(str(tmp_path / "m.onnx")).isInitializer("w")


@pytest.mark.parametrize("op_type, params", [   # PopART's generated opset-11 bindings (popart_opset11.gen.cpp)
    ("MaxPool", "num_outputs kernel_shape ceil_mode dilations pads storage_order strides"),
    ("AveragePool", "kernel_shape ceil_mode count_include_pad pads strides"),
    ("Conv", "dilations group kernel_shape pads strides"),
    ("ConvTranspose", "dilations group kernel_shape output_padding output_shape pads strides"),
    ("Split", "num_outputs axis split"), ("BatchNormalization", "num_outputs epsilon momentum"),
    ("Dropout", "num_outputs ratio"), ("Gemm", "alpha beta transA transB"), ("Softmax", "axis"),
    ("Transpose", "perm"), ("ReduceMean", "axes keepdims"), ("LRN", "size alpha beta bias"),
    ("Concat", "axis"), ("Unsqueeze", "axes"), ("ArgMax", "axis keepdims"), ("Cast", "to"), ("Pad", "mode"),
    ("Add", ""), ("Clip", ""),
])
def test_aionnx_signatures_are_popart_s(op_type, params):
    from popsim.popart.ai_onnx import signature
    assert signature(op_type, 11) == params.split() + ["debugContext"]
