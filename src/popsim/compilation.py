"""How an executable was made: what the compile step records for the report."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict

__all__ = ["CompilationInfo"]


@dataclass
class CompilationInfo:
    """How the executable was made: lowered now or taken from the executable cache
    (and why not), and how long each phase took (seconds)."""

    from_cache: bool = False
    cache_reason: str = ""
    cache_key: str = ""
    cache_path: str = ""  # the executable-cache entry it was loaded from, if it was
    phases: Dict[str, float] = field(default_factory=dict)
