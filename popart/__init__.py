"""popsim.popart: ONNX models on the modelled IPU through PopART's Python API (Builder,
DataFlow, PyStepIO, DeviceManager, SessionOptions, InferenceSession, TrainingSession with
SGD). Every ONNX op runs as PopLibs ops on the tiles; the op table (op_table.py) says which ops and opsets. Loading
needs the onnx package (``pip install 'popsim[onnx]'``); docs/onnx.md describes the layer."""
from .builder import DEFAULT_OPSET as defaultAiOnnxOpset  # noqa: N811 - PopART's name
from .builder import Builder
from .autodiff import reservedGradientPrefix
from .dataflow import AnchorReturnType, DataFlow, PyStepIO
from .device import (DeviceConnectionType, DeviceInfo, DeviceManager, DeviceSelectionCriterion, DeviceType,
                     SyncPattern)
from .errors import OutOfMemoryException, popart_exception
from .graphcore_builder import ReductionType
from .logger import getLogger
from .op_table import supported_ops
from .options import RecomputationType, RecomputeType, SessionOptions, SyntheticDataMode, VirtualGraphMode
from .optimizer import SGD, ConstSGD
from .patterns import Patterns, PatternsLevel
from .session import InferenceSession
from .stepio_callback import PyStepIOCallback
from .tensor_info import TensorInfo
from .training import TrainingSession
from .weights_io import PyWeightsIO


def getSupportedOperations(includePrivate: bool = False) -> list:  # noqa: N802,N803 - PopART's name
    """(op type, first opset) of each ai.onnx op popsim.popart runs."""
    return [(d.op_type, d.since) for d in supported_ops()]


#: PopART's names popsim.popart does not have yet (module attributes a PopART script may use)
NOT_YET = ("Adam", "Adaptive", "AdamMode", "AdaptiveMode", "WeightDecayMode", "ClipNormSettings", "InputShapeInfo",
           "InputSettings", "TensorLocation", "TensorLocationSettings", "TileSet", "ExecutionPhaseSettings",
           "ExecutionPhaseSchedule", "BatchSerializationSettings", "AccumulateOuterFragmentSettings",
           "MergeVarUpdateType", "SubgraphCopyingStrategy", "ReplicatedTensorSharding", "CommGroup", "CommGroupType",
           "VariableSettings", "VariableRetrievalMode", "AutomaticLossScalingSettings", "Instrumentation",
           "IrSerializationFormat", "DebugContext", "DataType", "PyWeightsIOCallback", "StepIO", "TensorStorage",
           "ReplicatedTensorShardingMode", "Session", "Ir", "OpCreatorInfo", "OpDefinition", "Attribute")


def __getattr__(name):
    if name in NOT_YET:
        raise AttributeError(f"popart.{name} is PopART's but popsim.popart does not implement it yet; "
                             "docs/onnx.md lists what exists and what is not done")
    raise AttributeError(f"module 'popsim.popart' has no attribute {name!r}")


#: PopART's ai.graphcore opset
defaultAiGraphcoreOpset = 1  # noqa: N816 - PopART's name

__all__ = ["AnchorReturnType", "Builder", "ConstSGD", "DataFlow", "defaultAiGraphcoreOpset", "defaultAiOnnxOpset",
           "DeviceConnectionType", "DeviceInfo", "DeviceManager", "DeviceSelectionCriterion", "DeviceType",
           "getLogger", "getSupportedOperations", "InferenceSession", "OutOfMemoryException", "Patterns",
           "PatternsLevel", "popart_exception", "PyStepIO", "PyStepIOCallback", "PyWeightsIO", "RecomputationType",
           "RecomputeType", "ReductionType",
           "reservedGradientPrefix", "SessionOptions", "SGD", "supported_ops", "SyncPattern", "SyntheticDataMode",
           "TensorInfo", "TrainingSession", "VirtualGraphMode"]
