"""popsim: program Graphcore-style IPUs the way Poplar does, on the host CPU.

Build a :class:`Graph` of tensors mapped onto tiles, assemble control programs, and
run them on an :class:`Engine` whose native core executes bulk-synchronous-parallel
supersteps while modelling the cycles and memory an IPU would spend.
"""
from . import dist, program
from .codelet.python_vertex import InOut, Input, MultiVertex, Output, Vector, VectorList, Vertex
from .codelet.templates import VertexTemplate, template_vertex, vertex_template
from .concat import append, concat
from .device import Device
from .engine import Engine, compile_graph
from .executable import Executable
from .ipu_model import IPUModel
from .errors import *  # noqa: F403 - the error classes are part of the public API
from .errors import __all__ as _error_names
from .errors import TypeError as TypeError  # noqa: A004 - popsim.TypeError; not in __all__, so a star import keeps the builtin
from .graph import ComputeSet, Function, Graph, VariableMappingMethod
from .program import (Abort, AbortOnCondition, Call, Copy, Execute, If, PrintTensor, Program, Repeat,
                      RepeatWhileFalse, RepeatWhileTrue, Sequence, Switch, Sync, SyncType, WriteUndef,
                      CrossReplicaCopy)
from .report import Report, open_report
from .streams import DataStream, ReplicatedStreamMode, StreamCallback
from .target import RelativeSyncDelayType, Target, TargetType
from .tensor import Tensor
from .quarter import QuarterMetadata, create_constant_metadata_tensor
from .types import (BOOL, CHAR, FLOAT, HALF, INT, LONGLONG, QUARTER, QUARTER_METADATA, SHORT, SIGNED_CHAR,
                    UNSIGNED_CHAR, UNSIGNED_INT, UNSIGNED_LONGLONG, UNSIGNED_SHORT, Type)

from .version import __version__  # noqa: F401 - the package version

dist.start()  # one of several MPI processes: from here on, an uncaught exception ends them all

__all__ = [
    "dist", "program", "Device", "IPUModel", "Engine", "Executable", "compile_graph", "ComputeSet", "Function", "Graph",
    "VariableMappingMethod",
    "Abort", "AbortOnCondition", "Call", "Copy", "Execute", "If", "PrintTensor", "Program", "Repeat",
    "RepeatWhileFalse", "RepeatWhileTrue", "Sequence", "Switch", "Sync", "SyncType", "WriteUndef", "CrossReplicaCopy",
    "Report", "open_report", "DataStream", "ReplicatedStreamMode", "StreamCallback", "RelativeSyncDelayType", "Target",
    "TargetType", "Tensor", "append", "concat", "Type", "BOOL", "CHAR", "FLOAT", "HALF", "INT", "LONGLONG",
    "SHORT", "SIGNED_CHAR", "UNSIGNED_CHAR", "UNSIGNED_INT", "UNSIGNED_LONGLONG", "UNSIGNED_SHORT",
    "QUARTER", "QUARTER_METADATA", "QuarterMetadata", "create_constant_metadata_tensor",
    "Vertex", "MultiVertex", "Input", "Output", "InOut", "Vector", "VectorList", "VertexTemplate",
    "vertex_template", "template_vertex",
    *_error_names,
]
