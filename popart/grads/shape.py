"""Gradients of the view ops and the reductions: Reshape, Flatten, Squeeze, Unsqueeze (the
gradient reshaped back), Transpose (the inverse permutation), Concat (slices of the
gradient), Slice and Split (the gradient copied into the forward's view of a zeroed
tensor: the node lowered again on it), Expand (summed back by popops.reduce), ReduceSum and
ReduceMean (the gradient broadcast back over the reduced axes; Mean scaled by 1/n), Gather
(popops.multi_update_add of the gradient's slices into a zeroed tensor)."""
import numpy as np

from popsim import UNSIGNED_INT, popops, poputil
from popsim.popops import expr as pe
from popsim.program import Copy

from ..grad_table import grad
from ..op_table import lookup
from ..ops.reduce import _axes as reduce_axes
from .common import expand_to, unbroadcast, zeros


@grad("Reshape", "Flatten", "Squeeze", "Unsqueeze")
def reshape(ctx, node, inputs, outputs, grads):
    return [grads[0].reshape(tuple(inputs[0].shape))] + [None] * (len(inputs) - 1)


@grad("Transpose")
def transpose(ctx, node, inputs, outputs, grads):
    rank = len(inputs[0].shape)
    perm = [int(p) for p in node.attrs.get("perm", list(range(rank))[::-1])]
    return [grads[0].dim_shuffle([int(d) for d in np.argsort(perm)])]


@grad("Concat")
def concat(ctx, node, inputs, outputs, grads):
    rank = len(inputs[0].shape)
    axis = int(node.attrs["axis"]) % rank
    out, start = [], 0
    for v in inputs:
        n = v.shape[axis]
        out.append(grads[0].slice(start, start + n, axis))
        start += n
    return out


@grad("Slice", "Split")
def scatter_view(ctx, node, inputs, outputs, grads):
    """The input's gradient: zero, with each output's gradient copied into the view the
    forward lowering takes of it."""
    x = inputs[0]
    z = zeros(ctx, tuple(x.shape), f"{node.name}/grad0")
    views = lookup(node.op_type, ctx.opset, node.name).lower(ctx, node, [z] + list(inputs[1:]))
    for view, g in zip(views, grads):
        if g is not None:
            ctx.prog.add(Copy(g, view))
    return [z] + [None] * (len(inputs) - 1)


@grad("Expand")
def expand(ctx, node, inputs, outputs, grads):
    return [unbroadcast(ctx, grads[0], tuple(inputs[0].shape), f"{node.name}/grad0"), None]


def _reduce(mean: bool, input_since):
    def rule(ctx, node, inputs, outputs, grads):
        x = inputs[0]
        rank = len(x.shape)
        axes = reduce_axes(ctx, node, inputs, rank, input_since)
        if axes is None:
            if node.attrs.get("noop_with_empty_axes", 0):
                return [grads[0]] + [None] * (len(inputs) - 1)
            axes = list(range(rank))
        kept = tuple(1 if d in axes else n for d, n in enumerate(x.shape))
        view = expand_to(grads[0].reshape(kept), tuple(x.shape))
        n = int(np.prod([x.shape[a] for a in axes])) if axes else 1
        scale = 1.0 / max(1, n) if mean else 1.0
        g = popops.mul(ctx.graph, view, scale, ctx.prog, f"{node.name}/grad0")
        return [g] + [None] * (len(inputs) - 1)
    return rule


grad("ReduceSum")(_reduce(False, 13))
grad("ReduceMean")(_reduce(True, 18))


@grad("Gather")
def gather(ctx, node, inputs, outputs, grads):
    """The data's gradient: zero, with each gathered slice's gradient added at its index by
    popops.multi_update_add (repeated indices add up)."""
    x, indices = inputs
    rank = len(x.shape)
    axis = int(node.attrs.get("axis", 0)) % rank
    n, k = x.shape[axis], int(np.prod(indices.shape, dtype=np.int64))
    z = zeros(ctx, tuple(x.shape), f"{node.name}/grad0")
    rest = [d for d in range(rank) if d != axis]
    cols = int(np.prod([x.shape[d] for d in rest], dtype=np.int64))
    table = z.dim_shuffle([axis] + rest).reshape((n, cols))
    m = len(indices.shape)   # the gradient: x's dims before axis, the indices' dims, x's dims after
    g = grads[0].dim_shuffle(list(range(axis, axis + m)) + list(range(axis)) +
                             list(range(axis + m, grads[0].rank))).reshape((k, 1, cols))
    if isinstance(indices, np.ndarray):
        c = ctx.graph.add_constant(UNSIGNED_INT, (k, 1), (indices.astype(np.int64).reshape(-1) % n).reshape(k, 1),
                                   f"{node.name}/grad0/offsets")
        poputil.map_tensor_linearly(ctx.graph, c)
        offsets = c
    else:
        offsets = popops.map(ctx.graph, pe.Cast(pe.select(pe._1 + n, pe._1, pe._1 < 0), UNSIGNED_INT),
                             [indices.flatten()], ctx.prog, f"{node.name}/grad0/offsets").reshape((k, 1))
    popops.multi_update_add(ctx.graph, table, g, offsets, 1.0, [0], [1], ctx.prog, f"{node.name}/grad0/add")
    return [z, None]
