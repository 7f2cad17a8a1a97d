"""Cycle estimates of poprand's vertices (each vertex runs on one worker).

The base is PopLibs' estimator of its Uniform vertex (PL:lib/poprand/poprandCycleEstimators.cpp)
for one worker (W = 1), with ``vw`` the target's vector width of the output type (2 floats
or 4 halves per 64-bit data path):

* float: ``4 + 4*ceil(n/vw) + 22 + 4*(n % vw != 0)``
* half:  ``4 + 4*ceil(n/vw) + 24 + 12*(n % vw != 0)``
* int:   ``4 + 22 + 6*(n//2) + 2*(n % 2)``

The other distributions add a documented per-element cost to it (docs/poplibs.md, section
poprand): Bernoulli none (a compare replaces the scale), normal 2 cycles per vector (the
hardware's Gaussian), truncated normal the normal's cost times the expected number of
candidates per element, log-uniform one exp (4 cycles, as op_costs counts it) per element,
dropout 2 cycles per vector (load the input, multiply by the scale).
"""
import math

import popsim


def _uniform(target, dtype, n: int) -> int:
    if dtype is popsim.INT:
        return 4 + 22 + 6 * (n // 2) + 2 * (n % 2)
    vw = target.vector_width(dtype)
    vectors = (n + vw - 1) // vw
    if dtype is popsim.HALF:
        return 4 + 4 * vectors + 24 + 12 * (n % vw != 0)
    return 4 + 4 * vectors + 22 + 4 * (n % vw != 0)


def truncated_normal_candidates(alpha: float) -> float:
    """Expected candidates per element: 1 / P(|z| <= alpha) for normal candidates (alpha >= 1),
    1 / E[exp(-z*z/2)] for uniform ones in [-alpha, alpha] (alpha < 1)."""
    inside = math.erf(alpha / math.sqrt(2.0))
    if alpha >= 1.0:
        return 1.0 / inside
    return alpha / (math.sqrt(math.pi / 2.0) * inside)


def estimate(kind: str, target, dtype, n: int, alpha: float = 1.0) -> int:
    """Worker cycles of one vertex of ``kind`` writing ``n`` elements of ``dtype``."""
    base = _uniform(target, dtype, n)
    vectors = (n + target.vector_width(dtype) - 1) // target.vector_width(dtype)
    if kind in ("uniform", "uniform_int", "bernoulli"):
        return base
    if kind == "normal":
        return base + 2 * vectors
    if kind == "truncated_normal":
        return int(math.ceil((base + 2 * vectors) * truncated_normal_candidates(alpha)))
    if kind == "log_uniform":
        return base + 4 * n
    if kind == "dropout":
        return base + 2 * vectors
    raise ValueError(f"no cycle estimate for poprand vertex kind {kind!r}")
