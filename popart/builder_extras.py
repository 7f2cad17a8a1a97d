"""The rest of PopART's Builder API, mixed into popart.Builder: name scopes
(``with builder.nameScope("layer1"):`` puts ``layer1/`` in front of the ids and node names
made inside, as PopART's NameContextManager), ``aiOnnxOpset<N>``, the id queries
(``getValueTensorIds``, ``getTrainableTensorIds``...), ``reshape_const``, and PopART's
per-node hints. A hint popsim.popart does not act on (``recomputeOutputInBackwardPass``,
``checkpointOutput``, ``setPartialsType``, ``setSerializeMatMul``...) raises a
popart_exception saying so and what to write instead, never being silently dropped."""
import numpy as np

from .errors import onnx_module, popart_exception

#: PopART's per-node hints that popsim.popart does not act on yet -> what to do instead
UNSUPPORTED_HINTS = {
    "recomputeOutputInBackwardPass": "leave it out: a TrainingSession keeps every forward activation "
                                     "(recomputation is not done yet, docs/onnx.md)",
    "checkpointOutput": "leave it out: recomputation is not done yet (docs/onnx.md)",
    "setPartialsType": "leave it out: matmuls and convolutions accumulate in FLOAT partials",
    "setSerializeMatMul": "leave it out: matmuls are not serialized",
    "setEnableConvDithering": "leave it out: convolutions are planned without dithering",
    "setInplacePreferences": "leave it out: popsim.popart lowers each op out of place or as a view",
    "excludePatterns": "leave it out: popsim.popart lowers each ONNX node directly (no PopART patterns)",
    "outputTensorLocation": "leave it out: every tensor lives on the chip (no remote buffers)",
    "executionPhase": "leave it out: execution phases are not supported (virtualGraphMode Off or Manual)",
    "embedReplicationFactor": "set SessionOptions.replicatedGraphCount instead",
    "addUntypedInputTensor": "use addInputTensor(popart.TensorInfo(dtype, shape)): popsim.popart needs "
                             "static input shapes",
    "customOp": "custom ops are not supported: popsim.popart lowers the ONNX ops of its table (python -m "
                "popsim.popart ops); write the op from aiOnnx ops",
    "createSubgraphBuilder": "subgraphs (If, Loop, call) are not supported yet; build the model flat",
}


class _NameScope:
    def __init__(self, builder, name: str):
        self._builder, self._name = builder, name

    def __enter__(self):
        self._builder._name_scopes.append(self._name)
        return self

    def __exit__(self, *exc):
        self._builder._name_scopes.pop()
        return False


def _refuse(name: str):
    def refuse(self, *args, **kwargs):
        raise popart_exception(f"Builder.{name} is not supported by popsim.popart: {UNSUPPORTED_HINTS[name]}")
    refuse.__name__ = name
    refuse.__doc__ = f"PopART's {name}: refused ({UNSUPPORTED_HINTS[name]})."
    return refuse


class BuilderExtras:
    """Mixed into Builder (``self._nodes``, ``self._inputs``, ``self._initializers``, ``self._opset``)."""

    # -- name scopes -----------------------------------------------------------------------------
    def nameScope(self, name):  # noqa: N802 - PopART's name
        """``with builder.nameScope("enc"):``: ids and node names made inside start with ``enc/``."""
        if not isinstance(name, str) or not name:
            raise popart_exception(f"Builder.nameScope: the name must be a non-empty str, found {name!r}")
        return _NameScope(self, name)

    def getNameScope(self, name: str = "") -> str:  # noqa: N802
        """The enclosing name scopes joined by ``/``, then ``name`` (PopART's getNameScope)."""
        return "".join(f"{s}/" for s in self._name_scopes) + name

    # -- opsets ----------------------------------------------------------------------------------
    def _opset_namespace(self, version: int):
        if not self._chosen_opset and not any(n.domain in ("", "ai.onnx") for n in self._nodes):
            newest = onnx_module().defs.onnx_opset_version()
            if not 9 <= version <= newest:
                raise popart_exception(f"Builder.aiOnnxOpset{version}: popsim.popart runs ai.onnx opsets 9..{newest}")
            self._opset, self._chosen_opset = version, True
        if version != self._opset:
            raise popart_exception(f"Builder.aiOnnxOpset{version}: the opset for domain ai.onnx is already "
                                   f"{self._opset} (as PopART, a Builder uses one); use builder.aiOnnx or "
                                   f"builder.aiOnnxOpset{self._opset}, or make the Builder with "
                                   f"opsets={{'ai.onnx': {version}, 'ai.graphcore': 1}}")
        self._chosen_opset = True
        return self.aiOnnx

    def aiOnnxOpsetVersion(self, version) -> None:  # noqa: N802
        """Choose the ai.onnx opset before any op is added."""
        self._opset_namespace(int(version))

    # -- ids -------------------------------------------------------------------------------------
    def getValueTensorIds(self) -> list:  # noqa: N802
        """The ids the nodes compute."""
        return [o for n in self._nodes for o in n.output if o]

    def getTrainableTensorIds(self) -> list:  # noqa: N802
        """The FLOAT initializers (the weights a TrainingSession trains)."""
        return [t.name for t in self._initializers if t.data_type == 1]

    def getAllTensorIds(self) -> list:  # noqa: N802
        return self.getInputTensorIds() + [t.name for t in self._initializers] + self.getValueTensorIds()

    def setGraphName(self, name) -> None:  # noqa: N802
        self._graph_name = str(name)

    def reshape_const(self, aiOnnx, args, shape, debugContext=""):  # noqa: N803 - PopART's names
        """Reshape ``args[0]`` to ``shape`` through an int64 Constant (PopART's reshape_const)."""
        new_shape = aiOnnx.constant(np.array(shape).astype(np.int64), str(debugContext) + "_const")
        return aiOnnx.reshape([args[0], new_shape], debugContext)


for _hint in UNSUPPORTED_HINTS:   # each refused with what to write instead
    setattr(BuilderExtras, _hint, _refuse(_hint))
