"""Gradients of the element-wise ops: Add, Sub, Mul, Div, Sum (each operand's share summed
back over its broadcast dimensions), the unary ops as popops maps, Relu, Sigmoid and Tanh
by popnn.non_linearity_input_gradient (from the forward output), LeakyRelu as a select,
Dropout as its forward's mask (popart/ops/dropout.py) drawn again."""
from popsim import FLOAT, popnn, popops
from popsim.popops import expr as pe

from ..grad_table import grad
from ..ops.dropout import apply_mask, ratio_of
from .common import unbroadcast


def _shape(v):
    return tuple(v.shape)


@grad("Add", "Sum")
def add(ctx, node, inputs, outputs, grads):
    g = grads[0]
    return [unbroadcast(ctx, g, _shape(x), f"{node.name}/grad{i}") for i, x in enumerate(inputs)]


@grad("Sub")
def sub(ctx, node, inputs, outputs, grads):
    g = grads[0]
    neg = popops.neg(ctx.graph, g, ctx.prog, f"{node.name}/grad1/neg")
    return [unbroadcast(ctx, g, _shape(inputs[0]), f"{node.name}/grad0"),
            unbroadcast(ctx, neg, _shape(inputs[1]), f"{node.name}/grad1")]


@grad("Mul")
def mul(ctx, node, inputs, outputs, grads):
    g = grads[0]
    a, b = (ctx.tensor(v, node, f"input {i}") for i, v in enumerate(inputs))
    return [unbroadcast(ctx, popops.mul(ctx.graph, g, b, ctx.prog, f"{node.name}/grad0/mul"), a.shape,
                        f"{node.name}/grad0"),
            unbroadcast(ctx, popops.mul(ctx.graph, g, a, ctx.prog, f"{node.name}/grad1/mul"), b.shape,
                        f"{node.name}/grad1")]


@grad("Div")
def div(ctx, node, inputs, outputs, grads):
    g = grads[0]
    a, b = (ctx.tensor(v, node, f"input {i}") for i, v in enumerate(inputs))
    ga = popops.div(ctx.graph, g, b, ctx.prog, f"{node.name}/grad0/div")
    gb = popops.map(ctx.graph, -(pe._1 * pe._2) / (pe._3 * pe._3), [g, a, b], ctx.prog, f"{node.name}/grad1/map")
    return [unbroadcast(ctx, ga, a.shape, f"{node.name}/grad0"), unbroadcast(ctx, gb, b.shape, f"{node.name}/grad1")]


#: unary op -> (the gradient as an expression of _1 = the output's gradient, _2 = the
#: forward input, _3 = the forward output)
_UNARY = {
    "Exp": pe._1 * pe._3,
    "Log": pe._1 / pe._2,
    "Sqrt": pe._1 * 0.5 / pe._3,
    "Neg": -pe._1,
    "Abs": pe._1 * pe.signum(pe._2),
    "Reciprocal": -(pe._1 * pe._3 * pe._3),
    "Erf": pe._1 * 1.1283791670955126 * pe.exp(-(pe._2 * pe._2)),
}


def _unary(expr):
    def rule(ctx, node, inputs, outputs, grads):
        x = ctx.tensor(inputs[0], node)
        return [popops.map(ctx.graph, expr, [grads[0], x, outputs[0]], ctx.prog, f"{node.name}/grad")]
    return rule


for _name, _expr in _UNARY.items():
    grad(_name)(_unary(_expr))

_NON_LINEAR = {"Relu": popnn.NonLinearityType.RELU, "Sigmoid": popnn.NonLinearityType.SIGMOID,
               "Tanh": popnn.NonLinearityType.TANH}


def _non_linear(kind):
    def rule(ctx, node, inputs, outputs, grads):
        return [popnn.non_linearity_input_gradient(ctx.graph, kind, outputs[0], grads[0], ctx.prog,
                                                   f"{node.name}/grad")]
    return rule


for _name, _kind in _NON_LINEAR.items():
    grad(_name)(_non_linear(_kind))


@grad("LeakyRelu")
def leaky_relu(ctx, node, inputs, outputs, grads):
    alpha = float(node.attrs.get("alpha", 0.01))
    x = ctx.tensor(inputs[0], node)
    return [popops.map(ctx.graph, pe.select(pe._1, pe._1 * alpha, pe._2 > pe.Const(0.0, FLOAT)), [grads[0], x],
                       ctx.prog, f"{node.name}/grad")]


@grad("Identity")
def identity(ctx, node, inputs, outputs, grads):
    return [grads[0]] + [None] * (len(inputs) - 1)


@grad("Dropout")
def dropout(ctx, node, inputs, outputs, grads):
    """The forward's mask drawn again from the seed it used (kept in ``ctx.saved``) and
    applied, scaled, to the output's gradient, as PopART's DropoutGradOp; where the forward
    was the identity (inference, ratio 0), the gradient passes through."""
    if node.name not in ctx.saved:
        return [grads[0]] + [None] * (len(inputs) - 1)
    (seed,) = ctx.saved[node.name]
    g, _ = apply_mask(ctx, node, seed, grads[0], ratio_of(ctx, node, inputs), f"{node.name}/grad")
    return [g] + [None] * (len(inputs) - 1)


@grad("Clip")
def clip(ctx, node, inputs, outputs, grads):
    """The gradient where the input was not clipped (the output equals it), 0 where it was."""
    x = ctx.tensor(inputs[0], node)
    g = popops.map(ctx.graph, pe.select(pe._1, pe.Const(0.0, FLOAT), pe._2 == pe._3), [grads[0], x, outputs[0]],
                   ctx.prog, f"{node.name}/grad")
    return [g] + [None] * (len(inputs) - 1)


@grad("Max", "Min")
def extremum(ctx, node, inputs, outputs, grads):
    """Each input's gradient where it is the result (every input equal to it, on ties)."""
    out = []
    for i, v in enumerate(inputs):
        x = ctx.tensor(v, node, f"input {i}")
        g = popops.map(ctx.graph, pe.select(pe._1, pe.Const(0.0, FLOAT), pe._2 == pe._3), [grads[0], x, outputs[0]],
                       ctx.prog, f"{node.name}/grad{i}/select")
        out.append(unbroadcast(ctx, g, tuple(x.shape), f"{node.name}/grad{i}"))
    return out


@grad("Pow")
def pow_(ctx, node, inputs, outputs, grads):
    """d(a^b)/da = b a^(b-1); d(a^b)/db = a^b log(a)."""
    a, b = (ctx.tensor(v, node, f"input {i}") for i, v in enumerate(inputs))
    g, y = grads[0], outputs[0]
    ga = popops.map(ctx.graph, pe._1 * pe._3 * pe.pow(pe._2, pe._3 - pe.Const(1.0, FLOAT)), [g, a, b], ctx.prog,
                    f"{node.name}/grad0/map")
    out = [unbroadcast(ctx, ga, tuple(a.shape), f"{node.name}/grad0"), None]
    if ctx.needed[1]:
        gb = popops.map(ctx.graph, pe._1 * pe._2 * pe.log(pe._3), [g, y, a], ctx.prog, f"{node.name}/grad1/map")
        out[1] = unbroadcast(ctx, gb, tuple(b.shape), f"{node.name}/grad1")
    return out


@grad("Gelu")
def gelu(ctx, node, inputs, outputs, grads):
    kind = {"none": popnn.NonLinearityType.GELU_ERF, "tanh": popnn.NonLinearityType.GELU}[
        node.attrs.get("approximate", "none")]
    x = ctx.tensor(inputs[0], node)
    return [popnn.non_linearity_input_gradient(ctx.graph, kind, x, grads[0], ctx.prog, f"{node.name}/grad")]
