"""Bad input to popsim.popart as a PopART script might give it: each is a popart_exception
naming the tensor or node, what was expected and what was found (never a crash or
garbage), and a session stays usable after a failed run."""
import numpy as np
import pytest

from onnx_models import NO_ONNX

pytest.importorskip("onnx", reason=NO_ONNX)

from onnx import TensorProto, helper

from popsim import popart

W = np.arange(6, dtype=np.float32).reshape(3, 2)


@pytest.fixture(scope="module")
def prepared():
    b = popart.Builder()
    x = b.addInputTensor(popart.TensorInfo("FLOAT", [2, 3]), "x")
    y = b.aiOnnx.matmul([x, b.addInitializedInputTensor(W, "w")])
    b.addOutputTensor(y)
    device = popart.DeviceManager().createIpuModelDevice({"tilesPerIPU": 4})
    session = popart.InferenceSession(b.getModelProto(), popart.DataFlow(2, {y: popart.AnchorReturnType("ALL")}),
                                      device)
    with pytest.raises(popart.popart_exception, match=r"run: call prepareDevice\(\) first"):
        session.run(popart.PyStepIO({}, {}))
    with pytest.raises(popart.popart_exception, match=r"weightsFromHost: call prepareDevice\(\) first"):
        session.weightsFromHost()
    session.prepareDevice()
    return session, x, y


def _data(seed=0):
    return np.random.default_rng(seed).random((2, 2, 3)).astype(np.float32)


def test_constant_weights_run_without_weights_from_host_and_twice_is_harmless(prepared):
    session, x, y = prepared
    anchors = session.initAnchorArrays()
    session.run(popart.PyStepIO({x: _data()}, anchors))     # constantWeights: compiled in, as PopART
    np.testing.assert_allclose(anchors[y], _data() @ W, rtol=1e-6)
    session.weightsFromHost()
    session.weightsFromHost()
    session.run(popart.PyStepIO({x: _data(1)}, anchors))
    np.testing.assert_allclose(anchors[y], _data(1) @ W, rtol=1e-6)


def test_non_contiguous_inputs_are_read_by_value(prepared):
    session, x, y = prepared
    anchors = session.initAnchorArrays()
    view = np.random.default_rng(2).random((3, 2, 2)).astype(np.float32).transpose(1, 2, 0)
    assert not view.flags.c_contiguous
    session.run(popart.PyStepIO({x: view}, anchors))
    np.testing.assert_allclose(anchors[y], view @ W, rtol=1e-6)


@pytest.mark.parametrize("inputs, outputs, match", [
    (lambda x: {x: _data().astype(np.float64)}, None,
     r"input 'x' is float64 \(2, 2, 3\) \(12 elements\); expected float32 of 12"),
    (lambda x: {x: _data()[0]}, None,
     r"input 'x' is float32 \(2, 3\) \(6 elements\); expected float32 of 12 elements, shaped \(2, 2, 3\)"),
    (lambda x: {}, None, r"no array for input 'x'; expected shape \(2, 2, 3\)"),
    (lambda x: {x: _data(), "z": _data()}, None, r"\['z'\] are no inputs of the model"),
    (lambda x: {x: _data()}, {}, r"anchor 'MatMul:0' needs .* float32 array of shape \(2, 2, 2\).*found nothing"),
    (lambda x: {x: _data()}, {"MatMul:0": np.zeros((2, 2, 2), np.float64)}, r"found float64 \(2, 2, 2\)"),
    (lambda x: {x: _data()}, {"MatMul:0": np.asfortranarray(np.zeros((2, 2, 2), np.float32))}, "not C-contiguous"),
    (lambda x: {x: _data()}, {"MatMul:0": np.broadcast_to(np.zeros((2, 2), np.float32), (2, 2, 2))}, "read-only"),
])
def test_bad_step_io_is_named_and_the_session_stays_usable(prepared, inputs, outputs, match):
    session, x, y = prepared
    anchors = session.initAnchorArrays() if outputs is None else outputs
    with pytest.raises(popart.popart_exception, match=match):
        session.run(popart.PyStepIO(inputs(x), anchors))
    good = session.initAnchorArrays()
    session.run(popart.PyStepIO({x: _data(3)}, good))
    np.testing.assert_allclose(good[y], _data(3) @ W, rtol=1e-6)


def test_a_detached_device_does_not_run_until_attached(prepared):
    session, x, y = prepared
    anchors = session.initAnchorArrays()
    with session.deviceInfo:
        session.run(popart.PyStepIO({x: _data()}, anchors))
    with pytest.raises(popart.popart_exception, match=r"the device is detached.*attach\(\)"):
        session.run(popart.PyStepIO({x: _data()}, anchors))
    assert session.deviceInfo.attach()
    session.run(popart.PyStepIO({x: _data(6)}, anchors))
    np.testing.assert_allclose(anchors[y], _data(6) @ W, rtol=1e-6)


def test_arrays_of_the_right_count_in_another_shape_work_as_in_popart(prepared):
    """PopART checks a PyStepIO array's type and number of elements, not its shape."""
    session, x, y = prepared
    out = np.zeros((4, 2), np.float32)
    session.run(popart.PyStepIO({x: _data(5).reshape(4, 3)}, {y: out}))
    np.testing.assert_allclose(out, (_data(5) @ W).reshape(4, 2), rtol=1e-6)


def test_step_io_callbacks_hand_over_one_batch_each(prepared):
    session, x, y = prepared
    data, anchors, calls = _data(4), session.initAnchorArrays(), []
    batches = iter(data)

    def output_callback(tid):
        calls.append(("out", tid))
        return anchors[tid][sum(c == ("out", tid) for c in calls) - 1]

    stepio = popart.PyStepIOCallback(lambda tid, prefetch: next(batches), lambda tid: calls.append(("in done", tid)),
                                     output_callback, lambda tid: calls.append(("out done", tid)))
    session.run(stepio)
    np.testing.assert_allclose(anchors[y], data @ W, rtol=1e-6)
    assert calls.count(("out", y)) == 2 and ("in done", x) in calls and calls[-1] == ("out done", y)
    with pytest.raises(popart.popart_exception, match=r"input_callback for 'x' returned NoneType"):
        session.run(popart.PyStepIOCallback(lambda tid, p: None, lambda tid: None, output_callback, lambda tid: None))


def _model(nodes, outputs=("a",)):
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("i", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info(o, TensorProto.FLOAT, [2]) for o in outputs])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)]).SerializeToString()


@pytest.mark.parametrize("nodes, match", [
    ([helper.make_node("Relu", ["b"], ["a"], name="r1"), helper.make_node("Relu", ["a"], ["b"], name="r2")],
     r"node 'r1' \(Relu\) reads tensor 'b', but node 'r2' makes it later in the graph \(a cycle"),
    ([helper.make_node("Relu", ["q"], ["a"], name="r")], r"node 'r' \(Relu\) reads tensor 'q'.*dangling input"),
    ([helper.make_node("Relu", ["i"], ["a"], name="r"), helper.make_node("Neg", ["i"], ["a"], name="n")],
     r"node 'n' \(Neg\) makes tensor 'a', which is already made by node 'r'"),
    ([helper.make_node("Relu", ["i"], ["i"], name="r")], r"makes tensor 'i', which is already a model input"),
    ([], r"model output 'a' is made by no node"),
])
def test_broken_graphs_name_the_node_and_tensor(nodes, match):
    device = popart.DeviceManager().createIpuModelDevice({})
    with pytest.raises(popart.popart_exception, match=match):
        popart.InferenceSession(_model(nodes), popart.DataFlow(1, ["a"]), device)


def test_builder_ids_never_collide_and_garbage_models_are_named():
    b = popart.Builder()
    assert [b.addInputTensor(popart.TensorInfo("FLOAT", [1]), "x") for _ in range(3)] == ["x", "x/1", "x/2"]
    assert b.addInitializedInputTensor(np.zeros(1, np.float32), "x") == "x/3"
    with pytest.raises(popart.popart_exception, match=r"addOutputTensor: no tensor 'nope'"):
        b.addOutputTensor("nope")
    device = popart.DeviceManager().createIpuModelDevice({})
    with pytest.raises(popart.popart_exception, match=r"7 bytes that are not a serialized ONNX ModelProto"):
        popart.InferenceSession(b"garbage", popart.DataFlow(1, []), device)
    with pytest.raises(popart.popart_exception, match=r"DataFlow anchor 'nope' is no tensor of the model"):
        popart.InferenceSession(b.getModelProto(), popart.DataFlow(1, ["nope"]), device)
    empty = popart.InferenceSession(popart.Builder().getModelProto(), popart.DataFlow(1, {}), device)
    empty.prepareDevice()                       # an empty model: nothing to run, and no error
    empty.run(popart.PyStepIO({}, empty.initAnchorArrays()))


def test_training_demands_weights_from_host(tmp_path):
    b = popart.Builder()
    x = b.addInputTensor(popart.TensorInfo("FLOAT", [2, 3]), "x")
    y = b.aiOnnx.matmul([x, b.addInitializedInputTensor(W, "w")])
    loss = b.aiGraphcore.identityloss([y])
    device = popart.DeviceManager().createIpuModelDevice({})
    session = popart.TrainingSession(b.getModelProto(), popart.DataFlow(1, [loss]), loss, popart.ConstSGD(0.1),
                                     device)
    session.prepareDevice()
    with pytest.raises(popart.popart_exception, match="call session.weightsFromHost"):
        session.run(popart.PyStepIO({x: _data()[0]}, session.initAnchorArrays()))
    opts = popart.SessionOptions()             # resetHostWeights needs constantWeights off, as PopART
    inference = popart.InferenceSession(b.getModelProto(), popart.DataFlow(1, [y]), device, userOptions=opts)
    inference.prepareDevice()
    with pytest.raises(popart.popart_exception, match="constantWeights"):
        inference.resetHostWeights(b.getModelProto())
