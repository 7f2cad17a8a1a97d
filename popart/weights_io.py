"""popart.PyWeightsIO: host arrays of weights by id, which a session's readWeights fills from
the device and writeWeights takes as the weights the next weightsFromHost writes."""
import numpy as np

from .errors import onnx_module, popart_exception


class PyWeightsIO:
    """``PyWeightsIO({weight_id: array})``: float32 arrays shaped as the weights."""

    def __init__(self, weights):
        if not isinstance(weights, dict) or not all(isinstance(a, np.ndarray) for a in weights.values()):
            raise popart_exception("PyWeightsIO(weights): a dict of weight id -> numpy array")
        self.weights = weights


def checked(io, known: dict, what: str) -> dict:
    """``io``'s arrays, each the id of a weight in ``known`` (id -> array) and of its shape."""
    if not isinstance(io, PyWeightsIO):
        raise popart_exception(f"{what}: expected a popart.PyWeightsIO, found {type(io).__name__}")
    for tid, array in io.weights.items():
        if tid not in known:
            raise popart_exception(f"{what}: {tid!r} is no weight of the model; its weights are {sorted(known)}")
        if array.shape != known[tid].shape:
            raise popart_exception(f"{what}: the array for {tid!r} is {array.shape}; the weight is {known[tid].shape}")
    return io.weights


class HostWeights:
    """A session's weights seen from the host (mixed into InferenceSession, so a
    TrainingSession has them too): ``weightsToHost``, ``readWeights``, ``writeWeights``,
    ``modelToHost`` and ``resetHostWeights``. Needs ``self._engine``, ``self._weights``
    (id -> the host array weightsFromHost writes) and ``self._proto`` (the model given)."""

    def _check_weights_written(self) -> None:
        """Before a run: the device attached and the weights on it, as PopART requires."""
        if not self.deviceInfo.isAttached:
            raise popart_exception("run: the device is detached (DeviceInfo.detach(), or the end of a `with "
                                   "device:` block); call deviceInfo.attach() or run inside the `with` block")
        if not self._weights or self._weights_written:
            return
        if hasattr(self, "optimizer"):   # a TrainingSession
            raise popart_exception("run: call session.weightsFromHost() before run: the model has initializers and "
                                   "the session trains them (as PopART requires)")
        if self.options.constantWeights:   # PopART compiles the weights in as constants
            self.weightsFromHost()
            return
        raise popart_exception("run: call session.weightsFromHost() before run: with SessionOptions.constantWeights "
                               "= False the weights are variables the host writes, and none has been written")

    def weightsToHost(self) -> dict:  # noqa: N802 - PopART's name
        """The weights as they are on the device: id -> float32 array."""
        engine = self._need_engine("weightsToHost")
        # replica 0's: every replica holds the same weights (the same summed gradients), as PopART
        replica = {"replica": 0} if getattr(self, "_replicas", 1) > 1 else {}
        return {tid: np.asarray(engine.read_tensor(f"weight/{tid}", **replica), np.float32).reshape(array.shape)
                for tid, array in self._weights.items()}

    def readWeights(self, weightsIo) -> None:  # noqa: N802,N803
        """Fill the arrays of ``weightsIo`` (a PyWeightsIO) with the weights on the device."""
        on_device = self.weightsToHost()
        for tid, array in checked(weightsIo, self._weights, "readWeights").items():
            array[...] = on_device[tid]

    def writeWeights(self, weightsIo) -> None:  # noqa: N802,N803
        """Take the arrays of ``weightsIo`` as the weights the next weightsFromHost writes."""
        self._need_engine("writeWeights")
        for tid, array in checked(weightsIo, self._weights, "writeWeights").items():
            self._weights[tid] = np.array(array, np.float32)

    def modelToHost(self, fileName) -> None:  # noqa: N802,N803
        """Write the model, its weights read back from the device, to the ONNX file ``fileName``."""
        onnx = onnx_module()
        weights = self.weightsToHost()
        proto = onnx.ModelProto()
        proto.CopyFrom(self._proto)
        for init in proto.graph.initializer:
            if init.name in weights:
                init.CopyFrom(onnx.numpy_helper.from_array(weights[init.name], init.name))
        onnx.save(proto, fileName)

    def resetHostWeights(self, modelProtoOrFilename,  # noqa: N802,N803 - PopART's names
                         ignoreWeightsInModelWithoutCorrespondingHostWeight=False) -> None:  # noqa: N803
        """Take the weights of another ONNX model (a file or ModelProto bytes: the same model with
        other weights, e.g. one modelToHost wrote) as those the next weightsFromHost writes."""
        from .model import model_proto
        onnx = onnx_module()
        self._need_engine("resetHostWeights")
        if not hasattr(self, "optimizer") and self.options.constantWeights:
            raise popart_exception("resetHostWeights: the InferenceSession has SessionOptions.constantWeights = True "
                                   "(the default), so its weights are constants; set constantWeights = False before "
                                   "making the session, as PopART requires")
        proto = model_proto(modelProtoOrFilename)
        for init in proto.graph.initializer:
            array = onnx.numpy_helper.to_array(init)
            if init.name not in self._weights:
                if array.dtype == np.float32 and not ignoreWeightsInModelWithoutCorrespondingHostWeight:
                    raise popart_exception(f"resetHostWeights: the model has weight {init.name!r}, which is no weight "
                                           f"of this session ({sorted(self._weights)}); pass "
                                           "ignoreWeightsInModelWithoutCorrespondingHostWeight=True to skip it")
                continue
            if array.shape != self._weights[init.name].shape:
                raise popart_exception(f"resetHostWeights: weight {init.name!r} is {array.shape} in the model given; "
                                       f"the session's is {self._weights[init.name].shape}")
            self._weights[init.name] = np.array(array, np.float32)
        if hasattr(self, "optimizer"):   # as PopART: a TrainingSession must write them again before it runs
            self._weights_written = False
