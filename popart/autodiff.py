"""Autodiff: the backward pass of a lowered model, as PopLibs ops on the tiles. From the
loss, nodes are visited in reverse order; each node on a path from a trainable weight to
the loss has its gradient rule (grad_table.py, rules in popart/grads/) append the PopLibs
ops that turn its outputs' gradients into its inputs'; gradients reaching a tensor from
several readers are added (popops.add). A node on such a path without a rule is an error
naming it. Gradients are named as PopART names them: ``Gradient___<tensor id>``."""
from popsim import FLOAT, popops

from .errors import popart_exception
from .grad_table import differentiable_ops, fused_rule, grad_rule
from .lowering import Lowering

#: PopART's prefix of a gradient tensor's id (popart.reservedGradientPrefix())
GRADIENT_PREFIX = "Gradient___"


def reservedGradientPrefix() -> str:  # noqa: N802 - PopART's name
    return GRADIENT_PREFIX


class GradContext(Lowering):
    """What a gradient rule sees: a Lowering whose ``prog`` is the backward pass, and
    ``needed``: for each input of the node being differentiated, whether it takes a
    gradient (a rule may skip the others)."""

    def __init__(self, graph, prog, model, values, cache):
        super().__init__(graph, prog, model, values, cache)
        self.needed = []


def _is_float(value) -> bool:
    return getattr(value, "dtype", None) == FLOAT


class Autodiff:
    """The backward pass of ``model`` (lowered into ``values``) from ``loss`` to ``weights``."""

    def __init__(self, model, values: dict, loss: str, weights, saved=None, keep=()):
        self.model, self.values, self.loss, self.weights = model, values, loss, list(weights)
        self.saved = saved or {}   # what the forward lowerings kept for the gradients
        self.keep = set(keep)      # tensors whose own gradients are wanted (anchored): never fused away
        self.requires = self._requiring()
        if loss not in self.requires:
            raise popart_exception(f"TrainingSession: the loss {loss!r} does not depend on any trainable weight "
                                   f"(float32 initializer) of the model; the weights are {sorted(self.weights)}")
        self.nodes = self._path()

    def _requiring(self) -> set:
        """The tensors that depend on a weight (FLOAT device tensors only)."""
        requires = set(self.weights)
        for node in self.model.nodes:
            if any(i in requires for i in node.inputs if i):
                requires.update(o for o in node.outputs if o and _is_float(self.values.get(o)))
        return requires

    def _path(self) -> list:
        """The nodes between the weights and the loss, in forward order, each checked to have a rule."""
        needed, nodes = {self.loss}, []
        for node in reversed(self.model.nodes):
            if not any(o in needed for o in node.outputs if o):
                continue
            if not any(i in self.requires for i in node.inputs if i):
                continue
            if grad_rule(node.op_type) is None:
                raise popart_exception(f"TrainingSession: node {node.name!r} ({node.op_type}) lies between a weight "
                                       f"and the loss {self.loss!r}, and popsim.popart has no gradient for "
                                       f"{node.op_type} yet; differentiable ops: {', '.join(differentiable_ops())}")
            needed.update(i for i in node.inputs if i in self.requires)
            nodes.append(node)
        return nodes[::-1]

    def _fused(self) -> dict:
        """consumer node name -> producer node, for the pairs a fused rule differentiates
        at once: the producer's only output read by the consumer alone (as its input 0),
        its gradient not anchored, its input taking a gradient."""
        producers = {o: n for n in self.nodes for o in n.outputs if o}
        readers: dict = {}
        for n in self.model.nodes:
            for i in n.inputs:
                readers[i] = readers.get(i, 0) + 1
        out = {}
        for node in self.nodes:
            first = node.inputs[0] if node.inputs else ""
            producer = producers.get(first)
            if producer is None or fused_rule(producer, node, self.values, self.model.opset) is None \
                    or not self.fusable(producer, node):
                continue
            if readers.get(first) == 1 and first not in self.keep and first not in self.model.outputs \
                    and producer.inputs[0] in self.requires:
                out[node.name] = producer
        return out

    def _add(self, ctx, grads, tid, g, node) -> None:
        expected = tuple(self.values[tid].shape)
        if tuple(g.shape) != expected:
            raise popart_exception(f"node {node.name!r} ({node.op_type}): its gradient rule gave {tid!r} a "
                                   f"gradient of shape {tuple(g.shape)}, expected {expected}")
        if tid not in grads:
            grads[tid] = g
            return
        so_far = self.arrive(ctx, tid, grads[tid])   # the gradient so far, where this rule runs
        grads[tid] = popops.add(ctx.graph, so_far, g, ctx.prog, f"{GRADIENT_PREFIX}{tid}/sum")

    # -- where each rule runs: hooks for placed sessions (popart/placed_autodiff.py) ----------------
    def fusable(self, producer, node) -> bool:
        return True

    def enter(self, ctx, node) -> None:
        """Point ``ctx`` at where ``node``'s gradient rule runs."""

    def forward(self, ctx, node, tid):
        """Forward tensor ``tid`` as ``node``'s gradient rule reads it."""
        return self.values.get(tid) if tid else None

    def arrive(self, ctx, tid, g):
        """Gradient ``g`` of ``tid`` where ``ctx`` runs."""
        return g

    def run(self, graph, prog, cache, seed) -> dict:
        """Append the backward pass to ``prog``, starting from ``seed`` (the loss's gradient);
        returns tensor id -> gradient for every tensor on the path (the weights included)."""
        ctx = GradContext(graph, prog, self.model, self.values, cache)
        ctx.saved = self.saved
        grads, fused = {self.loss: seed}, self._fused()
        done = {p.name for p in fused.values()}
        for node in reversed(self.nodes):
            out_grads = [grads.get(o) for o in node.outputs]
            if node.name in done or all(g is None for g in out_grads):
                continue
            self.enter(ctx, node)
            out_grads = [None if g is None else self.arrive(ctx, o, g) for o, g in zip(node.outputs, out_grads)]
            inputs = [self.forward(ctx, node, i) for i in node.inputs]
            producer = fused.get(node.name)
            if producer is not None:   # the producer and this node at once
                ctx.needed = [True]
                g = fused_rule(producer, node, self.values, ctx.opset)(ctx, producer, node, inputs, out_grads)
                self._add(ctx, grads, producer.inputs[0], g, producer)
                continue
            outputs = [self.forward(ctx, node, o) for o in node.outputs]
            ctx.needed = [bool(i) and i in self.requires for i in node.inputs]
            in_grads = grad_rule(node.op_type)(ctx, node, inputs, outputs, out_grads)
            for tid, want, g in zip(node.inputs, ctx.needed, in_grads):
                if want and g is not None:
                    self._add(ctx, grads, tid, g, node)
        return grads   # a weight the loss does not read has none (and is left unchanged)
