"""Where a session's nodes run on a multi-IPU device, as PopART places them: with
``virtualGraphMode = Manual`` each node runs on the virtual graph of the IPU its
``__ipu_number`` names (Builder.virtualGraph), with ``Auto`` on the IPU that
popart/auto_virtual_graph.py gives it (over the device's IPUs per replica), and with
``enablePipelining`` in the pipeline stage its ``__pipeline_stage`` names
(Builder.pipelineStage; the IPU number when no node has one). A replica spans
``ipus_per_replica`` IPUs (the highest IPU number + 1), so the device needs
``replicatedGraphCount x ipus_per_replica`` IPUs.

A tensor a node reads from another IPU is first copied onto the node's IPU, into a clone
laid out on the same tiles of that IPU (poputil's cloneToIpu, as PopART's IpuCopyOp does);
popsim's Copy between the two virtual graphs is the IPU-Link exchange."""
import numpy as np

import popsim
from popsim.program import Copy

from .auto_virtual_graph import auto_split
from .errors import popart_exception
from .lowering import Lowering
from .node_attributes import PIPELINE_STAGE, VIRTUAL_GRAPH
from .op_table import lookup
from .options import VirtualGraphMode

#: nodes PopART folds into host constants: they run on no IPU, so need no virtualGraph
HOST_NODES = {"Constant"}


def replication_factor(options) -> int:
    """The replicas a session runs: replicatedGraphCount with enableReplicatedGraphs, else 1."""
    count = options.replicatedGraphCount
    if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < 1:
        raise popart_exception(f"SessionOptions.replicatedGraphCount must be a positive int, found {count!r}")
    if not options.enableReplicatedGraphs:
        if count != 1:
            raise popart_exception(f"SessionOptions.replicatedGraphCount = {count} needs enableReplicatedGraphs = "
                                   "True (it is False, so the graph would not be replicated)")
        return 1
    return int(count)


def _names(nodes, limit=8) -> str:
    shown = ", ".join(f"{n.name!r} ({n.op_type})" for n in nodes[:limit])
    return shown + (f" and {len(nodes) - limit} more" if len(nodes) > limit else "")


class Placement:
    """Each node's IPU and pipeline stage, checked against the options and the device;
    ``ipus`` (one virtual graph per IPU of a replica) once ``make_graph`` has run."""

    def __init__(self, model, options, data_flow, device_info, training=False):
        self.model, self.replicas = model, replication_factor(options)
        self.auto = options.virtualGraphMode == VirtualGraphMode.Auto
        self.manual = options.virtualGraphMode == VirtualGraphMode.Manual or self.auto   # Auto: built as Manual
        self.pipelined = bool(options.enablePipelining)
        self.tiles_per_ipu = device_info.tilesPerIPU
        self.node_ipu, self.node_stage = {}, {}
        placed = [n for n in model.nodes if n.op_type not in HOST_NODES]
        if self.auto:
            per_replica, left = divmod(device_info.numIpus, self.replicas)
            if left:
                raise popart_exception(
                    f"virtualGraphMode Auto: the device's {device_info.numIpus} IPUs do not divide into "
                    f"replicatedGraphCount ({self.replicas}) replicas; create it with a multiple of {self.replicas}")
            accumulation = bool(training and options.enableGradientAccumulation and options.accumulationFactor > 1)
            self.node_ipu = auto_split(model, placed, per_replica, training, accumulation)
        elif self.manual:
            missing = [n for n in placed if VIRTUAL_GRAPH not in n.attrs]
            if missing:
                raise popart_exception(
                    f"SessionOptions.virtualGraphMode is Manual, so every op needs an IPU, but {len(missing)} of "
                    f"{len(placed)} have none: {_names(missing)}; add them inside `with builder.virtualGraph(ipu):` "
                    "or call builder.virtualGraph(output_id, ipu)")
            self.node_ipu = {id(n): int(n.attrs[VIRTUAL_GRAPH]) for n in placed}   # by node: names may repeat
            negative = [n for n in placed if self.node_ipu[id(n)] < 0]
            if negative:
                raise popart_exception(f"ops {_names(negative)} have a negative virtualGraph "
                                       f"{self.node_ipu[id(negative[0])]}; IPUs are numbered from 0")
        self.ipus_per_replica = (device_info.numIpus // self.replicas if self.auto else
                                 max(self.node_ipu.values(), default=0) + 1)
        if self.pipelined:
            self._stages(placed, data_flow, training)
        need = self.replicas * self.ipus_per_replica
        if device_info.numIpus != need:
            raise popart_exception(
                f"the device has {device_info.numIpus} IPUs, but the session needs replicatedGraphCount "
                f"({self.replicas}) x IPUs per replica ({self.ipus_per_replica}"
                + (", the highest virtualGraph + 1" if self.manual and not self.auto else "")
                + f") = {need}; create it with createIpuModelDevice({{'numIPUs': {need}, ...}})")
        self.ipus = []

    def _stages(self, placed, data_flow, training) -> None:
        if not self.manual or self.ipus_per_replica < 2:
            raise popart_exception(f"SessionOptions.enablePipelining needs virtualGraphMode = Manual (or Auto) and "
                                   f"ops on more than one IPU (currently {self.ipus_per_replica} IPU, virtualGraphMode "
                                   "{0}): put the stages on IPUs with builder.virtualGraph".format(
                                       "Manual" if self.manual else "Off"))
        staged = [n for n in placed if PIPELINE_STAGE in n.attrs]
        if staged and len(staged) != len(placed):
            missing = [n for n in placed if PIPELINE_STAGE not in n.attrs]
            raise popart_exception(f"only some ops have a pipeline stage; ops missing one: {_names(missing)}; add "
                                   "them inside `with builder.pipelineStage(stage):`")
        # PopART: the IPU (Manual's or Auto's) is the stage when none is set
        self.node_stage = {id(n): int(n.attrs[PIPELINE_STAGE]) if staged else self.node_ipu[id(n)] for n in placed}
        self.stage_ipu = {}
        for n in placed:
            s = self.node_stage[id(n)]
            ipu = self.stage_ipu.setdefault(s, self.node_ipu[id(n)])
            if ipu != self.node_ipu[id(n)]:
                others = [m for m in placed if self.node_stage[id(m)] == s]
                raise popart_exception(f"ops {_names(others)} have the same pipeline stage {s} but different virtual "
                                       "graphs; all ops of a stage must be on one IPU")
        self.num_stages = len(self.stage_ipu)
        gaps = sorted(set(range(self.num_stages)) - set(self.stage_ipu))
        if gaps:
            raise popart_exception(f"the ops' pipeline stages {sorted(self.stage_ipu)} are not "
                                   f"0..{self.num_stages - 1}: stage {gaps[0]} is missing")
        if not training and data_flow.batchesPerStep() < self.num_stages:   # training: accumulationFactor
            raise popart_exception(f"for pipelining, batchesPerStep ({data_flow.batchesPerStep()}) must be at least "
                                   f"the number of pipeline stages ({self.num_stages})")

    # -- the graph ---------------------------------------------------------------------------------
    def make_graph(self, device):
        """The session's graph (replicated when replicas > 1) and one virtual graph per IPU."""
        g = popsim.Graph(device, replication_factor=self.replicas)
        t = self.tiles_per_ipu
        if self.manual:
            self.ipus = [g.create_virtual_graph(k * t, (k + 1) * t) for k in range(self.ipus_per_replica)]
        return g

    def readers(self, tid) -> list:
        return [n for n in self.model.nodes if tid in n.inputs and id(n) in self.node_ipu]

    def home_ipu(self, tid):
        """The IPU a model input or weight lives on: its first reader's (its earliest stage's
        when pipelined), None when not placed."""
        readers = self.readers(tid)
        if not readers:
            return None
        if self.pipelined:
            return self.stage_ipu[self.home_stage(tid)]
        return self.node_ipu[id(readers[0])]

    def home_stage(self, tid) -> int:
        return min(self.node_stage[id(n)] for n in self.readers(tid))

    def graph_for(self, g, tid):
        """The graph to create model input or weight ``tid`` in."""
        ipu = self.home_ipu(tid) if self.manual else None
        return g if ipu is None else self.ipus[ipu]


def ipus_of(graph, tensor, tiles_per_ipu: int) -> set:
    """The IPUs (of a replica) holding elements of ``tensor``."""
    mapping = graph.get_tile_mapping(tensor, require_complete=False)
    return {tile // tiles_per_ipu for tile, intervals in enumerate(mapping) if intervals}


def clone_to_ipu(graph, tensor, ipu: int, tiles_per_ipu: int, name: str):
    """A new variable like ``tensor``, each element on the same tile of IPU ``ipu`` as it is
    on its own IPU (PopLibs' poputil::cloneToIpu)."""
    out = graph.add_variable(tensor.dtype, tensor.shape, name)
    mapping = graph.get_tile_mapping(tensor, require_complete=False)
    moved = [[] for _ in mapping]
    for tile, intervals in enumerate(mapping):
        moved[ipu * tiles_per_ipu + tile % tiles_per_ipu].extend(intervals)
    graph.set_tile_mapping(out, [sorted(iv) for iv in moved])
    return out


class PlacedLowering(Lowering):
    """A Lowering that runs each node on its IPU's virtual graph and copies what it reads
    from other IPUs onto it first (once per batch, into the program where the node runs)."""

    def __init__(self, placement: Placement, graph, prog, model, values, cache, stages=None):
        super().__init__(graph, prog, model, values, cache)
        self.placement, self.top, self.main = placement, graph, prog
        self.stages = stages    # a pipeline.Stages when pipelined: per-stage programs and the IPU copies
        self._moved, self.read = {}, {}

    def run(self) -> None:
        p = self.placement
        for node in self.model.nodes:
            ipu = p.node_ipu.get(id(node))
            self.graph = self.top if ipu is None else p.ipus[ipu]
            stage = p.node_stage.get(id(node))
            self.prog = self.main if stage is None else self.stages.program(stage)
            d = lookup(node.op_type, self.opset, node.name, node.domain)
            inputs = [None if not i else self._placed(i, node, ipu, stage) for i in node.inputs]
            self.read[id(node)] = inputs   # as the node read them, on its IPU: what its gradient reads
            outputs = d.lower(self, node, inputs)
            for out_id, value in zip(node.outputs, outputs):
                if out_id:
                    self.values[out_id] = value
                    if stage is not None:
                        self.stages.produced(out_id, stage)
        self.graph, self.prog = self.top, self.main

    def _placed(self, tid, node, ipu, stage):
        value = self._value(tid, node)
        if ipu is None or isinstance(value, np.ndarray) or value.num_elements() == 0:
            return value
        if stage is not None:
            return self.stages.read(tid, value, node, stage, self.top)
        t = self.placement.tiles_per_ipu
        if ipus_of(self.top, value, t) == {ipu}:
            return value
        key = (tid, ipu)
        if key not in self._moved:
            moved = clone_to_ipu(self.top, value, ipu, t, f"{tid}/ipu{ipu}")
            self.prog.add(Copy(value, moved))
            self._moved[key] = moved
        return self._moved[key]
