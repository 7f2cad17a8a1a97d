"""Element types on the device: FLOAT16 inputs, weights and anchors as HALF; 8- and 16-bit
integers streamed in their own types, computed as INT and cast back; Cast between them."""
import numpy as np
import pytest

from onnx_models import NO_ONNX

pytest.importorskip("onnx", reason=NO_ONNX)

from onnx_models import run_session
from popsim import popart


def test_a_float16_model_runs_in_half(rng):
    """Input, weights (initializers) and anchors FLOAT16: streamed and stored as HALF, the
    ops (poplin.mat_mul, popops.add, popnn's non-linearities) run on HALF tensors."""
    x = rng.standard_normal((4, 8)).astype(np.float16)
    w = (rng.standard_normal((8, 3)) * 0.5).astype(np.float16)
    bias = rng.standard_normal(3).astype(np.float16)
    b = popart.Builder()
    xi = b.addInputTensor(popart.TensorInfo("FLOAT16", [4, 8]), "x")
    h = b.aiOnnx.add([b.aiOnnx.matmul([xi, b.addInitializedInputTensor(w, "w")]),
                      b.addInitializedInputTensor(bias, "b")])
    y = b.aiOnnx.softmax([b.aiOnnx.relu([h])], axis=1)
    b.addOutputTensor(y)
    out, _ = run_session(b.getModelProto(), {"x": x}, anchors=[h, y])
    assert out[y].dtype == np.float16 and out[h].dtype == np.float16
    want_h = x.astype(np.float32) @ w.astype(np.float32) + bias.astype(np.float32)
    e = np.exp(np.maximum(want_h, 0) - np.maximum(want_h, 0).max(axis=1, keepdims=True))
    np.testing.assert_allclose(out[h].astype(np.float32), want_h, rtol=1e-2, atol=1e-2)
    np.testing.assert_allclose(out[y].astype(np.float32), e / e.sum(axis=1, keepdims=True), rtol=1e-2, atol=1e-3)


@pytest.mark.parametrize("onnx_type,np_type", [("INT8", np.int8), ("UINT8", np.uint8), ("INT16", np.int16),
                                               ("UINT16", np.uint16), ("UINT32", np.uint32)])
def test_small_integers_stream_in_their_type_and_come_back_in_it(rng, onnx_type, np_type):
    a = rng.integers(0, 50, 6).astype(np_type)
    c = rng.integers(0, 50, 6).astype(np_type)
    b = popart.Builder()
    ai, ci = (b.addInputTensor(popart.TensorInfo(onnx_type, [6]), n) for n in ("a", "c"))
    y, m = b.aiOnnx.add([ai, ci]), b.aiOnnx.max([ai, ci])
    b.addOutputTensor(y)
    out, _ = run_session(b.getModelProto(), {"a": a, "c": c}, anchors=[y, m])
    assert out[y].dtype == np_type and out[y].tolist() == (a + c).tolist()
    assert out[m].tolist() == np.maximum(a, c).tolist()


def test_cast_between_float16_float_and_int_on_the_device(rng):
    x = (rng.standard_normal(5) * 10).astype(np.float32)
    b = popart.Builder()
    xi = b.addInputTensor(popart.TensorInfo("FLOAT", [5]), "x")
    h = b.aiOnnx.cast([xi], "FLOAT16")
    i = b.aiOnnx.cast([h], "INT32")
    out, _ = run_session(b.getModelProto(), {"x": x}, anchors=[h, i])
    assert out[h].dtype == np.float16 and out[h].tolist() == x.astype(np.float16).tolist()
    assert out[i].dtype == np.int32 and out[i].tolist() == x.astype(np.float16).astype(np.int32).tolist()


def test_constant_anchors_are_placed_on_the_device():
    """Shape's and ConstantOfShape's results (known as the graph is built) can be anchored."""
    b = popart.Builder()
    x = b.addInputTensor(popart.TensorInfo("FLOAT", [2, 3]), "x")
    s = b.aiOnnx.shape([x])
    z = b.aiOnnx.constantofshape([s])
    out, _ = run_session(b.getModelProto(), {"x": np.zeros((2, 3), np.float32)}, anchors=[s, z])
    assert out[s].dtype == np.int32 and out[s].tolist() == [2, 3]
    assert out[z].tolist() == np.zeros((2, 3)).tolist()


def test_float16_conv_pool_and_lstm_against_the_reference(rng):
    """Conv (inputs and weights created by poplin for HALF), MaxPool and an LSTM in FLOAT16."""
    import onnx
    from onnx import helper
    from onnx_models import reference
    H = onnx.TensorProto.FLOAT16
    x = rng.standard_normal((1, 2, 6, 6)).astype(np.float16)
    w = (rng.standard_normal((3, 2, 3, 3)) * 0.3).astype(np.float16)
    lw = (rng.standard_normal((1, 4 * 4, 3)) * 0.3).astype(np.float16)
    lr = (rng.standard_normal((1, 4 * 4, 4)) * 0.3).astype(np.float16)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("MaxPool", ["c"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Reshape", ["p", "shape"], ["s"]),   # [3, 3, 3]: C as time, H as batch
             helper.make_node("Transpose", ["s"], ["t"], perm=[0, 2, 1]),
             helper.make_node("LSTM", ["t", "lw", "lr"], ["y"], hidden_size=4)]
    inits = [onnx.numpy_helper.from_array(a, n) for a, n in ((w, "w"), (lw, "lw"), (lr, "lr"))] + \
        [onnx.numpy_helper.from_array(np.array([3, 3, 3], np.int64), "shape")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", H, x.shape)],
                              [helper.make_tensor_value_info("p", H, None),
                               helper.make_tensor_value_info("y", H, None)],
                              inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    got, _ = run_session(model, {"x": x})
    for name, want in reference(model, {"x": x}).items():
        assert got[name].dtype == np.float16
        np.testing.assert_allclose(got[name].astype(np.float32), want.astype(np.float32), rtol=2e-2, atol=2e-2,
                                   err_msg=name)


def test_builder_cast_takes_popart_type_names():
    b = popart.Builder()
    x = b.addInputTensor(popart.TensorInfo("FLOAT", [2]), "x")
    with pytest.raises(popart.popart_exception, match=r"aiOnnx.cast: unknown type 'FLOAT17'"):
        b.aiOnnx.cast([x], "FLOAT17")
    assert b.getTensorDtypeString(b.aiOnnx.cast([x], "float16")) == "float16"   # PopART's lower-case name


def test_fnuz_float8_inputs_casts_and_anchors_run_as_quarter(rng):
    """FLOAT8E4M3FNUZ and FLOAT8E5M2FNUZ (the IPU's QUARTER F143 and F152): a float8 input
    streamed as its bytes, Cast to and from them on the device (saturating by default, to NaN
    with saturate=0), float8 anchors; ml_dtypes and onnx's saturate_cast as the reference."""
    import ml_dtypes
    import onnx
    from onnx import TensorProto as TP
    from onnx import helper as h
    e4, e5 = ml_dtypes.float8_e4m3fnuz, ml_dtypes.float8_e5m2fnuz
    nodes = [h.make_node("Cast", ["q"], ["q_float"], to=TP.FLOAT),
             h.make_node("Cast", ["f"], ["f_e5"], to=TP.FLOAT8E5M2FNUZ),
             h.make_node("Cast", ["f"], ["f_e4_nan"], to=TP.FLOAT8E4M3FNUZ, saturate=0),
             h.make_node("Cast", ["f_e5"], ["f_e5_e4"], to=TP.FLOAT8E4M3FNUZ)]
    graph = h.make_graph(nodes, "fnuz", [h.make_tensor_value_info("q", TP.FLOAT8E4M3FNUZ, [8]),
                                         h.make_tensor_value_info("f", TP.FLOAT, [8])],
                         [h.make_tensor_value_info(n, t, [8]) for n, t in
                          (("q_float", TP.FLOAT), ("f_e5", TP.FLOAT8E5M2FNUZ), ("f_e4_nan", TP.FLOAT8E4M3FNUZ),
                           ("f_e5_e4", TP.FLOAT8E4M3FNUZ))])
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 21)])
    q = (rng.standard_normal(8) * 20).astype(e4)
    f = np.array([0.3, -1e6, 1e6, np.inf, -np.inf, np.nan, 250.0, 1e-9], np.float32)
    out, _ = run_session(model.SerializeToString(), {"q": q, "f": f})
    assert out["f_e5"].dtype == e5 and out["f_e4_nan"].dtype == e4
    np.testing.assert_array_equal(out["q_float"], q.astype(np.float32))
    want_e5 = onnx.numpy_helper.saturate_cast(f, e5)
    np.testing.assert_array_equal(out["f_e5"].view(np.uint8), want_e5.view(np.uint8))
    np.testing.assert_array_equal(out["f_e4_nan"].view(np.uint8), f.astype(e4).view(np.uint8))
    want_e4 = onnx.numpy_helper.saturate_cast(want_e5.astype(np.float32), e4)
    np.testing.assert_array_equal(out["f_e5_e4"].view(np.uint8), want_e4.view(np.uint8))
