"""Group norm (PopLibs' popnn/GroupNorm.hpp, namespace ``gn``): statistics per (batch
element, group of channels) of activations ``[B, C, ...field]``; ``mean`` and
``inv_std_dev`` have shape ``[B·G]``, index ``b·G + g``. gamma and beta stay per channel.

Grouping (PopLibs' option ``groupNormStridedChannelGrouping``, here also the keyword
``strided_channel_grouping``; default true): group g holds channels ``c·G + g`` (strided)
or ``c + (C/G)·g`` (false: the conventional grouping). The ops work on a view of the
activations ``[C/G, B·G, ...field]`` (PopLibs' groupActs), whose dimension 1 is the
statistic, with the shared core (norm_core.py).

Empty activations: with no channels, num_groups may be 0 (instance norm's one group per
channel): no statistics. Statistics of length 0 with an empty batch or no channels say
nothing about G; the whitened and gradient results are then empty.

The steps (statistics, whiten, normalise, param_gradients, gradients) take the norm's
NormKind (norm_kinds.py: its groups, names and errors): the group family's modules (this
one, ln.py, in_.py) call them with their entry.
"""
from popsim import FLOAT

from ..poputil import PoplibsError
from . import norm_core as core
from .bn import param_update
from .norm_checks import (check_acts, check_common, check_eps, check_options, check_partials,
                          check_per_channel, check_stats, GRADIENT_FORMS, PARAM_GRADIENT_FORMS,
                          gradient_call)
from .norm_kinds import GROUP, STRIDED_OPTION

__all__ = ["group_norm_statistics", "group_norm_whiten", "group_normalise", "group_norm_param_gradients",
           "group_norm_gradients", "group_norm_param_update"]

OPTION = STRIDED_OPTION


def strided(options, keyword, what: str) -> bool:
    """The grouping: the keyword, else the option, else true (PopLibs' default)."""
    options = check_options(options, what, (OPTION,))
    from_option = None
    if OPTION in options:
        value = options[OPTION]
        if value not in ("true", "false", True, False):
            raise PoplibsError(f"{what}: option {OPTION} must be \"true\" or \"false\", found {value!r}")
        from_option = value in ("true", True)
    if keyword is not None and from_option is not None and bool(keyword) != from_option:
        raise PoplibsError(f"{what}: strided_channel_grouping={keyword} contradicts option {OPTION}="
                           f"{options[OPTION]!r}; give one of them")
    return bool(keyword) if keyword is not None else (True if from_option is None else from_option)


def group_acts(acts, groups: int, is_strided: bool):
    """``[B, C, ...]`` as ``[C/G, B·G, ...]`` (dimension 1: statistic ``b·G + g``)."""
    b, c, *field = acts.shape
    per = c // groups
    if is_strided:
        t = acts.reshape([b, per, groups] + field).dim_roll(2, 1)
    else:
        t = acts.reshape([b, groups, per] + field)
    return t.reshape([b * groups, per] + field).dim_roll(1, 0)


def ungroup_acts(t, channels: int, groups: int, is_strided: bool):
    """The inverse of group_acts."""
    per, bg, *field = t.shape
    b = bg // groups
    t = t.dim_roll(0, 1).reshape([b, groups, per] + field)
    if is_strided:
        t = t.dim_roll(1, 2)
    return t.reshape([b, channels] + field)


def _check_groups(acts, groups, what):
    channels = int(acts.shape[1])
    if channels == 0 and groups == 0 and not isinstance(groups, bool):
        return 0  # no channels, no groups: no statistics
    if isinstance(groups, bool) or not isinstance(groups, int) or groups < 1 or channels % groups:
        raise PoplibsError(f"{what}: num_groups must be a whole number >= 1 dividing the {channels} channels of "
                           f"'{acts.name}' [B, C, ...field] = {tuple(acts.shape)}, found {groups!r}")
    return groups


def _groups_of(kind, graph, acts, stats, what):
    """num_groups from the statistics' length ``B·G`` (as PopLibs does), checked; None for
    empty activations with no statistics (the grouping does not matter)."""
    batch = int(acts.shape[0])
    count = int(stats[0].shape[0]) if stats[0].rank == 1 else -1
    if count == 0 and (batch == 0 or int(acts.shape[1]) == 0):
        for t, role in zip(stats, ("mean", "inv_std_dev")[-len(stats):]):
            check_stats(graph, t, acts, 0, what, role, kind.stats)
        return None
    groups = count // batch if batch and count > 0 and count % batch == 0 else 0
    if not groups or int(acts.shape[1]) % groups:
        raise PoplibsError(f"{what}: mean/inv_std_dev '{stats[0].name}' must have shape (B·G,) with G dividing "
                           f"the channels of '{acts.name}' {tuple(acts.shape)} (B = {batch}), found "
                           f"{tuple(stats[0].shape)}")
    for t, role in zip(stats, ("mean", "inv_std_dev")[-len(stats):]):
        check_stats(graph, t, acts, batch * groups, what, role, kind.stats)
    return groups


def statistics(kind, graph, acts, eps, prog, num_groups, unbiased, stable, partials_type, name, options, keyword):
    """The statistics step of ``kind`` (group_norm_statistics), its groups per batch element
    ``kind.groups(acts, num_groups)``."""
    what = kind.what("statistics")
    name = name or f"{kind.prefix}/statistics"
    check_common(graph, prog, name, what)
    check_acts(graph, acts, what)
    groups = _check_groups(acts, kind.groups(acts, num_groups), what)
    is_strided = strided(options, keyword, what)
    if groups == 0:
        return _empty(graph, acts, (0,), f"{name}/mean"), _empty(graph, acts, (0,), f"{name}/invStdDev")
    grouped = group_acts(acts, groups, is_strided)
    return core.statistics(graph, grouped, check_eps(eps, what), prog, bool(unbiased), bool(stable),
                           check_partials(partials_type, what), name)


def _empty(graph, like, shape, name):
    t = graph.add_variable(like.dtype, shape, name)
    graph.set_tile_mapping(t, 0)
    return t


def _whiten(kind, graph, acts, mean, inv_std, prog, name, is_strided, what):
    groups = _groups_of(kind, graph, acts, [mean, inv_std], what)
    if groups is None:
        return _empty(graph, acts, tuple(acts.shape), f"{name}/whiten")
    whitened = core.whiten(graph, group_acts(acts, groups, is_strided), mean, inv_std, prog, name)
    return ungroup_acts(whitened, int(acts.shape[1]), groups, is_strided)


def whiten(kind, graph, acts, mean, inv_std_dev, prog, name, options, keyword):
    """The whiten step of ``kind`` (group_norm_whiten)."""
    what = kind.what("whiten")
    check_common(graph, prog, name, what)
    check_acts(graph, acts, what)
    return _whiten(kind, graph, acts, mean, inv_std_dev, prog, name or kind.prefix,
                   strided(options, keyword, what), what)


def normalise(kind, graph, acts, gamma, beta, mean, inv_std_dev, prog, name, options, keyword):
    """The normalise step of ``kind`` (group_normalise)."""
    what = kind.what("normalise")
    check_common(graph, prog, name, what)
    check_acts(graph, acts, what)
    check_per_channel(graph, gamma, acts, what, "gamma")
    check_per_channel(graph, beta, acts, what, "beta")
    whitened = _whiten(kind, graph, acts, mean, inv_std_dev, prog, name or kind.prefix,
                       strided(options, keyword, what), what)
    return core.normalise(graph, whitened, gamma, beta, prog, name or kind.prefix), whitened


def param_gradients(kind, graph, acts, grads_in, args, partials_type, name, options, keyword):
    """The param_gradients step of ``kind`` (group_norm_param_gradients)."""
    what = kind.what("param_gradients")
    tensors, prog = gradient_call(graph, acts, grads_in, args, PARAM_GRADIENT_FORMS, partials_type, name, what)
    is_strided = strided(options, keyword, what)
    if tensors:
        acts = _whiten(kind, graph, acts, tensors[0], tensors[1], prog, name or kind.prefix, is_strided, what)
    return core.param_gradients(graph, acts, grads_in, prog, 1.0, name or f"{kind.prefix}/paramGradients")


def gradients(kind, graph, acts, grads_in, args, partials_type, name, options, keyword):
    """The gradients step of ``kind`` (group_norm_gradients)."""
    what = kind.what("gradients")
    (*stats, gamma), prog = gradient_call(graph, acts, grads_in, args, GRADIENT_FORMS, partials_type, name, what)
    is_strided = strided(options, keyword, what)
    groups = _groups_of(kind, graph, acts, stats, what)
    if len(stats) == 2:
        acts = _whiten(kind, graph, acts, stats[0], stats[1], prog, name or kind.prefix, is_strided, what)
    grads = core.scale_by_stat(graph, grads_in, gamma, prog, name or f"{kind.prefix}/gradients")
    if groups is None:
        return grads  # empty, like acts
    out = core.statistics_gradients(graph, group_acts(acts, groups, is_strided), group_acts(grads, groups, is_strided),
                                    stats[-1], prog, name or f"{kind.prefix}/gradients")
    return ungroup_acts(out, int(acts.shape[1]), groups, is_strided)


def group_norm_statistics(graph, acts, eps, prog, num_groups, unbiased_var_estimate=False, stable_algo=False,
                          partials_type=FLOAT, name: str = "", options=None, strided_channel_grouping=None):
    """(mean[B·G], inv_std_dev[B·G]) of ``acts`` [B, C, ...field] per batch element and group."""
    return statistics(GROUP, graph, acts, eps, prog, num_groups, unbiased_var_estimate, stable_algo, partials_type,
                      name, options, strided_channel_grouping)


def group_norm_whiten(graph, acts, mean, inv_std_dev, prog, name: str = "", options=None,
                      strided_channel_grouping=None):
    """``(acts - mean) · inv_std_dev`` per batch element and group."""
    return whiten(GROUP, graph, acts, mean, inv_std_dev, prog, name, options, strided_channel_grouping)


def group_normalise(graph, acts, gamma, beta, mean, inv_std_dev, prog, name: str = "", options=None,
                    strided_channel_grouping=None):
    """(whitened · gamma + beta, whitened); gamma and beta per channel."""
    return normalise(GROUP, graph, acts, gamma, beta, mean, inv_std_dev, prog, name, options,
                     strided_channel_grouping)


def group_norm_param_gradients(graph, acts, grads_in, *args, partials_type=FLOAT, name: str = "", options=None,
                               strided_channel_grouping=None):
    """(gamma_delta[C], beta_delta[C]): ``(graph, acts_whitened, grads_in, prog)`` or
    ``(graph, acts, grads_in, mean, inv_std_dev, prog)``."""
    return param_gradients(GROUP, graph, acts, grads_in, args, partials_type, name, options, strided_channel_grouping)


def group_norm_gradients(graph, acts, grads_in, *args, partials_type=FLOAT, name: str = "", options=None,
                         strided_channel_grouping=None):
    """The gradient with respect to the activations: ``(graph, acts_whitened, grads_in,
    inv_std_dev, gamma, prog)`` or ``(graph, acts, grads_in, mean, inv_std_dev, gamma, prog)``."""
    return gradients(GROUP, graph, acts, grads_in, args, partials_type, name, options, strided_channel_grouping)


def group_norm_param_update(graph, gamma_delta, beta_delta, scale, gamma, beta, prog, name: str = "",
                            options=None) -> None:
    """``gamma += scale · gamma_delta``; ``beta += scale · beta_delta``."""
    param_update(GROUP, graph, gamma_delta, beta_delta, scale, gamma, beta, prog, name, options)
