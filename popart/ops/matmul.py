"""MatMul (numpy's matmul: batched, broadcast) and Gemm on poplin's matrix multiplications."""
import numpy as np

from popsim import poplin, popops

from ..errors import popart_exception
from ..node_attributes import poplin_options
from ..op_table import op


def _broadcast_to(t, shape):
    """t viewed with leading dimensions ``shape`` (numpy broadcasting, as views)."""
    t = t.reshape((1,) * (len(shape) - t.rank) + tuple(t.shape)) if t.rank < len(shape) else t
    for d, n in enumerate(shape):
        if t.shape[d] != n:
            t = t.broadcast(n, d)
    return t


def mat_mul(ctx, a, b, name, options=None):
    """numpy.matmul(a, b) on poplin: 2-D by mat_mul, more by mat_mul_grouped over the
    broadcast batch dimensions."""
    if a.rank == 0 or b.rank == 0:
        raise popart_exception(f"node {name!r} (MatMul): operands must have rank >= 1, found {a.shape} and {b.shape}")
    a2 = a.reshape((1,) + tuple(a.shape)) if a.rank == 1 else a
    b2 = b.reshape(tuple(b.shape) + (1,)) if b.rank == 1 else b
    if a2.shape[-1] != b2.shape[-2]:
        raise popart_exception(f"node {name!r} (MatMul): inner dimensions differ: {a.shape} @ {b.shape}")
    m, k, n = a2.shape[-2], a2.shape[-1], b2.shape[-1]
    if a2.rank == 2 and b2.rank == 2:
        out = poplin.mat_mul(ctx.graph, a2, b2, ctx.prog, name, options=options, cache=ctx.cache)
        batch = ()
    elif b2.rank == 2:  # [..., M, K] @ [K, N]: one matmul over the flattened rows
        batch = tuple(a2.shape[:-2])
        rows = int(np.prod(batch)) * m
        out = poplin.mat_mul(ctx.graph, a2.reshape((rows, k)), b2, ctx.prog, name, options=options, cache=ctx.cache)
    else:
        try:
            batch = tuple(np.broadcast_shapes(tuple(a2.shape[:-2]), tuple(b2.shape[:-2])))
        except ValueError:
            raise popart_exception(f"node {name!r} (MatMul): batch dimensions of {a.shape} and {b.shape} do not "
                                   "broadcast") from None
        groups = int(np.prod(batch))
        ga = _broadcast_to(a2, batch + (m, k)).reshape((groups, m, k))
        gb = _broadcast_to(b2, batch + (k, n)).reshape((groups, k, n))
        out = poplin.mat_mul_grouped(ctx.graph, ga, gb, ctx.prog, name, options=options, cache=ctx.cache)
    shape = batch + ((m,) if a.rank > 1 else ()) + ((n,) if b.rank > 1 else ())
    return out.reshape(shape)


@op("MatMul", 9, summary="poplin.mat_mul / mat_mul_grouped (batch dimensions broadcast)")
def matmul(ctx, node, inputs):
    a, b = (ctx.tensor(v, node, f"input {i}") for i, v in enumerate(inputs))
    return [mat_mul(ctx, a, b, node.name, poplin_options(node))]


@op("Gemm", 9, summary="poplin.mat_mul, popops.mul by alpha, popops.add of beta * C")
def gemm(ctx, node, inputs):
    a, b = (ctx.tensor(v, node, f"input {i}") for i, v in enumerate(inputs[:2]))
    if node.attrs.get("transA", 0):
        a = a.transpose()
    if node.attrs.get("transB", 0):
        b = b.transpose()
    alpha, beta = float(node.attrs.get("alpha", 1.0)), float(node.attrs.get("beta", 1.0))
    y = poplin.mat_mul(ctx.graph, a, b, ctx.prog, node.name, options=poplin_options(node), cache=ctx.cache)
    if alpha != 1.0:
        popops.mul_in_place(ctx.graph, y, alpha, ctx.prog, f"{node.name}/alpha")
    if len(inputs) > 2 and inputs[2] is not None and beta != 0.0:
        c = ctx.tensor(inputs[2], node, "input 2 (C)")
        if beta != 1.0:
            c = popops.mul(ctx.graph, c, beta, ctx.prog, f"{node.name}/beta")
        popops.add_in_place(ctx.graph, y, c, ctx.prog, f"{node.name}/C")
    return [y]
