"""Layer norm (PopLibs' popnn/LayerNorm.hpp, namespace ``ln``): group norm with one group,
so statistics per batch element over the channels and the field: mean and inv_std_dev
``[B]``; gamma and beta per channel. The grouping option has no effect (PopLibs). Each
function is gn's step with the LAYER entry (norm_kinds.py)."""
from popsim import FLOAT

from . import gn
from .bn import param_update
from .norm_kinds import LAYER

__all__ = ["layer_norm_statistics", "layer_norm_whiten", "layer_normalise", "layer_norm_param_gradients",
           "layer_norm_gradients", "layer_norm_param_update"]


def layer_norm_statistics(graph, acts, eps, prog, unbiased_var_estimate=False, stable_algo=False,
                          partials_type=FLOAT, name: str = "", options=None):
    """(mean[B], inv_std_dev[B]) of ``acts`` [B, C, ...field]."""
    return gn.statistics(LAYER, graph, acts, eps, prog, None, unbiased_var_estimate, stable_algo, partials_type,
                         name, options, None)


def layer_norm_whiten(graph, acts, mean, inv_std_dev, prog, name: str = "", options=None):
    return gn.whiten(LAYER, graph, acts, mean, inv_std_dev, prog, name, options, None)


def layer_normalise(graph, acts, gamma, beta, mean, inv_std_dev, prog, name: str = "", options=None):
    """(normalised, whitened)."""
    return gn.normalise(LAYER, graph, acts, gamma, beta, mean, inv_std_dev, prog, name, options, None)


def layer_norm_param_gradients(graph, acts, grads_in, *args, partials_type=FLOAT, name: str = "", options=None):
    """(gamma_delta[C], beta_delta[C]); the forms of gn.group_norm_param_gradients."""
    return gn.param_gradients(LAYER, graph, acts, grads_in, args, partials_type, name, options, None)


def layer_norm_gradients(graph, acts, grads_in, *args, partials_type=FLOAT, name: str = "", options=None):
    """The input gradient; the forms of gn.group_norm_gradients."""
    return gn.gradients(LAYER, graph, acts, grads_in, args, partials_type, name, options, None)


def layer_norm_param_update(graph, gamma_delta, beta_delta, scale, gamma, beta, prog, name: str = "",
                            options=None) -> None:
    """``gamma += scale · gamma_delta``; ``beta += scale · beta_delta``."""
    param_update(LAYER, graph, gamma_delta, beta_delta, scale, gamma, beta, prog, name, options)
