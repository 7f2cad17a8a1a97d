"""PopART's losses (domain ai.graphcore) onto popops: Nll (popops.encode_one_hot of the
labels, a multiply and popops.reduce of each row to the label's probability, its log
guarded by max(p, 1e-7), a mask for ``ignoreIndex``), L1 (popops.abs and a scaled
popops.reduce) and IdentityLoss (a scaled popops.reduce). Sum adds the samples, Mean
averages them (Nll: over the samples not ignored; L1, IdentityLoss: over the elements),
NoReduction keeps one value per sample. Their gradients are in popart/grads/losses.py."""
import numpy as np

from popsim import FLOAT, INT, UNSIGNED_INT, popops, poputil
from popsim.popops import expr as pe

from ..errors import popart_exception
from ..graphcore_builder import ReductionType, reduction_of
from ..op_table import GRAPHCORE, op

ADD = popops.Operation.ADD
#: PopART's guard on the log of a probability (float32)
LOG_EPS = 1e-7


def labels(ctx, node, value):
    """The labels as a 1-D INT (or UNSIGNED_INT) device tensor."""
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "iu":
            raise popart_exception(f"node {node.name!r} (Nll): the label (input 1) must be integers (INT32), found "
                                   f"{value.dtype}")
        c = ctx.graph.add_constant(INT, value.shape, value.astype(np.int32), f"{node.name}/label")
        poputil.map_tensor_linearly(ctx.graph, c)
        value = c
    if value.dtype not in (INT, UNSIGNED_INT):
        raise popart_exception(f"node {node.name!r} (Nll): the label (input 1) must be INT32 (or UINT32), found "
                               f"{value.dtype.name}; feed the labels as int32")
    return value.flatten()


def nll_operands(ctx, node, inputs):
    """(probs as [N, C], labels [N], the label's shape) of an Nll node, checked as PopART checks them."""
    probs = ctx.tensor(inputs[0], node, "probs (input 0)")
    label_shape = tuple(inputs[1].shape)
    if probs.rank == 0 or label_shape != tuple(probs.shape[:-1]):
        raise popart_exception(f"node {node.name!r} (Nll): the label {label_shape} must have the shape of the "
                               f"probabilities {tuple(probs.shape)} without their last (class) dimension")
    rows = int(np.prod(probs.shape[:-1]))
    return probs.reshape((rows, probs.shape[-1])), labels(ctx, node, inputs[1]), label_shape


def one_hot(ctx, node, probs2d, label1d, prog, name):
    encoded = ctx.graph.clone(probs2d, f"{name}/oneHot")
    popops.encode_one_hot(ctx.graph, label1d, encoded, prog, name=f"{name}/oneHot")
    return encoded


def ignore_mask(ctx, node, label1d, prog, name):
    """1.0 for the samples whose label is not ``ignoreIndex``, 0.0 for those that are (FLOAT [N])."""
    ignore = int(node.attrs["ignoreIndex"])
    return popops.map(ctx.graph, pe.select(pe.Const(0.0, FLOAT), pe.Const(1.0, FLOAT),
                                           pe._1 == pe.Const(ignore, label1d.dtype)), [label1d], prog,
                      f"{name}/mask")


def reduce_all(ctx, t, scale, name):
    """sum(t) * scale, a scalar (shape ())."""
    return popops.reduce(ctx.graph, t.flatten(), [0], popops.ReduceParams(ADD, scale=scale), ctx.prog, name)


@op("Nll", 1, summary="popops.encode_one_hot, popops.map, popops.reduce ADD, log(max(p, 1e-7))", domain=GRAPHCORE)
def nll(ctx, node, inputs):
    probs, label, label_shape = nll_operands(ctx, node, inputs)
    reduction, name = reduction_of(node), node.name
    encoded = one_hot(ctx, node, probs, label, ctx.prog, name)
    popops.mul_in_place(ctx.graph, encoded, probs, ctx.prog, f"{name}/mul")
    picked = popops.reduce(ctx.graph, encoded, [1], popops.ReduceParams(ADD), ctx.prog, f"{name}/pick")
    if not int(node.attrs.get("inputIsLogProbability", 0)):
        popops.map_in_place(ctx.graph, pe.log(pe.max(pe._1, pe.Const(LOG_EPS, FLOAT))), [picked], ctx.prog,
                            f"{name}/log")
    mask = ignore_mask(ctx, node, label, ctx.prog, name) if "ignoreIndex" in node.attrs else None
    if mask is not None:
        popops.mul_in_place(ctx.graph, picked, mask, ctx.prog, f"{name}/masked")
    if reduction is ReductionType.NoReduction:
        return [popops.neg(ctx.graph, picked, ctx.prog, f"{name}/neg").reshape(label_shape)]
    if reduction is ReductionType.Mean and mask is not None:   # over the samples not ignored
        count = reduce_all(ctx, mask, 1.0, f"{name}/count")
        total = reduce_all(ctx, picked, -1.0, f"{name}/sum")
        return [popops.div(ctx.graph, total, count, ctx.prog, f"{name}/mean")]
    scale = -1.0 / max(1, probs.shape[0]) if reduction is ReductionType.Mean else -1.0
    return [reduce_all(ctx, picked, scale, name)]


def _reduced(ctx, node, t, factor, name):
    """A loss's values ``t`` reduced as the node's reduction says, times ``factor``."""
    reduction = reduction_of(node)
    if reduction is ReductionType.NoReduction:
        return popops.mul(ctx.graph, t, factor, ctx.prog, name) if factor != 1.0 else t
    count = t.num_elements() if reduction is ReductionType.Mean else 1
    return reduce_all(ctx, t, factor / max(1, count), name)


@op("L1", 1, summary="popops.abs, popops.reduce ADD scaled by lambda (Mean: / elements)", domain=GRAPHCORE)
def l1(ctx, node, inputs):
    x = ctx.tensor(inputs[0], node)
    if x.rank == 0:
        raise popart_exception(f"node {node.name!r} (L1): its input must have rank >= 1, found a scalar")
    absolute = popops.abs(ctx.graph, x, ctx.prog, f"{node.name}/abs")
    return [_reduced(ctx, node, absolute, float(node.attrs.get("lambda", 1.0)), node.name)]


@op("IdentityLoss", 1, summary="popops.reduce ADD (Mean: / elements); NoReduction: the input", domain=GRAPHCORE)
def identity_loss(ctx, node, inputs):
    x = ctx.tensor(inputs[0], node)
    return [_reduced(ctx, node, x, 1.0, node.name)]
