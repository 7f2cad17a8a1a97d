"""popart.Builder's models, loading across opsets, and the model errors found as it loads."""
import numpy as np
import pytest

from onnx_models import NO_ONNX

pytest.importorskip("onnx", reason=NO_ONNX)

import onnx
from onnx_models import check_against_reference, run_session, single_node_model

from popsim import popart


def _f(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def test_builder_ops_against_the_reference(rng):
    """Ops made by aiOnnx (element-wise, shape, Gemm, Concat, a Constant) in one model."""
    b = popart.Builder(opsets={"ai.onnx": 13})
    x = b.addInputTensor(popart.TensorInfo("FLOAT", [2, 3, 4]), "x")
    z = b.addInputTensor("FLOAT", [2, 12], "z")
    shape = b.aiOnnx.constant(np.array([2, -1], np.int64), "shape")
    flat = b.aiOnnx.reshape([b.aiOnnx.transpose([x], perm=[0, 2, 1]), shape])
    both = b.aiOnnx.concat([flat, b.aiOnnx.abs([z])], axis=1)
    scaled = b.aiOnnx.div([b.aiOnnx.exp([b.aiOnnx.neg([both])]), b.aiOnnx.constant(np.float32([2.0]))])
    w = b.addInitializedInputTensor(_f(rng, 5, 24), "w")
    c = b.addInitializedInputTensor(_f(rng, 5), "c")
    y = b.aiOnnx.tanh([b.aiOnnx.gemm([scaled, w, c], transB=1, alpha=0.5)])
    out = b.aiOnnx.sub([b.aiOnnx.sqrt([b.aiOnnx.sigmoid([y])]), b.aiOnnx.log([b.aiOnnx.sigmoid([y])])])
    out = b.aiOnnx.identity([out])
    b.addOutputTensor(out)
    assert b.getTensorShape(flat) == [2, 12] and b.getTensorShape(out) == [2, 5]
    assert b.getTensorDtypeString(out) == "float32" and b.getInputTensorIds() == ["x", "z"]
    assert b.isInitializer(w) and not b.isInitializer(x) and b.getOutputTensorIds() == [out]
    model = onnx.load_model_from_string(b.getModelProto())
    feeds = {"x": _f(rng, 2, 3, 4), "z": _f(rng, 2, 12)}
    check_against_reference(model, feeds, rtol=1e-5, atol=1e-6)


def test_tensor_ids_are_strings_as_popart_makes_them(rng):
    b = popart.Builder()
    x = b.addInputTensor(popart.TensorInfo("FLOAT", [2]))
    x2 = b.addInputTensor(popart.TensorInfo("FLOAT", [2]))
    r1, r2 = b.aiOnnx.relu([x]), b.aiOnnx.relu([x2])
    assert (x, x2, r1, r2) == ("input", "input/1", "Relu:0", "Relu:0/1")   # PopART's getNextId
    with pytest.raises(popart.popart_exception, match=r"no tensor 'nope'"):
        b.aiOnnx.add([x, "nope"])
    with pytest.raises(AttributeError, match=r"aiOnnx has no op 'rnn'.*matmul"):
        b.aiOnnx.rnn([x])


def test_a_loaded_model_can_be_extended(rng):
    b = popart.Builder()
    x = b.addInputTensor(popart.TensorInfo("FLOAT", [3]), "x")
    b.addOutputTensor(b.aiOnnx.relu([x]))
    again = popart.Builder(b.getModelProto())
    y = again.aiOnnx.neg([again.getOutputTensorIds()[0]])
    again.addOutputTensor(y)
    data = np.float32([-1, 0, 2])
    got, _ = run_session(again.getModelProto(), {x: data}, anchors=[y])
    np.testing.assert_array_equal(got[y], -np.maximum(data, 0))


def test_old_opsets_are_converted_and_the_newest_runs(rng):
    a, c = _f(rng, 2, 3), _f(rng, 3)
    old = single_node_model("Add", {"a": a, "c": c}, opset=7)       # below 9: onnx.version_converter
    np.testing.assert_allclose(run_session(old, {"a": a, "c": c})[0]["y0"], a + c, rtol=1e-6)
    newest = onnx.defs.onnx_opset_version()
    model = single_node_model("Softmax", {"a": a}, {"axis": 0}, opset=newest)
    check_against_reference(model, {"a": a})


def test_a_newer_opset_than_onnx_knows_is_refused(rng):
    model = single_node_model("Relu", {"x": _f(rng, 2)}, opset=onnx.defs.onnx_opset_version() + 1)
    with pytest.raises(popart.popart_exception, match=r"opset .* newer than the newest the installed onnx"):
        run_session(model.SerializeToString(), {"x": _f(rng, 2)})


def test_int64_data_runs_as_int_with_a_range_check(rng):
    """An int64 constant used as data is placed as INT where its values fit, as PopART runs
    int64 as int32 (the anchor comes back int32), and an int64 input streams as INT; a value
    that does not fit is refused."""
    for values, fits in (([7, -2], True), ([2 ** 40, 1], False)):
        b = popart.Builder()
        k = b.addInitializedInputTensor(np.array(values, np.int64), "k")
        y = b.aiOnnx.neg([k])
        b.addOutputTensor(y)
        if fits:
            out, _ = run_session(b.getModelProto(), {})
            assert out[y].dtype == np.int32 and out[y].tolist() == [-7, 2]
        else:
            with pytest.raises(popart.popart_exception, match=r"values in \[-1099511627776, -1\], outside INT's range"):
                run_session(b.getModelProto(), {})
    b = popart.Builder()
    x = b.addInputTensor(popart.TensorInfo("INT64", [2]), "i")
    y = b.aiOnnx.neg([x])
    b.addOutputTensor(y)
    out, _ = run_session(b.getModelProto(), {"i": np.array([7, -2], np.int64)})
    assert out[y].dtype == np.int32 and out[y].tolist() == [-7, 2]
    with pytest.raises(popart.popart_exception, match=r"input 'i' \(int64\) holds values in \[1, 4294967296\]"):
        run_session(b.getModelProto(), {"i": np.array([1, 2 ** 32], np.int64)})


def test_a_float64_constant_is_refused(rng):
    b = popart.Builder()
    x = b.addInputTensor(popart.TensorInfo("FLOAT", [2]), "x")
    k = b.aiOnnx.constant(np.float64([1.0, 2.0]), "k64")
    b.addOutputTensor(b.aiOnnx.relu([k]))
    b.addOutputTensor(b.aiOnnx.relu([x]))
    with pytest.raises(popart.popart_exception, match=r"'k64'.*DOUBLE"):
        run_session(b.getModelProto(), {"x": _f(rng, 2)})


def test_unsupported_attributes_are_refused(rng):
    """(MaxPool's ceil_mode and dilations, BatchNormalization's training mode now run.)"""
    x = _f(rng, 1, 1, 5, 5)
    inits = {"r": np.array(0.5, np.float32), "t": np.array(True)}
    model = single_node_model("Dropout", {"x": x}, {}, opset=13, initializers=inits)
    with pytest.raises(popart.popart_exception, match=r"'dropout_node' \(Dropout\): training_mode=true"):
        run_session(model, {"x": x})


def test_logical_ops_are_named_as_popart_names_them_and_bool_anchors_come_back():
    b = popart.Builder(opsets={"ai.onnx": 13})
    x = b.addInputTensor(popart.TensorInfo("FLOAT", [4]), "x")
    y = b.addInputTensor(popart.TensorInfo("FLOAT", [4]), "y")
    differ = b.aiOnnx.logical_or([b.aiOnnx.less([x, y]), b.aiOnnx.greater([x, y])])   # `or` is a keyword
    mean = b.aiOnnx.reducemean([b.aiOnnx.where([differ, x, y])], keepdims=0)
    xv, yv = np.array([1, 2, 3, 4], np.float32), np.array([1, 5, 2, 4], np.float32)
    out, _ = run_session(b.getModelProto(), {x: xv, y: yv}, anchors=[differ, mean])
    np.testing.assert_array_equal(out[differ], xv != yv)
    assert out[differ].dtype == np.bool_
    np.testing.assert_allclose(out[mean], np.mean(np.where(xv != yv, xv, yv)), rtol=1e-6)
