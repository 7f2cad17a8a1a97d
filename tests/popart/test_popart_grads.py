"""Each gradient rule against finite differences: a one-node model whose weights are the
node's float inputs, the loss ``sum(y * R)`` (R streamed in), the weights' gradients
(anchored as Gradient___<id>) compared with central differences of onnx.reference's
outputs in float64."""
import numpy as np
import pytest

from popsim import popart

pytest.importorskip("onnx", reason="popsim.popart's model tests need the onnx package")
import onnx.reference
from onnx import helper

G = popart.reservedGradientPrefix()


def _graph(op_type, weights, consts, attrs, elem, out_shape):
    """A one-node ONNX model (weights as its float inputs, consts as int64 initializers)."""
    inputs = [helper.make_tensor_value_info(k, elem, v.shape) for k, v in weights.items()]
    inits = [onnx.numpy_helper.from_array(v, k) for k, v in consts.items()]
    node = helper.make_node(op_type, list(weights) + list(consts), ["y"], name=f"{op_type}_node", **attrs)
    return helper.make_graph([node], "g", inputs, [helper.make_tensor_value_info("y", elem, out_shape)], inits)


def _coerced_softmax(w):
    """Softmax before opset 13 (onnx.reference runs opset 13's): over the input as [2, 12]."""
    x = w["a"].reshape(2, 12)
    e = np.exp(x - x.max(1, keepdims=True))
    return (e / e.sum(1, keepdims=True)).reshape(w["a"].shape)


def _reference(op_type, weights, consts, attrs, opset):
    if (op_type, opset) == ("Softmax", 11):
        return _coerced_softmax
    graph = _graph(op_type, weights, consts, attrs, onnx.TensorProto.DOUBLE, None)
    evaluator = onnx.reference.ReferenceEvaluator(helper.make_model(graph, opset_imports=[
        helper.make_opsetid("", opset)]))
    return lambda w: evaluator.run(None, w)[0]


def _finite_difference(fn, weights, key, r, eps=1e-6):
    out = np.zeros_like(weights[key])
    for i in np.ndindex(*weights[key].shape):
        hi, lo = dict(weights), dict(weights)
        hi[key], lo[key] = weights[key].copy(), weights[key].copy()
        hi[key][i] += eps
        lo[key][i] -= eps
        out[i] = ((fn(hi) * r).sum() - (fn(lo) * r).sum()) / (2 * eps)
    return out


def _session_grads(op_type, weights, consts, attrs, opset, r):
    """The weights' gradients popsim.popart computes for the loss sum(y * R)."""
    b = popart.Builder(opsets={"ai.onnx": opset})
    ids = {k: b.addInitializedInputTensor(v.astype(np.float32), k) for k, v in weights.items()}
    ids.update({k: b.addInitializedInputTensor(v, k) for k, v in consts.items()})
    y = b._add_node(op_type, list(ids.values()), attrs, f"{op_type}_node", None)
    rid = b.addInputTensor(popart.TensorInfo("FLOAT", list(r.shape)), "R")
    loss = b.aiGraphcore.identityloss([b.aiOnnx.mul([y, rid])], popart.ReductionType.Sum)
    art = popart.AnchorReturnType("ALL")
    device = popart.DeviceManager().createIpuModelDevice({"numIPUs": 1, "tilesPerIPU": 4})
    session = popart.TrainingSession(fnModel=b.getModelProto(),
                                     dataFlow=popart.DataFlow(1, {G + k: art for k in weights}), loss=loss,
                                     optimizer=popart.ConstSGD(0.0), deviceInfo=device)
    session.prepareDevice()
    session.weightsFromHost()
    anchors = session.initAnchorArrays()
    session.run(popart.PyStepIO({rid: r.astype(np.float32)}, anchors))
    return anchors


def _x(*shape, positive=False, seed=0):
    v = np.random.default_rng(seed + len(shape)).normal(size=shape)
    return np.abs(v) + 0.5 if positive else v


I64 = np.int64
#: (op, float inputs (the weights), int64 inputs, attributes, opset)
CASES = {
    "Sub": ({"a": _x(2, 3), "b": _x(3, seed=1)}, {}, {}, 13),
    "Div": ({"a": _x(2, 3), "b": _x(2, 1, positive=True)}, {}, {}, 13),
    "Mul": ({"a": _x(2, 3), "b": _x(1, 3, seed=2)}, {}, {}, 13),
    "Sum": ({"a": _x(2, 3), "b": _x(3, seed=1), "c": _x(2, 1, seed=2)}, {}, {}, 13),
    "Exp": ({"a": _x(2, 3)}, {}, {}, 13),
    "Log": ({"a": _x(2, 3, positive=True)}, {}, {}, 13),
    "Sqrt": ({"a": _x(2, 3, positive=True)}, {}, {}, 13),
    "Neg": ({"a": _x(2, 3)}, {}, {}, 13),
    "Abs": ({"a": _x(2, 3)}, {}, {}, 13),
    "Reciprocal": ({"a": _x(2, 3, positive=True)}, {}, {}, 13),
    "Sigmoid": ({"a": _x(2, 3)}, {}, {}, 13),
    "LeakyRelu": ({"a": _x(2, 3)}, {}, {"alpha": 0.2}, 13),
    "Softmax": ({"a": _x(2, 3, 4)}, {}, {"axis": 1}, 13),
    "MatMul": ({"a": _x(2, 3, 4), "b": _x(4, 2, seed=1)}, {}, {}, 13),
    "Gemm": ({"a": _x(4, 3), "b": _x(2, 4, seed=1), "c": _x(2, seed=2)}, {}, {"transA": 1, "transB": 1, "alpha": 0.5,
                                                                              "beta": 2.0}, 13),
    "Transpose": ({"a": _x(2, 3, 4)}, {}, {"perm": [2, 0, 1]}, 13),
    "Concat": ({"a": _x(2, 3), "b": _x(2, 2, seed=1)}, {}, {"axis": 1}, 13),
    "Slice": ({"a": _x(4, 5)}, {"starts": np.array([1, 4], I64), "ends": np.array([4, 0], I64),
                                "axes": np.array([0, 1], I64), "steps": np.array([2, -2], I64)}, {}, 13),
    "Unsqueeze": ({"a": _x(2, 3)}, {"axes": np.array([1], I64)}, {}, 13),
    "ReduceSum": ({"a": _x(2, 3, 4)}, {"axes": np.array([0, 2], I64)}, {"keepdims": 0}, 13),
    "ReduceMean": ({"a": _x(2, 3, 4)}, {}, {"axes": [1], "keepdims": 1}, 13),
    "AveragePool": ({"a": _x(1, 2, 4, 4)}, {}, {"kernel_shape": [2, 2], "strides": [2, 2]}, 13),
    "GlobalAveragePool": ({"a": _x(2, 2, 3, 3)}, {}, {}, 13),
    "Conv": ({"x": _x(1, 2, 5, 5), "w": _x(4, 1, 3, 3, seed=1), "b": _x(4, seed=2)}, {},
             {"strides": [2, 2], "pads": [1, 0, 1, 1], "group": 2}, 13),
    "Relu": ({"a": _x(2, 3)}, {}, {}, 13),
    "Clip": ({"a": _x(2, 3) * 2}, {}, {"min": -1.0, "max": 0.5}, 9),
    "Max": ({"a": _x(2, 3), "b": _x(3, seed=5)}, {}, {}, 13),
    "Min": ({"a": _x(2, 3), "b": _x(2, 1, seed=1)}, {}, {}, 13),
    "Pow": ({"a": _x(2, 3, positive=True), "b": _x(3, seed=1)}, {}, {}, 13),
    "Gelu@tanh": ({"a": _x(2, 3)}, {}, {"approximate": "tanh"}, 20),
    "Tanh": ({"a": _x(2, 3)}, {}, {}, 13),
    "Flatten": ({"a": _x(2, 3, 2)}, {}, {"axis": 2}, 13),
    "Reshape": ({"a": _x(2, 3, 2)}, {"shape": np.array([3, -1], I64)}, {}, 13),
    "Squeeze": ({"a": _x(2, 1, 3)}, {"axes": np.array([1], I64)}, {}, 13),
    "Expand": ({"a": _x(3, 1)}, {"shape": np.array([2, 3, 4], I64)}, {}, 13),
    "MaxPool": ({"a": _x(1, 2, 4, 4)}, {}, {"kernel_shape": [3, 3], "strides": [1, 1], "pads": [1, 1, 1, 1]}, 13),
    "GlobalMaxPool": ({"a": _x(2, 2, 3, 3)}, {}, {}, 13),
    "Identity": ({"a": _x(2, 3)}, {}, {}, 13),
    "LayerNormalization": ({"a": _x(2, 3, 4), "s": _x(4, seed=1), "b": _x(4, seed=3)}, {}, {"axis": -1}, 17),
    "LayerNormalization@axis1": ({"a": _x(2, 3, 4), "s": _x(3, 4, seed=1), "b": _x(3, 4, seed=3)}, {}, {"axis": 1},
                                 17),
    "Gather": ({"a": _x(4, 3)}, {"i": np.array([[3, 0], [3, -1]], I64)}, {"axis": 0}, 13),
    "Gather@axis1": ({"a": _x(2, 4, 3)}, {"i": np.array([1, 1, 2], I64)}, {"axis": 1}, 13),
    "LogSoftmax": ({"a": _x(2, 3, 4)}, {}, {"axis": 1}, 13),
    "Softmax@11": ({"a": _x(2, 3, 4)}, {}, {"axis": 1}, 11),   # over the input coerced to [2, 12]
    "MatMul@batched": ({"a": _x(2, 1, 3, 4), "b": _x(3, 4, 2, seed=1)}, {}, {}, 13),
    "MatMul@vector": ({"a": _x(4), "b": _x(2, 4, 3, seed=1)}, {}, {}, 13),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_gradient_rule_matches_finite_differences(case):
    weights, consts, attrs, opset = CASES[case]
    op_type = case.split("@")[0]
    if op_type not in {d.op_type for d in popart.supported_ops()}:
        pytest.skip(f"{op_type} is not in the op table yet (its gradient rule waits for it)")
    fn = _reference(op_type, weights, consts, attrs, opset)
    y = fn(weights)
    r = np.random.default_rng(7).normal(size=y.shape)
    got = _session_grads(op_type, weights, consts, attrs, opset, r)
    for k in weights:
        np.testing.assert_allclose(got[G + k], _finite_difference(fn, weights, k, r), rtol=1e-3, atol=1e-4, err_msg=k)
