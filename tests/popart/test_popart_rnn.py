"""LSTM and GRU through popnn.lstm / popnn.gru, against onnx's reference evaluator: each
direction, batch-first layout, initial states, biases, linear_before_reset; LSTMs with
peepholes or clip (composed from PopLibs ops, popart/ops/lstm_cell.py) against the same
reference and ONNX's equations; and what is refused, by name."""
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
    ins = [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
           for k, v in inputs.items() if k and k not in initializers]
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
    ({"clip": -1.0}, {}, "attribute clip=-1.0 must be a positive number"),
    ({"activations": ["Sigmoid", "Tanh", "Relu"]}, {}, "same activation for g and h"),
    ({"activations": ["HardSigmoid", "Tanh", "Tanh"]}, {}, "popnn's cells take Sigmoid, Tanh or Relu"),
    ({"input_forget": 1}, {}, "input_forget=1"),
    ({}, {"P": True}, "input 7 (P) (1, 6) must be [1, 3 * 3]"),
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
            inputs["p"] = f(1, 2 * H)
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


def _onnx_lstm(x, w, r, b, p, h0, c0, clip=None):
    """ONNX's LSTM equations for one forward direction (x [T, B, I]; w [4H, I]; r [4H, H];
    b [8H]; p [3H]), with ``clip`` bounding the gates' pre-activations (not the cell state)
    to [-clip, clip], as the operator's docs and onnxruntime place it: (Y, Y_h, Y_c)."""
    sig = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    bound = (lambda v: v) if clip is None else (lambda v: np.clip(v, -clip, clip))
    pi, po, pf = np.split(p, 3)
    h, c, ys = h0, c0, []
    for xt in x:
        gi, go, gf, gc = np.split(xt @ w.T + h @ r.T + b[:len(b) // 2] + b[len(b) // 2:], 4, -1)
        i, f = sig(bound(gi + pi * c)), sig(bound(gf + pf * c))
        c = f * c + i * np.tanh(bound(gc))
        h = sig(bound(go + po * c)) * np.tanh(c)
        ys.append(h)
    return np.stack(ys), h, c


def _peephole_case(rng, direction, layout, clip=None, lens=None, streamed_lens=False):
    T, B, I, H = 3, 2, 5, 4
    D = 2 if direction == "bidirectional" else 1
    f = lambda *s: rng.standard_normal(s).astype(np.float32)  # noqa: E731
    state = (D, B, H) if layout == 0 else (B, D, H)
    inputs = {"x": f(T, B, I) if layout == 0 else f(B, T, I), "w": f(D, 4 * H, I), "r": f(D, 4 * H, H),
              "b": f(D, 8 * H), "lens": np.full(B, T, np.int32) if lens is None else np.array(lens, np.int32),
              "h0": f(*state), "c0": f(*state), "p": f(D, 3 * H)}
    attrs = dict(hidden_size=H, direction=direction, layout=layout) | ({"clip": clip} if clip is not None else {})
    inits = ("w", "r", "b", "p") + (() if streamed_lens else ("lens",))
    model = _model("LSTM", inputs, ["y", "y_h", "y_c"], attrs, initializers=inits)
    return model, inputs, {k: v for k, v in inputs.items() if k not in inits}


@pytest.mark.parametrize("direction,layout", [("forward", 0), ("reverse", 1), ("bidirectional", 0)])
def test_lstm_with_peepholes_matches_onnx_reference(rng, direction, layout):
    """P, which popnn's cell has not (nor PopART), through lstm_cell's composed cell; the
    sequence_lens all T, streamed (int32), as ONNX's own peephole node test gives them."""
    model, _, feeds = _peephole_case(rng, direction, layout, streamed_lens=True)
    got, _ = run_session(model, feeds)
    for name, want in reference(model, feeds).items():
        np.testing.assert_allclose(got[name], want, rtol=1e-4, atol=1e-5, err_msg=name)


@pytest.mark.parametrize("direction", ["forward", "bidirectional"])
def test_lstm_clip_bounds_the_gate_pre_activations(rng, direction):
    """clip (onnx.reference ignores it) against ONNX's equations, which the test's own
    _onnx_lstm is first checked to follow without clip against onnx.reference; the clip
    must change the result, so it is not a no-op."""
    model, inputs, feeds = _peephole_case(rng, direction, 0, clip=0.75)
    got, _ = run_session(model, feeds)
    unclipped = reference(model, feeds)   # onnx.reference: no clip
    D = inputs["w"].shape[0]
    want = {"y": [], "y_h": [], "y_c": []}
    for d in range(D):
        x = inputs["x"][::-1] if d == 1 else inputs["x"]
        args = [inputs[k][d] for k in ("w", "r", "b", "p", "h0", "c0")]
        plain = _onnx_lstm(x, *args)
        np.testing.assert_allclose(plain[1], unclipped["y_h"][d], rtol=1e-5, atol=1e-6)
        y, yh, yc = _onnx_lstm(x, *args, clip=0.75)
        want["y"].append(y[::-1] if d == 1 else y)
        want["y_h"].append(yh)
        want["y_c"].append(yc)
    for name, parts in want.items():
        value = np.stack(parts, 1 if name == "y" else 0)
        np.testing.assert_allclose(got[name], value, rtol=1e-4, atol=1e-5, err_msg=name)
        assert not np.allclose(value, unclipped[name], atol=1e-3), name


def test_lstm_clip_without_peepholes(rng):
    model, inputs, feeds = _peephole_case(rng, "reverse", 0, clip=0.5)
    model.graph.node[0].input[7] = ""   # no P: clip alone takes the composed cell
    got, _ = run_session(model, feeds)
    args = [inputs[k][0] for k in ("w", "r", "b")] + [np.zeros(12, np.float32), inputs["h0"][0], inputs["c0"][0]]
    y, yh, yc = _onnx_lstm(inputs["x"][::-1], *args, clip=0.5)
    np.testing.assert_allclose(got["y"][:, 0], y[::-1], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got["y_h"][0], yh, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got["y_c"][0], yc, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("direction,streamed", [("forward", True), ("reverse", False), ("bidirectional", True)])
def test_lstm_with_peepholes_and_sequence_lens(rng, direction, streamed):
    """Lengths shorter than the sequence, constant or streamed (a per-step mask on the
    device): each element against onnx.reference run on its cut sequence."""
    lens = [3, 1]
    model, inputs, feeds = _peephole_case(rng, direction, 0, lens=lens, streamed_lens=streamed)
    got, _ = run_session(model, feeds)
    for b, n in enumerate(lens):
        cut = {"x": inputs["x"][:n, b:b + 1], "lens": np.array([n], np.int32),
               "h0": inputs["h0"][:, b:b + 1], "c0": inputs["c0"][:, b:b + 1]}
        attrs = {a.name: helper.get_attribute_value(a) for a in model.graph.node[0].attribute}
        one = _model("LSTM", {**{k: inputs[k] for k in ("x", "w", "r", "b")}, **cut, "p": inputs["p"]},
                     ["y", "y_h", "y_c"], attrs, initializers=("w", "r", "b", "p"))
        want = reference(one, cut)
        np.testing.assert_allclose(got["y"][:n, :, b], want["y"][:, :, 0], rtol=1e-4, atol=1e-5, err_msg=str(b))
        assert not got["y"][n:, :, b].any(), b
        for name in ("y_h", "y_c"):
            np.testing.assert_allclose(got[name][:, b], want[name][:, 0], rtol=1e-4, atol=1e-5, err_msg=name)


def test_streamed_sequence_lens_out_of_range_stops_the_run(rng):
    model, _, feeds = _peephole_case(rng, "forward", 0, streamed_lens=True)
    got, session = run_session(model, feeds)
    with pytest.raises(popart.popart_exception, match=r"node 'rnn' \(LSTM\): input 4 \(sequence_lens\) has a length "
                                                      "outside 1 to the sequence length 3"):
        session.run(popart.PyStepIO({**feeds, "lens": np.array([3, 4], np.int32)}, session.initAnchorArrays()))


def test_gru_clip_is_refused(rng):
    model, feeds = _case(rng, "GRU", "forward", 0, False, {"clip": 1.0})
    with pytest.raises(popart.popart_exception, match="popsim composes a clipped cell for LSTM only"):
        run_session(model, feeds)
