"""Cholesky factorisation (PopLibs' poplin/Cholesky.hpp; PopLibs' documentation).

``cholesky(graph, a, lower, prog)`` returns L with A = L·Lᵀ (``lower``) or U with A = Uᵀ·U,
for symmetric positive-definite A [..., N, N], batched over the leading dimensions; the
other triangle of the result is zero. ``cholesky_in_place`` overwrites ``a``.

Blocked and recursive, on the working matrix in place (an upper factorisation runs the
lower one on the transposed view: Aᵀ's lower triangle is A's upper one):

* N at most ``blockSize`` (option, default 64): one poplin::CholeskyBlock vertex per group
  factorises the diagonal block (linalg_vertices.py);
* otherwise, cut at a whole number of blocks (about half): factorise A₁₁ = L₁₁·L₁₁ᵀ; the
  panel L₂₁ = A₂₁·L₁₁⁻ᵀ by the triangular solver (L₁₁·L₂₁ᵀ = A₂₁ᵀ, in place on the
  transposed view of the panel); the trailing update A₂₂ -= L₂₁·L₂₁ᵀ by
  poplin.mat_mul_grouped_acc; then factorise A₂₂.

Only A's lower (or upper) triangle is read. A matrix that is not positive definite gives
NaN from the first non-positive pivot on (sqrt of a negative number), as PopLibs' does
not check either. Options: ``blockSize`` and the matmul options (triangular_solve.py).
"""
from popsim.program import Copy, Execute

from ..poputil import PoplibsError
from ..poputil.checks import check_flag, check_prog
from . import linalg_vertices
from .mat_mul import mat_mul_grouped_acc
from .planner import PlanningCache
from .triangular_solve import check_square, flat_batch, mask_in_place, solve_in_place, split_options, split_point

__all__ = ["cholesky", "cholesky_in_place"]


class _Factoriser:
    def __init__(self, graph, block, options, cache, prog, name):
        self.graph, self.block, self.options, self.cache, self.prog, self.name = \
            graph, block, options, cache, prog, name
        self.count = 0

    def factorise(self, a) -> None:
        """A [G, n, n] (a view) overwritten by L in its lower triangle."""
        groups, n, _ = a.shape
        if n == 0:
            return
        if n <= self.block:
            self._factorise_block(a)
            return
        h = split_point(n, self.block)
        a11 = a.slice([0, 0, 0], [groups, h, h])
        a21 = a.slice([0, h, 0], [groups, n, h])
        a22 = a.slice([0, h, h], [groups, n, n])
        self.factorise(a11)
        self.count += 1
        solve_in_place(self.graph, a11, a21.dim_shuffle([0, 2, 1]), True, False, self.block, self.options,
                       self.cache, self.prog, f"{self.name}/Panel{self.count}")
        mat_mul_grouped_acc(self.graph, a22, -1.0, a21, a21.dim_shuffle([0, 2, 1]), self.prog,
                            f"{self.name}/Trailing{self.count}", self.options, self.cache)
        self.factorise(a22)

    def _factorise_block(self, a) -> None:
        graph = self.graph
        groups, n, _ = a.shape
        vertex = linalg_vertices.ensure_cholesky_vertex(graph, a.dtype)
        self.count += 1
        cs = graph.add_compute_set(f"{self.name}/Block{self.count}")
        tiles = graph.get_target().num_tiles
        for g in range(groups):
            v = graph.add_vertex(cs, vertex, {"a": [a[g, i] for i in range(n)]})
            graph.set_tile_mapping(v, g % tiles)
        self.prog.add(Execute(cs))


def cholesky_in_place(graph, a, lower: bool, prog, name: str = "", options=None, cache=None) -> None:
    """Overwrite ``a`` [..., N, N] (symmetric positive definite) with its Cholesky factor:
    L (``lower``) or U, the other triangle zeroed (PopLibs' choleskyInPlace)."""
    what = "poplin.cholesky_in_place"
    _factorise(graph, a, lower, prog, name or "CholeskyInPlace", options, cache, what)


def cholesky(graph, a, lower: bool, prog, name: str = "", options=None, cache=None):
    """A new tensor: the Cholesky factor of ``a`` [..., N, N], L with A = L·Lᵀ (``lower``)
    or U with A = Uᵀ·U, the other triangle zero (PopLibs' cholesky). ``a`` is unchanged."""
    what = "poplin.cholesky"
    check_square(graph, a, what)
    check_prog(prog, what)
    check_flag(lower, what, "lower")
    name = name or "Cholesky"
    out = graph.clone(a, f"{name}/out")
    prog.add(Copy(a, out))
    _factorise(graph, out, lower, prog, name, options, cache, what)
    return out


def _factorise(graph, a, lower, prog, name, options, cache, what) -> None:
    check_square(graph, a, what)
    check_prog(prog, what)
    lower = check_flag(lower, what, "lower")
    block, mat_mul_options = split_options(options, what)
    if cache is not None and not isinstance(cache, PlanningCache):
        raise PoplibsError(f"{what}: cache must be a poplin.PlanningCache or None, found {type(cache).__name__}")
    n = a.shape[-1]
    work = flat_batch(a, n, n)
    if not lower:
        work = work.dim_shuffle([0, 2, 1])
    _Factoriser(graph, block, mat_mul_options, cache or PlanningCache(), prog, name).factorise(work)
    mask_in_place(graph, a, bool(lower), False, prog, name)
