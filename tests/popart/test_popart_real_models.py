"""Real models from the onnx package: the light (constant-weight) ImageNet CNNs it ships,
whole through an InferenceSession on a Mk2-sized IPU, against onnx.reference."""
import os

import numpy as np
import pytest

from onnx_models import NO_ONNX

onnx = pytest.importorskip("onnx", reason=NO_ONNX)

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
