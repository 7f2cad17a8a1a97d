"""popart.SessionOptions: PopART's option fields. A session runs with the ones popsim.popart
implements; any other set away from its default is refused with a clear error (never
silently ignored)."""
from .errors import popart_exception


class VirtualGraphMode:
    Off, Manual, Auto, ExecutionPhases = "Off", "Manual", "Auto", "ExecutionPhases"


class RecomputationType:
    NoRecompute, Standard, NormOnly, RecomputeAll, Pipeline = ("NoRecompute", "Standard", "NormOnly",
                                                               "RecomputeAll", "Pipeline")


class SyntheticDataMode:
    Off, Zeros, RandomNormal, RandomUniform = "Off", "Zeros", "RandomNormal", "RandomUniform"


#: field -> default (PopART's)
DEFAULTS = {
    "accumulationFactor": 1, "enableGradientAccumulation": False, "enablePipelining": False,
    "virtualGraphMode": VirtualGraphMode.Off, "enableReplicatedGraphs": False, "replicatedGraphCount": 1,
    "globalReplicationFactor": 1, "autoRecomputation": RecomputationType.NoRecompute, "explicitRecomputation": False,
    "enableOutlining": True, "outlineThreshold": 1.0, "syntheticDataMode": SyntheticDataMode.Off,
    "enableStochasticRounding": False, "enableFloatingPointChecks": False, "partialsTypeMatMuls": "",
    "constantWeights": True, "enableEngineCaching": False, "cachePath": "session_cache", "engineOptions": {},
    "convolutionOptions": {}, "matmulOptions": {}, "lstmOptions": {}, "reportOptions": {},
    "enableNonStableSoftmax": False, "enableStableNorm": False, "defaultBufferingDepth": 1,
    "instrumentWithHardwareCycleCounter": False, "virtualGraphSplitRatios": [], "mergeVarUpdate": "None",
    "dotChecks": set(), "logDir": "",
}
#: the fields a session honours with any value: those that only describe what PopART's
#: compiler may do (outlining, buffering, caching...) and those popsim.popart implements
IMPLEMENTED = {"engineOptions", "instrumentWithHardwareCycleCounter", "enableOutlining", "outlineThreshold",
               "constantWeights", "enableStableNorm", "dotChecks", "logDir", "defaultBufferingDepth",
               "accumulationFactor", "enableGradientAccumulation",
               "enableReplicatedGraphs", "replicatedGraphCount", "enablePipelining"}   # placement.py, pipeline.py
#: the fields only a TrainingSession honours (an InferenceSession refuses them away from their default)
TRAINING_ONLY = {"accumulationFactor", "enableGradientAccumulation"}
#: fields honoured with some values only: field -> those values
IMPLEMENTED_VALUES = {"virtualGraphMode": (VirtualGraphMode.Off, VirtualGraphMode.Manual)}


class SessionOptions:
    def __init__(self):
        for key, value in DEFAULTS.items():
            object.__setattr__(self, key, value.copy() if hasattr(value, "copy") else value)

    def __setattr__(self, key, value):
        if key not in DEFAULTS:
            raise popart_exception(f"SessionOptions has no field {key!r}; known: {', '.join(sorted(DEFAULTS))}")
        object.__setattr__(self, key, value)

    def check_supported(self, training: bool = False) -> None:
        """Refuse a field set away from its default that popsim.popart does not implement
        (for this kind of session)."""
        for key, default in DEFAULTS.items():
            value = getattr(self, key)
            if key in IMPLEMENTED_VALUES and value not in IMPLEMENTED_VALUES[key]:
                raise popart_exception(f"SessionOptions.{key} = {value!r} is not supported yet by popsim.popart "
                                       f"(only {', '.join(map(repr, IMPLEMENTED_VALUES[key]))})")
            unsupported = (key not in IMPLEMENTED and key not in IMPLEMENTED_VALUES
                           or key in TRAINING_ONLY and not training)
            if unsupported and value != default:
                where = " outside a TrainingSession" if key in TRAINING_ONLY else ""
                raise popart_exception(f"SessionOptions.{key} = {value!r} is not supported yet by popsim.popart "
                                       f"(only the default {default!r}{where}); see docs/onnx.md for what is not done")
        if training:
            factor = self.accumulationFactor
            if isinstance(factor, bool) or not isinstance(factor, int) or factor < 1:
                raise popart_exception(f"SessionOptions.accumulationFactor must be an int >= 1, found {factor!r}")
            if factor > 1 and not self.enableGradientAccumulation:
                raise popart_exception(f"SessionOptions.accumulationFactor = {factor} needs "
                                       "enableGradientAccumulation = True (as PopART)")
