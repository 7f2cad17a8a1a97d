"""popart.InferenceSession: an ONNX model lowered onto PopLibs ops on a popsim graph, run
batches_per_step batches a step: each batch's inputs read from host FIFOs, its anchors
written back as their AnchorReturnType says (ALL, FINAL, SUM, EVERYN)."""
import gc
import io

import numpy as np

import popsim
from popsim import BOOL, CHAR, FLOAT, HALF, INT, QUARTER, SHORT, UNSIGNED_CHAR, UNSIGNED_INT, UNSIGNED_SHORT, poplin, \
    popops
from popsim.program import Copy, Repeat, Sequence

from . import float8
from .dataflow import DataFlow, PyStepIO, anchor_problem, step_shape
from .device import DeviceInfo
from .errors import out_of_memory, popart_exception
from .layout import create_variable
from .lowering import Lowering
from .model import load, model_proto
from .patterns import check_patterns
from .options import SessionOptions
from .pipeline import Stages
from .placement import PlacedLowering, Placement
from .replication import AnchorBuffers, to_replicas
from .session_info import SessionInfo
from .stepio_callback import gather
from .weights_io import HostWeights

#: the types streamed to and from the device: ONNX name -> (popsim type, numpy type)
STREAMED = {"FLOAT": (FLOAT, np.float32), "FLOAT16": (HALF, np.float16), "BOOL": (BOOL, np.bool_),
            "INT32": (INT, np.int32), "UINT32": (UNSIGNED_INT, np.uint32), "INT8": (CHAR, np.int8),
            "UINT8": (UNSIGNED_CHAR, np.uint8), "INT16": (SHORT, np.int16), "UINT16": (UNSIGNED_SHORT, np.uint16)}
_NUMPY_OF_DEVICE = {dev: np_type for dev, np_type in STREAMED.values()}
#: int64 inputs stream as INT (as PopART runs int64 as int32), each value checked to fit; the FNUZ
#: float8 types as their bytes into QUARTER tensors (popart/float8.py)
STREAMED.update({"INT64": (INT, np.int64), "UINT64": (UNSIGNED_INT, np.uint64),
                 **{name: (QUARTER, dtype) for name, dtype in float8.NUMPY_OF.items()}})


class InferenceSession(HostWeights, SessionInfo):
    def __init__(self, fnModel, dataFlow, deviceInfo, inputShapeInfo=None, patterns=None,  # noqa: N803
                 userOptions=None, name="inference"):  # noqa: N803 - PopART's names
        if not isinstance(dataFlow, DataFlow):
            raise popart_exception(f"InferenceSession: dataFlow must be a popart.DataFlow, found "
                                   f"{type(dataFlow).__name__}")
        if not isinstance(deviceInfo, DeviceInfo):
            raise popart_exception("InferenceSession: deviceInfo must come from popart.DeviceManager()."
                                   f"createIpuModelDevice(...), found {type(deviceInfo).__name__}")
        if inputShapeInfo is not None:
            raise popart_exception("InferenceSession: inputShapeInfo is not supported yet; give the model static "
                                   "input shapes (builder.addInputTensor(popart.TensorInfo(dtype, shape))) and "
                                   "leave it out")
        check_patterns(patterns, "InferenceSession")
        self.options = userOptions if userOptions is not None else SessionOptions()
        if not isinstance(self.options, SessionOptions):
            raise popart_exception(f"InferenceSession: userOptions must be a popart.SessionOptions, found "
                                   f"{type(self.options).__name__}")
        self.options.check_supported()
        self.dataFlow, self.deviceInfo, self.name = dataFlow, deviceInfo, name
        self._proto = model_proto(fnModel)
        self.model = load(self._proto)
        self._plan = Placement(self.model, self.options, dataFlow, deviceInfo)   # IPUs, stages, replicas: checked
        known = set(self.model.shapes) | set(self.model.inputs)
        for tid in dataFlow.anchors():
            if tid not in known:
                raise popart_exception(f"DataFlow anchor {tid!r} is no tensor of the model; its tensors include "
                                       f"{sorted(self.model.outputs)} (outputs) and {sorted(self.model.inputs)} "
                                       "(inputs)")
        self._engine, self._cycles, self._anchor_shapes = None, None, {}

    # -- building ----------------------------------------------------------------------------------
    def prepareDevice(self, loadEngine=True) -> None:  # noqa: N802,N803 - PopART's names
        """Lower the model onto a popsim graph and make its engine."""
        # Building a model's graph makes millions of long-lived objects (views, vertex
        # handles, lists of sub-edges) and almost no cyclic garbage; Python's collector
        # would scan the growing graph again and again meanwhile (ResNet-50: 20 full
        # collections, 8% of prepareDevice). It is paused while the graph is built and
        # compiled, and left as it was after (its next collection finds what cycles there are).
        enabled = gc.isenabled()
        gc.disable()
        try:
            self._prepare_device(loadEngine)
        finally:
            if enabled:
                gc.enable()

    def _prepare_device(self, loadEngine: bool) -> None:  # noqa: N803 - PopART's name
        m, bps = self.model, self.dataFlow.batchesPerStep()
        plan = self._plan
        g, self._replicas = plan.make_graph(self.deviceInfo.device), plan.replicas
        stages = Stages(plan) if plan.pipelined else None
        per_batch = (lambda tid, default: stages.per_batch(tid)) if stages else (lambda tid, default: default)
        values, feed, cache = {}, Sequence(), poplin.PlanningCache()
        self._empty_inputs, self._empty_anchors, self._anchor_dtypes = set(), set(), {}
        for tid, (dtype, shape) in m.inputs.items():
            if dtype not in STREAMED:
                raise popart_exception(f"model input {tid!r} is {dtype}: popsim.popart streams "
                                       f"{', '.join(STREAMED)} inputs so far")
            if dtype in float8.NUMPY_OF:   # a QUARTER tensor, its bytes streamed
                home = plan.graph_for(g, tid)
                t = home.add_variable(QUARTER, tuple(shape), tid, mapping=popsim.VariableMappingMethod.LINEAR,
                                      metadata=float8.metadata(home, dtype))
            else:
                t = create_variable(plan.graph_for(g, tid), m, tid, shape, cache, STREAMED[dtype][0])
            values[tid] = t
            if t.num_elements() == 0:   # nothing to stream (an empty tensor)
                self._empty_inputs.add(tid)
                continue
            into = t.reinterpret(UNSIGNED_CHAR) if t.dtype == QUARTER else t
            per_batch(tid, feed).add(Copy(g.add_host_to_device_fifo(f"input/{tid}", into.dtype, t.num_elements()),
                                          into.flatten()))
        self._weights = {}
        for tid, array in m.initializers.items():
            if array.dtype in (np.float32, np.float16):   # FLOAT16 weights are HALF
                t = create_variable(plan.graph_for(g, tid), m, tid, array.shape, cache,
                                    FLOAT if array.dtype == np.float32 else HALF)
                g.create_host_write(f"weight/{tid}", t)
                g.create_host_read(f"weight/{tid}", t)
                values[tid], self._weights[tid] = t, array
            elif array.dtype.kind in "iub":
                values[tid] = array  # a shape, axes, indices or flag: read as the graph is built
            else:
                raise popart_exception(f"initializer {tid!r} is {array.dtype}: popsim.popart runs FLOAT and FLOAT16 "
                                       "weights so far")
        compute = Sequence()
        lowering = PlacedLowering(plan, g, compute, m, values, cache, stages) if plan.manual else \
            Lowering(g, compute, m, values, cache)
        lowering.run(keep=set(self.dataFlow.anchors()) | set(m.outputs)) if not plan.manual else lowering.run()
        prologue, step, every_n, final = Sequence(), Sequence(feed, compute), Sequence(), Sequence()
        periods = {self.dataFlow.art(a).rp() for a in self.dataFlow.anchors()
                   if self.dataFlow.art(a).id() == "EVERYN"}
        if len(periods) > 1:
            raise popart_exception(f"DataFlow: EVERYN anchors with different periods {sorted(periods)} are not "
                                   "supported yet; use one period")
        periods_given, period = bool(periods), periods.pop() if periods else 1
        counts = {"ALL": (bps,), "EVERYN": (bps // period,)}
        for tid in self.dataFlow.anchors():
            progs = {"ALL": per_batch(tid, step), "EVERYN": stages.every_n(tid) if stages else every_n, "FINAL": final}
            self._stream_anchor(g, tid, lowering.anchor(tid), counts, progs, prologue)
        if stages:   # EVERYN anchors: out of their stage in the cycles it works on every Nth batch
            body = stages.step(g, bps, period if periods_given else 0)
        else:
            body = Repeat(bps // period, Sequence(Repeat(period, step), every_n))
        program = Sequence(prologue, body, final)
        self._graph = g
        self._engine = self._build_engine(g, program)
        self._weights_written = False
        if loadEngine:
            self._engine.load(self.deviceInfo.device)

    def _stream_anchor(self, g, tid, t, counts, progs, prologue) -> None:
        """Stream anchor ``tid`` (device tensor ``t``) back to the host. ``counts``: its return
        type -> the host dimensions before its shape (the replicas follow); ``progs``: ALL,
        EVERYN and FINAL -> the program copying it (SUM adds into an accumulator in ALL's and
        copies that in FINAL's)."""
        kind = self.dataFlow.art(tid).id()
        if t.dtype == QUARTER:   # its bytes, into the host's float8 array
            self._anchor_dtypes[tid] = STREAMED[self.model.shapes[tid][0]][1]
            t = t.reinterpret(UNSIGNED_CHAR)
        else:
            self._anchor_dtypes[tid] = _NUMPY_OF_DEVICE.get(t.dtype, np.float32)
        self._anchor_shapes[tid] = step_shape(t.shape, *counts.get(kind, ()), self._replicas)
        if t.num_elements() == 0:   # an empty anchor: nothing to copy back
            self._empty_anchors.add(tid)
            return
        if t.dtype not in _NUMPY_OF_DEVICE or (kind == "SUM" and t.dtype != FLOAT):
            raise popart_exception(f"DataFlow anchor {tid!r} is {t.dtype} on the device: popsim.popart returns "
                                   f"{', '.join(STREAMED)} anchors (SUM: FLOAT) so far")
        fifo = g.add_device_to_host_fifo(f"anchor/{tid}", t.dtype, t.num_elements())
        if kind == "SUM":
            acc = g.clone(t, f"anchor/{tid}/sum")   # on the tiles (and IPU) of the tensor it sums
            popops.zero(g, acc, prologue, f"anchor/{tid}/zero")
            popops.add_in_place(g, acc, t, progs["ALL"], f"anchor/{tid}/sum")
            progs["FINAL"].add(Copy(acc.flatten(), fifo))
        else:
            progs[kind].add(Copy(t.flatten(), fifo))

    def _build_engine(self, graph, program):
        """The engine, or OutOfMemoryException (with the report) when tiles are over their memory;
        the option debug.allowOutOfMemory=true builds it anyway, as in Poplar. Whether it fits is
        judged from the compiled graph's memory plan: a graph that does not fit never allocates
        its tile memory (a large batch's would need gigabytes of host memory)."""
        self._clock_after = None   # a new engine: its clock starts again
        try:
            return popsim.Engine(graph, program, options=dict(self.options.engineOptions))
        except popsim.GraphMemoryAllocationError as e:
            raise out_of_memory(e.report, f"prepareDevice ({self.name})", e.profile_path) from None

    def _need_engine(self, what: str):
        if self._engine is None:
            raise popart_exception(f"InferenceSession.{what}: call prepareDevice() first")
        return self._engine

    # -- host side ---------------------------------------------------------------------------------
    def initAnchorArrays(self) -> dict:  # noqa: N802
        """Zeroed arrays (float32, bool or int32, as the tensor) for the anchors, shaped as PopART shapes them
        (before prepareDevice too, as PopART's, from the model's shapes)."""
        if self._engine is None:
            return self.anchor_arrays_from_the_model()
        return {tid: np.zeros(shape, self._anchor_dtypes.get(tid, np.float32))
                for tid, shape in self._anchor_shapes.items()}

    def weightsFromHost(self) -> None:  # noqa: N802
        """Write the model's weights (its initializers) to the device."""
        engine = self._need_engine("weightsFromHost")
        for tid, array in self._weights.items():
            engine.write_tensor(f"weight/{tid}", np.ascontiguousarray(array))
        self._weights_written = True

    def run(self, stepio, debugName="") -> None:  # noqa: N803
        """One step: batchesPerStep batches of the inputs in ``stepio``, the anchors into its outputs."""
        self._run_step(stepio)

    #: micro-batches per batch (a TrainingSession's accumulation factor)
    _accl = 1

    def _run_step(self, stepio) -> None:
        engine = self._need_engine("run")
        self._check_weights_written()
        bps, accl, replicas = self.dataFlow.batchesPerStep(), self._accl, self._replicas
        counts = (bps, accl, replicas)
        rule = (f"[batches_per_step={bps}, " + (f"accumulation_factor={accl}, " if accl > 1 else "")
                + f"replicas={replicas}, *shape] with size-1 dimensions dropped")
        inputs = {tid: (step_shape(shape, *counts), STREAMED[dtype][1])
                  for tid, (dtype, shape) in self.model.inputs.items() if dtype in STREAMED}
        anchors = {tid: (shape, self._anchor_dtypes.get(tid, np.float32)) for tid, shape in self._anchor_shapes.items()}
        stepio, finish = gather(stepio, inputs, anchors)  # a PyStepIOCallback's arrays
        if not isinstance(stepio, PyStepIO):
            raise popart_exception(f"run: expected a popart.PyStepIO or PyStepIOCallback, found "
                                   f"{type(stepio).__name__}")
        unknown = sorted(set(stepio.inputs) - set(self.model.inputs))
        if unknown:
            raise popart_exception(f"PyStepIO: input(s) {unknown} are no inputs of the model; its inputs are "
                                   f"{sorted(self.model.inputs)}")
        for tid, (dtype, shape) in self.model.inputs.items():
            expected, np_type = step_shape(shape, *counts), np.dtype(STREAMED[dtype][1])
            array = stepio.inputs.get(tid)
            if array is None:
                raise popart_exception(f"PyStepIO: no array for input {tid!r}; expected shape {expected} ({np_type})")
            array = np.asarray(array)
            if array.size != int(np.prod(expected)) or array.dtype != np_type:   # PopART checks the count
                raise popart_exception(f"PyStepIO: input {tid!r} is {array.dtype} {array.shape} ({array.size} "
                                       f"elements); expected {np_type} of {int(np.prod(expected))} elements, shaped "
                                       f"{expected} ({rule}; the model's shape {tuple(shape)})")
            if tid not in self._empty_inputs:
                engine.connect_stream(f"input/{tid}", to_replicas(_narrowed(tid, float8.as_bytes(array)), replicas,
                                                                  int(np.prod(shape))))
        buffers = AnchorBuffers(replicas)
        for tid, shape in self._anchor_shapes.items():
            out, dtype = stepio.outputs.get(tid), self._anchor_dtypes.get(tid, np.float32)
            found = anchor_problem(out, shape, dtype)
            if found:
                raise popart_exception(f"PyStepIO: anchor {tid!r} needs a writable C-contiguous {np.dtype(dtype)} "
                                       f"array of shape {shape} (session.initAnchorArrays() makes them), found {found}")
            if tid not in self._empty_anchors:
                art = self.dataFlow.art(tid)
                transfers = {"ALL": bps * accl, "EVERYN": bps // art.rp() * accl}.get(art.id(), 1)
                engine.connect_stream(f"anchor/{tid}", buffers.buffer(float8.as_bytes(out),
                                                                      out.size // (transfers * replicas)))
        # Only session.run runs this engine: the clock after the last run is the clock now.
        before = self._clock_after if self._clock_after is not None else self._clock()
        self._clock_after = None   # a run stopped part way leaves the clock to be read again
        try:
            engine.run(0)
        except popsim.ApplicationRuntimeError as e:   # a check on the device stopped the step (Dropout's)
            raise popart_exception(f"run: {e}") from e
        buffers.finish()
        self._clock_after = self._clock()
        self._cycles = self._clock_after - before
        finish()

    #: the engine's clock after the last run (None: read it)
    _clock_after = None

    def _clock(self) -> float:
        """The report's execution.total_cycles (the last IPU clock), read from the engine's
        counters without building a whole report (which costs several runs of a small model)."""
        clocks = np.asarray(self._engine.execution_profile().ipu_clocks)
        return float(clocks.max()) if clocks.size else 0.0

    # -- profiling ---------------------------------------------------------------------------------
    def getCycleCount(self, id="") -> int:  # noqa: N802,A002
        """The modelled cycles of the last run."""
        if self._cycles is None:
            raise popart_exception("getCycleCount: no step has run yet; call run(stepio) first")
        return int(self._cycles)

    def getSummaryReport(self, resetProfile=True) -> str:  # noqa: N802,N803
        """The profile summary (target, graph, memory, execution) as text."""
        out = io.StringIO()
        self._need_engine("getSummaryReport").print_profile_summary(out)
        return out.getvalue()

    def getReport(self):  # noqa: N802
        """The popsim Report of the graph and the runs so far."""
        return self._need_engine("getReport").get_report()


def _narrowed(tid, array):
    """A 64-bit integer input as the 32-bit one the device holds; a value that does not fit is an error."""
    if array.dtype not in (np.int64, np.uint64):
        return np.ascontiguousarray(array)
    small = np.dtype(np.int32 if array.dtype == np.int64 else np.uint32)
    info = np.iinfo(small)
    if array.size and (array.min() < info.min or array.max() > info.max):
        raise popart_exception(f"PyStepIO: input {tid!r} ({array.dtype}) holds values in [{array.min()}, "
                               f"{array.max()}], outside {small}'s range: popsim.popart runs {array.dtype} as {small}, "
                               "as PopART runs int64 as int32")
    return np.ascontiguousarray(array, small)
