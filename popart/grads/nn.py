"""Gradients of the network ops: Softmax (popnn.non_linearity_input_gradient
SOFTMAX_STABLE over the rows the forward pass made), LogSoftmax (popops: g - exp(y) *
sum(g)), Conv (poplin's backward pass: poplin.convolution with get_gradient_params and the
weights transposed and flipped for the input, poplin.calculate_weight_deltas for the
weights, popops.reduce over batch and field for the bias) and the pools
(popnn.pool_input_gradient), BatchNormalization in training mode (popnn.bn)."""
import numpy as np

from popsim import FLOAT, poplin, popnn, popops
from popsim.popops import expr as pe

from ..errors import popart_exception
from ..grad_table import grad
from ..node_attributes import poplin_options
from ..ops.nn import _spatial, conv_params, conv_weights_shape

ADD = popops.Operation.ADD


def _rows(ctx, node, t):
    """t as the [rows, cols] the forward softmax made, and how to undo it."""
    rank = t.rank
    axis = int(node.attrs.get("axis", -1 if ctx.opset >= 13 else 1)) % rank
    if ctx.opset < 13:
        shape = tuple(t.shape)
        return t.reshape((int(np.prod(shape[:axis])), int(np.prod(shape[axis:])))), lambda r: r.reshape(shape)
    perm = [d for d in range(rank) if d != axis] + [axis]
    moved = t.dim_shuffle(perm)
    back = [int(d) for d in np.argsort(perm)]
    return (moved.reshape((int(np.prod(moved.shape[:-1])), moved.shape[-1])),
            lambda r: r.reshape(tuple(moved.shape)).dim_shuffle(back))


@grad("Softmax")
def softmax(ctx, node, inputs, outputs, grads):
    y, undo = _rows(ctx, node, outputs[0])
    g, _ = _rows(ctx, node, grads[0])
    gx = popnn.non_linearity_input_gradient(ctx.graph, popnn.NonLinearityType.SOFTMAX_STABLE, y, g, ctx.prog,
                                            f"{node.name}/grad")
    return [undo(gx)]


@grad("LogSoftmax")
def log_softmax(ctx, node, inputs, outputs, grads):
    y, undo = _rows(ctx, node, outputs[0])
    g, _ = _rows(ctx, node, grads[0])
    total = popops.reduce(ctx.graph, g, [1], popops.ReduceParams(ADD), ctx.prog, f"{node.name}/grad/sum")
    gx = popops.map(ctx.graph, pe._1 - pe.exp(pe._2) * pe._3, [g, y, total.reshape((total.shape[0], 1))], ctx.prog,
                    f"{node.name}/grad")
    return [undo(gx)]


@grad("Conv")
def conv(ctx, node, inputs, outputs, grads):
    x, w = (ctx.tensor(v, node, f"input {i}") for i, v in enumerate(inputs[:2]))
    g = grads[0]
    params = conv_params(node, x.shape, w.shape)
    needed = ctx.needed
    out = [None, None]
    if needed[0]:
        weights = w.reshape(conv_weights_shape(params))
        out[0] = poplin.convolution(ctx.graph, g, weights, poplin.get_gradient_params(params), True, ctx.prog,
                                    f"{node.name}/grad0", options=poplin_options(node), cache=ctx.cache)
    if needed[1]:
        deltas = poplin.calculate_weight_deltas(ctx.graph, g, x, params, ctx.prog, f"{node.name}/grad1",
                                                options=poplin_options(node), cache=ctx.cache)
        out[1] = deltas.reshape(tuple(w.shape))
    if len(inputs) > 2 and inputs[2] is not None:
        dims = [0] + list(range(2, g.rank))
        out.append(popops.reduce(ctx.graph, g, dims, popops.ReduceParams(ADD), ctx.prog, f"{node.name}/grad2")
                   if needed[2] else None)
    return out


def _pool_params(node, x, kind):
    if node.op_type.startswith("Global"):
        field = tuple(x.shape[2:])
        zeros = (0,) * len(field)
        return popnn.PoolParams(getattr(popnn.PoolingType, kind), field, field, (1,) * len(field), zeros, zeros,
                                x.shape[1], x.shape[0], FLOAT), False
    kernel = [int(k) for k in node.attrs["kernel_shape"]]
    strides, lower, upper, dilations = _spatial(node, x.shape, kernel, node.op_type)
    if int(node.attrs.get("ceil_mode", 0)) or any(d != 1 for d in dilations):
        raise popart_exception(f"node {node.name!r} ({node.op_type}): popsim.popart differentiates pools without "
                               f"ceil_mode and dilations so far (found ceil_mode={node.attrs.get('ceil_mode', 0)}, "
                               f"dilations={list(dilations)})")
    include_pad = kind == "AVG" and int(node.attrs.get("count_include_pad", 0)) and any(lower + upper)
    pooling = popnn.PoolingType.SUM if include_pad else getattr(popnn.PoolingType, kind)
    return popnn.PoolParams(pooling, tuple(x.shape[2:]), kernel, strides, lower, upper, x.shape[1], x.shape[0],
                            FLOAT), include_pad


def _pool(kind):
    def rule(ctx, node, inputs, outputs, grads):
        x, y, g = ctx.tensor(inputs[0], node), outputs[0], grads[0]
        params, include_pad = _pool_params(node, x, kind)
        if include_pad:   # the forward pass scaled a SUM pool by 1/kernel size: the gradient likewise
            g = popops.mul(ctx.graph, g, 1.0 / float(np.prod(params.kernel_shape)), ctx.prog, f"{node.name}/grad/scale")
        return [popnn.pool_input_gradient(ctx.graph, params, x, y, g, False, ctx.prog, f"{node.name}/grad")]
    return rule


grad("MaxPool")(_pool("MAX"))
grad("GlobalMaxPool")(_pool("MAX"))
grad("AveragePool")(_pool("AVG"))
grad("GlobalAveragePool")(_pool("AVG"))


def is_training(node) -> bool:
    """A BatchNormalization in training mode: ``training_mode``, or more than one output before opset 14."""
    return bool(int(node.attrs.get("training_mode", 0))) or len([o for o in node.outputs if o]) > 1


@grad("BatchNormalization")
def batch_normalization(ctx, node, inputs, outputs, grads):
    """Training mode: popnn.bn.batch_norm_gradients (through the batch's statistics) for X,
    batch_norm_param_gradients for Scale and B; the running statistics take none."""
    if not is_training(node):
        raise popart_exception(f"node {node.name!r} (BatchNormalization) is in inference mode (one output) between a "
                               "weight and the loss; popsim.popart differentiates it in training mode: give it the "
                               "running mean and variance outputs (num_outputs=5 before opset 14, training_mode=1 "
                               "after)")
    x, gamma = (ctx.tensor(v, node, f"input {i}") for i, v in enumerate(inputs[:2]))
    if node.name in ctx.saved:   # the statistics the forward lowering computed
        mean, inv_std = ctx.saved[node.name]
    else:   # a lowering that kept none: the same statistics again
        mean, inv_std = popnn.bn.batch_norm_statistics(ctx.graph, x, float(node.attrs.get("epsilon", 1e-5)),
                                                       ctx.prog, name=f"{node.name}/grad/statistics")
    g = grads[0]
    out = [None] * len(inputs)
    if g is None:
        return out
    if ctx.needed[0]:
        out[0] = popnn.bn.batch_norm_gradients(ctx.graph, x, g, mean, inv_std, gamma, ctx.prog,
                                               name=f"{node.name}/grad0")
    if ctx.needed[1] or ctx.needed[2]:
        out[1], out[2] = popnn.bn.batch_norm_param_gradients(ctx.graph, x, g, mean, inv_std, ctx.prog,
                                                             name=f"{node.name}/grad12")
    return out


@grad("LayerNormalization")
def layer_normalization(ctx, node, inputs, outputs, grads):
    """popnn.ln.layer_norm_gradients for X, layer_norm_param_gradients for Scale and B, on
    the [rows, cols] view the forward pass normalised (a scalar Scale or B: summed)."""
    acts, gamma, mean, inv_std = ctx.saved[node.name]
    out = [None] * len(inputs)
    if grads[0] is None:
        return out
    g = grads[0].reshape(tuple(acts.shape))
    if ctx.needed[0]:
        out[0] = popnn.ln.layer_norm_gradients(ctx.graph, acts, g, mean, inv_std, gamma, ctx.prog,
                                               name=f"{node.name}/grad0").reshape(tuple(inputs[0].shape))
    if any(ctx.needed[1:3]):
        deltas = popnn.ln.layer_norm_param_gradients(ctx.graph, acts, g, mean, inv_std, ctx.prog,
                                                     name=f"{node.name}/grad12")
        for i, delta in zip((1, 2), deltas):
            if i < len(inputs) and ctx.needed[i]:
                shape = tuple(inputs[i].shape)
                out[i] = delta.reshape(shape) if int(np.prod(shape)) == delta.num_elements() else \
                    popops.reduce(ctx.graph, delta, [0], popops.ReduceParams(ADD), ctx.prog,
                                  f"{node.name}/grad{i}/sum").reshape(shape)
    return out
