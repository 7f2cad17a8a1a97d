"""Each ONNX op popsim.popart runs, against onnx's reference evaluator, on one-node models."""
import numpy as np
import pytest

from onnx_models import NO_ONNX

pytest.importorskip("onnx", reason=NO_ONNX)

from onnx_models import check_against_reference, run_session, single_node_model


def _f(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("op_type,a_shape,b_shape", [
    ("Add", (2, 3, 4), (4,)), ("Sub", (2, 3, 4), (3, 1)), ("Mul", (3, 1), (1, 5)), ("Div", (2, 3), (2, 3))])
def test_binary_ops_broadcast_as_onnx(rng, op_type, a_shape, b_shape):
    a, b = _f(rng, *a_shape), _f(rng, *b_shape)
    if op_type == "Div":
        b = np.sign(b) * (np.abs(b) + 0.5)
    check_against_reference(single_node_model(op_type, {"a": a, "b": b}), {"a": a, "b": b})


@pytest.mark.parametrize("op_type", ["Relu", "Sigmoid", "Tanh", "Exp", "Log", "Sqrt", "Neg", "Abs", "Identity"])
def test_unary_ops(rng, op_type):
    x = _f(rng, 3, 5)
    if op_type in ("Log", "Sqrt"):
        x = np.abs(x) + 0.1
    check_against_reference(single_node_model(op_type, {"x": x}), {"x": x}, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("axis,shape", [(-1, (2, 3, 5)), (1, (2, 3, 5)), (0, (4, 3))])
def test_softmax_along_an_axis(rng, axis, shape):
    """Opset 13 on: normalised along ``axis``."""
    x = _f(rng, *shape) * 3
    check_against_reference(single_node_model("Softmax", {"x": x}, {"axis": axis}, opset=13), {"x": x})


@pytest.mark.parametrize("axis,shape", [(1, (2, 3, 5)), (2, (2, 3, 4)), (0, (2, 3))])
def test_softmax_before_opset_13_coerces_to_2d(rng, axis, shape):
    """Before opset 13: over everything from ``axis`` on (the input coerced to 2-D), as the
    ONNX spec says; onnx.reference implements only the later definition, so numpy checks."""
    x = _f(rng, *shape) * 3
    got, _ = run_session(single_node_model("Softmax", {"x": x}, {"axis": axis}, opset=11), {"x": x})
    rows = x.reshape(int(np.prod(shape[:axis])), -1)
    e = np.exp(rows - rows.max(axis=1, keepdims=True))
    np.testing.assert_allclose(got["y0"], (e / e.sum(axis=1, keepdims=True)).reshape(shape), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("a_shape,b_shape", [((4, 6), (6, 3)), ((2, 4, 6), (6, 3)), ((2, 1, 4, 6), (3, 6, 5)),
                                             ((6,), (6, 3)), ((4, 6), (6,))])
def test_matmul_is_numpy_matmul(rng, a_shape, b_shape):
    a, b = _f(rng, *a_shape), _f(rng, *b_shape)
    check_against_reference(single_node_model("MatMul", {"a": a, "b": b}), {"a": a, "b": b}, rtol=1e-4)


@pytest.mark.parametrize("attrs", [{}, {"transA": 1, "alpha": 0.5}, {"transB": 1, "beta": 2.0}])
def test_gemm(rng, attrs):
    a = _f(rng, 3, 4) if not attrs.get("transA") else _f(rng, 4, 3)
    b = _f(rng, 4, 5) if not attrs.get("transB") else _f(rng, 5, 4)
    c = _f(rng, 5)
    model = single_node_model("Gemm", {"a": a}, attrs, initializers={"b": b, "c": c})
    check_against_reference(model, {"a": a}, rtol=1e-4)


def test_shape_ops_chain(rng):
    """Reshape (0 and -1), Transpose, Flatten and Concat with int64 shape initializers."""
    from onnx import helper
    import onnx
    x = _f(rng, 2, 3, 4)
    nodes = [helper.make_node("Reshape", ["x", "shape"], ["r"]),
             helper.make_node("Transpose", ["r"], ["t"], perm=[2, 0, 1]),
             helper.make_node("Flatten", ["t"], ["f"], axis=2),
             helper.make_node("Concat", ["f", "f"], ["y"], axis=0),
             helper.make_node("Constant", [], ["k"], value=helper.make_tensor("k", onnx.TensorProto.FLOAT, [1], [2.0])),
             helper.make_node("Mul", ["y", "k"], ["z"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, x.shape)],
                              [helper.make_tensor_value_info("z", onnx.TensorProto.FLOAT, None)],
                              [onnx.numpy_helper.from_array(np.array([0, -1, 2], np.int64), "shape")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    check_against_reference(model, {"x": x})


@pytest.mark.parametrize("attrs,x_shape,w_shape", [
    ({"pads": [1, 1, 1, 1]}, (2, 3, 6, 6), (4, 3, 3, 3)),
    ({"strides": [2, 2], "auto_pad": "SAME_UPPER"}, (1, 2, 7, 7), (3, 2, 3, 3)),
    ({"group": 2, "dilations": [2, 1]}, (1, 4, 7, 6), (6, 2, 2, 2))])
def test_conv(rng, attrs, x_shape, w_shape):
    x, w, b = _f(rng, *x_shape), _f(rng, *w_shape), _f(rng, w_shape[0])
    model = single_node_model("Conv", {"x": x}, attrs, initializers={"w": w, "b": b})
    check_against_reference(model, {"x": x}, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("op_type,attrs", [
    ("MaxPool", {"kernel_shape": [2, 2], "strides": [2, 2]}),
    ("MaxPool", {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}),
    ("AveragePool", {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}),
    ("AveragePool", {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "count_include_pad": 1})])
def test_pools(rng, op_type, attrs):
    x = _f(rng, 2, 3, 6, 6)
    check_against_reference(single_node_model(op_type, {"x": x}, attrs), {"x": x}, rtol=1e-5, atol=1e-6)


def test_batch_normalization_inference(rng):
    x = _f(rng, 2, 3, 4, 4)
    stats = {"scale": _f(rng, 3), "bias": _f(rng, 3), "mean": _f(rng, 3), "var": np.abs(_f(rng, 3)) + 0.5}
    # opset 15: onnx.reference's BatchNormalization-9 mixes in the batch's statistics
    model = single_node_model("BatchNormalization", {"x": x}, {"epsilon": 1e-3}, initializers=stats, opset=15)
    got = check_against_reference(model, {"x": x}, rtol=1e-4, atol=1e-5)
    per_channel = {k: v[None, :, None, None] for k, v in stats.items()}
    want = (x - per_channel["mean"]) / np.sqrt(per_channel["var"] + 1e-3) * per_channel["scale"] + per_channel["bias"]
    np.testing.assert_allclose(got["y0"], want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("op_type", ["Sum", "Max", "Min"])
def test_variadic_ops(rng, op_type):
    feeds = {"a": _f(rng, 2, 3), "b": _f(rng, 3), "c": _f(rng, 1, 3)}
    check_against_reference(single_node_model(op_type, feeds), feeds)


@pytest.mark.parametrize("op_type", ["Pow", "Reciprocal", "Floor", "Ceil"])
def test_more_element_wise_ops(rng, op_type):
    x = np.abs(_f(rng, 3, 4)) + 0.25
    feeds = {"x": x, "p": _f(rng, 4)} if op_type == "Pow" else {"x": x * 3}
    check_against_reference(single_node_model(op_type, feeds), feeds, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("opset", [9, 13])
def test_clip_at_both_definitions(rng, opset):
    x = _f(rng, 3, 4) * 2
    if opset < 11:
        model = single_node_model("Clip", {"x": x}, {"min": -0.5, "max": 1.0}, opset=opset)
    else:
        model = single_node_model("Clip", {"x": x}, opset=opset,
                                  initializers={"lo": np.float32(-0.5), "hi": np.float32(1.0)})
    check_against_reference(model, {"x": x})


@pytest.mark.parametrize("opset", [11, 13])
def test_squeeze_unsqueeze_at_both_definitions(rng, opset):
    from onnx import helper
    import onnx
    x = _f(rng, 2, 1, 3)
    if opset < 13:
        nodes = [helper.make_node("Squeeze", ["x"], ["s"], axes=[1]),
                 helper.make_node("Unsqueeze", ["s"], ["u"], axes=[0, -1])]
        inits = []
    else:
        nodes = [helper.make_node("Squeeze", ["x", "ax1"], ["s"]), helper.make_node("Unsqueeze", ["s", "ax2"], ["u"])]
        inits = [onnx.numpy_helper.from_array(np.array([1], np.int64), "ax1"),
                 onnx.numpy_helper.from_array(np.array([0, -1], np.int64), "ax2")]
    nodes.append(helper.make_node("Relu", ["u"], ["y"]))
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, x.shape)],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)], inits)
    got = check_against_reference(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]), {"x": x})
    assert got["y"].shape == (1, 2, 3, 1)


@pytest.mark.parametrize("op_type", ["GlobalAveragePool", "GlobalMaxPool", "Dropout"])
def test_global_pools_and_dropout_in_inference(rng, op_type):
    x = _f(rng, 2, 3, 4, 5)
    check_against_reference(single_node_model(op_type, {"x": x}), {"x": x}, rtol=1e-5, atol=1e-6)


def test_constant_of_shape_weights_and_an_unread_dropout_mask(rng):
    """As the onnx package's light models make their weights: ConstantOfShape of an int64
    shape; and a Dropout whose mask output nothing reads."""
    from onnx import helper
    import onnx
    x = _f(rng, 2, 4)
    nodes = [helper.make_node("ConstantOfShape", ["wshape"], ["w"],
                              value=helper.make_tensor("v", onnx.TensorProto.FLOAT, [1], [0.25])),
             helper.make_node("MatMul", ["x", "w"], ["m"]),
             helper.make_node("Dropout", ["m"], ["y", "mask"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, x.shape)],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)],
                              [onnx.numpy_helper.from_array(np.array([4, 3], np.int64), "wshape")])
    got = check_against_reference(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 9)]), {"x": x})
    np.testing.assert_allclose(got["y"], x @ np.full((4, 3), 0.25, np.float32), rtol=1e-6)


@pytest.mark.parametrize("channels,size", [(3, 4), (2, 5), (6, 6)])
def test_lrn_windows_clipped_at_the_channel_ends(rng, channels, size):
    """LRN sums shifted slices (no padding): even sizes (one more channel above than below)
    and windows wider than the channels. N = C: onnx.reference's LRN loops its channel
    index over range(N), so it is right only there."""
    x = _f(rng, channels, channels, 3, 2)
    attrs = {"size": size, "alpha": 0.3, "beta": 0.8, "bias": 1.5}
    check_against_reference(single_node_model("LRN", {"x": x}, attrs), {"x": x}, rtol=2e-6, atol=1e-6)
