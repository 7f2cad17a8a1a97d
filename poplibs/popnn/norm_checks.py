"""Argument checks of the norms: each bad argument is a PoplibsError naming the function,
the tensor, the layout or shape expected and what was found."""
import numbers

import popsim
import popsim.program
from popsim import FLOAT, HALF

from ..poputil import PoplibsError
from ..poputil.checks import as_float, check_graph, check_name, check_prog, check_tensor

__all__ = ["check_acts", "check_per_channel", "check_stats", "check_like", "check_partials", "check_name",
           "check_common"]


def _shape(t) -> tuple:
    return tuple(int(n) for n in t.shape)


def check_common(graph, prog, name, what: str) -> None:
    check_graph(graph, what)
    check_prog(prog, what)
    check_name(name, what)


def check_acts(graph, acts, what: str, role: str = "acts") -> None:
    """Activations ``[B, C, ...field]`` of FLOAT or HALF."""
    check_tensor(graph, acts, what, role)
    if acts.rank < 2:
        raise PoplibsError(f"{what}: {role} '{acts.name}' must have layout [B, C, ...field] (rank >= 2), found "
                           f"shape {_shape(acts)} (rank {acts.rank}); for a vector of activations use shape [1, C]")
    if acts.dtype not in (FLOAT, HALF):
        raise PoplibsError(f"{what}: {role} '{acts.name}' must be FLOAT or HALF, found {acts.dtype.name}")


def check_like(graph, t, acts, what: str, role: str) -> None:
    """``t`` has ``acts``' shape and type (gradients, whitened activations)."""
    check_tensor(graph, t, what, role)
    if _shape(t) != _shape(acts) or t.dtype != acts.dtype:
        raise PoplibsError(f"{what}: {role} '{t.name}' must be {acts.dtype.name} of shape {_shape(acts)} (like "
                           f"the activations '{acts.name}' [B, C, ...field]), found {t.dtype.name} of shape "
                           f"{_shape(t)}")


def check_per_channel(graph, t, acts, what: str, role: str) -> None:
    """A per-channel parameter: shape ``[C]``, the activations' type."""
    _check_vector(graph, t, acts, int(acts.shape[1]), what, role,
                  f": one per channel of the activations '{acts.name}' [B, C, ...field] = {_shape(acts)}",
                  "; cast it with popops.cast")


def check_stats(graph, t, acts, count: int, what: str, role: str, layout: str) -> None:
    """A statistics tensor: shape ``[count]`` (``layout`` says what it indexes), acts' type."""
    _check_vector(graph, t, acts, count, what, role, f" ({layout} of the activations '{acts.name}' {_shape(acts)})")


def _check_vector(graph, t, acts, count: int, what: str, role: str, shape_note: str, type_hint: str = "") -> None:
    """``t`` a tensor of ``graph`` of shape ``[count]`` (``shape_note`` says what it holds)
    and of ``acts``' type (``type_hint``: how to fix it)."""
    check_tensor(graph, t, what, role)
    if _shape(t) != (count,):
        raise PoplibsError(f"{what}: {role} '{t.name}' must have shape ({count},){shape_note}, found {_shape(t)}")
    if t.dtype != acts.dtype:
        raise PoplibsError(f"{what}: {role} '{t.name}' must be {acts.dtype.name} like the activations "
                           f"'{acts.name}', found {t.dtype.name}{type_hint}")


def check_partials(partials_type, what: str):
    if partials_type not in (FLOAT, HALF):
        raise PoplibsError(f"{what}: partials_type must be popsim.FLOAT or popsim.HALF, found {partials_type!r}")
    return partials_type


def check_eps(eps, what: str) -> float:
    if isinstance(eps, bool) or not isinstance(eps, numbers.Real) or not eps >= 0:
        raise PoplibsError(f"{what}: eps must be a number >= 0 (added to the variance), found {eps!r:.60}")
    return as_float(eps, what, "eps")


def check_scale(graph, scale, what: str):
    """param_update's scale: a number or a one-element FLOAT/HALF tensor."""
    if isinstance(scale, popsim.Tensor):
        check_tensor(graph, scale, what, "scale")
        if scale.num_elements() != 1:
            raise PoplibsError(f"{what}: the scale tensor '{scale.name}' must have one element, found shape "
                               f"{_shape(scale)}")
        return scale
    if isinstance(scale, bool) or not isinstance(scale, numbers.Real):
        raise PoplibsError(f"{what}: scale must be a number or a scalar tensor, found {scale!r}")
    return float(scale)


def split_at_prog(args, forms, what: str):
    """PopLibs' overloads told apart by where ``prog`` comes: ``forms`` maps the number of
    tensors before ``prog`` to the form's description. Returns (tensors, prog, rest)."""
    for i, arg in enumerate(args):
        if isinstance(arg, popsim.program.Sequence):
            if i not in forms:
                break
            return list(args[:i]), arg, list(args[i + 1:])
    raise PoplibsError(f"{what}: the arguments match no form; the forms are: " + "; ".join(forms.values()))


#: the two forms of a norm's param gradients and of its gradients (PopLibs' overloads)
PARAM_GRADIENT_FORMS = {0: "(graph, acts_whitened, grads_in, prog)",
                        2: "(graph, acts, grads_in, mean, inv_std_dev, prog)"}
GRADIENT_FORMS = {2: "(graph, acts_whitened, grads_in, inv_std_dev, gamma, prog)",
                  3: "(graph, acts, grads_in, mean, inv_std_dev, gamma, prog)"}


def gradient_call(graph, acts, grads_in, args, forms, partials_type, name, what: str):
    """The checks of a norm's (param) gradients call, whose tensors after ``grads_in`` come
    in one of ``forms``: returns (those tensors, prog)."""
    tensors, prog, rest = split_at_prog(args, forms, what)
    partials_type = rest[0] if rest else partials_type
    check_common(graph, prog, name, what)
    check_acts(graph, acts, what)
    check_like(graph, grads_in, acts, what, "grads_in")
    check_partials(partials_type, what)
    if forms is GRADIENT_FORMS:
        check_per_channel(graph, tensors[-1], acts, what, "gamma")
    return tensors, prog


def check_options(options, what: str, known=()) -> dict:
    """Options: a dict of str -> str with PopLibs' keys (``known``)."""
    options = {} if options is None else options
    if not isinstance(options, dict):
        raise popsim.TypeError(f"{what}: options must be a dict of str -> str, found {type(options).__name__}")
    for key in options:
        if key not in known:
            raise popsim.InvalidOptionError(f"{what}: unknown option {key!r}; "
                                            + (f"the options are {', '.join(known)}" if known else
                                               "this norm takes no options (as PopLibs' batch norm)"))
    return options


def check_param(graph, t, what: str, role: str) -> None:
    """gamma or beta of an update: 1-D ``[C]``, FLOAT or HALF."""
    check_tensor(graph, t, what, role)
    if t.rank != 1 or t.dtype not in (FLOAT, HALF):
        raise PoplibsError(f"{what}: {role} '{t.name}' must be a 1-D FLOAT or HALF tensor [C] (one per channel), "
                           f"found {t.dtype.name} of shape {_shape(t)}")
