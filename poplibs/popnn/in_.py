"""Instance norm (PopLibs' popnn/InstanceNorm.hpp, namespace ``in``; ``in`` is a Python
keyword, hence ``in_``): group norm with one group per channel, so statistics per batch
element and channel over the field: mean and inv_std_dev ``[B·C]`` (index ``b·C + c``);
gamma and beta per channel. The grouping option has no effect (PopLibs). Each function is
gn's step with the INSTANCE entry (norm_kinds.py)."""
from popsim import FLOAT

from . import gn
from .bn import param_update
from .norm_kinds import INSTANCE

__all__ = ["instance_norm_statistics", "instance_norm_whiten", "instance_normalise", "instance_norm_param_gradients",
           "instance_norm_gradients", "instance_norm_param_update"]


def instance_norm_statistics(graph, acts, eps, prog, unbiased_var_estimate=False, stable_algo=False,
                          partials_type=FLOAT, name: str = "", options=None):
    """(mean[B·C], inv_std_dev[B·C]) of ``acts`` [B, C, ...field]."""
    return gn.statistics(INSTANCE, graph, acts, eps, prog, None, unbiased_var_estimate, stable_algo, partials_type,
                         name, options, None)


def instance_norm_whiten(graph, acts, mean, inv_std_dev, prog, name: str = "", options=None):
    return gn.whiten(INSTANCE, graph, acts, mean, inv_std_dev, prog, name, options, None)


def instance_normalise(graph, acts, gamma, beta, mean, inv_std_dev, prog, name: str = "", options=None):
    """(normalised, whitened)."""
    return gn.normalise(INSTANCE, graph, acts, gamma, beta, mean, inv_std_dev, prog, name, options, None)


def instance_norm_param_gradients(graph, acts, grads_in, *args, partials_type=FLOAT, name: str = "", options=None):
    """(gamma_delta[C], beta_delta[C]); the forms of gn.group_norm_param_gradients."""
    return gn.param_gradients(INSTANCE, graph, acts, grads_in, args, partials_type, name, options, None)


def instance_norm_gradients(graph, acts, grads_in, *args, partials_type=FLOAT, name: str = "", options=None):
    """The input gradient; the forms of gn.group_norm_gradients."""
    return gn.gradients(INSTANCE, graph, acts, grads_in, args, partials_type, name, options, None)


def instance_norm_param_update(graph, gamma_delta, beta_delta, scale, gamma, beta, prog, name: str = "",
                            options=None) -> None:
    """``gamma += scale · gamma_delta``; ``beta += scale · beta_delta``."""
    param_update(INSTANCE, graph, gamma_delta, beta_delta, scale, gamma, beta, prog, name, options)
