"""poprand: random numbers from a counter-based generator keyed by seed, seed modifier and
element index, so that results never depend on tile mapping or thread count.

Ops (PopLibs' RandomGen.hpp, snake_case): uniform, log_uniform, normal, truncated_normal,
bernoulli, dropout, set_seed; add_codelets(graph) for Poplar parity. docs/poplibs.md,
section poprand, gives the generator and how it differs from the hardware's.
"""
from .random_gen import bernoulli, dropout, log_uniform, normal, truncated_normal, uniform
from .seed import add_codelets, set_seed

__all__ = ["add_codelets", "bernoulli", "dropout", "log_uniform", "normal", "set_seed", "truncated_normal",
           "uniform"]
