"""The initial memory image: what tile memory holds when an engine is loaded.

Two host buffers, each with the copy table that puts it in place:

- the *values*: constants' values and set_initial_value data of tensors, packed one
  after another in the order ``value_sources`` lists them (constants by variable, then
  initial values in the order they were set, so that later ones win where views
  overlap). These are data, not code: the executable cache keys an executable without
  them (digest.py covers which views have values, and their types and shapes) and
  stores it without them, and a cache hit packs the current graph's values with
  ``pack_values``, a concatenation in table order. A training script that sets fresh
  weights each run reuses its compiled executable.
- the *vertex values*: plain state fields' values (set_initial_value on a vertex
  field). Perf estimators may read them (VertexInfo.initial_value), so they are part of
  what is compiled: in the cache key and in every cache entry.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Tuple

import numpy as np

from ..tensor import Tensor
from .transfers import CopyTables, TransferPlanner

__all__ = ["InitialImage", "value_sources", "initial_image", "pack_values"]


@dataclass
class InitialImage:
    """The two buffers and their copy tables (-1: nothing to copy)."""

    table: int
    image: np.ndarray            # uint8: the values, packed
    sizes: np.ndarray            # int64: bytes of each value, in table order
    vertex_table: int
    vertex_values: np.ndarray    # uint8: vertex state values, packed


def value_sources(state) -> List[Tuple[Tensor, np.ndarray]]:
    """(view, values) of every constant and set_initial_value call, in table order."""
    sources = [(Tensor._of_variable(state.table, v), v.values) for v in state.table.variables
               if v.is_constant and v.size]
    return sources + state.initial_values


def _bytes(values: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(values).view(np.uint8).reshape(-1)


def _packed(parts: List[np.ndarray]) -> np.ndarray:
    """``parts`` one after another. A single part (a program with one initial value) is
    not copied: the image is a read-only view of the graph's own copy of the values,
    which the graph never changes in place (set_initial_value stores a new copy)."""
    if len(parts) == 1:
        image = parts[0].view()
        image.flags.writeable = False
        return image
    return np.concatenate(parts) if parts else np.zeros(0, np.uint8)


def initial_image(state, planner: TransferPlanner, tables: CopyTables,
                  vertex_entries: List[Tuple[np.ndarray, np.ndarray, np.ndarray]]) -> InitialImage:
    """The values of ``state`` and the vertex state values ``vertex_entries`` (arena
    offsets, byte counts, and the bytes one after another, of one or more values each),
    with their copy tables."""
    parts, segs = [], []
    offset = 0
    for tensor, values in value_sources(state):
        data = _bytes(values)
        s = planner.host_segments(tensor, to_device=True)
        s[:, 0] += offset
        segs.append(s)
        parts.append(data)
        offset += data.size
    table = tables.add(np.concatenate(segs)) if segs else -1
    sizes = np.array([p.size for p in parts], np.int64)
    vertex_table, vertex_values = -1, np.zeros(0, np.uint8)
    if vertex_entries:
        arena_offset, size, data = (np.concatenate(c) for c in zip(*vertex_entries))
        vertex_table = tables.add(np.stack([np.cumsum(size) - size, arena_offset, size], axis=1))
        vertex_values = data.astype(np.uint8, copy=False)
    return InitialImage(table, _packed(parts), sizes, vertex_table, vertex_values)


def pack_values(state, sizes: np.ndarray) -> np.ndarray:
    """The values of ``state`` packed in table order: the image for an executable
    lowered from a graph of the same structure (a cache hit), whose values were packed
    in ``sizes`` bytes each. ValueError when the graph's values do not have those sizes
    (an executable lowered from another graph)."""
    parts = [_bytes(values) for _, values in value_sources(state)]
    if len(parts) != sizes.size or any(p.size != s for p, s in zip(parts, sizes.tolist())):
        raise ValueError(f"init_sizes: the executable packs {sizes.size} initial values of "
                         f"{int(sizes.sum()):,} bytes but the graph has {len(parts)} of "
                         f"{sum(p.size for p in parts):,} bytes")
    return _packed(parts)
