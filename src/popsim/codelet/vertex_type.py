"""A registered vertex type: its name, fields and compiled code."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Tuple

from .fields import FieldSpec


@dataclass
class VertexType:
    """What ``graph.add_vertex(cs, name)`` instantiates.

    ``library`` is a shared library exporting the ABI of include/popsim_codelet.h under
    ``symbol`` (prefix). Translated Python vertices count their own cycles
    (``counts_cycles``) and keep ``python_class`` for interpreted (debug) mode.
    """

    name: str                          # "SumVertex", "popops::Add<float>", "Y<half,int>"
    fields: Tuple[FieldSpec, ...]      # declaration order = the order bind() receives them
    multi: bool                        # MultiVertex: compute(worker) runs on every worker
    library: Optional[Path]            # None only for types that cannot be compiled
    symbol: str                        # ABI symbol prefix in ``library``
    state_size: int                    # bytes of one vertex's state object
    source: str = ""                   # "file.cpp:12" or "module.Class", for messages
    counts_cycles: bool = False
    python_class: Optional[type] = None
    language: str = "c++"              # "c++" or "python"
    extra: dict = field(default_factory=dict)

    def field(self, name: str) -> Optional[FieldSpec]:
        for f in self.fields:
            if f.name == name:
                return f
        return None

    @property
    def field_names(self) -> Tuple[str, ...]:
        return tuple(f.name for f in self.fields)
