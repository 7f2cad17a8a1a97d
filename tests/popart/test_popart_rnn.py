"""LSTM and GRU through popnn.lstm / popnn.gru, against onnx's reference evaluator: each
direction, batch-first layout, initial states, biases, linear_before_reset; and what is
refused, by name."""
import numpy as np
import pytest

from onnx_models import NO_ONNX

onnx = pytest.importorskip("onnx", reason=NO_ONNX)

from onnx import helper  # noqa: E402

from onnx_models import reference, run_session  # noqa: E402
from popsim import popart  # noqa: E402


def _model(op_type, inputs, outputs, attrs, initializers=()):
    """A one-node model: ``inputs`` name -> array ('' for an absent one); those named in
    ``initializers`` are initializers, the rest streamed."""
    names = list(inputs)
    ins = [helper.make_tensor_value_info(k, onnx.TensorProto.FLOAT, v.shape) for k, v in inputs.items()
           if k and k not in initializers]
    inits = [onnx.numpy_helper.from_array(inputs[k], k) for k in initializers]
    node = helper.make_node(op_type, names, outputs, name="rnn", **attrs)
    graph = helper.make_graph([node], "t", ins, [helper.make_tensor_value_info(o, onnx.TensorProto.FLOAT, None)
                                                 for o in outputs if o], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])


def _case(rng, op_type, direction, layout, with_state, attrs=()):
    gates, T, B, I, H = (4 if op_type == "LSTM" else 3), 3, 2, 5, 4
    D = 2 if direction == "bidirectional" else 1
    f = lambda *s: (rng.standard_normal(s) * 0.5).astype(np.float32)  # noqa: E731
    x = f(T, B, I) if layout == 0 else f(B, T, I)
    state = (D, B, H) if layout == 0 else (B, D, H)
    inputs = {"x": x, "w": f(D, gates * H, I), "r": f(D, gates * H, H), "b": f(D, 2 * gates * H)}
    if with_state:
        inputs.update({"": np.zeros(0, np.float32), "h0": f(*state)})
        if op_type == "LSTM":
            inputs["c0"] = f(*state)
    outputs = ["y", "y_h"] + (["y_c"] if op_type == "LSTM" else [])
    model = _model(op_type, inputs, outputs, dict(hidden_size=H, direction=direction, layout=layout, **dict(attrs)),
                   initializers=("w", "r", "b"))
    return model, {k: v for k, v in inputs.items() if k and k not in ("w", "r", "b")}


@pytest.mark.parametrize("op_type", ["LSTM", "GRU"])
@pytest.mark.parametrize("direction,layout,with_state", [("forward", 0, True), ("reverse", 1, True),
                                                         ("bidirectional", 0, False), ("bidirectional", 1, True)])
def test_rnn_matches_onnx_reference(rng, op_type, direction, layout, with_state):
    model, feeds = _case(rng, op_type, direction, layout, with_state)
    got, _ = run_session(model, feeds)
    for name, want in reference(model, feeds).items():
        np.testing.assert_allclose(got[name], want, rtol=1e-4, atol=1e-5, err_msg=name)


def test_gru_linear_before_reset_is_popnn_reset_after(rng):
    model, feeds = _case(rng, "GRU", "bidirectional", 0, True, {"linear_before_reset": 1})
    got, _ = run_session(model, feeds)
    for name, want in reference(model, feeds).items():
        np.testing.assert_allclose(got[name], want, rtol=1e-4, atol=1e-5, err_msg=name)


@pytest.mark.parametrize("attrs,inputs_extra,message", [
    ({"clip": 1.0}, {}, "attribute clip=1.0 is not supported: PopART refuses it"),
    ({"activations": ["Sigmoid", "Tanh", "Relu"]}, {}, "same activation for g and h"),
    ({"activations": ["HardSigmoid", "Tanh", "Tanh"]}, {}, "popnn's cells take Sigmoid, Tanh or Relu"),
    ({"input_forget": 1}, {}, "input_forget=1"),
    ({}, {"P": True}, "input 7 (P, peephole weights) is not supported"),
    ({}, {"lens": np.array([3, 0], np.int32)}, "sequence_lens) is [3, 0]: it must give each of the 2"),
    ({}, {"lens": np.array([4, 1], np.int32)}, "a length from 1 to the sequence length 3"),
])
def test_unsupported_lstm_features_are_refused_by_name(rng, attrs, inputs_extra, message):
    T, B, I, H = 3, 2, 2, 3
    f = lambda *s: rng.standard_normal(s).astype(np.float32)  # noqa: E731
    inputs = {"x": f(T, B, I), "w": f(1, 4 * H, I), "r": f(1, 4 * H, H)}
    inits = ["w", "r"]
    if inputs_extra:
        inputs.update({"b": f(1, 8 * H), "lens": inputs_extra.get("lens", np.full(B, T, np.int32)),
                       "h0": f(1, B, H), "c0": f(1, B, H)})
        inits += ["b", "lens"]
        if "P" in inputs_extra:
            inputs["p"] = f(1, 3 * H)
            inits.append("p")
    model = _model("LSTM", inputs, ["y"], dict(hidden_size=H, **attrs), initializers=inits)
    flow = popart.DataFlow(1, {"y": popart.AnchorReturnType("ALL")})
    device = popart.DeviceManager().createIpuModelDevice({"numIPUs": 1, "tilesPerIPU": 4})
    session = popart.InferenceSession(fnModel=model.SerializeToString(), dataFlow=flow, deviceInfo=device)
    with pytest.raises(popart.popart_exception, match="node 'rnn' \\(LSTM\\)") as e:
        session.prepareDevice()
    assert message in str(e.value)


@pytest.mark.parametrize("op_type", ["LSTM", "GRU"])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
def test_sequence_lens_shorter_than_the_sequence(rng, op_type, direction):
    """Each batch element runs its own length (ONNX): checked against onnx's reference run on
    each element's sequence cut to its length (the reference itself ignores sequence_lens);
    Y is zero past an element's length, Y_h (and Y_c) are those of its last step."""
    gates, T, B, I, H = (4 if op_type == "LSTM" else 3), 4, 3, 3, 2
    D = 2 if direction == "bidirectional" else 1
    f = lambda *s: (rng.standard_normal(s) * 0.5).astype(np.float32)  # noqa: E731
    lens = np.array([4, 1, 3], np.int32)
    weights = {"w": f(D, gates * H, I), "r": f(D, gates * H, H), "b": f(D, 2 * gates * H)}
    states = {"h0": f(D, B, H)} | ({"c0": f(D, B, H)} if op_type == "LSTM" else {})
    x = f(T, B, I)
    outputs = ["y", "y_h"] + (["y_c"] if op_type == "LSTM" else [])
    attrs = dict(hidden_size=H, direction=direction)
    model = _model(op_type, {"x": x, **weights, "lens": lens, **states}, outputs, attrs,
                   initializers=("w", "r", "b", "lens"))
    got, _ = run_session(model, {"x": x, **states})
    plain = _model(op_type, {"x": x, **weights, "": np.zeros(0, np.float32), **states}, outputs, attrs,
                   initializers=("w", "r", "b"))
    for b, n in enumerate(lens):
        want = reference(plain, {"x": x[:n, b:b + 1], **{k: v[:, b:b + 1] for k, v in states.items()}})
        np.testing.assert_allclose(got["y"][:n, :, b], want["y"][:, :, 0], rtol=1e-4, atol=1e-5, err_msg=str(b))
        assert not got["y"][n:, :, b].any(), b
        for name in outputs[1:]:
            np.testing.assert_allclose(got[name][:, b], want[name][:, 0], rtol=1e-4, atol=1e-5, err_msg=name)
