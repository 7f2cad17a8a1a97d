"""popsim.popart: ONNX models on the modelled IPU through PopART's Python API (Builder,
DataFlow, PyStepIO, DeviceManager, SessionOptions, InferenceSession). Every ONNX op runs as
PopLibs ops on the tiles; the op table (op_table.py) says which ops and opsets. Loading
needs the onnx package (``pip install 'popsim[onnx]'``); docs/onnx.md describes the layer."""
from .builder import DEFAULT_OPSET as defaultAiOnnxOpset  # noqa: N812 - PopART's name
from .builder import Builder
from .dataflow import AnchorReturnType, DataFlow, PyStepIO
from .device import DeviceInfo, DeviceManager
from .errors import OutOfMemoryException, popart_exception
from .op_table import supported_ops
from .options import RecomputationType, SessionOptions, SyntheticDataMode, VirtualGraphMode
from .session import InferenceSession
from .tensor_info import TensorInfo


def getSupportedOperations(includePrivate: bool = False) -> list:  # noqa: N802,N803 - PopART's name
    """(op type, first opset) of each ai.onnx op popsim.popart runs."""
    return [(d.op_type, d.since) for d in supported_ops()]


__all__ = ["AnchorReturnType", "Builder", "DataFlow", "DeviceInfo", "DeviceManager", "InferenceSession",
           "OutOfMemoryException", "PyStepIO", "RecomputationType", "SessionOptions", "SyntheticDataMode",
           "TensorInfo", "VirtualGraphMode", "defaultAiOnnxOpset", "getSupportedOperations", "popart_exception",
           "supported_ops"]
