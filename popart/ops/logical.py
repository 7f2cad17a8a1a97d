"""Comparison ONNX ops (popops.eq, lt, gt, lteq, gteq: BOOL results, numpy broadcasting), the
logical ops on BOOL tensors (popops.logical_and, logical_or, logical_not; Xor as popops.neq)
and Where (popops.select). A BOOL host constant used as Where's condition is placed on the
tiles as a BOOL constant."""
import numpy as np

from popsim import BOOL, popops, poputil

from ..op_table import op

_COMPARE = {"Equal": popops.eq, "Less": popops.lt, "Greater": popops.gt, "LessOrEqual": popops.lteq,
            "GreaterOrEqual": popops.gteq}


def _compare(fn):
    def lower(ctx, node, inputs):
        a, b = (ctx.tensor(v, node, f"input {i}") for i, v in enumerate(inputs))
        return [fn(ctx.graph, a, b, ctx.prog, node.name)]
    return lower


for _name, _fn in _COMPARE.items():
    op(_name, 7, summary=f"popops.{_fn.__name__} (BOOL result, numpy broadcasting)")(_compare(_fn))
for _name, _fn in {"And": popops.logical_and, "Or": popops.logical_or, "Xor": popops.neq}.items():
    op(_name, 7, summary=f"popops.{_fn.__name__} of BOOL tensors (numpy broadcasting)")(
        lambda ctx, node, inputs, fn=_fn: [fn(ctx.graph, _condition(ctx, node, inputs[0]),
                                              _condition(ctx, node, inputs[1]), ctx.prog, node.name)])


@op("Not", 1, summary="popops.logical_not")
def logical_not(ctx, node, inputs):
    return [popops.logical_not(ctx.graph, _condition(ctx, node, inputs[0]), ctx.prog, node.name)]


def _condition(ctx, node, value):
    if not isinstance(value, np.ndarray):
        return value
    array = np.ascontiguousarray(value, bool)
    c = ctx.graph.add_constant(BOOL, array.shape, array, f"{node.name}/condition")
    poputil.map_tensor_linearly(ctx.graph, c)
    return c


@op("Where", 9, summary="popops.select (numpy broadcasting)")
def where(ctx, node, inputs):
    cond = _condition(ctx, node, inputs[0])
    a, b = (ctx.tensor(v, node, f"input {i}") for i, v in ((1, inputs[1]), (2, inputs[2])))
    return [popops.select(ctx.graph, a, b, cond, ctx.prog, node.name)]
