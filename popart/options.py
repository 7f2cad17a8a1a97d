"""popart.SessionOptions: PopART's option fields. A session runs with the ones popsim.popart
implements; any other set away from its default is refused with a clear error (never
silently ignored)."""
from .errors import popart_exception


class VirtualGraphMode:
    Off, Manual, Auto, ExecutionPhases = "Off", "Manual", "Auto", "ExecutionPhases"


class RecomputationType:
    NoRecompute, Standard, NormOnly, RecomputeAll, Pipeline = ("NoRecompute", "Standard", "NormOnly",
                                                               "RecomputeAll", "Pipeline")


class RecomputeType:
    Undefined, Checkpoint, Recompute, Recomputed = "Undefined", "Checkpoint", "Recompute", "Recomputed"


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
    "convolutionOptions": {}, "matmulOptions": {}, "lstmOptions": {},
    "enableNonStableSoftmax": False, "enableStableNorm": False, "defaultBufferingDepth": 1,
    "instrumentWithHardwareCycleCounter": False, "virtualGraphSplitRatios": [], "mergeVarUpdate": "None",
    "dotChecks": set(), "logDir": "",
}
#: PopART's fields that only steer how its compiler schedules, buffers or checks the
#: program (never what it computes): accepted with any value, as a session's results and
#: popsim's model of the program do not depend on them
SCHEDULING = {"enablePrefetchDatastreams": True, "rearrangeAnchorsOnHost": True, "rearrangeStreamsOnHost": False,
              "kahnTieBreaker": "greedy", "timeLimitScheduler": 1e9, "swapLimitScheduler": 1000000,
              "decomposeGradSum": False, "opxAliasChecking": False, "opxModifyChecking": False,
              "enableInplaceAmbiguityChecking": False, "useLoopCandidateCreator": False, "aliasZeroCopy": False,
              "enableMergeExchange": True, "groupHostSync": False, "separateCallOpPdfs": True,
              "exportPoplarVertexGraph": False, "strictOpVersions": True, "outlineSequenceBreakCost": 10000.0,
              "subgraphCopyingStrategy": "OnEnterAndExit", "enableVariablesCaching": True,
              "mergeVarUpdateMemThreshold": 1000000, "bufferingDepthMap": {}, "dotOpNames": False,
              "finalDotOp": 10000, "firstDotOp": 0, "reportOptions": {}}
#: PopART's other fields: setting one is an error saying popsim.popart does not implement it
NOT_IMPLEMENTED = ("executionPhaseSettings", "experimentalSettings", "batchSerializationSettings",
                   "compileEngine", "gclOptions", "enableFullyConnectedPass", "groupNormStridedChannelGrouping",
                   "customCodelets", "updatableNamedBuffers", "customCodeletCompileFlags", "globalReplicaOffset",
                   "automaticLossScalingSettings", "replicatedCollectivesSettings", "useHostCopyOps",
                   "enableExplicitMainLoops", "ensureFp32LossScaleTensor", "delayVarUpdates",
                   "hardwareInstrumentations", "accumulationAndReplicationReductionType",
                   "meanAccumulationAndReplicationReductionStrategy", "enableDistributedReplicatedGraphs",
                   "enableLoadAndOffloadRNGState", "enableRngStateManagement", "compilationProgressLogger",
                   "numIOTiles", "weightTensorLocationSettings", "activationTensorLocationSettings",
                   "optimizerStateTensorLocationSettings", "accumulatorTensorLocationSettings",
                   "tensorLocationSettingsOverride", "accumulateOuterFragmentSettings", "autodiffSettings",
                   "developerSettings", "numberOfHostIOTiles")
DEFAULTS.update(SCHEDULING)
#: the fields a session honours with any value: those that only describe what PopART's
#: compiler may do (outlining, buffering, caching...) and those popsim.popart implements
IMPLEMENTED = set(SCHEDULING) | {
    "engineOptions", "instrumentWithHardwareCycleCounter", "enableOutlining", "outlineThreshold",
    "constantWeights", "enableStableNorm", "dotChecks", "logDir", "defaultBufferingDepth",
    "accumulationFactor", "enableGradientAccumulation",
    "enableReplicatedGraphs", "replicatedGraphCount", "enablePipelining"}   # placement.py, pipeline.py
#: the fields only a TrainingSession honours (an InferenceSession refuses them away from their default)
TRAINING_ONLY = {"accumulationFactor", "enableGradientAccumulation"}
#: fields honoured with some values only: field -> those values
IMPLEMENTED_VALUES = {"virtualGraphMode": (VirtualGraphMode.Off, VirtualGraphMode.Manual, VirtualGraphMode.Auto)}


class SessionOptions:
    def __init__(self):
        for key, value in DEFAULTS.items():
            object.__setattr__(self, key, value.copy() if hasattr(value, "copy") else value)

    def __getattr__(self, key):   # only for fields that are not set: PopART's others, or unknown
        if key in NOT_IMPLEMENTED:
            raise AttributeError(f"SessionOptions.{key} is PopART's option but popsim.popart does not implement it "
                                 "yet; leave it out (docs/onnx.md lists what is not done)")
        raise AttributeError(f"SessionOptions has no field {key!r}; known: {', '.join(sorted(DEFAULTS))}")

    def __setattr__(self, key, value):
        if key in NOT_IMPLEMENTED:
            raise popart_exception(f"SessionOptions.{key} is PopART's option but popsim.popart does not implement it "
                                   "yet; leave the line out (docs/onnx.md lists what is not done)")
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
