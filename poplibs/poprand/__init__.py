"""poprand: random numbers from a counter-based generator keyed by seed, seed modifier and
element index, so that results never depend on tile mapping or thread count."""
__all__ = []
