"""Element-wise ONNX ops: popops' binary ops (ONNX's multidirectional broadcasting is
numpy's, as popops') and unary ops, popnn's non-linearities."""
from popsim import popnn, popops

from ..op_table import op

_BINARY = {"Add": popops.add, "Sub": popops.sub, "Mul": popops.mul, "Div": popops.div}
_UNARY = {"Exp": popops.exp, "Log": popops.log, "Sqrt": popops.sqrt, "Neg": popops.neg, "Abs": popops.abs}
_NON_LINEAR = {"Relu": popnn.NonLinearityType.RELU, "Sigmoid": popnn.NonLinearityType.SIGMOID,
               "Tanh": popnn.NonLinearityType.TANH}


def _binary(fn):
    def lower(ctx, node, inputs):
        a, b = (ctx.tensor(v, node, f"input {i}") for i, v in enumerate(inputs))
        return [fn(ctx.graph, a, b, ctx.prog, node.name)]
    return lower


def _unary(fn):
    def lower(ctx, node, inputs):
        return [fn(ctx.graph, ctx.tensor(inputs[0], node), ctx.prog, node.name)]
    return lower


def _non_linear(kind):
    def lower(ctx, node, inputs):
        return [popnn.non_linearity(ctx.graph, kind, ctx.tensor(inputs[0], node), ctx.prog, node.name)]
    return lower


for _name, _fn in _BINARY.items():
    op(_name, 7, summary=f"popops.{_fn.__name__} (numpy broadcasting)")(_binary(_fn))
for _name, _fn in _UNARY.items():
    op(_name, 6, summary=f"popops.{_fn.__name__}")(_unary(_fn))
for _name, _kind in _NON_LINEAR.items():
    op(_name, 6, summary=f"popnn.non_linearity {_kind.name}")(_non_linear(_kind))


@op("Identity", 1, summary="the input tensor itself (no program)")
def identity(ctx, node, inputs):
    return [inputs[0]]
