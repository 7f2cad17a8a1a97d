"""The normalisation core the norms share (PopLibs' poplin/Norms.cpp): statistics, whitening,
normalising and the gradients of activations ``[N, S, ...]`` whose statistics are taken per
index of dimension 1 (a channel for batch norm, a (batch, group) pair for the group norms,
which hand in a regrouped view), over every other dimension.

Built from popops (reductions, a product ``map``, the scaled add of the update) and the norms'
vertices (norm_vertices.py): PopLibs' ``poplin::InverseStdDeviation`` and the per-statistic
element-wise ops (norm_stat_ops.py). Statistics tensors are 1-D, ``[S]``, mapped where the
reductions put them.
"""
import popsim

from .. import popops
from ..popops import Operation, ReduceParams, SingleReduceOp
from ..popops import expr as pe
from .norm_stat_ops import best_order, indexed, ordered_map, stat_op
from .norm_vertices import add_inverse_std_deviation

__all__ = ["param_update", "statistics", "whiten", "normalise", "param_gradients",
           "scale_by_stat", "statistics_gradients"]


def _reduction(graph, t, op, scale: float, out_type, order=None):
    """A SingleReduceOp of ``t`` over every dimension but 1, on ``t`` viewed in the order in
    which its tile regions are fewest (the reduction plan then sees long rows)."""
    order = best_order(graph, t) if order is None else order
    dims = [i for i, d in enumerate(order) if d != 1]
    return SingleReduceOp(indexed(t.dim_shuffle(order)), dims, ReduceParams(op, scale=scale), out_type)


def _elements_per_stat(acts) -> int:
    return acts.num_elements() // acts.shape[1] if acts.shape[1] else 0


def statistics(graph, acts, eps: float, prog, unbiased: bool, stable: bool, partials_type, name: str,
               reduce=None, count: int = 0):
    """(mean, inverse standard deviation) per index of dimension 1, as PopLibs'
    normStatistics: the mean (acts' type) and the mean of squares (``partials_type``) in one
    reduction (the squares of the deviations after the mean with ``stable``), then
    InverseStdDeviation. Distributed (PopLibs' distributed forms): ``count`` elements per
    statistic over all replicas, and ``reduce(list, prog, name)`` sums the replicas'
    partial means across them."""
    n = count or _elements_per_stat(acts)
    scale = 1.0 / n if n > 1 else 1.0
    scale_var = n / (n - 1) if unbiased and n > 1 else 1.0
    order = best_order(graph, acts)
    mean_op = _reduction(graph, acts, Operation.ADD, scale, acts.dtype, order)
    if stable:
        mean = popops.reduce_many(graph, [mean_op], prog, f"{name}/mean")[0]
        if reduce is not None:
            (mean,) = reduce([mean], prog, f"{name}/mean")
        centred = stat_op(graph, "CENTRE", [acts], [mean], prog, f"{name}/removeMean")
        power_op = _reduction(graph, centred, Operation.SQUARE_ADD, scale, partials_type)
        power = popops.reduce_many(graph, [power_op], prog, f"{name}/power")[0]
        if reduce is not None:
            (power,) = reduce([power], prog, f"{name}/power")
    else:
        power_op = _reduction(graph, acts, Operation.SQUARE_ADD, scale, partials_type, order)
        mean, power = popops.reduce_many(graph, [mean_op, power_op], prog, f"{name}/meanAndPower")
        if reduce is not None:
            mean, power = reduce([mean, power], prog, f"{name}/meanAndPower")
    inv_std = add_inverse_std_deviation(graph, mean, power, eps, scale_var, acts.dtype, stable, prog, name)
    return mean, inv_std


def whiten(graph, acts, mean, inv_std, prog, name: str):
    """``(acts - mean) · inv_std``, one fused map (PopLibs: a subtraction, then a multiplication in place)."""
    return stat_op(graph, "WHITEN", [acts], [mean, inv_std], prog, f"{name}/whiten")


def normalise(graph, whitened, gamma, beta, prog, name: str):
    """``whitened · gamma + beta`` (gamma and beta per index of dimension 1), one fused map."""
    return stat_op(graph, "AFFINE", [whitened], [gamma, beta], prog, f"{name}/normalise")




def param_gradients(graph, whitened, grads_in, prog, scale: float, name: str):
    """(Σ whitened · grads_in, Σ grads_in) per index of dimension 1, both scaled by
    ``scale``, in ``grads_in``'s type: one product map, one reduction of both (PopLibs'
    normParamGradients reduces the concatenation of the two)."""
    order = best_order(graph, whitened)
    product = ordered_map(graph, pe._1 * pe._2, [whitened, grads_in], prog, f"{name}/deltas", order)
    reductions = [_reduction(graph, t, Operation.ADD, scale, grads_in.dtype, order) for t in (product, grads_in)]
    return tuple(popops.reduce_many(graph, reductions, prog, f"{name}/deltas"))


def scale_by_stat(graph, grads_in, gamma, prog, name: str):
    """``grads_in · gamma`` (PopLibs' normGradients: the gradient through the affine step)."""
    return stat_op(graph, "SCALE", [grads_in], [gamma], prog, f"{name}/normGrad")


def statistics_gradients(graph, whitened, grads, inv_std, prog, name: str, reduce=None, count: int = 0):
    """The gradient through whitening and its statistics (PopLibs' normStatisticsGradients):
    ``inv_std · (g - mean(g) - whitened · mean(whitened · g))``, means per index of dimension 1
    (distributed: over ``count`` elements on all replicas, ``reduce`` summing across them)."""
    n = count or _elements_per_stat(whitened)
    var_delta, mean_delta = param_gradients(graph, whitened, grads, prog, -1.0 / n if n else 1.0, name)
    if reduce is not None:
        var_delta, mean_delta = reduce([var_delta, mean_delta], prog, f"{name}/deltas")
    return stat_op(graph, "GRADIENT", [grads, whitened], [mean_delta, var_delta, inv_std], prog,
                   f"{name}/gradients")


def param_update(graph, gamma_delta, beta_delta, scale, gamma, beta, prog, name: str) -> None:
    """``gamma += scale · gamma_delta``, ``beta += scale · beta_delta`` in one scaled add of
    the concatenations (PopLibs' batchNormParamUpdate and friends)."""
    popops.scaled_add_to(graph, popsim.concat([beta, gamma]), popsim.concat([beta_delta, gamma_delta]), scale,
                         prog, name=f"{name}/paramUpdate")
