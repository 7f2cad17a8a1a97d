"""popart.TrainingSession: an ONNX model and a loss lowered onto PopLibs ops, trained by an
SGD optimizer. Each batch runs the forward pass, the backward pass (autodiff.py: each op's
gradient rule as PopLibs ops on the tiles) and the weight update (optimizer.py); with
gradient accumulation, accumulationFactor micro-batches (forward, backward, gradients
added) then one update; BatchNormalization's running statistics are copied into their
weights each micro-batch. Inputs and anchors are shaped [batches_per_step,
accumulation_factor, *shape], the size-1 leading dimensions dropped, as PopART shapes them.
modelToHost writes the model with the weights read back from the device."""
import numpy as np

from popsim import FLOAT, QUARTER, gcl, poplin, popops
from popsim.program import Call, Copy, Repeat, Sequence

from .autodiff import GRADIENT_PREFIX, Autodiff
from .dataflow import DataFlow
from .device import DeviceInfo
from .errors import popart_exception
from .layout import create_variable
from .lowering import Lowering
from .model import load, model_proto
from .grads.nn import is_training
from .optimizer import Update, check_optimizer
from .patterns import check_patterns
from .options import DEFAULTS, SessionOptions
from .pipelined_training import TrainingStages, check_pipelined_training
from .placed_autodiff import PlacedAutodiff
from .placement import PlacedLowering, Placement, clone_to_ipu, ipus_of
from .random_seed import RandomSeed
from .session import STREAMED, InferenceSession

#: the options a TrainingSession refuses away from their defaults (several IPUs per replica)
NOT_IN_TRAINING = ("globalReplicationFactor", "autoRecomputation", "explicitRecomputation", "syntheticDataMode")


class TrainingSession(InferenceSession):
    def __init__(self, fnModel, dataFlow, loss, optimizer, deviceInfo, inputShapeInfo=None,  # noqa: N803
                 patterns=None, userOptions=None, name="training"):  # noqa: N803 - PopART's names
        what = "TrainingSession"
        if not isinstance(dataFlow, DataFlow):
            raise popart_exception(f"{what}: dataFlow must be a popart.DataFlow, found {type(dataFlow).__name__}")
        if not isinstance(deviceInfo, DeviceInfo):
            raise popart_exception(f"{what}: deviceInfo must come from popart.DeviceManager().createIpuModelDevice"
                                   f"(...), found {type(deviceInfo).__name__}")
        if inputShapeInfo is not None:
            raise popart_exception(f"{what}: inputShapeInfo is not supported yet; give the model static input shapes "
                                   "(builder.addInputTensor(popart.TensorInfo(dtype, shape))) and leave it out")
        check_patterns(patterns, what)
        self.options = userOptions if userOptions is not None else SessionOptions()
        if not isinstance(self.options, SessionOptions):
            raise popart_exception(f"{what}: userOptions must be a popart.SessionOptions, found "
                                   f"{type(self.options).__name__}")
        self.options.check_supported(training=True)
        for key in NOT_IN_TRAINING:   # whatever an InferenceSession may honour, training does not yet
            if getattr(self.options, key) != DEFAULTS[key]:
                raise popart_exception(f"{what}: SessionOptions.{key} = {getattr(self.options, key)!r} is not "
                                       f"supported in training yet (only {DEFAULTS[key]!r}); see docs/onnx.md")
        self.optimizer = check_optimizer(optimizer, what)
        self.dataFlow, self.deviceInfo, self.name = dataFlow, deviceInfo, name
        self._proto = model_proto(fnModel)
        self.model = load(self._proto)
        known = set(self.model.shapes) | set(self.model.inputs)
        if not isinstance(loss, str) or loss not in known:
            raise popart_exception(f"{what}: loss {loss!r} is no tensor of the model; give the id a loss op returned "
                                   f"(builder.aiGraphcore.nllloss / l1loss / identityloss); outputs: "
                                   f"{sorted(self.model.outputs)}")
        self.loss = loss
        unknown = sorted(set(self.optimizer.specific) - set(self.model.initializers))
        if unknown:
            raise popart_exception(f"{what}: the optimizer has specific values for {unknown}, which are no weights of "
                                   f"the model; its weights are {sorted(self.model.initializers)}")
        for tid in dataFlow.anchors():
            base = tid[len(GRADIENT_PREFIX):] if tid.startswith(GRADIENT_PREFIX) else tid
            if base not in known:
                raise popart_exception(f"DataFlow anchor {tid!r} is no tensor of the model (nor the gradient of "
                                       f"one, {GRADIENT_PREFIX}<id>); outputs: {sorted(self.model.outputs)}")
        self._accl = int(self.options.accumulationFactor) if self.options.enableGradientAccumulation else 1
        # IPUs, stages, replicas and the device: checked
        self._plan = Placement(self.model, self.options, dataFlow, deviceInfo, training=True)
        if self._plan.pipelined:
            check_pipelined_training(self.options, self._plan.num_stages)
        self._replicas = self._plan.replicas
        self._engine, self._cycles, self._anchor_shapes = None, None, {}

    # -- building ----------------------------------------------------------------------------------
    def _inputs(self, g, cache, values, feed, stages):
        self._empty_inputs = set()
        for tid, (dtype, shape) in self.model.inputs.items():
            if dtype not in STREAMED or STREAMED[dtype][0] == QUARTER:
                raise popart_exception(f"model input {tid!r} is {dtype}: a TrainingSession streams "
                                       f"{', '.join(k for k, v in STREAMED.items() if v[0] != QUARTER)} inputs so far "
                                       "(8-bit float inputs: an InferenceSession)")
            t = create_variable(self._plan.graph_for(g, tid), self.model, tid, shape, cache, STREAMED[dtype][0])
            values[tid] = t
            if t.num_elements() == 0:
                self._empty_inputs.add(tid)
                continue
            fifo = g.add_host_to_device_fifo(f"input/{tid}", t.dtype, t.num_elements())
            (stages.per_batch(tid) if stages else feed).add(Copy(fifo, t.flatten()))   # pipelined: its first stage

    def _weights_on(self, g, cache, values):
        self._weights = {}
        for tid, array in self.model.initializers.items():
            if array.dtype == np.float32:
                t = create_variable(self._plan.graph_for(g, tid), self.model, tid, array.shape, cache)
                g.create_host_write(f"weight/{tid}", t)
                g.create_host_read(f"weight/{tid}", t)
                values[tid], self._weights[tid] = t, array
            elif array.dtype.kind in "iub":   # shapes, indices, flags (Dropout's training_mode)
                values[tid] = array
            else:
                raise popart_exception(f"initializer {tid!r} is {array.dtype}: popsim.popart runs FLOAT weights so far")

    def _weight_updates(self, g, values, grads, prologue, at, update):
        """Accumulators (with gradient accumulation; on the tiles computing the gradient, in
        the program ``at(gradient id)`` computing it), velocities (with momentum) and the
        updates, each on its weight's IPU (a gradient from another IPU copied there first);
        with replicas, the gradients are summed across them first (gcl's all-reduce, one
        collective for all of them), as PopART reduces them (ReductionType Sum)."""
        self._velocities, pending, plan, accumulators = [], [], self._plan, []
        for tid in self._weights:
            grad = grads.get(tid)
            if grad is None:
                continue
            w, ipu = values[tid], plan.home_ipu(tid) if plan.manual else None
            elsewhere = ipu is not None and grad.num_elements() > 0 and \
                ipus_of(g, grad, plan.tiles_per_ipu) != {ipu}
            if self._accl > 1:
                acc = g.clone(grad if elsewhere else w, f"{GRADIENT_PREFIX}{tid}/accumulator")
                popops.zero(g, acc, prologue, f"{tid}/accumulator/zero")
                popops.add_in_place(g, acc, grad, at(tid), f"{tid}/accumulate")
                grad = acc
                accumulators.append((tid, acc))
            if elsewhere:   # the IpuCopy of the gradient onto its weight's IPU
                moved = clone_to_ipu(g, grad, ipu, plan.tiles_per_ipu, f"{GRADIENT_PREFIX}{tid}/ipu{ipu}")
                (update if self._accl > 1 else at(tid)).add(Copy(grad, moved))
                grad = moved
            pending.append((tid, grad))
        reduced = [grad for _, grad in pending]
        if self._replicas > 1 and pending:
            reduced = gcl.all_reduce_cross_replica(g, reduced, gcl.CollectiveOperator.ADD, update,
                                                   name="gradients/allReduce")
        for (tid, grad), summed in zip(pending, reduced):
            w = values[tid]
            self._update.on(plan.home_ipu(tid) if plan.manual else None)
            v = None
            if self._update.has_momentum(tid):
                v = g.clone(w, f"velocity/{tid}")
                g.create_host_write(f"velocity/{tid}", v)
                self._velocities.append((tid, v.shape))
            self._update.apply(tid, w, summed, v, update, f"{tid}/update")
        self._update.on(None)
        for tid, acc in accumulators:
            popops.zero(g, acc, update, f"{tid}/accumulator/zero")

    def _running_statistics(self, values, at) -> None:
        """BatchNormalization in training mode: its running mean and variance outputs copied
        into the weights they were read from, each micro-batch (as PopART updates them)."""
        for node in self.model.nodes:
            if node.op_type != "BatchNormalization" or not is_training(node):
                continue
            for out, src in zip(node.outputs[1:3], node.inputs[3:5]):
                if out and src in self._weights:
                    at(out).add(Copy(values[out], values[src]))

    def _anchors(self, g, values, grads, prologue, at, every_at, final, period):
        bps = self.dataFlow.batchesPerStep()   # EVERYN: every micro-batch of batches N, 2N... (PopART's shape)
        counts = {"ALL": (bps, self._accl), "EVERYN": (bps // period, self._accl)}
        self._empty_anchors, self._anchor_dtypes = set(), {}
        for tid in self.dataFlow.anchors():
            if tid.startswith(GRADIENT_PREFIX):
                t = grads.get(tid[len(GRADIENT_PREFIX):])
                if t is None:
                    raise popart_exception(f"DataFlow anchor {tid!r}: no gradient flows to "
                                           f"{tid[len(GRADIENT_PREFIX):]!r} from the loss {self.loss!r}; anchor the "
                                           f"gradient of a weight the loss depends on")
            else:
                t = values.get(tid)
            if t is None or isinstance(t, np.ndarray):
                raise popart_exception(f"DataFlow anchor {tid!r} is a constant of the model (known as it is built), "
                                       "not a tensor on the device; anchor a tensor an op computes")
            self._stream_anchor(g, tid, t, counts, {"ALL": at(tid), "EVERYN": every_at(tid), "FINAL": final},
                                prologue)

    def prepareDevice(self, loadEngine=True) -> None:  # noqa: N802,N803 - PopART's names
        """Lower the model, its backward pass and the weight update onto a popsim graph and make its engine."""
        m, bps, plan = self.model, self.dataFlow.batchesPerStep(), self._plan
        g = plan.make_graph(self.deviceInfo.device)   # replicated with replicatedGraphCount; virtual graphs
        stages = TrainingStages(plan) if plan.pipelined else None
        values, feed, cache = {}, Sequence(), poplin.PlanningCache()
        self._inputs(g, cache, values, feed, stages)
        self._weights_on(g, cache, values)
        self._random = RandomSeed(g, plan, stages)   # Dropout's seed, moved on first in each micro-batch
        forward, backward = Sequence(self._random.start), Sequence()
        if stages:
            stages.program(0).add(self._random.start)
            forward = Sequence()
        lowering = PlacedLowering(plan, g, forward, m, values, cache, stages) if plan.manual else \
            Lowering(g, forward, m, values, cache)
        lowering.random_seed = self._random
        lowering.run()
        loss = lowering.values.get(self.loss)
        if loss is None or isinstance(loss, np.ndarray) or loss.dtype != FLOAT:
            raise popart_exception(f"TrainingSession: the loss {self.loss!r} must be a FLOAT tensor computed on the "
                                   "device from the weights")
        self._update = Update(g, self.optimizer, plan.ipus)
        # the weights, and the FLOAT inputs whose gradients are anchored
        sources = list(self._weights) + [t for t, (dtype, _) in m.inputs.items()
                                         if dtype == "FLOAT" and self.dataFlow.isAnchored(GRADIENT_PREFIX + t)]
        anchored = {a[len(GRADIENT_PREFIX):] for a in self.dataFlow.anchors() if a.startswith(GRADIENT_PREFIX)}
        if plan.manual:   # each rule on its node's IPU (and backward stage): popart/placed_autodiff.py
            autodiff = PlacedAutodiff(m, lowering.values, self.loss, sources, lowering.saved, anchored, plan,
                                      lowering.read, g, stages)
            loss_node = next(n for n in m.nodes if self.loss in n.outputs)
            self._update.on(plan.node_ipu[id(loss_node)])
            loss_stage = stages.backward_stage(plan.node_stage[id(loss_node)]) if stages else None
            autodiff.start(loss_stage)
            seed = self._update.seed(loss.shape, stages.program(loss_stage) if stages else backward)
            self._update.on(None)
        else:
            autodiff = Autodiff(m, lowering.values, self.loss, sources, lowering.saved, anchored)
            seed = self._update.seed(loss.shape, backward)
        grads = autodiff.run(g, backward, cache, seed)
        prologue, micro, update, every_n, final = Sequence(), Sequence(feed, forward, backward), Sequence(), \
            Sequence(), Sequence()
        if stages:   # what runs per micro-batch runs in the pipeline stage computing it
            def grad_at(tid):
                return stages.program(autodiff.where[tid])

            def at(tid):
                if tid.startswith(GRADIENT_PREFIX):
                    return grad_at(tid[len(GRADIENT_PREFIX):])
                return stages.per_batch(tid)

            def every_at(tid):   # out of the stage computing it, after each micro-batch of every Nth batch
                if tid.startswith(GRADIENT_PREFIX):
                    return stages.every_n(tid, autodiff.where[tid[len(GRADIENT_PREFIX):]])
                return stages.every_n(tid)
        else:
            at = grad_at = lambda tid: micro
            every_at = lambda tid: every_n  # noqa: E731 - after each micro-batch of every Nth batch
        self._weight_updates(g, lowering.values, grads, prologue, grad_at, update)
        self._running_statistics(lowering.values, at)
        periods = {self.dataFlow.art(a).rp() for a in self.dataFlow.anchors() if self.dataFlow.art(a).id() == "EVERYN"}
        if len(periods) > 1:
            raise popart_exception(f"DataFlow: EVERYN anchors with different periods {sorted(periods)} are not "
                                   "supported yet; use one period")
        every_ns, period = bool(periods), periods.pop() if periods else 1
        self._anchors(g, lowering.values, grads, prologue, at, every_at, final, period)
        if stages:   # the accumulation's micro-batches through the pipeline, then the update
            batch = Sequence(stages.step(g, self._accl), update)
            nth = Sequence(stages.step(g, self._accl, period=1), update) if every_ns else batch
        else:
            if every_ns:   # the micro-batch runs in two places: once, as a Function
                micro = Call(g.add_function(micro, "microBatch"))
            batch = Sequence(Repeat(self._accl, micro) if self._accl > 1 else micro, update)
            nth = batch
            if every_ns:
                nth = Sequence(Repeat(self._accl, Sequence(micro, every_n)), update)
        if every_ns:
            every = Sequence(Repeat(period - 1, batch), nth) if period > 1 else nth
        else:
            every = Sequence(Repeat(period, batch), every_n)
        program = Sequence(prologue, Repeat(bps // period, every), final)
        self._graph = g
        self._engine = self._build_engine(g, program)   # OutOfMemoryException when it does not fit
        self._weights_written = False
        if loadEngine:
            self._engine.load(self.deviceInfo.device)
            self._random.write(self._engine)   # the clock's seed until setRandomSeed, as PopART

    # -- host side ---------------------------------------------------------------------------------
    def weightsFromHost(self) -> None:  # noqa: N802
        """Write the weights, zeroed velocities and the optimizer's values to the device."""
        super().weightsFromHost()
        engine = self._engine
        for tid, shape in self._velocities:
            engine.write_tensor(f"velocity/{tid}", np.zeros(shape, np.float32))
        self._update.write(engine, self.optimizer)

    def setRandomSeed(self, seedValue) -> None:  # noqa: N802,N803
        """Seed the session's Dropouts (popart/random_seed.py): the same seed, the same masks."""
        engine = self._need_engine("setRandomSeed")   # as PopART: after prepareDevice
        self._random.write(engine, seedValue)

    def getRandomSeed(self) -> int:  # noqa: N802
        """The seed as the device holds it now (PopART's getRandomSeed): setRandomSeed's, moved on
        by [replicas, 1] per micro-batch run since."""
        return self._random.read(self._need_engine("getRandomSeed"))

    def updateOptimizerFromHost(self, optimizer) -> None:  # noqa: N802
        """Use ``optimizer``'s values from the next step: only those the session's optimizer made non-const."""
        engine = self._need_engine("updateOptimizerFromHost")
        optimizer = check_optimizer(optimizer, "updateOptimizerFromHost")
        if set(optimizer.specific) != set(self.optimizer.specific):
            raise popart_exception(f"updateOptimizerFromHost: the optimizer has specific values for "
                                   f"{sorted(optimizer.specific)}; the session's has them for "
                                   f"{sorted(self.optimizer.specific)} (they must be the same weights)")
        for group in [None] + sorted(self.optimizer.specific):
            for key, (value, const) in self.optimizer.for_weight(group).items():
                if const and optimizer.value(key, group) != value:
                    where = "" if group is None else f" (specific to {group!r})"
                    raise popart_exception(f"updateOptimizerFromHost: {key}{where} was given as const ({value}) to the "
                                           f"session; it cannot change to {optimizer.value(key, group)}. Make it "
                                           "(value, False) in the SGD the session is made with")
        self._update.write(engine, optimizer)
        self.optimizer = optimizer

    def run(self, stepio, debugName="") -> None:  # noqa: N803
        """One step: batchesPerStep batches (each accumulationFactor micro-batches) of training."""
        self._run_step(stepio)
