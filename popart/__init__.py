"""popsim.popart: ONNX models on the modelled IPU through PopART's Python API (Builder,
DataFlow, PyStepIO, DeviceManager, SessionOptions, InferenceSession, TrainingSession with
SGD). Every ONNX op runs as PopLibs ops on the tiles; the op table (op_table.py) says which ops and opsets. Loading
needs the onnx package (``pip install 'popsim[onnx]'``); docs/onnx.md describes the layer."""
from .builder import DEFAULT_OPSET as defaultAiOnnxOpset  # noqa: N812 - PopART's name
from .builder import Builder
from .autodiff import reservedGradientPrefix
from .dataflow import AnchorReturnType, DataFlow, PyStepIO
from .device import DeviceInfo, DeviceManager
from .errors import OutOfMemoryException, popart_exception
from .graphcore_builder import ReductionType
from .op_table import supported_ops
from .options import RecomputationType, SessionOptions, SyntheticDataMode, VirtualGraphMode
from .optimizer import SGD, ConstSGD
from .session import InferenceSession
from .tensor_info import TensorInfo
from .training import TrainingSession
from .weights_io import PyWeightsIO


def getSupportedOperations(includePrivate: bool = False) -> list:  # noqa: N802,N803 - PopART's name
    """(op type, first opset) of each ai.onnx op popsim.popart runs."""
    return [(d.op_type, d.since) for d in supported_ops()]


__all__ = ["AnchorReturnType", "Builder", "ConstSGD", "DataFlow", "defaultAiOnnxOpset", "DeviceInfo", "DeviceManager",
           "getSupportedOperations", "InferenceSession", "OutOfMemoryException", "popart_exception", "PyStepIO",
           "PyWeightsIO", "RecomputationType", "ReductionType", "reservedGradientPrefix", "SessionOptions", "SGD",
           "supported_ops", "SyntheticDataMode", "TensorInfo", "TrainingSession", "VirtualGraphMode"]
