"""Vertex fields: what a vertex type declares, and what a connection must provide.

Both codelet front ends (Python classes, Poplar C++ files) describe their fields with
these records; the graph checks connections against them and the lowering turns each
into the ``popsim_field`` the codelet ABI (include/popsim_codelet.h) binds.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Optional

from ..types import Type


class FieldKind(enum.Enum):
    SCALAR_EDGE = "scalar edge"            # Input<float>: one element of a tensor
    VECTOR_EDGE = "vector edge"            # Input<Vector<float>>: a 1-D tensor
    EDGE_VECTOR = "vector of edges"        # Vector<Input<Vector<float>>>: a list of tensors
    VECTOR_LIST = "VectorList"             # Input<VectorList<float>>: a list of 1-D tensors
    STATE = "state"                        # unsigned n;  (set_initial_value)
    STATE_VECTOR = "state vector"          # Vector<unsigned> (set_initial_value with a list)

    @property
    def is_edge(self) -> bool:
        return self not in (FieldKind.STATE, FieldKind.STATE_VECTOR)

    @property
    def is_list(self) -> bool:
        """Connected to a list of tensors (one per sub-edge)."""
        return self in (FieldKind.EDGE_VECTOR, FieldKind.VECTOR_LIST)


class Direction(enum.Enum):
    INPUT = "Input"
    OUTPUT = "Output"
    INOUT = "InOut"
    NONE = ""  # plain state

    @property
    def reads(self) -> bool:
        return self in (Direction.INPUT, Direction.INOUT)

    @property
    def writes(self) -> bool:
        return self in (Direction.OUTPUT, Direction.INOUT)


@dataclass(frozen=True)
class FieldSpec:
    """One declared field of a vertex type.

    ``element_kind`` is the kind of each sub-edge of an EDGE_VECTOR (SCALAR_EDGE or
    VECTOR_EDGE; VECTOR_LIST sub-edges are always vectors). ``layout`` records Poplar's
    layout argument (SPAN, ONE_PTR, ...) for reports; it does not change behaviour.
    """

    name: str
    kind: FieldKind
    direction: Direction
    dtype: Type
    element_kind: Optional[FieldKind] = None
    layout: str = ""

    def describe(self) -> str:
        """How the field was declared, in Poplar's spelling."""
        t = self.dtype.name
        if self.kind is FieldKind.SCALAR_EDGE:
            return f"{self.direction.value}<{t}>"
        if self.kind is FieldKind.VECTOR_EDGE:
            return f"{self.direction.value}<Vector<{t}>>"
        if self.kind is FieldKind.EDGE_VECTOR:
            inner = f"Vector<{t}>" if self.element_kind is FieldKind.VECTOR_EDGE else t
            return f"Vector<{self.direction.value}<{inner}>>"
        if self.kind is FieldKind.VECTOR_LIST:
            return f"{self.direction.value}<VectorList<{t}>>"
        if self.kind is FieldKind.STATE_VECTOR:
            return f"Vector<{t}> (state)"
        return f"{t} (state)"
