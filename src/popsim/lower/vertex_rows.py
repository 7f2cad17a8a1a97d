"""A compute set's vertices and fields in lowering order, read by column.

Lowering puts the vertices of a compute set in tile order (creation order within a
tile) and gives every field of every vertex a row. The vertex store keeps vertex
types, tiles and first slots as columns (vertex_store.py), so the order, the field
rows and what each row's slot holds are numpy passes; nothing is made per vertex.
"""
from __future__ import annotations

from typing import List, Optional

import numpy as np

from ..codelet.fields import FieldSpec
from ..vertex_store import SLOT_LIST, SLOT_NONE, slot_kinds

_EMPTY = np.empty(0, np.int64)


class TypeColumns:
    """The distinct vertex types of a compute set (``types``, in order of first use),
    the type of each vertex (``of``), and per type and per field what lowering needs."""

    def __init__(self, column: list):
        nv = len(column)
        ids = np.fromiter(map(id, column), np.int64, nv)  # vertex types are not hashable
        if nv == 0 or (ids == ids[0]).all():
            self.types = column[:1]
            self.of = np.zeros(nv, np.int64)
        else:
            _, first, self.of = np.unique(ids, return_index=True, return_inverse=True)
            self.of = self.of.reshape(-1)
            self.types = [column[i] for i in first.tolist()]
        types = self.types
        self.num_fields = np.array([len(t.fields) for t in types], np.int64)
        self.field_start = np.cumsum(self.num_fields) - self.num_fields  # into the flat field arrays below
        self.state_size = np.array([t.state_size for t in types], np.int64)
        self.multi = np.array([t.multi for t in types], bool)
        self.specs: List[FieldSpec] = [f for t in types for f in t.fields]
        specs = self.specs
        self.itemsize = np.array([f.dtype.size for f in specs], np.int64)
        self.reads = np.array([f.direction.reads for f in specs], bool)
        self.writes = np.array([f.direction.writes for f in specs], bool)


class FieldRows:
    """Every field of every vertex, vertices in lowering order (``order``: by tile,
    then index), fields in declaration order: per row its vertex, position, slot, what
    the slot holds (vertex_store.SLOT_*), and its field in ``types.specs``."""

    def __init__(self, cs, types: TypeColumns, order: np.ndarray):
        per_vertex = types.num_fields[types.of][order]
        total = int(per_vertex.sum()) if per_vertex.size else 0
        self.vertex_start = np.cumsum(per_vertex) - per_vertex  # each vertex's first row
        self.per_vertex = per_vertex
        self.vertex = np.repeat(order, per_vertex)
        self.position = np.arange(total, dtype=np.int64) - np.repeat(self.vertex_start, per_vertex)
        first = np.array(cs._first, np.int64) if order.size else _EMPTY
        self.slot = np.repeat(first[order], per_vertex) + self.position
        self.kind = slot_kinds(cs._slots)[self.slot] if total else np.empty(0, np.int8)
        self.spec = types.field_start[types.of[self.vertex]] + self.position
        self.count = total

    def first_unconnected(self, slots: list) -> Optional[int]:
        """The first row whose field (or a sub-edge of it) is not connected, or None."""
        missing = np.flatnonzero(self.kind == SLOT_NONE)
        limit = int(missing[0]) if missing.size else self.count
        for row in np.flatnonzero(self.kind == SLOT_LIST).tolist():
            if row >= limit:
                break
            listed = slots[int(self.slot[row])]
            if type(listed) is list and any(c is None for c in listed):   # an EdgeList has no gaps
                return row
        return limit if missing.size else None

    def rank_of_row(self, row: int) -> int:
        """The position (in lowering order) of the vertex of ``row``."""
        return int(np.searchsorted(self.vertex_start, row, side="right")) - 1
