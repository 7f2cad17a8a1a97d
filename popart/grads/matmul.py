"""Gradients of MatMul and Gemm on poplin: dA = dY @ B^T and dB = A^T @ dY (batch
dimensions broadcast in the forward pass summed back by popops.reduce), Gemm's alpha,
beta and transposes, its C's gradient summed over C's broadcast dimensions."""
from popsim import poplin, popops

from ..grad_table import grad
from ..node_attributes import poplin_options
from ..ops.matmul import mat_mul
from .common import unbroadcast


def _swap(t):
    """t with its last two dimensions swapped (a view)."""
    perm = list(range(t.rank))
    perm[-2], perm[-1] = perm[-1], perm[-2]
    return t.dim_shuffle(perm)


@grad("MatMul")
def matmul(ctx, node, inputs, outputs, grads):
    a, b = (ctx.tensor(v, node, f"input {i}") for i, v in enumerate(inputs))
    a2 = a.reshape((1,) + tuple(a.shape)) if a.rank == 1 else a
    b2 = b.reshape(tuple(b.shape) + (1,)) if b.rank == 1 else b
    y = outputs[0]
    g2 = grads[0].reshape(tuple(y.shape[:max(a2.rank, b2.rank) - 2]) + (a2.shape[-2], b2.shape[-1]))
    needed = ctx.needed
    ga = gb = None
    if needed[0]:
        ga = mat_mul(ctx, g2, _swap(b2), f"{node.name}/grad0", poplin_options(node))
        ga = unbroadcast(ctx, ga, a2.shape, f"{node.name}/grad0").reshape(tuple(a.shape))
    if needed[1]:
        gb = mat_mul(ctx, _swap(a2), g2, f"{node.name}/grad1", poplin_options(node))
        gb = unbroadcast(ctx, gb, b2.shape, f"{node.name}/grad1").reshape(tuple(b.shape))
    return [ga, gb]


@grad("Gemm")
def gemm(ctx, node, inputs, outputs, grads):
    a, b = (ctx.tensor(v, node, f"input {i}") for i, v in enumerate(inputs[:2]))
    trans_a, trans_b = int(node.attrs.get("transA", 0)), int(node.attrs.get("transB", 0))
    alpha, beta = float(node.attrs.get("alpha", 1.0)), float(node.attrs.get("beta", 1.0))
    a_used, b_used = (a.transpose() if trans_a else a), (b.transpose() if trans_b else b)
    g = grads[0]
    if alpha != 1.0:
        g = popops.mul(ctx.graph, g, alpha, ctx.prog, f"{node.name}/grad/alpha")
    # d(A') = g @ B'^T, d(B') = A'^T @ g; transposed back where the forward transposed
    needed = ctx.needed
    ga = gb = None
    if not needed[0]:
        pass
    elif trans_a:
        ga = poplin.mat_mul(ctx.graph, b_used, g.transpose(), ctx.prog, f"{node.name}/grad0",
                            options=poplin_options(node), cache=ctx.cache)
    else:
        ga = poplin.mat_mul(ctx.graph, g, b_used.transpose(), ctx.prog, f"{node.name}/grad0",
                            options=poplin_options(node), cache=ctx.cache)
    if not needed[1]:
        pass
    elif trans_b:
        gb = poplin.mat_mul(ctx.graph, g.transpose(), a_used, ctx.prog, f"{node.name}/grad1",
                            options=poplin_options(node), cache=ctx.cache)
    else:
        gb = poplin.mat_mul(ctx.graph, a_used.transpose(), g, ctx.prog, f"{node.name}/grad1",
                            options=poplin_options(node), cache=ctx.cache)
    out = [ga, gb]
    if len(inputs) > 2 and inputs[2] is not None:
        if beta == 0.0:
            out.append(None)
        else:
            gc = grads[0] if beta == 1.0 else popops.mul(ctx.graph, grads[0], beta, ctx.prog, f"{node.name}/grad2/beta")
            out.append(unbroadcast(ctx, gc, tuple(inputs[2].shape), f"{node.name}/grad2"))
    return out
