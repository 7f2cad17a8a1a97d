"""``python -m popsim.popart estimate MODEL.onnx --batch N``: would an ONNX model fit the
modelled IPU at that batch size, and how fast would it run? The model is rebatched, built
through an InferenceSession (or, with ``train``, a TrainingSession of an added L1 loss; a
progress bar per node on a terminal), and, when it fits, one step is run on zeros: memory
per tile comes from the report's memory layout, cycles per step from the engine's clock,
the costliest ops from the report's steps (PopLibs ops are named after the ONNX node), and
the HTML report is written beside. On several IPUs (``ipus``) the model is sharded as
PopART's ``virtualGraphMode = Auto`` shards it (popart/auto_virtual_graph.py), optionally
pipelined, and memory and busy cycles are also given per IPU."""
import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from typing import List, Optional, Tuple

import numpy as np

from popsim import progress as popsim_progress

from .dataflow import AnchorReturnType, DataFlow, PyStepIO, step_shape
from .device import DeviceManager
from .errors import OutOfMemoryException, fullest_tiles, onnx_module, popart_exception
from .model import model_proto
from .optimizer import ConstSGD
from .options import SessionOptions, VirtualGraphMode
from .session import STREAMED, InferenceSession
from .training import TrainingSession

#: where ``python -m popsim.popart estimate`` writes the HTML report unless told
DEFAULT_REPORT = "estimate_report.html"
#: a Mk2 IPU (GC200)'s tiles: the default device
DEFAULT_TILES = 1472
OTHER = "(host I/O, copies, collectives, control)"
#: the loss a training estimate adds (``with_loss``), and its optimizer's learning rate
LOSS = "estimate/loss"
LEARNING_RATE = 0.01


@dataclass
class OpCost:
    """An ONNX node and the modelled cycles of the PopLibs steps named after it, in one step."""
    name: str
    op_type: str
    cycles: float


@dataclass
class IpuFigures:
    """One IPU of a replica: its nodes, its fullest tile and its memory, and the cycles of
    the step its tiles computed (its compute sets; not the copies between IPUs, host I/O
    or the waits for other IPUs)."""
    ipu: int
    nodes: int
    fullest: Tuple[int, int]           # (tile, bytes); the tile numbered within the replica
    total_bytes: int
    compute_cycles: Optional[float] = None


@dataclass
class Estimate:
    """What ``estimate`` found. Memory figures are one replica's (one IPU's); samples/s
    counts every replica."""
    model: str
    batch: int
    inputs: dict                       # id -> shape, rebatched
    nodes: int
    ipus: int
    replicas: int
    tiles_per_ipu: int
    batches_per_step: int
    bytes_per_tile: int                # the limit
    clock_hz: float
    fits: bool
    fullest: List[Tuple[int, int]]     # (tile, bytes), fullest first
    tiles_over: List[int]
    average_tile_bytes: float
    total_bytes: int
    largest_on_fullest: List[Tuple[str, int]]
    cycles_per_step: Optional[float] = None
    ops: List[OpCost] = field(default_factory=list)   # every node that cost cycles, costliest first
    update_cycles: float = 0.0         # training: the weight updates' cycles
    other_cycles: float = 0.0          # cycles of steps named after no node (streams, copies, control)
    report_path: str = ""
    build_seconds: float = 0.0
    report: object = None              # the popsim Report
    train: bool = False                # a training step (forward, backward, SGD update), else inference
    accumulation: int = 1              # micro-batches a batch (pipelined training: 2 ipus - 1)
    replicas_built: bool = False       # the replicas built as a replicated graph and run, not counted
    per_ipu: List[IpuFigures] = field(default_factory=list)   # ipus > 1: each IPU of a replica
    pipelined: bool = False            # ipus > 1 with enablePipelining: the stages run side by side

    @property
    def samples_per_step(self) -> int:
        return self.batch * self.batches_per_step * self.accumulation * self.replicas

    @property
    def seconds_per_step(self) -> Optional[float]:
        return None if self.cycles_per_step is None else self.cycles_per_step / self.clock_hz

    @property
    def samples_per_second(self) -> Optional[float]:
        """All replicas: each runs its own step at the same time (inference needs no exchange between them)."""
        s = self.seconds_per_step
        return None if not s else self.samples_per_step / s

    def text(self) -> str:
        return format_estimate(self)


def rebatch(proto, batch: int):
    """``proto`` with the first dimension of every streamed input set to ``batch``, the
    outputs' shapes cleared and shapes inferred again. A Reshape whose constant shape
    names the old batch (``[1, 2048]`` in the onnx package's ResNet-50) gets the new one.
    A model whose inputs have no batch dimension, or disagree on it, or that still does
    not infer at the new batch, is refused."""
    onnx = onnx_module()
    if isinstance(batch, bool) or not isinstance(batch, (int, np.integer)) or batch < 1:
        raise popart_exception(f"estimate: the batch must be a positive integer, found {batch!r}")
    proto = onnx.ModelProto.FromString(proto.SerializeToString())
    g = proto.graph
    inits = {t.name: t for t in g.initializer}
    streamed = [vi for vi in g.input if vi.name not in inits]
    if not streamed:
        raise popart_exception("estimate: the model has no streamed inputs, so it has no batch dimension to set")
    old = set()
    for vi in streamed:
        dims = vi.type.tensor_type.shape.dim
        if not vi.type.tensor_type.HasField("shape") or len(dims) == 0:
            raise popart_exception(f"estimate: model input {vi.name!r} is a scalar or has no shape: it has no batch "
                                   "dimension, so the model cannot be rebatched; give its inputs a leading batch "
                                   "dimension")
        old.add(dims[0].dim_value if dims[0].HasField("dim_value") else dims[0].dim_param)
    if len(old) > 1:
        raise popart_exception(f"estimate: the model's inputs disagree on their first (batch) dimension "
                               f"({sorted(map(str, old))}); it cannot be rebatched as one batch")
    (old_batch,) = old
    if old_batch == batch:
        return proto
    for vi in streamed:
        vi.type.tensor_type.shape.dim[0].Clear()
        vi.type.tensor_type.shape.dim[0].dim_value = batch
    del g.value_info[:]
    for vi in g.output:
        vi.type.tensor_type.ClearField("shape")
    if isinstance(old_batch, int):
        _fix_reshapes(proto, old_batch)
    try:
        return onnx.shape_inference.infer_shapes(proto, strict_mode=True)
    except Exception as e:  # noqa: BLE001 - whatever onnx's inference raises, said as PopART's error
        raise popart_exception(f"estimate: the model cannot be rebatched from {old_batch} to {batch}: shape "
                               f"inference fails at the new batch ({str(e).strip().splitlines()[-1]}); export it "
                               "with a dynamic batch dimension or at the batch wanted") from None


def constants_as_weights(proto):
    """``proto`` with each float ConstantOfShape of a constant shape made an initializer of
    that value: the onnx package's light models make their weights so, where the real models
    have initializers. As initializers they are weights, laid out for the op that reads them
    (poplin's create_weights for a Conv), as the real model's would be."""
    onnx = onnx_module()
    g = proto.graph
    inits = {t.name: t for t in g.initializer}
    keep, made = [], []
    for node in g.node:
        value = next((a.t for a in node.attribute if a.name == "value"), None)
        array = None if value is None else onnx.numpy_helper.to_array(value)
        if node.op_type == "ConstantOfShape" and node.input and node.input[0] in inits and array is not None \
                and array.dtype == np.float32:
            shape = onnx.numpy_helper.to_array(inits[node.input[0]]).astype(np.int64)
            made.append(onnx.numpy_helper.from_array(np.full(shape, array.reshape(-1)[0], np.float32), node.output[0]))
        else:
            keep.append(node)
    if not made:
        return proto
    proto = onnx.ModelProto.FromString(proto.SerializeToString())
    del proto.graph.node[:]
    proto.graph.node.extend(keep)
    proto.graph.initializer.extend(made)
    proto.graph.input.extend(onnx.helper.make_tensor_value_info(t.name, onnx.TensorProto.FLOAT, list(t.dims))
                             for t in made)   # before IR version 4 an initializer must be an input too
    return proto


def with_loss(proto):
    """``proto`` with PopART's L1 loss (ai.graphcore, lambda 1, Mean) of its first output as
    the output LOSS: what a training step differentiates, through every op to every weight."""
    onnx = onnx_module()
    proto = onnx.ModelProto.FromString(proto.SerializeToString())
    g = proto.graph
    g.node.append(onnx.helper.make_node("L1", [g.output[0].name], [LOSS], name=LOSS, domain="ai.graphcore",
                                        reduction="Mean", **{"lambda": 1.0}))
    g.output.append(onnx.helper.make_tensor_value_info(LOSS, onnx.TensorProto.FLOAT, []))
    if not any(o.domain == "ai.graphcore" for o in proto.opset_import):
        proto.opset_import.append(onnx.helper.make_opsetid("ai.graphcore", 1))
    return proto


def _fix_reshapes(proto, old_batch: int) -> None:
    """Give each Reshape whose constant shape starts with ``old_batch`` and no longer matches its
    input's element count the batch that does: shape inference runs again after each fix, as the
    fix makes the shapes after it known."""
    onnx = onnx_module()
    g = proto.graph
    shapes = {t.name: onnx.numpy_helper.to_array(t) for t in g.initializer}
    for node in g.node:
        if node.op_type == "Constant" and [a.name for a in node.attribute] == ["value"]:
            shapes[node.output[0]] = onnx.numpy_helper.to_array(node.attribute[0].t)
    done = set()
    for _ in range(sum(n.op_type == "Reshape" for n in g.node)):
        inferred = onnx.shape_inference.infer_shapes(proto, strict_mode=False).graph
        known = {}
        for vi in list(inferred.input) + list(inferred.value_info):
            dims = vi.type.tensor_type.shape.dim
            if vi.type.tensor_type.HasField("shape") and all(d.HasField("dim_value") for d in dims):
                known[vi.name] = [d.dim_value for d in dims]
        fixed = False
        for i, node in enumerate(g.node):
            if node.op_type != "Reshape" or i in done or node.input[0] not in known or node.input[1] not in shapes:
                continue
            target = np.array(shapes[node.input[1]], np.int64).reshape(-1)
            count, rest = int(np.prod(known[node.input[0]])), int(np.prod(target[1:]))
            if target.size and target[0] == old_batch and np.all(target[1:] > 0) and rest and \
                    count != int(np.prod(target)) and count % rest == 0:
                target[0] = count // rest
                name = f"{node.input[1]}/rebatched/{i}"
                g.initializer.append(onnx.numpy_helper.from_array(target, name))
                g.input.append(onnx.helper.make_tensor_value_info(name, onnx.TensorProto.INT64, [target.size]))
                shapes[name], node.input[1] = target, name
                done.add(i)
                fixed = True
        if not fixed:
            return


def _node_of(step, names: dict) -> Optional[str]:
    """The node a report step belongs to: the longest node name its compute set (or, for a
    copy, its destination or source) starts with, up to a '/'."""
    texts = [step.compute_set] if step.compute_set else []
    label = step.name.split(" ", 1)[1] if " " in step.name else step.name
    texts += list(reversed(label.split(" -> ")))
    for text in texts:
        parts = text.split("/")
        for k in range(len(parts), 0, -1):
            candidate = "/".join(parts[:k])
            if candidate in names:
                return candidate
    return None


def op_costs(report, nodes, weights=()) -> Tuple[List[OpCost], float, float]:
    """Cycles per ONNX node over the runs the report counted, costliest first; the cycles of
    the weight updates (compute sets ``<weight>/update/...``, training) and of the steps that
    belong to neither (copies between IPUs among them). On several IPUs the ops of different
    IPUs run side by side, so the lines can add up to more than the step."""
    names = {n.name: n.op_type for n in nodes}
    updates = {f"{w}/update": w for w in weights}
    cycles, other, update = {}, 0.0, 0.0
    for step in report.execution.steps:
        node = _node_of(step, names)
        if step.kind == "Copy" and sum(c > 0 for c in step.ipu_cycles or ()) > 1:
            other += step.cycles   # between IPUs: the IPU-Link exchange and the wait for the sender
        elif node is not None:
            cycles[node] = cycles.get(node, 0.0) + step.cycles
        elif step.compute_set and _node_of(step, updates) is not None:
            update += step.cycles
        else:
            other += step.cycles
    ops = [OpCost(n, names[n], c) for n, c in cycles.items() if c > 0]
    return sorted(ops, key=lambda o: (-o.cycles, o.name)), update, other


def estimate(model, batch: int, ipus: int = 1, replicas: int = 1, train: bool = False,
             tiles_per_ipu: int = DEFAULT_TILES, batches_per_step: int = 1, report_path: Optional[str] = DEFAULT_REPORT,
             ipu_version: str = "ipu2", progress: bool = True, build_replicas: bool = False,
             pipeline: bool = False) -> Estimate:
    """Estimate ``model`` (a path, ModelProto, its bytes or a Builder) at ``batch``: build it for
    one replica of ``ipus`` IPUs of ``tiles_per_ipu`` tiles, run one step of ``batches_per_step``
    batches when it fits, and write the HTML report to ``report_path`` (None: none).
    ``replicas`` are counted (R times one replica's samples/s), or with ``build_replicas``
    built as a replicated graph (SessionOptions.replicatedGraphCount) and run together.
    With ``ipus`` > 1 the model is sharded over them by ``virtualGraphMode = Auto``, and with
    ``pipeline`` pipelined (enablePipelining; inference needs ``batches_per_step`` >= ``ipus``,
    training gets gradient accumulation over 2 ``ipus`` - 1 micro-batches, as PopART needs)."""
    for key, value in (("ipus", ipus), ("replicas", replicas), ("tiles_per_ipu", tiles_per_ipu),
                       ("batches_per_step", batches_per_step)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise popart_exception(f"estimate: {key} must be a positive integer, found {value!r}")
    if pipeline and ipus < 2:
        raise popart_exception(f"estimate: pipelining needs the model on more than one IPU, found ipus={ipus}; "
                               "give ipus=2 or more")
    name = os.path.basename(os.fspath(model)) if isinstance(model, (str, os.PathLike)) else type(model).__name__
    proto = rebatch(constants_as_weights(model_proto(model)), batch)
    if train:
        proto = with_loss(proto)
    outputs = [o.name for o in proto.graph.output]
    built = int(replicas) if build_replicas else 1
    device = DeviceManager().createIpuModelDevice({"numIPUs": built * int(ipus), "tilesPerIPU": int(tiles_per_ipu),
                                                    "ipuVersion": ipu_version})
    directory = tempfile.mkdtemp(prefix="popsim_estimate_")
    options = SessionOptions()
    if built > 1:
        options.enableReplicatedGraphs, options.replicatedGraphCount = True, built
    accumulation = 1
    if ipus > 1:   # sharded as PopART's Auto shards it, built through the Manual placement
        options.virtualGraphMode = VirtualGraphMode.Auto
        options.enablePipelining = bool(pipeline)
        if pipeline and train:   # PopART: accumulationFactor at least the pipeline stages, 2 ipus - 1
            accumulation = 2 * int(ipus) - 1
            options.enableGradientAccumulation, options.accumulationFactor = True, accumulation
    if report_path:
        options.engineOptions = {"autoReport.outputExecutionProfile": "true", "autoReport.directory": directory}
    try:
        data_flow = DataFlow(batches_per_step, {o: AnchorReturnType("ALL") for o in outputs})
        if train:   # one SGD step a batch: forward, the loss's gradient back to every weight, the update
            session = TrainingSession(fnModel=proto, dataFlow=data_flow, loss=LOSS, optimizer=ConstSGD(LEARNING_RATE),
                                      deviceInfo=device, userOptions=options)
        else:
            session = InferenceSession(fnModel=proto, dataFlow=data_flow, deviceInfo=device, userOptions=options)
        bar = popsim_progress.Progress(len(session.model.nodes), "Building", show_from=1 if progress else 1 << 62)
        session.model.progress = bar
        start = time.perf_counter()
        try:
            session.prepareDevice()
            report, fits = session.getReport(), True
        except OutOfMemoryException as e:
            report, fits = e.report, False
        finally:
            bar.close()
        build = time.perf_counter() - start
        est = _figures(name, batch, session, report, fits, replicas, tiles_per_ipu, batches_per_step, build)
        est.train, est.replicas_built, est.ipus = bool(train), built > 1, int(ipus)
        est.accumulation, est.pipelined = accumulation, bool(pipeline)
        if fits:
            _run_step(session, batches_per_step, built, accumulation)
            est.report = report = session.getReport()
            est.cycles_per_step = float(session.getCycleCount())
        if ipus > 1:
            est.per_ipu = per_ipu(report, session, int(ipus), int(tiles_per_ipu), ran=fits)
        if fits:
            est.ops, est.update_cycles, est.other_cycles = op_costs(report, session.model.nodes,
                                                                    session.model.initializers)
        if report_path:
            shutil.copyfile(os.path.join(directory, "report.html"), report_path)   # autoReport wrote it after the run
            est.report_path = os.fspath(report_path)
        return est
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _figures(name, batch, session, report, fits, replicas, tiles_per_ipu, bps, build) -> Estimate:
    mem = report.memory
    fig = mem.figures()
    largest = next((e["tensors"] for e in mem.largest if e.get("tensors")), [])
    return Estimate(
        model=name, batch=batch, inputs={t: list(s) for t, (_, s) in session.model.inputs.items()},
        nodes=len(session.model.nodes), ipus=1, replicas=replicas, tiles_per_ipu=tiles_per_ipu,
        batches_per_step=bps, bytes_per_tile=mem.bytes_per_tile, clock_hz=float(report.target.clock), fits=fits,
        fullest=fullest_tiles(report, 5), tiles_over=list(fig.out_of_memory),
        average_tile_bytes=float(fig.total) / max(1, len(fig.tiles)), total_bytes=int(fig.total),
        largest_on_fullest=[(str(n), int(b)) for n, b in largest], build_seconds=build, report=report)


def per_ipu(report, session, ipus: int, tiles_per_ipu: int, ran: bool) -> List[IpuFigures]:
    """Each IPU of a replica: its nodes (from the session's placement), its fullest tile and
    memory (the report's memory layout, the tiles of one replica), and, when a step ran, the
    cycles of its compute sets (the Execute steps' per-IPU cycles added up)."""
    tiles = np.asarray(report.memory.figures().tiles, np.int64)
    placed = list(session._plan.node_ipu.values())
    busy = np.zeros(ipus)
    if ran:
        for step in (s for s in report.execution.steps if s.kind == "Execute"):
            cycles = np.asarray(step.ipu_cycles, float)
            n = min(ipus, cycles.size)
            busy[:n] += cycles[:n]
    out = []
    for k in range(ipus):
        mine = tiles[k * tiles_per_ipu:(k + 1) * tiles_per_ipu]
        t = int(np.argmax(mine)) if mine.size else 0
        out.append(IpuFigures(k, placed.count(k), (k * tiles_per_ipu + t, int(mine[t]) if mine.size else 0),
                              int(mine.sum()), float(busy[k]) if ran else None))
    return out


def _run_step(session: InferenceSession, bps: int, replicas: int, accumulation: int = 1) -> None:
    """One step on zeros: the inputs streamed in, the anchors back, as a real run would."""
    session.weightsFromHost()
    inputs = {tid: np.zeros(step_shape(shape, bps, accumulation, replicas), STREAMED[dtype][1])
              for tid, (dtype, shape) in session.model.inputs.items()}
    session.run(PyStepIO(inputs, session.initAnchorArrays()))


def _mb(n: float) -> str:
    return f"{n / 1e6:,.1f} MB"


def format_estimate(e: Estimate, top: int = 10) -> str:
    """The estimate as the command prints it."""
    limit = e.bytes_per_tile
    shapes = ", ".join(f"{t} {s}" for t, s in e.inputs.items())
    how = "built as a replicated graph" if e.replicas_built else "counted"
    each = "one IPU" if e.ipus == 1 else f"{e.ipus} IPUs"
    rep = f"; {e.replicas} replicas, {each} each, {how} (memory and cycles: per replica)" if e.replicas > 1 else ""
    if e.ipus > 1:
        rep = (f"; the model sharded over the {e.ipus} IPUs as PopART's virtualGraphMode Auto shards it"
               + (", pipelined" if e.pipelined else "") + rep)
    micro = f" x {e.accumulation} micro-batches" if e.accumulation > 1 else ""
    lines = [f"Model:              {e.model} ({e.nodes} nodes), inputs {shapes}",
             f"Batch:              {e.batch} (x {e.batches_per_step} batch(es) a step{micro}); "
             + ("training: forward, the L1 loss of the first output back to every weight, an SGD update"
                if e.train else "inference"),
             f"Device:             {e.ipus} IPU{'s' if e.ipus > 1 else ''} of {e.tiles_per_ipu:,} tiles, "
             f"{limit:,} bytes each, {e.clock_hz / 1e6:,.0f} MHz{rep}"]
    t0, b0 = e.fullest[0] if e.fullest else (0, 0)
    if e.fits:
        lines.append(f"Fits:               yes (fullest tile {t0}: {b0:,} bytes, {100.0 * b0 / limit:.1f}% of "
                     f"{limit:,})")
    else:
        worst = ", ".join(f"tile {t} {b:,} bytes ({100.0 * b / limit:.0f}%)" for t, b in e.fullest)
        lines.append(f"Fits:               NO: {len(e.tiles_over):,} tile(s) over their {limit:,} bytes")
        lines.append(f"Fullest tiles:      {worst}")
        if e.largest_on_fullest:
            held = ", ".join(f"{n} ({b:,} bytes)" for n, b in e.largest_on_fullest[:5])
            lines.append(f"  largest tensors on tile {t0}: {held}")
    lines.append(f"Memory per tile:    max {b0:,} bytes, average {e.average_tile_bytes:,.0f}; "
                 f"total {_mb(e.total_bytes)} of {_mb(limit * e.tiles_per_ipu * e.ipus)}")
    for f in e.per_ipu:
        t, b = f.fullest
        busy = "" if f.compute_cycles is None else (f"; computes {f.compute_cycles:,.0f} cycles "
                                                    f"({100.0 * f.compute_cycles / (e.cycles_per_step or 1.0):.0f}% "
                                                    "of the step)")
        lines.append(f"  IPU {f.ipu}: {f.nodes} ops, fullest tile {t}: {b:,} bytes ({100.0 * b / limit:.1f}%), "
                     f"total {_mb(f.total_bytes)}{busy}")
    if e.cycles_per_step is None:
        lines.append("Cycles per step:    not run: the model does not fit")
    else:
        per = " per replica" if e.replicas > 1 else ""
        lines.append(f"Cycles per step:    {e.cycles_per_step:,.0f}{per} ({1e3 * e.seconds_per_step:,.3f} ms "
                     f"at {e.clock_hz / 1e6:,.0f} MHz)")
        every = f" ({e.replicas} replicas x {e.samples_per_second / e.replicas:,.1f})" if e.replicas > 1 else ""
        lines.append(f"Samples/s:          {e.samples_per_second:,.1f}{every}")
        lines.append(f"Costliest ops (of {len(e.ops)}; cycles in one step{per}):")
        total = e.cycles_per_step or 1.0
        for i, o in enumerate(e.ops[:top], 1):
            lines.append(f"  {i:2d}  {o.name:<32} {o.op_type:<20} {o.cycles:>14,.0f}  {100.0 * o.cycles / total:5.1f}%")
        if e.train:
            lines.append(f"      {'(weight updates)':<53} {e.update_cycles:>14,.0f}  "
                         f"{100.0 * e.update_cycles / total:5.1f}%")
        lines.append(f"      {OTHER:<53} {e.other_cycles:>14,.0f}  {100.0 * e.other_cycles / total:5.1f}%")
    lines.append(f"Build time:         {e.build_seconds:,.1f} s")
    if e.report_path:
        lines.append(f"Report:             {e.report_path}")
    return "\n".join(lines) + "\n"
