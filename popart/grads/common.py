"""What the gradient rules share: a gradient summed back to the shape of a broadcast
operand (popops.reduce ADD over the broadcast dimensions), a tensor seen at a bigger shape
(broadcast views), and a fresh zeroed tensor."""
import numpy as np

from popsim import FLOAT, popops, poputil

from ..errors import popart_exception

ADD = popops.Operation.ADD


def unbroadcast(ctx, g, shape, name):
    """``g`` summed over the dimensions numpy broadcasting added or stretched to reach it
    from ``shape``: the gradient of an operand of that shape."""
    shape = tuple(shape)
    if tuple(g.shape) == shape:
        return g
    lead = g.rank - len(shape)
    if lead < 0:
        raise popart_exception(f"{name}: a gradient of shape {tuple(g.shape)} cannot belong to an operand of shape "
                               f"{shape}")
    dims = list(range(lead)) + [lead + d for d, n in enumerate(shape) if n == 1 and g.shape[lead + d] != 1]
    if not dims:
        return g.reshape(shape)
    out = popops.reduce(ctx.graph, g, dims, popops.ReduceParams(ADD), ctx.prog, f"{name}/unbroadcast")
    return out.reshape(shape)


def expand_to(t, shape):
    """``t`` viewed at ``shape`` (numpy broadcasting, as views)."""
    shape = tuple(shape)
    if t.rank < len(shape):
        t = t.reshape((1,) * (len(shape) - t.rank) + tuple(t.shape))
    for d, n in enumerate(shape):
        if t.shape[d] != n:
            t = t.broadcast(n, d)
    return t


def zeros(ctx, shape, name):
    """A new FLOAT tensor of ``shape``, mapped linearly and zeroed in ctx.prog."""
    t = ctx.graph.add_variable(FLOAT, tuple(shape), name)
    poputil.map_tensor_linearly(ctx.graph, t)
    popops.zero(ctx.graph, t, ctx.prog, f"{name}/zero")
    return t


def count(shape) -> int:
    return int(np.prod(shape, dtype=np.int64))
