"""Triangular solves (PopLibs' poplin/TriangularSolve.hpp; PopLibs' documentation).

``triangular_solve(graph, a, b, left_side, lower, unit_diagonal, prog)`` solves A·X = B
(``left_side``) or X·A = B for a triangular A [..., N, N] and B [..., N, K] (left) or
[..., K, N] (right), batched over the leading dimensions. As PopLibs does it:

* a right-side solve is the left-side one of the transposes: Aᵀ·Xᵀ = Bᵀ (views; a lower A
  gives an upper Aᵀ);
* B is copied into X, a new [G, N, K] tensor whose column chunks are spread over the tiles
  (each chunk on the tile whose vertex solves it); the solve then works in place on X;
* divide and conquer on quadrants down to ``blockSize`` (option, default 64): for a lower A,
  X₁ = solve(A₁₁, X₁); X₂ -= A₂₁·X₁ (poplin.mat_mul_grouped_acc with scale -1);
  X₂ = solve(A₂₂, X₂); for an upper A the same from the bottom. Splits fall on whole
  blocks, so every diagonal block but the last is blockSize×blockSize (PopLibs pads to a
  power of two instead; slicing views needs no padding);
* each diagonal block is solved by one compute set of poplin::TriangularSolveBlock
  vertices (linalg_vertices.py), one per group and chunk of columns.

Only A's triangle is read (the other one may hold anything); with ``unit_diagonal`` its
diagonal is not read either. ``triangular_mask`` returns A with the other triangle zeroed
(and a unit diagonal if asked), PopLibs' triangularMask.

Options: ``blockSize`` (a whole number > 0) and any matmul option (availableMemoryProportion,
partialsType, ...), passed to the matmuls. Without a PlanningCache a local one is used, so
the many same-shaped matmuls of the recursion are planned once.
"""
import math

from popsim import FLOAT, HALF, UNSIGNED_INT, popops
from popsim.popops import expr as pe
from popsim.program import Copy, Execute

from ..poputil import PoplibsError
from ..poputil.checks import check_flag, check_graph, check_prog, check_tensor
from . import linalg_vertices
from .mat_mul import mat_mul_grouped_acc
from .options import parse_mat_mul_options
from .planner import PlanningCache

DEFAULT_BLOCK_SIZE = 64

__all__ = ["triangular_solve", "triangular_mask", "DEFAULT_BLOCK_SIZE"]


# -- checks and options --------------------------------------------------------------------------

def check_square(graph, a, what: str, role: str = "A") -> None:
    """``a`` is a FLOAT or HALF tensor of shape [..., N, N]."""
    check_tensor(graph, a, what, role)
    if a.rank < 2:
        raise PoplibsError(f"{what}: {role} '{a.name}' must have rank 2 or more ([..., N, N]), found shape "
                           f"{tuple(a.shape)}")
    if a.shape[-1] != a.shape[-2]:
        raise PoplibsError(f"{what}: {role} '{a.name}' must be square in its last two dimensions ([..., N, N]), "
                           f"found shape {tuple(a.shape)}")
    if a.dtype not in (FLOAT, HALF):
        raise PoplibsError(f"{what}: {role} '{a.name}' must be FLOAT or HALF, found {a.dtype!r}")


def split_options(options, what: str):
    """(blockSize, the matmul options parsed) from ``options`` (a dict or None)."""
    if options is None:
        options = {}
    if not isinstance(options, dict):
        raise PoplibsError(f"{what}: options must be a dict of option name to value, found {type(options).__name__}")
    options = dict(options)
    block = options.pop("blockSize", DEFAULT_BLOCK_SIZE)
    try:
        value = int(block) if isinstance(block, str) else block
    except ValueError:
        value = None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise PoplibsError(f"{what}: option 'blockSize': invalid value {block!r}; expected a whole number >= 1 "
                           f"(the size of the diagonal blocks solved by vertices, default {DEFAULT_BLOCK_SIZE})")
    try:
        mat_mul_options = parse_mat_mul_options(options)
    except PoplibsError as error:
        raise PoplibsError(f"{what}: {error} (besides the matmul options, {what} takes 'blockSize')") from None
    return value, mat_mul_options


def flat_batch(t, n_rows: int, n_cols: int):
    """[..., R, C] as [G, R, C] (G the product of the leading dimensions, 1 for rank 2)."""
    return t.reshape([math.prod(t.shape[:-2]), n_rows, n_cols])


def split_point(n: int, block: int) -> int:
    """Where a matrix of n rows is cut: half its blocks (rounded up), in rows."""
    blocks = -(-n // block)
    return -(-blocks // 2) * block


# -- the solver ------------------------------------------------------------------------------------

class _Solver:
    """Solves A·X = B in place on X [G, N, K] for a triangular A [G, N, N] (views)."""

    def __init__(self, graph, lower, unit_diagonal, block, options, cache, prog, name):
        self.graph, self.lower, self.unit_diagonal, self.block = graph, lower, unit_diagonal, block
        self.options, self.cache, self.prog, self.name = options, cache, prog, name
        self.target = graph.get_target()
        self.count = 0

    def solve(self, a, x) -> None:
        n = a.shape[1]
        if n == 0 or x.shape[2] == 0:
            return
        if n <= self.block:
            self._solve_block(a, x)
            return
        h = split_point(n, self.block)
        a11, a22 = a.slice([0, 0, 0], [a.shape[0], h, h]), a.slice([0, h, h], [a.shape[0], n, n])
        x1, x2 = x.slice(0, h, 1), x.slice(h, n, 1)
        if self.lower:
            self.solve(a11, x1)
            self._update(x2, a.slice([0, h, 0], [a.shape[0], n, h]), x1)
            self.solve(a22, x2)
        else:
            self.solve(a22, x2)
            self._update(x1, a.slice([0, 0, h], [a.shape[0], h, n]), x2)
            self.solve(a11, x1)

    def _update(self, x_out, a_off, x_known) -> None:
        """x_out -= a_off · x_known (the off-diagonal quadrant's contribution)."""
        self.count += 1
        mat_mul_grouped_acc(self.graph, x_out, -1.0, a_off, x_known, self.prog, f"{self.name}/Update{self.count}",
                            self.options, self.cache)

    def _solve_block(self, a, x) -> None:
        graph = self.graph
        groups, n, k = x.shape
        vertex = linalg_vertices.ensure_triangular_solve_vertex(graph, x.dtype, self.lower, self.unit_diagonal)
        self.count += 1
        cs = graph.add_compute_set(f"{self.name}/SolveBlock{self.count}")
        for g, c0, c1, tile in column_chunks(self.target, groups, k):
            v = graph.add_vertex(cs, vertex, {"a": a[g].flatten(),
                                              "x": [x[g, i].slice(c0, c1) for i in range(n)]})
            graph.set_tile_mapping(v, tile)
        self.prog.add(Execute(cs))


def column_chunks(target, groups: int, k: int):
    """[(group, first column, end column, tile)]: the columns of every group cut into chunks
    of at least the vector width, about one per worker of every tile, consecutive chunks
    filling a tile's workers before the next tile."""
    workers = target.num_worker_contexts
    width = max(2, -(-groups * k // (target.num_tiles * workers)))
    chunks, index = [], 0
    for g in range(groups):
        for c0 in range(0, k, width):
            chunks.append((g, c0, min(k, c0 + width), (index // workers) % target.num_tiles))
            index += 1
    return chunks


def _create_solution(graph, dtype, groups: int, n: int, k: int, name: str):
    """X [G, N, K], each column chunk on the tile of the vertex that solves it."""
    x = graph.add_variable(dtype, (groups, n, k), name)
    for g, c0, c1, tile in column_chunks(graph.get_target(), groups, k):
        graph.set_tile_mapping(x[g].slice(c0, c1, 1), tile)
    return x


def triangular_solve(graph, a, b, left_side: bool, lower: bool, unit_diagonal: bool, prog, name: str = "",
                     options=None, cache=None):
    """X with A·X = B (``left_side``) or X·A = B, A [..., N, N] triangular (``lower`` or
    upper; ``unit_diagonal``: its diagonal is taken as ones), B [..., N, K] or [..., K, N]
    with the same leading dimensions. Returns X shaped like B (a right-side X is a
    transposed view of the solver's tensor)."""
    what = "poplin.triangular_solve"
    check_square(graph, a, what)
    check_tensor(graph, b, what, "B")
    check_prog(prog, what)
    left_side, lower, unit_diagonal = (check_flag(f, what, n) for f, n in ((left_side, "left_side"), (lower, "lower"),
                                                                          (unit_diagonal, "unit_diagonal")))
    block, mat_mul_options = split_options(options, what)
    if b.rank != a.rank:
        raise PoplibsError(f"{what}: A '{a.name}' of shape {tuple(a.shape)} and B '{b.name}' of shape "
                           f"{tuple(b.shape)} must have the same rank")
    if b.dtype != a.dtype:
        raise PoplibsError(f"{what}: A '{a.name}' and B '{b.name}' must have the same type, found {a.dtype.name} "
                           f"and {b.dtype.name}")
    n = a.shape[-1]
    side_dim = -2 if left_side else -1
    if b.shape[side_dim] != n or tuple(b.shape[:-2]) != tuple(a.shape[:-2]):
        expected = "[..., N, K]" if left_side else "[..., K, N]"
        raise PoplibsError(f"{what}: for A '{a.name}' of shape {tuple(a.shape)} ([..., N, N]) a "
                           f"{'left' if left_side else 'right'}-side B must have shape {expected} with A's leading "
                           f"dimensions, found B '{b.name}' of shape {tuple(b.shape)}")
    if cache is not None and not isinstance(cache, PlanningCache):
        raise PoplibsError(f"{what}: cache must be a poplin.PlanningCache or None, found {type(cache).__name__}")
    k = b.shape[-1] if left_side else b.shape[-2]
    a3 = flat_batch(a, n, n)
    b3 = flat_batch(b, b.shape[-2], b.shape[-1])
    if not left_side:  # X·A = B  <=>  Aᵀ·Xᵀ = Bᵀ
        a3, b3, lower = a3.dim_shuffle([0, 2, 1]), b3.dim_shuffle([0, 2, 1]), not lower
    name = name or "TriangularSolve"
    x = _create_solution(graph, a.dtype, a3.shape[0], n, k, f"{name}/X")
    prog.add(Copy(b3, x))
    solver = _Solver(graph, bool(lower), bool(unit_diagonal), block, mat_mul_options, cache or PlanningCache(),
                     prog, name)
    solver.solve(a3, x)
    if not left_side:
        x = x.dim_shuffle([0, 2, 1])
    return x.reshape(list(b.shape))


def solve_in_place(graph, a3, x3, lower: bool, unit_diagonal: bool, block: int, options, cache, prog, name: str):
    """Solve A·X = X in place on the views a3 [G, N, N] and x3 [G, N, K] (cholesky's
    panels): no checks, no copy."""
    _Solver(graph, lower, unit_diagonal, block, options, cache, prog, name).solve(a3, x3)


# -- the mask -------------------------------------------------------------------------------------

def _indices(graph, n: int, prog, name: str):
    """Row and column index tensors [N, 1] and [1, N] (UNSIGNED_INT, one iota)."""
    iota = graph.add_variable(UNSIGNED_INT, (n,), f"{name}/iota")
    graph.set_tile_mapping(iota, 0)
    popops.iota(graph, iota, 0, prog, f"{name}/Iota")
    return iota.reshape([n, 1]), iota.reshape([1, n])


def mask_expression(lower: bool, unit_diagonal: bool):
    """_1 the matrix, _2 the row index, _3 the column index: the kept triangle, zero
    elsewhere, one on the diagonal with ``unit_diagonal``."""
    keep = pe._3 <= pe._2 if lower else pe._3 >= pe._2
    expression = pe.select(pe._1, pe.Const(0.0), keep)
    if unit_diagonal:
        expression = pe.select(pe.Const(1.0), expression, pe._2 == pe._3)
    return expression


def mask_in_place(graph, a, lower: bool, unit_diagonal: bool, prog, name: str) -> None:
    """Zero the other triangle of ``a`` [..., N, N] in place (cholesky's result)."""
    n = a.shape[-1]
    if a.num_elements() == 0:
        return
    rows, cols = _indices(graph, n, prog, name)
    popops.map_in_place(graph, mask_expression(lower, unit_diagonal), [a, rows, cols], prog, f"{name}/Mask")


def triangular_mask(graph, a, lower: bool, unit_diagonal: bool, prog, name: str = ""):
    """A new tensor: ``a`` [..., N, N] with the elements outside its lower (or upper)
    triangle zeroed and, with ``unit_diagonal``, ones on the diagonal (PopLibs'
    triangularMask)."""
    what = "poplin.triangular_mask"
    check_graph(graph, what)
    check_square(graph, a, what)
    check_prog(prog, what)
    name = name or "TriangularMask"
    out = graph.clone(a, f"{name}/out")
    prog.add(Copy(a, out))
    mask_in_place(graph, out, bool(lower), bool(unit_diagonal), prog, name)
    return out
