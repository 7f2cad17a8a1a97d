"""Batch norm (PopLibs' popnn/BatchNorm.hpp, namespace ``bn``): statistics per channel of
activations ``[B, C, ...field]`` over the batch and the field.

```python
mean, inv_std = popnn.bn.batch_norm_statistics(graph, x, 1e-5, prog, unbiased_var_estimate=False)
y, x_hat = popnn.bn.batch_normalise(graph, x, gamma, beta, mean, inv_std, prog)
y = popnn.bn.batch_normalise(graph, x, combined_multiplicand, addend, prog)   # inference
d_gamma, d_beta = popnn.bn.batch_norm_param_gradients(graph, x_hat, dy, prog)  # or (x, dy, mean, inv_std, prog)
dx = popnn.bn.batch_norm_gradients(graph, x_hat, dy, inv_std, gamma, prog)     # or (x, dy, mean, inv_std, gamma, prog)
popnn.bn.batch_norm_param_update(graph, d_gamma, d_beta, -lr, gamma, beta, prog)  # gamma += scale * d_gamma
# over the samples of several replicas (PopLibs' distributedBatchNorm*): the callback sums
# the replicas' partial statistics, e.g. with gcl.all_reduce_cross_replica(..., ADD, ...)
mean, inv_std = popnn.bn.distributed_batch_norm_statistics(graph, x, 1e-5, prog, False, callback, norm_batch_size)
dx = popnn.bn.distributed_batch_norm_gradients(graph, x_hat, dy, inv_std, gamma, prog, callback, norm_batch_size)
```
Options: PopLibs' batch norm has none; ``options`` must be empty. The callback is
``callback(graph, tensors, prog, group_size, name, options) -> list of tensors``: each of
``tensors`` summed over the ``group_size`` replicas that share the batch.
"""
import popsim
from popsim import FLOAT

from ..poputil import PoplibsError

from . import norm_core as core
from .norm_checks import (check_acts, check_common, check_eps, check_like, check_options, check_partials,
                          check_param, check_per_channel, check_scale, check_stats, split_at_prog,
                          GRADIENT_FORMS, PARAM_GRADIENT_FORMS, gradient_call)
from .norm_kinds import BATCH

__all__ = ["batch_norm_statistics", "batch_norm_whiten", "batch_normalise", "batch_norm_param_gradients",
           "batch_norm_gradients", "batch_norm_param_update", "distributed_batch_norm_statistics",
           "distributed_batch_norm_gradients"]

_PER_CHANNEL = BATCH.stats


def _stats(graph, acts, mean, inv_std, what):
    for t, role in ((mean, "mean"), (inv_std, "inv_std_dev")):
        check_stats(graph, t, acts, int(acts.shape[1]), what, role, _PER_CHANNEL)


def batch_norm_statistics(graph, acts, eps, prog, unbiased_var_estimate=False, stable_algo=False,
                          partials_type=FLOAT, name: str = "", options=None):
    """(mean[C], inv_std_dev[C]) of ``acts`` [B, C, ...field] over all but the channel
    dimension; ``inv_std_dev = 1 / sqrt(var + eps)`` (the unbiased estimate scales ``var + eps``
    by n/(n-1), as PopLibs does). ``stable_algo`` subtracts the mean before squaring."""
    what = "popnn.bn.batch_norm_statistics"
    check_common(graph, prog, name, what)
    check_acts(graph, acts, what)
    check_options(options, what)
    return core.statistics(graph, acts, check_eps(eps, what), prog, bool(unbiased_var_estimate),
                           bool(stable_algo), check_partials(partials_type, what), name or "BN/statistics")


def batch_norm_whiten(graph, acts, mean, inv_std_dev, prog, name: str = "", options=None):
    """``(acts - mean) · inv_std_dev`` per channel."""
    what = "popnn.bn.batch_norm_whiten"
    check_common(graph, prog, name, what)
    check_acts(graph, acts, what)
    _stats(graph, acts, mean, inv_std_dev, what)
    check_options(options, what)
    return core.whiten(graph, acts, mean, inv_std_dev, prog, name or "BN")


def batch_normalise(graph, acts, *args, name: str = "", options=None):
    """``batch_normalise(graph, acts, gamma, beta, mean, inv_std_dev, prog)`` -> (normalised,
    whitened); ``batch_normalise(graph, acts, combined_multiplicand, addend, prog)`` ->
    ``acts · combined_multiplicand + addend`` (the inference form)."""
    what = "popnn.bn.batch_normalise"
    tensors, prog, rest = split_at_prog(args, {
        4: "(graph, acts, gamma, beta, mean, inv_std_dev, prog)",
        2: "(graph, acts, combined_multiplicand, addend, prog)"}, what)
    name = rest[0] if rest else name
    check_common(graph, prog, name, what)
    check_acts(graph, acts, what)
    check_options(options, what)
    if len(tensors) == 2:
        for t, role in zip(tensors, ("combined_multiplicand", "addend")):
            check_per_channel(graph, t, acts, what, role)
        return core.normalise(graph, acts, tensors[0], tensors[1], prog, name or "BN")
    gamma, beta, mean, inv_std = tensors
    check_per_channel(graph, gamma, acts, what, "gamma")
    check_per_channel(graph, beta, acts, what, "beta")
    _stats(graph, acts, mean, inv_std, what)
    whitened = core.whiten(graph, acts, mean, inv_std, prog, name or "BN")
    return core.normalise(graph, whitened, gamma, beta, prog, name or "BN"), whitened


def batch_norm_param_gradients(graph, acts, grads_in, *args, partials_type=FLOAT, name: str = "", options=None):
    """(gamma_delta[C], beta_delta[C]) = (Σ whitened · grads_in, Σ grads_in) per channel:
    ``(graph, acts_whitened, grads_in, prog)`` or ``(graph, acts, grads_in, mean, inv_std_dev, prog)``."""
    what = "popnn.bn.batch_norm_param_gradients"
    tensors, prog = gradient_call(graph, acts, grads_in, args, PARAM_GRADIENT_FORMS, partials_type, name, what)
    check_options(options, what)
    if tensors:
        _stats(graph, acts, tensors[0], tensors[1], what)
        acts = core.whiten(graph, acts, tensors[0], tensors[1], prog, name or "BN")
    return core.param_gradients(graph, acts, grads_in, prog, 1.0, name or "BN/paramGradients")


def batch_norm_gradients(graph, acts, grads_in, *args, partials_type=FLOAT, name: str = "", options=None):
    """The gradient with respect to the activations, through the statistics:
    ``(graph, acts_whitened, grads_in, inv_std_dev, gamma, prog)`` or
    ``(graph, acts, grads_in, mean, inv_std_dev, gamma, prog)``."""
    what = "popnn.bn.batch_norm_gradients"
    (*stats, gamma), prog = gradient_call(graph, acts, grads_in, args, GRADIENT_FORMS, partials_type, name, what)
    check_options(options, what)
    if len(stats) == 2:
        _stats(graph, acts, stats[0], stats[1], what)
        acts = core.whiten(graph, acts, stats[0], stats[1], prog, name or "BN")
    else:
        check_stats(graph, stats[0], acts, int(acts.shape[1]), what, "inv_std_dev", _PER_CHANNEL)
    grads = core.scale_by_stat(graph, grads_in, gamma, prog, name or "BN/gradients")
    return core.statistics_gradients(graph, acts, grads, stats[-1], prog, name or "BN/gradients")


def batch_norm_param_update(graph, gamma_delta, beta_delta, scale, gamma, beta, prog, name: str = "",
                            options=None) -> None:
    """``gamma += scale · gamma_delta``; ``beta += scale · beta_delta`` (PopLibs' form: pass
    ``-learning_rate`` to descend); ``scale`` a number or a scalar tensor."""
    param_update(BATCH, graph, gamma_delta, beta_delta, scale, gamma, beta, prog, name, options)


def param_update(kind, graph, gamma_delta, beta_delta, scale, gamma, beta, prog, name, options) -> None:
    """The update every norm shares, with its checks: the param_update step of ``kind``
    (norm_kinds: its options and its name in errors)."""
    what = kind.what("param_update")
    check_common(graph, prog, name, what)
    check_options(options, what, kind.options)
    for t, role in ((gamma, "gamma"), (beta, "beta")):
        check_param(graph, t, what, role)
    for delta, param, role in ((gamma_delta, gamma, "gamma_delta"), (beta_delta, beta, "beta_delta")):
        check_like(graph, delta, param, what, role)
    core.param_update(graph, gamma_delta, beta_delta, check_scale(graph, scale, what), gamma, beta, prog,
                      name or what)


def distributed_batch_norm_statistics(graph, acts, eps, prog, unbiased_var_estimate, all_reduce_callback,
                                      norm_batch_size, stable_algo=False, partials_type=FLOAT, name: str = "",
                                      options=None):
    """batch_norm_statistics over ``norm_batch_size`` samples spread over replicas in
    equal micro-batches of ``acts.shape[0]`` (PopLibs' distributedBatchNormStatistics):
    each replica's sums, scaled by the whole batch's count, are summed across the
    replicas by ``all_reduce_callback``."""
    what = "popnn.bn.distributed_batch_norm_statistics"
    check_common(graph, prog, name, what)
    check_acts(graph, acts, what)
    check_options(options, what)
    reduce, count = _distribution(graph, acts, all_reduce_callback, norm_batch_size, options, what)
    return core.statistics(graph, acts, check_eps(eps, what), prog, bool(unbiased_var_estimate), bool(stable_algo),
                           check_partials(partials_type, what), name or "BN/statistics", reduce, count)


def distributed_batch_norm_gradients(graph, acts_whitened, grads_in, inv_std_dev, gamma, prog, reduction_callback,
                                     norm_batch_size, partials_type=FLOAT, name: str = "", options=None):
    """batch_norm_gradients whose means are over ``norm_batch_size`` samples on several
    replicas (PopLibs' distributedBatchNormGradients), summed by ``reduction_callback``."""
    what = "popnn.bn.distributed_batch_norm_gradients"
    (inv_std, gamma), prog = gradient_call(graph, acts_whitened, grads_in, (inv_std_dev, gamma, prog),
                                           GRADIENT_FORMS, partials_type, name, what)
    check_options(options, what)
    check_stats(graph, inv_std, acts_whitened, int(acts_whitened.shape[1]), what, "inv_std_dev", _PER_CHANNEL)
    reduce, count = _distribution(graph, acts_whitened, reduction_callback, norm_batch_size, options, what)
    grads = core.scale_by_stat(graph, grads_in, gamma, prog, name or "BN/gradients")
    return core.statistics_gradients(graph, acts_whitened, grads, inv_std, prog, name or "BN/gradients", reduce,
                                     count)


def _distribution(graph, acts, callback, norm_batch_size, options, what):
    """(reduce, elements per channel over all replicas) of a distributed batch norm."""
    if not callable(callback):
        raise popsim.TypeError(f"{what}: the callback must be callable (graph, tensors, prog, group_size, name, "
                               f"options) -> tensors, found {type(callback).__name__}")
    batch = int(acts.shape[0])
    if isinstance(norm_batch_size, bool) or not isinstance(norm_batch_size, int) or norm_batch_size < batch \
            or (batch and norm_batch_size % batch):
        raise PoplibsError(f"{what}: norm_batch_size must be a whole multiple of the replica's batch {batch} (the "
                           f"replicas' micro-batches together), found {norm_batch_size!r}")
    group = norm_batch_size // batch if batch else 1

    def reduce(tensors, prog, name):
        out = list(callback(graph, list(tensors), prog, group, name, options or {}))
        if len(out) != len(tensors) or any(o.shape != t.shape for o, t in zip(out, tensors)):
            raise PoplibsError(f"{what}: the callback must return one tensor of each input's shape "
                               f"({[list(t.shape) for t in tensors]}), found "
                               f"{[list(getattr(o, 'shape', ())) for o in out]}")
        return out
    per_sample = acts.num_elements() // (batch * int(acts.shape[1])) if batch and acts.shape[1] else 0
    return reduce, per_sample * norm_batch_size
