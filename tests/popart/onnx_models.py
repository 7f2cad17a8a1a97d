"""What popsim.popart's tests share: one-node ONNX models, a model run through an
InferenceSession, and onnx's reference evaluator (onnx.reference), the independent oracle
they compare with. (A module of its own, not conftest.py: test files import it by name,
and a name shared with tests/examples/conftest.py would clash.)"""
import numpy as np

from popsim import popart

try:  # the test files that need onnx skip without it (needs_onnx)
    import onnx
    import onnx.reference
    from onnx import helper
    FLOAT = onnx.TensorProto.FLOAT
except ImportError:
    onnx = None

NO_ONNX = "popsim.popart's model tests need the onnx package: pip install 'popsim[onnx]'"


def single_node_model(op_type, inputs, attrs=None, opset=13, initializers=None, output_shape=None, n_out=1):
    """A one-node ONNX model: ``inputs`` maps name -> array (those named in
    ``initializers`` become initializers, the rest model inputs)."""
    initializers = initializers or {}
    ins = [helper.make_tensor_value_info(k, FLOAT, v.shape) for k, v in inputs.items() if k not in initializers]
    inits = [onnx.numpy_helper.from_array(np.asarray(v), k) for k, v in initializers.items()]
    outs = [f"y{i}" for i in range(n_out)]
    node = helper.make_node(op_type, list(inputs) + [k for k in initializers if k not in inputs], outs,
                            name=f"{op_type.lower()}_node", **(attrs or {}))
    graph = helper.make_graph([node], "t", ins, [helper.make_tensor_value_info(o, FLOAT, output_shape) for o in outs],
                              inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def run_session(model, feeds, batches_per_step=1, tiles=4, anchors=None, art="ALL"):
    """The model's anchors (default: its outputs) after one step of an InferenceSession."""
    proto = model if isinstance(model, (bytes, str)) else model.SerializeToString()
    if anchors is None:
        anchors = [o.name for o in onnx.load_model_from_string(proto).graph.output] if isinstance(proto, bytes) \
            else None
    data_flow = popart.DataFlow(batches_per_step, {a: popart.AnchorReturnType(art) for a in anchors})
    device = popart.DeviceManager().createIpuModelDevice({"numIPUs": 1, "tilesPerIPU": tiles})
    session = popart.InferenceSession(fnModel=proto, dataFlow=data_flow, deviceInfo=device)
    session.prepareDevice()
    out = session.initAnchorArrays()
    session.weightsFromHost()
    session.run(popart.PyStepIO(feeds, out))
    return out, session


def reference(model, feeds):
    """onnx.reference's outputs, by output name."""
    names = [o.name for o in model.graph.output]
    return dict(zip(names, onnx.reference.ReferenceEvaluator(model).run(None, feeds)))


def check_against_reference(model, feeds, rtol=1e-5, atol=1e-5, tiles=4):
    got, _ = run_session(model, feeds, tiles=tiles)
    want = reference(model, feeds)
    for name, value in want.items():
        np.testing.assert_allclose(got[name], value, rtol=rtol, atol=atol, err_msg=name)
    return got
