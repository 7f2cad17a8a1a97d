"""Real models from the onnx package: the light (constant-weight) ImageNet CNNs it ships,
whole through an InferenceSession on a Mk2-sized IPU, against onnx.reference."""
import os

import numpy as np
import pytest

from onnx_models import NO_ONNX

onnx = pytest.importorskip("onnx", reason=NO_ONNX)

from light_models import light_model_input  # noqa: E402
from onnx_models import run_session  # noqa: E402

LIGHT = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")


@pytest.mark.slow
def test_light_squeezenet_matches_the_reference():
    """SqueezeNet 1.0 (opset 9; ConstantOfShape weights, Conv, Relu, MaxPool, Concat,
    Dropout, GlobalAveragePool, Softmax) on 1472 tiles. Its constant weights make the
    logits ~1e9, where float32 rounding decides the softmax: the logits are compared."""
    path = os.path.join(LIGHT, "light_squeezenet.onnx")
    if not os.path.exists(path):
        pytest.skip(f"this onnx package does not ship {path}")
    model = onnx.load(path)
    logits = next(n.input[0] for n in model.graph.node if n.op_type == "Softmax")
    x = np.random.default_rng(0).standard_normal((1, 3, 224, 224)).astype(np.float32)
    got, session = run_session(model, {"data_0": x}, tiles=1472, anchors=[logits])
    want = onnx.reference.ReferenceEvaluator(model).run([logits], {"data_0": x})[0]
    np.testing.assert_allclose(got[logits], want, rtol=1e-5)
    assert session.getCycleCount() > 0


# Light models that build, fit a 1472-tile IPU and run (docs/onnx.md, Real models, has the
# others and the commands that ran them). Inception v1 fits since popops.pad's padding is mapped
# beside its edge and LRN pads nothing. ShuffleNet (grouped convolutions, a 5-D Transpose for
# its channel shuffle, padded AveragePool) builds in about 200 s of CPU, ZFNet-512 (LRN, 349 MB
# of weights, fc6 alone 302 MB) in about 120 s.
RUNNING_LIGHT_MODELS = ["bvlc_alexnet", "inception_v1", "shufflenet", "zfnet512"]


@pytest.mark.slow
@pytest.mark.parametrize("name", RUNNING_LIGHT_MODELS)
def test_light_model_matches_its_shipped_output(name):
    """A light model whole on 1472 tiles, fed onnx's backend-test input, against the output
    the onnx package ships for it (onnx's own tolerance for these models: rtol 1e-3)."""
    path = os.path.join(LIGHT, f"light_{name}.onnx")
    expected = os.path.join(LIGHT, f"light_{name}_output_0.pb")
    if not os.path.exists(path) or not os.path.exists(expected):
        pytest.skip(f"this onnx package does not ship {path} with its output")
    model = onnx.load(path)
    want = onnx.numpy_helper.to_array(onnx.load_tensor(expected))
    feed, x = light_model_input(model)
    out = model.graph.output[0].name
    got, _ = run_session(model, {feed: x}, tiles=1472, anchors=[out])
    np.testing.assert_allclose(got[out].reshape(want.shape), want, rtol=1e-3, atol=1e-7)
