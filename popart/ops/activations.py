"""Activation ONNX ops beyond popnn's non-linearity table: LeakyRelu (popops.map of a
select), Gelu (popnn's GELU_ERF, or its tanh approximation GELU), Erf (popops.erf)."""
from popsim import popnn, popops
from popsim.popops import expr as pe

from ..errors import popart_exception
from ..op_table import op


@op("LeakyRelu", 6, summary="popops.map: select(x, alpha * x, x > 0)")
def leaky_relu(ctx, node, inputs):
    x = ctx.tensor(inputs[0], node)
    alpha = float(node.attrs.get("alpha", 0.01))
    return [popops.map(ctx.graph, pe.select(pe._1, pe._1 * alpha, pe._1 > 0.0), [x], ctx.prog, node.name)]


@op("Gelu", 20, summary="popnn.non_linearity GELU_ERF (approximate='none') or GELU (approximate='tanh')")
def gelu(ctx, node, inputs):
    approximate = node.attrs.get("approximate", "none")
    kinds = {"none": popnn.NonLinearityType.GELU_ERF, "tanh": popnn.NonLinearityType.GELU}
    if approximate not in kinds:
        raise popart_exception(f"node {node.name!r} (Gelu): approximate={approximate!r} is not one of 'none', "
                               "'tanh'")
    return [popnn.non_linearity(ctx.graph, kinds[approximate], ctx.tensor(inputs[0], node), ctx.prog, node.name)]


@op("Erf", 9, summary="popops.erf")
def erf(ctx, node, inputs):
    return [popops.erf(ctx.graph, ctx.tensor(inputs[0], node), ctx.prog, node.name)]
