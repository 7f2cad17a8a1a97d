"""A pure-Python reference executor of programs: the living specification of what the
engine computes (see executor.py). It uses the graph and program model only, never the
native core."""
from .executor import ReferenceExecutor

__all__ = ["ReferenceExecutor"]
