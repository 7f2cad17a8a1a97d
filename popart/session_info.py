"""What a session says about itself, as PopART's sessions do (mixed into InferenceSession,
so a TrainingSession has it too): ``getInfo(tensor_id)`` (the TensorInfo of a model tensor),
``getAllTensorIds``, ``setRandomSeed``, ``replicationFactor`` and ``accumulationFactor``,
and PopART's calls that have no meaning here, refused with what to write instead."""
import numbers

import numpy as np

from .autodiff import GRADIENT_PREFIX
from .dataflow import step_shape
from .errors import popart_exception
from .tensor_info import TensorInfo

#: the host type of an anchor of each model type (int64 runs as int32 on the device, as in PopART)
ANCHOR_TYPES = {"FLOAT": np.float32, "BOOL": np.bool_, "INT32": np.int32, "INT64": np.int32}


class SessionInfo:
    """Needs ``self.model`` (model.Model), ``self.options`` and ``self._need_engine``."""

    def getInfo(self, id):  # noqa: N802,A002 - PopART's names
        """The TensorInfo (type and shape) of model tensor ``id``."""
        dtype, shape = self.model.shapes.get(id, (None, None))
        if dtype is None or shape is None or any(d is None for d in shape):
            raise popart_exception(f"getInfo: no tensor {id!r} with a known type and shape in the model; its inputs "
                                   f"are {sorted(self.model.inputs)} and outputs {sorted(self.model.outputs)}")
        return TensorInfo(dtype, shape)

    def anchor_arrays_from_the_model(self) -> dict:
        """initAnchorArrays before prepareDevice: the arrays from the model's shapes and the
        DataFlow (the same as prepareDevice gives)."""
        training, bps, arrays = hasattr(self, "optimizer"), self.dataFlow.batchesPerStep(), {}
        opts = self.options
        replicas = int(opts.replicatedGraphCount) if opts.enableReplicatedGraphs else 1
        for tid in self.dataFlow.anchors():
            base = tid[len(GRADIENT_PREFIX):] if training and tid.startswith(GRADIENT_PREFIX) else tid
            dtype, shape = self.model.shapes.get(base, (None, None))
            if dtype not in ANCHOR_TYPES or shape is None or any(d is None for d in shape):
                raise popart_exception(f"initAnchorArrays: the type and shape of anchor {tid!r} are known once the "
                                       "model is lowered: call session.prepareDevice() first")
            art = self.dataFlow.art(tid)
            n = {"ALL": bps, "EVERYN": bps // art.rp()}.get(art.id(), 1)
            accl = self.accumulationFactor if training and art.id() in ("ALL", "EVERYN") else 1
            host = step_shape(shape, n, accl, replicas)
            arrays[tid] = np.zeros(host, ANCHOR_TYPES[dtype])
        return arrays

    def getAllTensorIds(self) -> set:  # noqa: N802
        return set(self.model.shapes) | set(self.model.inputs) | set(self.model.initializers)

    def setRandomSeed(self, seedValue) -> None:  # noqa: N802,N803
        """The seed of the session's random ops (an InferenceSession lowers none: Dropout passes
        its input through in inference, as PopART's), kept."""
        if isinstance(seedValue, bool) or not isinstance(seedValue, numbers.Integral) or seedValue < 0:
            raise popart_exception(f"setRandomSeed: the seed must be a non-negative int, found {seedValue!r}")
        self._need_engine("setRandomSeed")   # as PopART: after prepareDevice
        self._seed = int(seedValue)

    @property
    def replicationFactor(self) -> int:  # noqa: N802
        return int(self.options.replicatedGraphCount) if self.options.enableReplicatedGraphs else 1

    @property
    def accumulationFactor(self) -> int:  # noqa: N802
        return int(self.options.accumulationFactor) if self.options.enableGradientAccumulation else 1

    def compileAndExport(self, *args, **kwargs):  # noqa: N802
        raise popart_exception("compileAndExport: popsim.popart does not export executables; call "
                               "session.prepareDevice() in the script that runs the model")

    def loadExecutable(self, *args, **kwargs):  # noqa: N802
        raise popart_exception("loadExecutable: popsim.popart does not load exported executables; build the session "
                               "from the ONNX model and call prepareDevice()")

    def getExecutionReport(self, *args, **kwargs):  # noqa: N802
        raise popart_exception("getExecutionReport (PopART 1.x): use session.getSummaryReport() (text) or "
                               "session.getReport() (popsim's Report)")

    getGraphReport = getExecutionReport

    def getSerializedGraph(self):  # noqa: N802
        raise popart_exception("getSerializedGraph: popsim.popart has no PopART IR to serialize; the model is "
                               "builder.getModelProto(), the lowered graph is in session.getReport()")
