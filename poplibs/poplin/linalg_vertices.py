"""The vertices of poplin's linear algebra (triangular_solve.py, cholesky.py) and their cycle
estimators. Both are Python vertices (compiled to C by popsim) that work on one small
diagonal block; everything larger is done by poplin.mat_mul around them.

``poplin::TriangularSolveBlock<T,lower,unitDiagonal>`` solves A·X = B in place for one
diagonal block of A (n×n, n at most the solver's blockSize) and a chunk of B's columns:

* ``a``: Input Vector, the block row-major (n·n elements; only its triangle is read);
* ``x``: InOut VectorList, n rows of the column chunk (each ``kc`` elements): B on entry,
  X on exit. Forward substitution when ``lower``, backward otherwise; the diagonal is
  divided by unless ``unitDiagonal``. Sums are kept in float for half data.

PopLibs' own vertex (poplin::TriangularSolve<T,lower>) solves one right-hand side after
the whole of A was scaled to a unit diagonal; this one takes a chunk of columns and the
diagonal as it is, so the solver needs no scaling pass (the result is the same system).

``poplin::CholeskyBlock<T>`` factorises one diagonal block in place, A = L·Lᵀ:

* ``a``: InOut VectorList, the block's n rows (n elements each). Only the lower triangle is
  read and written (the upper one is left as it was: the caller masks it). An upper
  factorisation runs on the transposed view. A pivot that is not positive gives NaN, as
  sqrt of a negative number does.

Estimators (popsim's own; the reference has none for these): a worker runs the vertex with
the columns of X (solve) or the dot products along a row (Cholesky) vectorised at the
target's vector width ``vw`` (float 2, half 4: the f32v2/f16v4 multiply-accumulate),

    solve:    15 + n·(5 + r) + ceil(kc/vw) · (n(n-1)/2 + n·(2 + d))
              r = 0 with a unit diagonal, else 6 (one reciprocal per row),
              d = 0 with a unit diagonal, else 1 (one multiply per column vector);
    cholesky: 15 + Σ_j [ 20 + ceil(j/vw) + (n-1-j) · (ceil(j/vw) + 3) ]
              (per column j: the square root, the pivot's dot product, then each element
              below it: its dot product with the pivot row and one multiply by 1/pivot).
"""
import math  # read by the vertex code

import popsim
from popsim import FLOAT, HALF, InOut, Input, Vector, VectorList, Vertex

from ..poputil import util

TYPES = (FLOAT, HALF)


@popsim.vertex_template("poplin::TriangularSolveBlock", dtype=list(TYPES), lower=[True, False],
                        unit_diagonal=[True, False])
def TriangularSolveBlock(dtype, lower, unit_diagonal):
    class TriangularSolveBlock(Vertex):
        a: Input[Vector[dtype]]
        x: InOut[VectorList[dtype]]

        def compute(self):
            n = len(self.x)
            if n * n != len(self.a):
                return False
            for step in range(n):
                i = step
                j_begin = 0
                j_end = step
                if not lower:
                    i = n - 1 - step
                    j_begin = i + 1
                    j_end = n
                row = self.x[i]
                for c in range(len(row)):
                    s = float(row[c])
                    for j in range(j_begin, j_end):
                        s -= float(self.a[i * n + j]) * float(self.x[j][c])
                    if not unit_diagonal:
                        s = s / float(self.a[i * n + i])
                    row[c] = s
            return True
    return TriangularSolveBlock


@popsim.vertex_template("poplin::CholeskyBlock", dtype=list(TYPES))
def CholeskyBlock(dtype):
    class CholeskyBlock(Vertex):
        a: InOut[VectorList[dtype]]

        def compute(self):
            n = len(self.a)
            for j in range(n):
                pivot_row = self.a[j]
                s = float(pivot_row[j])
                for k in range(j):
                    s -= float(pivot_row[k]) * float(pivot_row[k])
                d = math.sqrt(s) if s >= 0.0 else float("nan")
                pivot_row[j] = d
                for i in range(j + 1, n):
                    row = self.a[i]
                    t = float(row[j])
                    for k in range(j):
                        t -= float(row[k]) * float(pivot_row[k])
                    row[j] = t / d
            return True
    return CholeskyBlock


def triangular_solve_block_cycles(vw: int, n: int, kc: int, unit_diagonal: bool) -> int:
    """The TriangularSolveBlock estimate (module docstring) for an n×n block and kc columns,
    ``vw`` the target's vector_width of the data type."""
    vectors = -(-kc // vw)
    r, d = (0, 0) if unit_diagonal else (6, 1)
    return 15 + n * (5 + r) + vectors * (n * (n - 1) // 2 + n * (2 + d))


def cholesky_block_cycles(vw: int, n: int) -> int:
    """The CholeskyBlock estimate (module docstring) for an n×n block, ``vw`` the target's
    vector_width of the data type."""
    return 15 + sum(20 + -(-j // vw) + (n - 1 - j) * (-(-j // vw) + 3) for j in range(n))


def ensure_triangular_solve_vertex(graph, dtype, lower: bool, unit_diagonal: bool) -> str:
    """Register the instantiation (and its estimator) on ``graph``; returns its name."""
    def estimate(info, target):
        rows = info.field_sizes("x")
        return triangular_solve_block_cycles(target.vector_width(dtype), len(rows), rows[0] if rows else 0,
                                             unit_diagonal)
    return util.ensure_vertex(graph, TriangularSolveBlock[dtype, bool(lower), bool(unit_diagonal)], estimate)


def ensure_cholesky_vertex(graph, dtype) -> str:
    return util.ensure_vertex(graph, CholeskyBlock[dtype], lambda info, target: cholesky_block_cycles(
        target.vector_width(dtype), len(info.field_sizes("a"))))
