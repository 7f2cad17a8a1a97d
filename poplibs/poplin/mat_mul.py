"""poplin's matrix multiplications (PopLibs' poplin/MatMul.hpp): a matmul is planned as the
1-D convolution ConvParams.for_mat_mul gives, by the planner (planner.get_plan), and built
by mat_mul_execute as the plan says.

Types (PopLibs' rules): A and B have one type, FLOAT or HALF; the output type defaults to
it (``output_type`` may choose the other); the partials type is the ``partialsType``
option's (float inputs always accumulate in float). Transposed operands are views
(``a.transpose()``, ``transpose_grouped_matrix``) and need nothing special.
"""
import popsim
from popsim import FLOAT, HALF

from ..poputil import PoplibsError
from ..poputil.checks import check_graph, check_prog, check_tensor, check_whole_numbers
from . import mat_mul_execute, mat_mul_layout
from .conv_params import for_mat_mul
from .planner import get_plan, graph_cache


def _check_operands(graph, a, b, prog, rank: int, what: str) -> None:
    check_graph(graph, what)
    check_tensor(graph, a, what, "A")
    check_tensor(graph, b, what, "B")
    check_prog(prog, what)  # every matmul appends its programs: None would fail half-way
    kind = "[M, K] @ [K, N]" if rank == 2 else "[G, M, K] @ [G, K, N]"
    for role, t in (("A", a), ("B", b)):
        if t.rank != rank:
            raise PoplibsError(f"{what}: {role} '{t.name}' must have rank {rank} ({kind}), found shape "
                               f"{tuple(t.shape)}")
        if t.dtype not in (FLOAT, HALF):
            raise PoplibsError(f"{what}: {role} '{t.name}' must be FLOAT or HALF, found {t.dtype!r}")
    if a.dtype != b.dtype:
        raise PoplibsError(f"{what}: A '{a.name}' and B '{b.name}' must have the same type, found "
                           f"{a.dtype.name} and {b.dtype.name}")
    if a.shape[-1] != b.shape[-2] or (rank == 3 and a.shape[0] != b.shape[0]):
        raise PoplibsError(f"{what}: A '{a.name}' of shape {tuple(a.shape)} and B '{b.name}' of shape "
                           f"{tuple(b.shape)} do not multiply: {kind} needs A's last dimension ({a.shape[-1]}) to "
                           f"equal B's second last ({b.shape[-2]})"
                           + (f" and the same number of groups ({a.shape[0]} and {b.shape[0]})" if rank == 3 else ""))


def _output_type(in_type, output_type, what: str):
    if output_type is None:
        return in_type
    if output_type not in (FLOAT, HALF):
        raise PoplibsError(f"{what}: output_type must be FLOAT or HALF, found {output_type!r}")
    return output_type


def _plan(graph, dtype, a_shape, b_shape, out_type, options, cache):
    params = for_mat_mul(dtype, a_shape, b_shape, out_type)
    return get_plan(graph.get_target(), params, options, graph_cache(graph, cache))


def _grouped(t):
    return t.expand([0])


def _blocking(graph, plan, a_shape, b_shape):
    g, m, k = (1,) * (3 - len(a_shape)) + tuple(a_shape)
    return mat_mul_execute.blocking_for(graph, plan, g, m, k, b_shape[-1])


def _create_output(graph, plan, a_shape, b_shape, out_type, name):
    blocks = _blocking(graph, plan, a_shape, b_shape)
    grain = mat_mul_execute.output_grain(graph, plan, out_type)
    out = mat_mul_layout.create_output(graph, out_type, blocks, name, grain)
    return out.dim_shuffle([0, 2, 1]) if plan.transforms[0].swap_operands else out


# -- grouped (the general form) ----------------------------------------------------------------

def mat_mul_grouped(graph, a, b, prog, name: str = "", options=None, cache=None, output_type=None):
    """C[g] = A[g] @ B[g] for A [G, M, K], B [G, K, N]: a new [G, M, N] tensor laid out as
    the plan says (PopLibs' matMulGrouped)."""
    what = "poplin.mat_mul_grouped"
    _check_operands(graph, a, b, prog, 3, what)
    out_type = _output_type(a.dtype, output_type, what)
    plan = _plan(graph, a.dtype, a.shape, b.shape, out_type, options, cache)
    out = _create_output(graph, plan, a.shape, b.shape, out_type, f"{name}/output" if name else "matmul_output")
    mat_mul_execute.execute_mat_mul(graph, a, b, out, plan, prog, name or "MatMul")
    return out


def mat_mul_grouped_with_output(graph, a, b, out, prog, name: str = "", options=None, cache=None) -> None:
    """mat_mul_grouped writing into ``out`` [G, M, N] (its type is the output type)."""
    what = "poplin.mat_mul_grouped_with_output"
    _check_operands(graph, a, b, prog, 3, what)
    _check_output(graph, out, (a.shape[0], a.shape[1], b.shape[2]), what, "out")
    plan = _plan(graph, a.dtype, a.shape, b.shape, out.dtype, options, cache)
    mat_mul_execute.execute_mat_mul(graph, a, b, out, plan, prog, name or "MatMul")


def mat_mul_grouped_acc(graph, c, k, a, b, prog, name: str = "", options=None, cache=None) -> None:
    """C[g] += k * A[g] @ B[g] (PopLibs' matMulGroupedAcc); ``k`` a number or a FLOAT
    scalar tensor."""
    what = "poplin.mat_mul_grouped_acc"
    _check_operands(graph, a, b, prog, 3, what)
    _check_output(graph, c, (a.shape[0], a.shape[1], b.shape[2]), what, "C")
    _check_scale(graph, k, what)
    plan = _plan(graph, a.dtype, a.shape, b.shape, c.dtype, options, cache)
    mat_mul_execute.execute_mat_mul(graph, a, b, c, plan, prog, name or "MatMulAcc", scale=k)


def _check_output(graph, out, shape, what: str, role: str) -> None:
    check_tensor(graph, out, what, role)
    if tuple(out.shape) != tuple(shape):
        raise PoplibsError(f"{what}: {role} '{out.name}' must have shape {tuple(shape)}, found {tuple(out.shape)}")
    if out.dtype not in (FLOAT, HALF):
        raise PoplibsError(f"{what}: {role} '{out.name}' must be FLOAT or HALF, found {out.dtype!r}")


def _check_scale(graph, k, what: str) -> None:
    if isinstance(k, popsim.Tensor):
        check_tensor(graph, k, what, "k")
        if k.dtype != FLOAT or k.num_elements() != 1:
            raise PoplibsError(f"{what}: the scale k '{k.name}' must be a FLOAT scalar tensor, found "
                               f"{k.dtype.name} of shape {tuple(k.shape)}")
    elif isinstance(k, bool) or not isinstance(k, (int, float)):
        raise PoplibsError(f"{what}: the scale k must be a number or a FLOAT scalar tensor, found {k!r}")


# -- ungrouped -----------------------------------------------------------------------------------

def mat_mul(graph, a, b, prog, name: str = "", options=None, cache=None, output_type=None):
    """C = A @ B for A [M, K], B [K, N] (PopLibs' matMul): a new [M, N] tensor."""
    _check_operands(graph, a, b, prog, 2, "poplin.mat_mul")
    return mat_mul_grouped(graph, _grouped(a), _grouped(b), prog, name, options, cache, output_type)[0]


def mat_mul_with_output(graph, a, b, out, prog, name: str = "", options=None, cache=None) -> None:
    what = "poplin.mat_mul_with_output"
    _check_operands(graph, a, b, prog, 2, what)
    _check_output(graph, out, (a.shape[0], b.shape[1]), what, "out")
    mat_mul_grouped_with_output(graph, _grouped(a), _grouped(b), _grouped(out), prog, name, options, cache)


def mat_mul_acc(graph, c, k, a, b, prog, name: str = "", options=None, cache=None) -> None:
    """C += k * A @ B (PopLibs' matMulAcc)."""
    what = "poplin.mat_mul_acc"
    _check_operands(graph, a, b, prog, 2, what)
    _check_output(graph, c, (a.shape[0], b.shape[1]), what, "C")
    mat_mul_grouped_acc(graph, _grouped(c), k, _grouped(a), _grouped(b), prog, name, options, cache)


def transpose_grouped_matrix(t):
    """[G, M, N] -> [G, N, M], a view (PopLibs' transposeGroupedMatrix)."""
    if not isinstance(t, popsim.Tensor) or t.rank != 3:
        raise PoplibsError(f"poplin.transpose_grouped_matrix: expected a rank-3 tensor, found "
                           f"{getattr(t, 'shape', t)!r}")
    return t.dim_shuffle([0, 2, 1])


# -- tensor creation -----------------------------------------------------------------------------

def _shapes(a_shape, b_shape, rank: int, what: str):
    a_shape, b_shape = (check_whole_numbers(s, what, n, low=0) for s, n in ((a_shape, "a_shape"), (b_shape, "b_shape")))
    if len(a_shape) != rank or len(b_shape) != rank:
        raise PoplibsError(f"{what}: a_shape {a_shape} and b_shape {b_shape} must both have rank {rank}")
    if a_shape[-1] != b_shape[-2] or (rank == 3 and a_shape[0] != b_shape[0]):
        raise PoplibsError(f"{what}: the shapes {a_shape} and {b_shape} do not multiply (A's last dimension "
                           f"{a_shape[-1]}, B's second last {b_shape[-2]})")
    return a_shape, b_shape


def _create(graph, dtype, a_shape, b_shape, name, options, cache, rank, side, output_type=None):
    what = f"poplin.create_mat_mul{'_grouped' if rank == 3 else ''}_{side}"
    check_graph(graph, what)
    a_shape, b_shape = _shapes(a_shape, b_shape, rank, what)
    mat_mul_execute.check_types(dtype, output_type or dtype, what)
    plan = _plan(graph, dtype, a_shape, b_shape, output_type or dtype, options, cache)
    blocks = _blocking(graph, plan, a_shape, b_shape)
    swap = plan.transforms[0].swap_operands
    if side == "output":
        t = _create_output(graph, plan, a_shape, b_shape, output_type or dtype, name)
    elif (side == "input_lhs") != swap:
        t = mat_mul_layout.create_lhs(graph, dtype, blocks, name)
    else:
        t = mat_mul_layout.create_rhs(graph, dtype, blocks, name)
    if swap and side != "output":
        t = t.dim_shuffle([0, 2, 1])
    return t if rank == 3 else t[0]


def create_mat_mul_input_lhs(graph, dtype, a_shape, b_shape, name: str = "", options=None, cache=None):
    """A [M, K] laid out for the plan of A @ B (each tile's block of A contiguous on a tile
    that reads it)."""
    return _create(graph, dtype, a_shape, b_shape, name or "lhs", options, cache, 2, "input_lhs")


def create_mat_mul_input_rhs(graph, dtype, a_shape, b_shape, name: str = "", options=None, cache=None):
    """B [K, N] laid out for the plan of A @ B."""
    return _create(graph, dtype, a_shape, b_shape, name or "rhs", options, cache, 2, "input_rhs")


def create_mat_mul_output(graph, dtype, a_shape, b_shape, name: str = "", options=None, cache=None,
                          output_type=None):
    """C [M, N] laid out as mat_mul would create it."""
    return _create(graph, dtype, a_shape, b_shape, name or "output", options, cache, 2, "output", output_type)


def create_mat_mul_grouped_input_lhs(graph, dtype, a_shape, b_shape, name: str = "", options=None, cache=None):
    return _create(graph, dtype, a_shape, b_shape, name or "lhs", options, cache, 3, "input_lhs")


def create_mat_mul_grouped_input_rhs(graph, dtype, a_shape, b_shape, name: str = "", options=None, cache=None):
    return _create(graph, dtype, a_shape, b_shape, name or "rhs", options, cache, 3, "input_rhs")


def create_mat_mul_grouped_output(graph, dtype, a_shape, b_shape, name: str = "", options=None, cache=None,
                                  output_type=None):
    return _create(graph, dtype, a_shape, b_shape, name or "output", options, cache, 3, "output", output_type)


__all__ = ["mat_mul", "mat_mul_with_output", "mat_mul_acc", "mat_mul_grouped", "mat_mul_grouped_with_output",
           "mat_mul_grouped_acc", "transpose_grouped_matrix", "create_mat_mul_input_lhs", "create_mat_mul_input_rhs",
           "create_mat_mul_output", "create_mat_mul_grouped_input_lhs", "create_mat_mul_grouped_input_rhs",
           "create_mat_mul_grouped_output"]
