"""LayerNormalization onto popnn.ln: X seen as [rows, cols] (the dimensions before ``axis``,
and from it on), layer_norm_statistics for each row's mean and inverse standard deviation
(biased variance, as ONNX), layer_normalise with Scale and B as the per-column gamma and
beta (B absent: a zero constant). Mean and InvStdDev outputs are views of the statistics."""
import numpy as np

from popsim import popnn

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
    stat_shape = tuple(x.shape[:axis]) + (1,) * (rank - axis)
    return [y.reshape(tuple(x.shape)), mean.reshape(stat_shape), inv_std.reshape(stat_shape)]
