"""Neural-network ONNX ops: Softmax and LogSoftmax (popnn), Conv (poplin.convolution, poplin.add_bias),
global pools (popnn.pool), BatchNormalization (popnn.bn; training mode in bn_training.py);
MaxPool and AveragePool are in pool.py."""
import numpy as np

from popsim import FLOAT, poplin, popnn, popops
from popsim.popops import expr as pe

from ..errors import popart_exception
from ..node_attributes import poplin_options
from ..op_table import op
from . import bn_training


def _softmax(apply):
    """Softmax-like lowering: ``apply(graph, rows_2d, prog, name)`` over the innermost dimension."""
    def lower(ctx, node, inputs):
        x = ctx.tensor(inputs[0], node)
        rank = x.rank
        axis = int(node.attrs.get("axis", -1 if ctx.opset >= 13 else 1))
        if not -rank <= axis < rank:
            raise popart_exception(f"node {node.name!r} ({node.op_type}): axis {axis} is out of range for shape "
                                   f"{x.shape}")
        axis %= rank
        if ctx.opset < 13:  # the input coerced to 2-D at axis: softmax over everything from axis on
            rows = int(np.prod(x.shape[:axis]))
            y = apply(ctx.graph, x.reshape((rows, int(np.prod(x.shape[axis:])))), ctx.prog, node.name)
            return [y.reshape(x.shape)]
        perm = [d for d in range(rank) if d != axis] + [axis]
        moved = x.dim_shuffle(perm)
        y = apply(ctx.graph, moved.reshape((int(np.prod(moved.shape[:-1])), moved.shape[-1])), ctx.prog, node.name)
        return [y.reshape(moved.shape).dim_shuffle(list(np.argsort(perm)))]
    return lower


op("Softmax", 1, summary="popnn.non_linearity SOFTMAX_STABLE over the innermost dimension")(_softmax(
    lambda graph, t, prog, name: popnn.non_linearity(graph, popnn.NonLinearityType.SOFTMAX_STABLE, t, prog, name)))
op("LogSoftmax", 1, summary="popnn.log_softmax over the innermost dimension (the axis moved there by a view)")(
    _softmax(popnn.log_softmax))


def _spatial(node, x_shape, kernel, what):
    """strides, pads (lower, upper) and dilations of a conv or pool node."""
    rank = len(kernel)
    strides = [int(s) for s in node.attrs.get("strides", [1] * rank)]
    dilations = [int(d) for d in node.attrs.get("dilations", [1] * rank)]
    auto_pad = node.attrs.get("auto_pad", "NOTSET")
    if auto_pad in ("NOTSET", "VALID"):
        pads = [int(p) for p in node.attrs.get("pads", [0] * 2 * rank)] if auto_pad == "NOTSET" else [0] * 2 * rank
        return strides, pads[:rank], pads[rank:], dilations
    if auto_pad not in ("SAME_UPPER", "SAME_LOWER"):
        raise popart_exception(f"node {node.name!r} ({what}): auto_pad {auto_pad!r} is not one of NOTSET, VALID, "
                               "SAME_UPPER, SAME_LOWER")
    lower, upper = [], []
    for d in range(rank):
        size = x_shape[2 + d]
        out = -(-size // strides[d])
        total = max(0, (out - 1) * strides[d] + (kernel[d] - 1) * dilations[d] + 1 - size)
        small, big = total // 2, total - total // 2
        lower.append(small if auto_pad == "SAME_UPPER" else big)
        upper.append(big if auto_pad == "SAME_UPPER" else small)
    return strides, lower, upper, dilations


def conv_params(node, x_shape, w_shape, dtype=FLOAT):
    """poplin's ConvParams of a Conv node on X ``x_shape`` and W ``w_shape`` (the lowering
    and the creation of its weights and input share them)."""
    if len(x_shape) < 3 or len(w_shape) != len(x_shape):
        raise popart_exception(f"node {node.name!r} (Conv): expected X [N, C, *field] and W [M, C/group, *kernel] of "
                               f"the same rank, found {tuple(x_shape)} and {tuple(w_shape)}")
    group = int(node.attrs.get("group", 1))
    n, c = x_shape[:2]
    m, cin = w_shape[:2]
    kernel = list(w_shape[2:])
    if c != cin * group or m % group:
        raise popart_exception(f"node {node.name!r} (Conv): X has {c} channels and W {tuple(w_shape)} with group "
                               f"{group}: expected C = W.shape[1] * group and M divisible by group")
    strides, lower, upper, dilations = _spatial(node, x_shape, kernel, "Conv")
    return poplin.ConvParams(dtype, n, tuple(x_shape[2:]), tuple(kernel), cin, m // group, group,
                             stride=tuple(strides), padding_lower=tuple(lower), padding_upper=tuple(upper),
                             kernel_dilation=tuple(dilations))


def conv_weights_shape(params) -> tuple:
    """poplin's weights layout [G, Cout, Cin, *kernel] of ONNX's W [M, C/group, *kernel]."""
    return (params.num_conv_groups, params.output_channels_per_group, params.input_channels_per_group) + \
        tuple(params.kernel_shape)


@op("Conv", 1, summary="poplin.convolution, poplin.add_bias")
def conv(ctx, node, inputs):
    x, w = (ctx.tensor(v, node, f"input {i}") for i, v in enumerate(inputs[:2]))
    params = conv_params(node, x.shape, w.shape, x.dtype)
    weights = w.reshape(conv_weights_shape(params))
    y = poplin.convolution(ctx.graph, x, weights, params, False, ctx.prog, node.name, options=poplin_options(node),
                           cache=ctx.cache)
    if len(inputs) > 2 and inputs[2] is not None:
        poplin.add_bias(ctx.graph, y, ctx.tensor(inputs[2], node, "input 2 (B)"), ctx.prog, f"{node.name}/bias")
    return [y]


@op("BatchNormalization", 9, summary="inference: popops.map (scale / sqrt(var + eps)), popnn.bn.batch_normalise; "
    "training mode: popnn.bn.batch_norm_statistics, batch_normalise, popops.map of the running statistics")
def batch_normalization(ctx, node, inputs):
    if bn_training.is_training(node):
        return bn_training.lower(ctx, node, inputs)
    x, scale, bias, mean, var = (ctx.tensor(v, node, f"input {i}") for i, v in enumerate(inputs))
    eps = float(node.attrs.get("epsilon", 1e-5))
    multiplicand = popops.map(ctx.graph, pe._1 * pe.rsqrt(pe._2 + eps), [scale, var], ctx.prog,
                              f"{node.name}/multiplicand")
    addend = popops.map(ctx.graph, pe._1 - pe._2 * pe._3, [bias, mean, multiplicand], ctx.prog,
                        f"{node.name}/addend")
    return [popnn.bn.batch_normalise(ctx.graph, x, multiplicand, addend, ctx.prog, node.name)]


def _global_pool(kind):
    def lower(ctx, node, inputs):
        x = ctx.tensor(inputs[0], node)
        if x.rank < 3:
            raise popart_exception(f"node {node.name!r} ({node.op_type}): X {x.shape} must be [N, C, *field]")
        field = tuple(x.shape[2:])
        zeros = (0,) * len(field)
        params = popnn.PoolParams(getattr(popnn.PoolingType, kind), field, field, (1,) * len(field), zeros, zeros,
                                  x.shape[1], x.shape[0], x.dtype)
        return [popnn.pool(ctx.graph, params, x, ctx.prog, node.name)]
    return lower


op("GlobalAveragePool", 1, summary="popnn.pool AVG over the whole field")(_global_pool("AVG"))
op("GlobalMaxPool", 1, summary="popnn.pool MAX over the whole field")(_global_pool("MAX"))
