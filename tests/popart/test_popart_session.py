"""Whole models through popart.Builder and InferenceSession: an MLP and a CNN over several
batches per step, each anchor return type, and the errors of bad input."""
import numpy as np
import pytest

from onnx_models import NO_ONNX

pytest.importorskip("onnx", reason=NO_ONNX)

import onnx
from onnx_models import reference, run_session

from popsim import popart


def _mlp(rng, batch=4):
    b = popart.Builder()
    x = b.addInputTensor(popart.TensorInfo("FLOAT", [batch, 8]), "x")
    w1 = b.addInitializedInputTensor(rng.standard_normal((8, 16)).astype(np.float32) * 0.5, "w1")
    b1 = b.addInitializedInputTensor(rng.standard_normal(16).astype(np.float32), "b1")
    w2 = b.addInitializedInputTensor(rng.standard_normal((16, 5)).astype(np.float32) * 0.5, "w2")
    h = b.aiOnnx.relu([b.aiOnnx.add([b.aiOnnx.matmul([x, w1]), b1])])
    logits = b.aiOnnx.gemm([h, w2], alpha=1.0)
    probs = b.aiOnnx.softmax([logits], axis=1)
    b.addOutputTensor(probs)
    return b, x, h, probs


def _session(proto, anchors, bps, tiles=4):
    data_flow = popart.DataFlow(bps, anchors)
    device = popart.DeviceManager().createIpuModelDevice({"numIPUs": 1, "tilesPerIPU": tiles})
    session = popart.InferenceSession(fnModel=proto, dataFlow=data_flow, deviceInfo=device)
    session.prepareDevice()
    session.weightsFromHost()
    return session


def _per_batch(model_bytes, feeds_by_batch):
    model = onnx.load_model_from_string(model_bytes)
    return [reference(model, feeds) for feeds in feeds_by_batch]


def test_mlp_every_anchor_return_type(rng):
    b, x, h, probs = _mlp(rng)
    assert b.getTensorShape(probs) == [4, 5] and b.getTensorShape(h) == [4, 16]
    proto, bps = b.getModelProto(), 4
    art = popart.AnchorReturnType
    session = _session(proto, {probs: art("ALL"), h: art("SUM")}, bps)
    anchors = session.initAnchorArrays()
    assert anchors[probs].shape == (bps, 4, 5) and anchors[h].shape == (4, 16)
    data = rng.standard_normal((bps, 4, 8)).astype(np.float32)
    session.run(popart.PyStepIO({x: data}, anchors))
    want = _per_batch(proto, [{x: d} for d in data])
    np.testing.assert_allclose(anchors[probs], np.stack([w[probs] for w in want]), rtol=1e-5, atol=1e-6)
    hidden = [onnx.reference.ReferenceEvaluator(onnx.load_model_from_string(proto)).run([h], {x: d})[0] for d in data]
    np.testing.assert_allclose(anchors[h], np.sum(hidden, axis=0), rtol=1e-5, atol=1e-5)
    assert session.getCycleCount() > 0
    first = session.getCycleCount()
    session.run(popart.PyStepIO({x: data}, anchors))   # a second step costs the same
    assert session.getCycleCount() == first
    assert "Execution" in session.getSummaryReport() or "execution" in session.getSummaryReport().lower()
    assert session.getReport().execution.total_cycles >= 2 * first


def test_final_and_everyn_anchors(rng):
    b, x, h, probs = _mlp(rng, batch=2)
    proto, bps = b.getModelProto(), 6
    art = popart.AnchorReturnType
    session = _session(proto, {probs: art("FINAL"), h: art("EVERYN", 3)}, bps)
    anchors = session.initAnchorArrays()
    assert anchors[probs].shape == (2, 5) and anchors[h].shape == (2, 2, 16)
    data = rng.standard_normal((bps, 2, 8)).astype(np.float32)
    session.run(popart.PyStepIO({x: data}, anchors))
    evaluator = onnx.reference.ReferenceEvaluator(onnx.load_model_from_string(proto))
    np.testing.assert_allclose(anchors[probs], evaluator.run([probs], {x: data[-1]})[0], rtol=1e-5, atol=1e-6)
    every3 = [evaluator.run([h], {x: data[i]})[0] for i in (2, 5)]   # the 3rd and 6th batches
    np.testing.assert_allclose(anchors[h], np.stack(every3), rtol=1e-5, atol=1e-5)


def test_small_cnn_through_the_builder(rng):
    b = popart.Builder(opsets={"ai.onnx": 15})   # onnx.reference's BatchNormalization-9 mixes in batch statistics
    x = b.addInputTensor(popart.TensorInfo("FLOAT", [2, 1, 8, 8]), "image")
    w = b.addInitializedInputTensor(rng.standard_normal((4, 1, 3, 3)).astype(np.float32), "conv/w")
    bias = b.addInitializedInputTensor(rng.standard_normal(4).astype(np.float32), "conv/b")
    stats = [b.addInitializedInputTensor(v, f"bn/{k}") for k, v in
             (("scale", np.ones(4, np.float32) * 1.5), ("bias", np.zeros(4, np.float32) + 0.1),
              ("mean", rng.standard_normal(4).astype(np.float32)), ("var", np.ones(4, np.float32) * 2))]
    y = b.aiOnnx.conv([x, w, bias], pads=[1, 1, 1, 1], kernel_shape=[3, 3])
    y = b.aiOnnx.batchnormalization([y] + stats, num_outputs=1, epsilon=1e-5)[0]
    y = b.aiOnnx.relu([y])
    y = b.aiOnnx.maxpool([y], num_outputs=1, kernel_shape=[2, 2], strides=[2, 2])[0]
    y = b.aiOnnx.averagepool([y], kernel_shape=[2, 2], strides=[2, 2])
    flat = b.aiOnnx.flatten([y], axis=1)
    fc = b.addInitializedInputTensor(rng.standard_normal((16, 3)).astype(np.float32), "fc/w")
    out = b.aiOnnx.softmax([b.aiOnnx.matmul([flat, fc])], axis=-1)
    b.addOutputTensor(out)
    proto = b.getModelProto()
    data = rng.standard_normal((3, 2, 1, 8, 8)).astype(np.float32)
    got, _ = run_session(proto, {x: data}, batches_per_step=3, tiles=8, anchors=[out])
    want = _per_batch(proto, [{x: d} for d in data])
    np.testing.assert_allclose(got[out], np.stack([w_[out] for w_ in want]), rtol=1e-4, atol=1e-5)


def test_model_from_a_file_and_from_a_builder(tmp_path, rng):
    b, x, _, probs = _mlp(rng)
    path = tmp_path / "mlp.onnx"
    b.saveModelProto(str(path))
    data = rng.standard_normal((4, 8)).astype(np.float32)
    from_file, _ = run_session(str(path), {x: data}, anchors=[probs])
    from_builder, _ = run_session(popart.Builder(str(path)).getModelProto(), {x: data}, anchors=[probs])
    np.testing.assert_array_equal(from_file[probs], from_builder[probs])


# -- bad input ---------------------------------------------------------------------------------------
def _model(nodes, inputs, outputs, inits=(), opset=13):
    h = onnx.helper
    graph = h.make_graph(nodes, "g", inputs, outputs, list(inits))
    return h.make_model(graph, opset_imports=[h.make_opsetid("", opset)]).SerializeToString()


def test_an_unknown_op_names_the_op_its_node_and_the_supported_list():
    h, f = onnx.helper, onnx.TensorProto.FLOAT
    proto = _model([h.make_node("Softsign", ["x"], ["y"], name="my_softsign")], [h.make_tensor_value_info("x", f, [2])],
                   [h.make_tensor_value_info("y", f, [2])])
    with pytest.raises(popart.popart_exception, match=r"my_softsign.*'Softsign' is not supported.*MatMul"):
        run_session(proto, {"x": np.zeros(2, np.float32)})


def test_float64_is_refused_naming_the_tensor():
    h = onnx.helper
    proto = _model([h.make_node("Relu", ["x64"], ["y"])],
                   [h.make_tensor_value_info("x64", onnx.TensorProto.DOUBLE, [2])],
                   [h.make_tensor_value_info("y", onnx.TensorProto.DOUBLE, [2])])
    with pytest.raises(popart.popart_exception, match=r"'x64'.*DOUBLE.*float32"):
        run_session(proto, {"x64": np.zeros(2)})


def test_wrong_step_inputs_are_refused(rng):
    b, x, _, probs = _mlp(rng)
    session = _session(b.getModelProto(), {probs: popart.AnchorReturnType("ALL")}, 2)
    anchors = session.initAnchorArrays()
    good = np.zeros((2, 4, 8), np.float32)
    with pytest.raises(popart.popart_exception, match=r"'y'.*no inputs of the model.*'x'"):
        session.run(popart.PyStepIO({x: good, "y": good}, anchors))
    with pytest.raises(popart.popart_exception, match=r"no array for input 'x'"):
        session.run(popart.PyStepIO({}, anchors))
    with pytest.raises(popart.popart_exception, match=r"input 'x' is float32 \(4, 8\) \(32 elements\); "
                                                      r"expected float32 of 64 elements, shaped \(2, 4, 8\)"):
        session.run(popart.PyStepIO({x: good[0]}, anchors))
    with pytest.raises(popart.popart_exception, match=r"input 'x' is float64"):
        session.run(popart.PyStepIO({x: good.astype(np.float64)}, anchors))
    with pytest.raises(popart.popart_exception, match=r"anchor 'Softmax:0' needs .* \(2, 4, 5\)"):
        session.run(popart.PyStepIO({x: good}, {}))


def test_unsupported_options_and_devices_are_refused(rng):
    b, _, _, probs = _mlp(rng)
    opts = popart.SessionOptions()
    opts.enableStochasticRounding = True
    device = popart.DeviceManager().createIpuModelDevice({"tilesPerIPU": 4})
    with pytest.raises(popart.popart_exception, match=r"enableStochasticRounding = True is not supported yet"):
        popart.InferenceSession(b.getModelProto(), popart.DataFlow(1, {probs: popart.AnchorReturnType("ALL")}),
                                device, userOptions=opts)
    with pytest.raises(popart.popart_exception, match=r"no field 'enableReplication'"):
        opts.enableReplication = True
    with pytest.raises(popart.popart_exception, match=r"unknown option\(s\) \['tiles'\]"):
        popart.DeviceManager().createIpuModelDevice({"tiles": 2})
    with pytest.raises(popart.popart_exception, match=r"anchor 'nope' is no tensor"):
        popart.InferenceSession(b.getModelProto(), popart.DataFlow(1, {"nope": popart.AnchorReturnType("ALL")}),
                                device)


def test_weights_and_inputs_are_laid_out_for_their_reader(rng, monkeypatch):
    """A Conv's input and weights and a MatMul's right-hand side are created for the op that
    reads them (poplin.create_input / create_weights / create_mat_mul_input_rhs), as PopART
    creates them: no rearranging copy each batch, so a step costs fewer cycles than with the
    same tensors mapped linearly, for the same results."""
    import popsim
    from popsim.popart import session as session_module
    b = popart.Builder()
    x = b.addInputTensor(popart.TensorInfo("FLOAT", [2, 8, 16, 16]), "x")
    w = b.addInitializedInputTensor(rng.standard_normal((16, 8, 3, 3)).astype(np.float32), "w")
    flat = b.aiOnnx.flatten([b.aiOnnx.conv([x, w], pads=[1, 1, 1, 1])])
    out = b.aiOnnx.matmul([flat, b.addInitializedInputTensor(rng.standard_normal((4096, 10)).astype(np.float32))])
    b.addOutputTensor(out)
    data = rng.standard_normal((2, 8, 16, 16)).astype(np.float32)
    laid_out, s1 = run_session(b.getModelProto(), {x: data}, tiles=64, anchors=[out])
    monkeypatch.setattr(session_module, "create_variable", lambda g, m, tid, shape, cache, dtype=popsim.FLOAT:
                        g.add_variable(dtype, tuple(shape), tid, mapping=popsim.VariableMappingMethod.LINEAR))
    linear, s2 = run_session(b.getModelProto(), {x: data}, tiles=64, anchors=[out])
    np.testing.assert_allclose(laid_out[out], linear[out], rtol=1e-4, atol=1e-3)
    assert s1.getCycleCount() < s2.getCycleCount()


def test_constants_are_laid_out_for_their_reader_too(rng, monkeypatch):
    """A Conv's weights and a MatMul's right-hand side given as constants (a Constant node, as
    the onnx package's light models make theirs with ConstantOfShape) are created by the op
    that reads them and hold their values from the start, as PopART creates its constants:
    the results are onnx's reference's, and a step costs fewer cycles than with each
    constant mapped linearly and read across its layout, which gives the same results."""
    from popsim.popart import lowering
    b = popart.Builder()
    x = b.addInputTensor(popart.TensorInfo("FLOAT", [2, 8, 16, 16]), "x")
    w = b.aiOnnx.constant(rng.standard_normal((16, 8, 3, 3)).astype(np.float32))
    flat = b.aiOnnx.flatten([b.aiOnnx.conv([x, w], pads=[1, 1, 1, 1])])
    out = b.aiOnnx.matmul([flat, b.aiOnnx.constant(rng.standard_normal((4096, 10)).astype(np.float32))])
    b.addOutputTensor(out)
    proto = b.getModelProto()
    data = rng.standard_normal((2, 8, 16, 16)).astype(np.float32)
    laid_out, s1 = run_session(proto, {x: data}, tiles=64, anchors=[out])
    np.testing.assert_allclose(laid_out[out], reference(onnx.load_from_string(proto), {x: data})[out], rtol=1e-4,
                               atol=1e-3)
    assert s1.getReport().memory.category_total("constants") < 4096 * 10 * 4   # not held as constants
    monkeypatch.setattr(lowering, "create_for_reader", lambda *args: None)
    linear, s2 = run_session(proto, {x: data}, tiles=64, anchors=[out])
    np.testing.assert_array_equal(laid_out[out], linear[out])
    assert s1.getCycleCount() < s2.getCycleCount()


def test_linearly_mapped_tensors_start_where_the_last_one_ended():
    """PopART's LinearMapper: a tensor with no creator is mapped linearly from the tile after
    the last one its graph's previous such tensor used, wrapping round, so that many small
    ones (a BatchNormalization's scale, bias, mean, variance) do not all start on tile 0."""
    from types import SimpleNamespace

    import popsim
    from graph_helpers import small_device
    from popsim.popart.layout import create_variable
    g = popsim.Graph(small_device(8))
    model = SimpleNamespace(nodes=[], shapes={})
    first_tiles = []
    for i, n in enumerate([10, 100, 3, 1]):   # 10 floats: 1 tile (128 bytes a tile at least); 100: 3 tiles
        t = create_variable(g, model, f"w{i}", (n,), None)
        first_tiles.append(min(tile for tile, intervals in enumerate(g.get_tile_mapping(t)) if intervals))
    assert first_tiles == [0, 1, 4, 5]
    other = popsim.Graph(small_device(8))   # each graph keeps its own start
    assert other.get_tile_mapping(create_variable(other, model, "v", (4,), None))[0]


@pytest.mark.parametrize("enabled", [True, False])
def test_prepare_device_pauses_the_cyclic_collector_and_leaves_it_as_it_was(rng, monkeypatch, enabled):
    import gc

    from popsim.popart import lowering
    seen = []
    run = lowering.Lowering.run

    def recording(self, *args, **kwargs):
        seen.append(gc.isenabled())
        return run(self, *args, **kwargs)

    monkeypatch.setattr(lowering.Lowering, "run", recording)
    b, _, _, probs = _mlp(rng)
    proto = b.getModelProto()
    (gc.enable if enabled else gc.disable)()
    try:
        _session(proto, {probs: popart.AnchorReturnType("ALL")}, 1)
        assert seen == [False] and gc.isenabled() == enabled
        device = popart.DeviceManager().createIpuModelDevice({"numIPUs": 1, "tilesPerIPU": 4})
        bad = popart.InferenceSession(fnModel=proto, deviceInfo=device,
                                      dataFlow=popart.DataFlow(1, {probs: popart.AnchorReturnType("ALL")}))
        monkeypatch.setattr(lowering.Lowering, "run", lambda self, *a, **k: 1 / 0)
        with pytest.raises(ZeroDivisionError):
            bad.prepareDevice()
        assert gc.isenabled() == enabled   # an error leaves it as it was too
    finally:
        gc.enable()
