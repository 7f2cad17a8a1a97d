"""The backward pass of a session whose nodes sit on IPUs (virtualGraphMode Manual), as
PopART places it: each node's gradient rule runs on the virtual graph of the IPU the node
runs on (PopART gives a grad op its forward op's virtual graph) and reads the forward
tensors as the node read them there; a gradient that another IPU computed is first copied
onto the rule's IPU (a clone on the same tiles, poputil's cloneToIpu, as PopART's IpuCopyOp),
once. Gradients reaching a tensor from readers on several IPUs are added on the IPU of the
later rule.

Pipelined (``stages``, popart/pipelined_training.py), a node of forward stage s has its
rule in backward stage 2S-2-s (on stage s's IPU); the forward tensors it reads are the
micro-batch's own, handed on through a stash (one buffer per pipeline cycle in between, on
the node's IPU), and a gradient computed in an earlier backward stage is handed on stage by
stage over the IPU-Links."""
import numpy as np

from popsim.program import Copy

from .autodiff import GRADIENT_PREFIX, Autodiff
from .placement import clone_to_ipu, ipus_of


class PlacedAutodiff(Autodiff):
    def __init__(self, model, values, loss, weights, saved, keep, placement, read, top, stages=None):
        super().__init__(model, values, loss, weights, saved, keep)
        self.placement, self.read, self.top, self.stages = placement, read, top, stages
        self.where = {}           # pipelined: gradient tensor id -> the backward stage holding it
        self._moved = {}          # (id of a gradient, IPU) -> its copy there
        self._ipu = self._stage = self._fwd_stage = None
        self._keep = []

    def _on_device(self, value) -> bool:
        return value is not None and not isinstance(value, np.ndarray) and value.num_elements() > 0

    def fusable(self, producer, node) -> bool:
        p = self.placement
        return p.node_ipu[id(producer)] == p.node_ipu[id(node)] and \
            p.node_stage.get(id(producer)) == p.node_stage.get(id(node))

    def start(self, stage=None) -> None:
        """Where the loss's gradient (the seed) is: the backward stage of the loss node."""
        self.where[self.loss] = stage

    def enter(self, ctx, node) -> None:
        p = self.placement
        self._ipu = p.node_ipu[id(node)]
        ctx.graph = p.ipus[self._ipu]
        if self.stages is None:
            return
        self._fwd_stage = p.node_stage[id(node)]
        self._stage = self.stages.backward_stage(self._fwd_stage)
        ctx.prog = self.stages.program(self._stage)
        if node.name in self.saved:   # what the forward lowering kept: the micro-batch's own, stashed
            ctx.saved = {node.name: tuple(self._stash(f"{node.name}/saved{k}", t)
                                          for k, t in enumerate(self.saved[node.name]))}

    def _stash(self, name, value):
        if not self._on_device(value) or self._stage == self._fwd_stage:
            return value
        return self.stages.hand(("stash", id(value)), value, self._fwd_stage, self._stage, self.top,
                                f"{name}/stash", ipu=self._ipu)

    def forward(self, ctx, node, tid):
        if not tid:
            return None
        if tid in node.inputs:
            value = self.read[id(node)][node.inputs.index(tid)]
        else:
            value = self.values.get(tid)
        if self.stages is None or tid in self.model.initializers:   # a weight holds still through an accumulation
            return value
        return self._stash(tid, value)

    def arrive(self, ctx, tid, g):
        if not self._on_device(g):
            return g
        if self.stages is not None:
            src = self.where.get(tid, self._stage)
            if src == self._stage:
                return g
            self._keep.append(g)   # its id names its hand-on chain: kept alive
            return self.stages.hand(("grad", id(g)), g, src, self._stage, self.top, f"{GRADIENT_PREFIX}{tid}")
        t = self.placement.tiles_per_ipu
        if ipus_of(self.top, g, t) == {self._ipu}:
            return g
        key = (id(g), self._ipu)
        if key not in self._moved:
            moved = clone_to_ipu(self.top, g, self._ipu, t, f"{GRADIENT_PREFIX}{tid}/ipu{self._ipu}")
            ctx.prog.add(Copy(g, moved))
            self._moved[key] = moved
            self._keep.append(g)
        return self._moved[key]

    def _add(self, ctx, grads, tid, g, node) -> None:
        super()._add(ctx, grads, tid, g, node)
        self.where[tid] = self._stage
