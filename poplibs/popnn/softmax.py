"""popnn softmax and log-softmax over the innermost dimension (PopLibs' softmaxImpl and
softmaxInputGradientImpl in NonLinearity.cpp, popnn/LogSoftmax.hpp), built from popops
reductions and maps, so every step is vertices on the tiles:

- softmax: ``m = reduce MAX`` of each row (SOFTMAX_STABLE, SOFTMAX_SCALED); one map
  ``e = exp(x - m [+ log 62000])`` (SOFTMAX_SCALED adds log(SOFTMAX_SCALING) before the
  exp); ``s = reduce ADD`` of ``e`` in FLOAT; ``s = scale / s`` on the small row tensor
  (scale 62000 for SOFTMAX_SCALED, else 1), cast to HALF for HALF data; ``e *= s``;
- gradient from the softmax OUTPUT ``y`` and ``g`` the output gradient:
  ``dx = y * (g - sum(y * g) / scale)`` (``scale`` as above: PopLibs' formula omits it,
  which is only right for scale 1);
- log-softmax: ``x - m - log(sum exp(x - m))`` (PopLibs' LogSoftmaxTest reference).

A rank-1 tensor is one row. Rows are the tensor flattened to [rows, innermost].
"""
import math

from popsim import FLOAT, HALF

from .. import popops
from ..poputil import PoplibsError
from ..poputil.checks import check_name, check_prog, check_writable, describe
from ..popops import expr as pe
from .non_linearity_checks import check_fp_tensor
from .non_linearity_vertices import SOFTMAX_SCALING, NonLinearityType

__all__ = ["log_softmax", "log_softmax_in_place"]

_MAX = popops.ReduceParams(popops.Operation.MAX)


def _rows(t, what: str):
    """``t`` as [rows, innermost] (a rank-1 tensor is one row)."""
    if t.rank < 1:
        raise PoplibsError(f"{what}: {describe(t)} must have at least 1 dimension (softmax works over the "
                           "innermost one)")
    return t.expand([0]) if t.rank == 1 else t.flatten(0, t.rank - 1)


def _as_float(e, dtype):
    return pe.Cast(e, FLOAT) if dtype == HALF else e


def _as_type(e, dtype):
    return pe.Cast(e, HALF) if dtype == HALF else e


def _row_max(graph, x, prog, name):
    return popops.reduce(graph, x, [1], _MAX, prog, f"{name}/max").expand([1])


def softmax_impl(graph, nl_type, t, prog, name: str, in_place: bool, what: str):
    """The softmax ``nl_type`` of ``t`` over its innermost dimension: a new tensor, or
    ``t`` itself when ``in_place``."""
    x = _rows(t, what)
    name = name or f"Nonlinearity/{nl_type.name}"
    if t.num_elements() == 0:
        return t if in_place else graph.clone(t, f"{name}/out")
    stable = nl_type is not NonLinearityType.SOFTMAX
    scale = SOFTMAX_SCALING if nl_type is NonLinearityType.SOFTMAX_SCALED else 1.0
    # exp(x - max [+ log scale]), computed in float32 and rounded once for HALF
    arg = _as_float(pe._1, t.dtype)
    if stable:
        arg = arg - _as_float(pe._2, t.dtype)
        if scale != 1.0:
            arg = arg + pe.Const(math.log(scale))
    expr = _as_type(pe.exp(arg), t.dtype)
    tensors = [x, _row_max(graph, x, prog, name)] if stable else [x]
    if in_place:
        popops.map_in_place(graph, expr, tensors, prog, f"{name}/exp")
        e = x
    else:
        e = popops.map(graph, expr, tensors, prog, f"{name}/exp")
    total = popops.reduce(graph, e, [1], popops.ReduceParams(popops.Operation.ADD), prog, f"{name}/sum",
                          out_type=FLOAT)
    popops.map_in_place(graph, pe.Const(scale) / pe._1, [total], prog, f"{name}/invScale")
    if t.dtype == HALF:
        total = popops.cast(graph, total, HALF, prog, f"{name}/castSum")
    popops.mul_in_place(graph, e, total.expand([1]), prog, f"{name}/mulInvSum")
    return t if in_place else e.reshape(t.shape)


def softmax_gradient(graph, nl_type, y, g, prog, name: str, what: str):
    """The input gradient of the softmax ``nl_type`` from its output ``y`` and output
    gradient ``g`` (same shape and type): ``y * (g - sum(y * g) / scale)`` per row."""
    name = name or f"SoftMaxGradient/{nl_type.name}"
    y2, g2 = _rows(y, what), _rows(g, what)
    if y.num_elements() == 0:
        return graph.clone(y, f"{name}/inGrad")
    scale = SOFTMAX_SCALING if nl_type is NonLinearityType.SOFTMAX_SCALED else 1.0
    y_g = popops.map(graph, pe._1 * pe._2, [y2, g2], prog, f"{name}/mul")
    total = popops.reduce(graph, y_g, [1], popops.ReduceParams(popops.Operation.ADD, scale=1.0 / scale), prog,
                          f"{name}/sum", out_type=FLOAT)
    expr = _as_type(_as_float(pe._1, y.dtype) * (_as_float(pe._2, y.dtype) - pe._3), y.dtype)
    popops.map_with_output(graph, expr, [y2, g2, total.expand([1])], y_g, prog, f"{name}/inGrad")
    return y_g.reshape(y.shape)


def _log_softmax(graph, t, prog, name: str, in_place: bool, what: str):
    check_fp_tensor(graph, t, what, "input")
    check_prog(prog, what)
    check_name(name, what)
    if in_place:
        check_writable(t, what, "input")
    x = _rows(t, what)
    name = name or "LogSoftmax"
    if t.num_elements() == 0:
        return t if in_place else graph.clone(t, f"{name}/out")
    m = _row_max(graph, x, prog, name)
    shifted = _as_float(pe._1, t.dtype) - _as_float(pe._2, t.dtype)
    e = popops.map(graph, _as_type(pe.exp(shifted), t.dtype), [x, m], prog, f"{name}/exp")
    log_sum = popops.reduce(graph, e, [1], popops.ReduceParams(popops.Operation.ADD), prog, f"{name}/sum",
                            out_type=FLOAT)
    popops.log_in_place(graph, log_sum, prog, f"{name}/log")
    expr = _as_type(shifted - pe._3, t.dtype)
    if in_place:
        popops.map_in_place(graph, expr, [x, m, log_sum.expand([1])], prog, f"{name}/sub")
        return t
    return popops.map(graph, expr, [x, m, log_sum.expand([1])], prog, f"{name}/sub").reshape(t.shape)


def log_softmax(graph, t, prog, name: str = ""):
    """PopLibs' logSoftmax: a new tensor ``x - max - log(sum(exp(x - max)))`` over the
    innermost dimension of ``t`` (FLOAT or HALF), mapped like ``t``."""
    return _log_softmax(graph, t, prog, name, False, "popnn.log_softmax")


def log_softmax_in_place(graph, t, prog, name: str = "") -> None:
    """PopLibs' logSoftmaxInPlace: ``t`` = log_softmax(``t``)."""
    _log_softmax(graph, t, prog, name, True, "popnn.log_softmax_in_place")
