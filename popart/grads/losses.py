"""Gradients of PopART's losses, as PopART's NllGrad, L1Grad and IdentityLossGrad compute
them: Nll's is -1/max(p, 1e-10) at each sample's label (-1 for log probabilities) and 0
elsewhere, times the loss's gradient, over the sample count for Mean (the samples not
ignored, with ``ignoreIndex``; ignored samples get 0); L1's is lambda * sign(x); the
identity loss's is 1; Mean divides both by the element count. A Softmax read only by an Nll
has the two differentiated at once (PopART's NlllWithSoftmaxGradDirect): p - onehot."""
from popsim import FLOAT, popops
from popsim.popops import expr as pe

from ..grad_table import fused_grad, grad
from ..graphcore_builder import ReductionType, reduction_of
from ..ops.losses import ignore_mask, nll_operands, one_hot, reduce_all
from .common import count, expand_to

#: PopART's guard on the division by a probability (float32)
DIV_EPS = 1e-10


def _per_element(g, shape, reduction):
    """The loss's gradient seen at the loss input's ``shape``."""
    if reduction is ReductionType.NoReduction:
        return expand_to(g.reshape(tuple(g.shape) + (1,) * (len(shape) - g.rank)), shape)
    return expand_to(g.reshape(()), shape)


@grad("Nll")
def nll(ctx, node, inputs, outputs, grads):
    probs, label, _ = nll_operands(ctx, node, inputs)
    name = f"{node.name}/grad"
    encoded = one_hot(ctx, node, probs, label, ctx.prog, name)
    if int(node.attrs.get("inputIsLogProbability", 0)):
        popops.neg_in_place(ctx.graph, encoded, ctx.prog, f"{name}/neg")
    else:
        popops.map_in_place(ctx.graph, -pe._1 / pe.max(pe._2, pe.Const(DIV_EPS, FLOAT)), [encoded, probs], ctx.prog,
                            f"{name}/negDiv")
    _scale_rows(ctx, node, encoded, label, grads[0], name)
    return [encoded.reshape(tuple(inputs[0].shape)), None]


def _scale_rows(ctx, node, d, label, g, name) -> None:
    """``d`` [N, C] times the loss's gradient ``g`` (per row with NoReduction), over the
    sample count for Mean (the samples not ignored), ignored rows zeroed: in place."""
    rows, reduction = d.shape[0], reduction_of(node)
    g = g.reshape((rows, 1)) if reduction is ReductionType.NoReduction else g.reshape((1, 1))
    if "ignoreIndex" in node.attrs:
        mask = ignore_mask(ctx, node, label, ctx.prog, name)
        popops.mul_in_place(ctx.graph, d, mask.reshape((rows, 1)), ctx.prog, f"{name}/masked")
        if reduction is ReductionType.Mean:
            kept = reduce_all(ctx, mask, 1.0, f"{name}/count")
            g = popops.div(ctx.graph, g, kept.reshape((1, 1)), ctx.prog, f"{name}/mean")
    elif reduction is ReductionType.Mean:
        g = popops.mul(ctx.graph, g, 1.0 / max(1, rows), ctx.prog, f"{name}/mean")
    popops.mul_in_place(ctx.graph, d, g, ctx.prog, f"{name}/scaled")


def _over_classes(softmax, nll, values, opset) -> bool:
    """The softmax runs over the last dimension (the classes) and the Nll reads probabilities."""
    rank = values[softmax.outputs[0]].rank
    axis = int(softmax.attrs.get("axis", -1 if opset >= 13 else 1))
    return axis % rank == rank - 1 and not int(nll.attrs.get("inputIsLogProbability", 0))


@fused_grad("Softmax", "Nll", when=_over_classes)
def softmax_nll(ctx, softmax, nll, inputs, grads):
    """The gradient at the softmax's input, as PopART's NlllWithSoftmaxGradDirect pattern
    gives it: (p - onehot(label)) times the loss's gradient (over the count for Mean)."""
    probs, label, _ = nll_operands(ctx, nll, inputs)
    name = f"{nll.name}/softmaxGrad"
    encoded = one_hot(ctx, nll, probs, label, ctx.prog, name)
    popops.map_in_place(ctx.graph, pe._2 - pe._1, [encoded, probs], ctx.prog, f"{name}/sub")
    _scale_rows(ctx, nll, encoded, label, grads[0], name)
    return encoded.reshape(tuple(inputs[0].shape))


def _scale(node, shape, factor):
    return factor / max(1, count(shape)) if reduction_of(node) is ReductionType.Mean else factor


@grad("L1")
def l1(ctx, node, inputs, outputs, grads):
    x = ctx.tensor(inputs[0], node)
    scale = _scale(node, x.shape, float(node.attrs.get("lambda", 1.0)))
    g = _per_element(grads[0], tuple(x.shape), reduction_of(node))
    return [popops.map(ctx.graph, pe.signum(pe._1) * pe.Const(scale, FLOAT) * pe._2, [x, g], ctx.prog,
                       f"{node.name}/grad")]


@grad("IdentityLoss")
def identity_loss(ctx, node, inputs, outputs, grads):
    x = ctx.tensor(inputs[0], node)
    scale = _scale(node, x.shape, 1.0)
    g = _per_element(grads[0], tuple(x.shape), reduction_of(node))
    return [popops.mul(ctx.graph, g, scale, ctx.prog, f"{node.name}/grad")]
