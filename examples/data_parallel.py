"""Data-parallel training for the examples: what R replicas of a training graph need beyond
one (a replicated graph, docs/multi_ipu.md), built with popsim.gcl's cross-replica
collectives. Each replica runs the same step on its own micro-batch of B samples; this
module keeps the R replicas training exactly as one replica would on the R * B samples.

- Gradients: every parameter's gradient of the replica's mean loss is all-reduced with MEAN
  (one all-reduce of their concatenation, copied into a gradient bucket), so every
  replica applies the same update and the weights stay identical.
- Synchronised batch norm: the statistics are those of all R * B samples, and so are the
  means its gradient subtracts (popnn.bn's distributed forms, PopLibs'
  distributedBatchNormStatistics and distributedBatchNormGradients, summing the
  replicas' partial means with an ADD all-reduce).
- Gradient accumulation (``accumulate`` N): each step adds its gradients into accumulators;
  every N-th step all-reduces them and updates with their mean.
- Replicated tensor sharding of the optimizer (``shard``): each replica keeps 1/R of the
  momentum buffer, gets its 1/R of the mean gradient by a reduce-scatter, updates its 1/R
  of the weights and all-gathers the updated slices back into the full weights.
"""
import numpy as np

import popsim
from popsim import FLOAT, gcl, popnn, popops
from popsim.program import Copy, Sequence

MEAN = gcl.CollectiveOperator.MEAN


def flat(tensors):
    """One rank-1 view of ``tensors``' elements, in order."""
    return popsim.concat([t.flatten() for t in tensors])


def all_reduce_mean(graph, tensors, prog, name: str, bucket: bool = False) -> None:
    """Each replica's ``tensors`` replaced by their mean over the replicas: one in-place
    all-reduce of their concatenation. With ``bucket``, of a copy in one linearly mapped
    buffer, copied back (a gradient bucket): the collective then works on a few long
    regions per tile instead of the many short ones poplin leaves gradients in, which
    saves far more cycles than the two copies cost (bench/bench_data_parallel.py)."""
    data = flat(tensors)
    if bucket:
        buffer = graph.add_variable(FLOAT, (data.num_elements(),), f"{name}/bucket",
                                    mapping=popsim.VariableMappingMethod.LINEAR)
        prog.add(Copy(data, buffer))
        gcl.all_reduce_cross_replica_in_place(graph, buffer, MEAN, prog, name=name)
        prog.add(Copy(buffer, data))
    else:
        gcl.all_reduce_cross_replica_in_place(graph, data, MEAN, prog, name=name)


def shard_length(num_elements: int, replicas: int) -> int:
    """Elements of each replica's shard of ``num_elements`` (the last one zero-padded)."""
    return -(-num_elements // replicas)


# -- synchronised batch norm --------------------------------------------------------------------
def sum_across_replicas(graph, tensors, prog, group_size, name, options):
    """popnn's distributed-norm callback: each of ``tensors`` summed over the replicas."""
    return gcl.all_reduce_cross_replica(graph, list(tensors), gcl.CollectiveOperator.ADD, prog,
                                        name=f"{name}/allReduce")


def batch_norm_statistics(graph, acts, eps: float, prog, replicas: int, name: str):
    """(mean[C], inv_std[C]) of ``acts`` [B, C, ...] over the samples of all replicas
    (popnn.bn's distributed statistics; with one replica, its plain ones)."""
    if replicas == 1:
        return popnn.bn.batch_norm_statistics(graph, acts, eps, prog, name=name)
    return popnn.bn.distributed_batch_norm_statistics(graph, acts, eps, prog, False, sum_across_replicas,
                                                      replicas * int(acts.shape[0]), name=name)


def batch_norm_gradients(graph, whitened, grads_in, inv_std, gamma, prog, replicas: int, name: str):
    """The gradient w.r.t. the activations, its means over every replica's samples."""
    if replicas == 1:
        return popnn.bn.batch_norm_gradients(graph, whitened, grads_in, inv_std, gamma, prog, name=name)
    return popnn.bn.distributed_batch_norm_gradients(graph, whitened, grads_in, inv_std, gamma, prog,
                                                     sum_across_replicas, replicas * int(whitened.shape[0]),
                                                     name=name)


# -- SGD with momentum over replicas --------------------------------------------------------------
class MomentumSgd:
    """``v = momentum v + mean gradient; w -= learning_rate v`` for ``weights`` (name ->
    tensor) on R replicas. ``step(grads, prog)`` adds what each training step does (with
    accumulation: adding into the accumulators); ``update`` is the program that runs after
    every ``accumulate`` steps, ``prologue`` (or None) what runs before the first. The
    momentum buffers are host-visible ``state`` (name -> tensor): ``{name}/velocity`` per
    parameter, or with ``shard`` one ``velocity/shard`` of ``shard_length(total, R)``
    elements per replica (and the prologue takes the replica's slice of the weights)."""

    def __init__(self, graph, weights: dict, learning_rate: float, momentum: float, replicas: int = 1,
                 accumulate: int = 1, shard: bool = False):
        self.graph, self.weights = graph, weights
        self.lr, self.momentum = learning_rate, momentum
        self.replicas, self.accumulate, self.shard = replicas, accumulate, shard
        self.total = sum(t.num_elements() for t in weights.values())
        self.update, self.prologue = Sequence(), None
        if shard:
            self.state = {"velocity/shard": graph.add_variable(FLOAT, (shard_length(self.total, replicas),),
                                                                "velocity/shard",
                                                                mapping=popsim.VariableMappingMethod.LINEAR)}
        else:
            self.state = {f"{name}/velocity": graph.clone(w, f"{name}/velocity") for name, w in weights.items()}
        self.accumulators = None
        if accumulate > 1:
            self.accumulators = {name: graph.clone(w, f"{name}/accumulated") for name, w in weights.items()}
            for t in self.accumulators.values():
                graph.set_initial_value(t, np.zeros(t.shape, np.float32))

    def initial_state(self) -> dict:
        return {name: np.zeros(t.shape, np.float32) for name, t in self.state.items()}

    def step(self, grads: dict, prog) -> None:
        """What each training step adds after its gradients ``grads`` (name -> tensor); the
        update then follows (every step, or every ``accumulate`` steps)."""
        g = self.graph
        if self.accumulators is not None:
            for name, acc in self.accumulators.items():
                popops.scaled_add_to(g, acc, grads[name], 1.0, prog, name=f"{name}/accumulate")
            grads = self.accumulators
        names = list(self.weights)
        scale = 1.0 / self.accumulate
        if self.shard:
            self._sharded_update([grads[n] for n in names], scale)
        else:
            if self.replicas > 1:
                all_reduce_mean(g, [grads[n] for n in names], self.update, "gradients/allReduce", bucket=True)
            for name in names:
                velocity, w = self.state[f"{name}/velocity"], self.weights[name]
                popops.scaled_add_to(g, velocity, self.momentum, grads[name], scale, self.update,
                                     name=f"{name}/velocity")
                popops.scaled_add_to(g, w, velocity, -self.lr, self.update, name=f"{name}/update")
        if self.accumulators is not None:
            for name, acc in self.accumulators.items():
                popops.zero(g, acc, self.update, f"{name}/zeroAccumulator")

    def _sharded_update(self, grads, scale: float) -> None:
        """Reduce-scatter of the gradients (MEAN): this replica's 1/R of them; its 1/R of the
        momentum and of the weights updated; the weights all-gathered back. Each replica's
        slice of the weights is taken once, at the start of a run (a dynamic slice at the
        replication index), then kept up to date by the update itself."""
        g, prog, r = self.graph, self.update, self.replicas
        chunk = shard_length(self.total, r)
        grad_shard = gcl.reduce_scatter_cross_replica(g, flat(grads), MEAN, prog, name="gradients/reduceScatter")
        weights = flat(self.weights.values())
        padded = weights
        if chunk * r > self.total:
            pad = g.add_constant(FLOAT, (chunk * r - self.total,), 0.0, "weights/padding")
            g.set_tile_mapping(pad, 0)
            padded = popsim.concat([weights, pad])
        replica = g.add_replication_index_constant("replicaIndex")
        g.set_tile_mapping(replica, 0)
        velocity = self.state["velocity/shard"]
        weight_shard = g.clone(velocity, "weights/shard")   # this replica's slice, kept between steps
        self.prologue = Sequence()
        self.prologue.add(Copy(popops.dynamic_slice(g, padded.reshape((r, chunk)), replica.reshape((1,)), [0], [1],
                                                    self.prologue, "weights/slice").reshape((chunk,)), weight_shard))
        popops.scaled_add_to(g, velocity, self.momentum, grad_shard, scale, prog, name="velocity/shard")
        popops.scaled_add_to(g, weight_shard, velocity, -self.lr, prog, name="update/shard")
        gathered = gcl.all_gather_cross_replica(g, weight_shard, prog, name="weights/allGather")
        prog.add(Copy(gathered.flatten()[:self.total], weights))


# -- memory -------------------------------------------------------------------------------------------
def tile_bytes(graph, tensors) -> np.ndarray:
    """Bytes of ``tensors``' elements on each tile of a replica."""
    per_tile = np.zeros(graph.target.num_tiles, np.int64)
    for t in tensors:
        for tile, intervals in enumerate(graph.get_tile_mapping(t)):
            per_tile[tile] += sum(end - begin for begin, end in intervals) * t.dtype.size
    return per_tile


def momentum_memory(graph, optimizer: MomentumSgd) -> str:
    """A line on the momentum buffers' memory per tile, and what sharding saves (or would)."""
    mine = tile_bytes(graph, optimizer.state.values())
    full = tile_bytes(graph, optimizer.weights.values())   # unsharded buffers are mapped like the weights
    line = f"momentum buffers: {mine.sum():,} bytes per replica, at most {mine.max():,} on a tile"
    if optimizer.shard:
        line += (f", sharded over {optimizer.replicas} replicas (unsharded: {full.sum():,} bytes, at most "
                 f"{full.max():,} on a tile): {full.max() - mine.max():,} bytes less on the fullest tile")
    return line
