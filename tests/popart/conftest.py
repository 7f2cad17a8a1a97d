"""popsim.popart's test fixtures (the shared helpers are in onnx_models.py)."""
import numpy as np
import pytest


@pytest.fixture
def rng():
    return np.random.default_rng(1234)
