"""LayerNormalization onto popnn.ln: X seen as [rows, cols] (the dimensions before ``axis``,
and from it on), layer_norm_statistics for each row's mean and inverse standard deviation
(biased variance, as ONNX), layer_normalise with Scale and B as the per-column gamma and
beta (B absent: a zero constant). Mean and InvStdDev outputs are views of the statistics.
LRN: the squares' sum over each channel's window, a copy of the squares with each channel
shift's overlapping slices added in place (popops.add_in_place; the window's channels
outside [0, C) add nothing, so nothing is padded), then one popops.map."""
import numpy as np

from popsim import popnn, popops
from popsim.program import Copy
from popsim.popops import expr as pe

from ..errors import popart_exception
from ..op_table import op


@op("LayerNormalization", 17, summary="popnn.ln.layer_norm_statistics, popnn.ln.layer_normalise (X as [rows, cols])")
def layer_normalization(ctx, node, inputs):
    x = ctx.tensor(inputs[0], node)
    rank = x.rank
    axis = int(node.attrs.get("axis", -1))
    if not -rank <= axis < rank:
        raise popart_exception(f"node {node.name!r} (LayerNormalization): axis {axis} is out of range for rank {rank}")
    axis %= rank
    rows, cols = int(np.prod(x.shape[:axis])), int(np.prod(x.shape[axis:]))
    shape = tuple(x.shape[axis:])

    def param(value, role, fill):
        if value is None:
            value = np.full(shape, fill, np.float32)
        t = ctx.tensor(value, node, role)
        if tuple(t.shape) != shape:
            if int(np.prod(t.shape)) == 1:   # a scalar scale or bias, broadcast
                return t.reshape((1,)).broadcast(cols, 0)
            raise popart_exception(f"node {node.name!r} (LayerNormalization): its {role} has shape {tuple(t.shape)}; "
                                   f"popsim.popart expects X's shape from axis {axis} on, {shape}")
        return t.reshape((cols,))

    gamma = param(inputs[1], "Scale (input 1)", 1.0)
    beta = param(inputs[2] if len(inputs) > 2 else None, "B (input 2)", 0.0)
    eps = float(node.attrs.get("epsilon", 1e-5))
    acts = x.reshape((rows, cols))
    mean, inv_std = popnn.ln.layer_norm_statistics(ctx.graph, acts, eps, ctx.prog, stable_algo=True,
                                                   name=f"{node.name}/statistics")
    y, _ = popnn.ln.layer_normalise(ctx.graph, acts, gamma, beta, mean, inv_std, ctx.prog, node.name)
    ctx.saved[node.name] = (acts, gamma, mean, inv_std)   # for the gradient (popart/grads/nn.py)
    stat_shape = tuple(x.shape[:axis]) + (1,) * (rank - axis)
    return [y.reshape(tuple(x.shape)), mean.reshape(stat_shape), inv_std.reshape(stat_shape)]


@op("LRN", 1, summary="popops.square, popops.add_in_place of channel-shifted slices, popops.map "
    "x / (bias + alpha/size * sum)^beta")
def lrn(ctx, node, inputs):
    x = ctx.tensor(inputs[0], node)
    if x.rank < 3:
        raise popart_exception(f"node {node.name!r} (LRN): expected X [N, C, *field], found shape {tuple(x.shape)}")
    size = int(node.attrs["size"])
    alpha, beta = float(node.attrs.get("alpha", 1e-4)), float(node.attrs.get("beta", 0.75))
    bias = float(node.attrs.get("bias", 1.0))
    channels, lower = x.shape[1], (size - 1) // 2
    upper = size - 1 - lower
    square = popops.square(ctx.graph, x, ctx.prog, f"{node.name}/square")
    window = ctx.graph.clone(square, f"{node.name}/window")
    ctx.prog.add(Copy(square, window))
    for shift in range(-lower, upper + 1):   # window[c] += square[c + shift] where both exist
        if shift == 0 or abs(shift) >= channels:
            continue
        lo, hi = max(0, -shift), channels - max(0, shift)
        popops.add_in_place(ctx.graph, window.slice(lo, hi, 1), square.slice(lo + shift, hi + shift, 1), ctx.prog,
                            f"{node.name}/sum{shift}")
    y = popops.map(ctx.graph, pe._1 / (bias + (alpha / size) * pe._2) ** beta, [x, window], ctx.prog, node.name)
    return [y]
