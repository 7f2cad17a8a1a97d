"""Lowering: a graph and its programs -> the executable description the core runs.

Steps: validate and lay out memory (layout.py), lower programs to instructions and
copy tables (programs.py, transfers.py), with cycle costs from cost_model.py, and
collect host handles, streams and the initial memory image.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Tuple

import numpy as np

from .compute_sets import ComputeSetLowerer, VertexTables
from .cost_model import CATEGORIES, CostModel
from .layout import MemoryLayout, check_memory, plan_memory
from .programs import LoweredPrograms, ProgramLowerer
from .transfers import CopyTables, TransferPlanner

__all__ = ["Lowered", "HostHandle", "lower_graph", "CATEGORIES"]


@dataclass
class HostHandle:
    """A host read/write handle: the copy table between a host buffer and the view."""

    handle: str
    table: int
    dtype: object
    shape: Tuple[int, ...]


@dataclass
class Lowered:
    """Everything the engine needs to build a core and explain what it ran."""

    target: object
    layout: MemoryLayout
    programs: LoweredPrograms
    vertices: VertexTables
    segs: np.ndarray
    table_begin: np.ndarray
    table_overlaps: np.ndarray
    streams: List[object]                 # DataStream by index
    host_writes: Dict[str, HostHandle]
    host_reads: Dict[str, HostHandle]
    init_table: int
    init_image: np.ndarray                # uint8: constants and initial values, packed
    tiles_out_of_memory: np.ndarray
    num_programs: int


def lower_graph(state, programs, allow_out_of_memory: bool, interpreted: bool = False) -> Lowered:
    target = state.target
    variables = state.table.variables
    layout = plan_memory(variables, target)
    cost = CostModel(target)
    tables = CopyTables()
    planner = TransferPlanner(state.table, layout, cost)
    host_writes = {h: HostHandle(h, tables.add(planner.host_segments(t, to_device=True)), t.dtype, t.shape)
                   for h, t in state.host_writes.items()}
    host_reads = {h: HostHandle(h, tables.add(planner.host_segments(t, to_device=False)), t.dtype, t.shape)
                  for h, t in state.host_reads.items()}
    compute_sets = ComputeSetLowerer(state, layout, planner, tables, cost, interpreted)
    lowered_programs = ProgramLowerer(state, planner, tables, cost, compute_sets).lower(programs)
    init_table, init_image = _initial_image(state, planner, tables, compute_sets.init_entries)
    over = check_memory(layout, variables, target, allow_out_of_memory)
    segs, begin, overlaps = tables.arrays()
    return Lowered(target=target, layout=layout, programs=lowered_programs, vertices=compute_sets.tables_out(),
                   segs=segs, table_begin=begin, table_overlaps=overlaps,
                   streams=sorted(state.streams.values(), key=lambda s: s.index),
                   host_writes=host_writes, host_reads=host_reads, init_table=init_table, init_image=init_image,
                   tiles_out_of_memory=over, num_programs=len(programs))


def _initial_image(state, planner: TransferPlanner, tables: CopyTables,
                   extra: List[Tuple[int, np.ndarray]]) -> Tuple[int, np.ndarray]:
    """Constants' values, set_initial_value data and vertex state values (``extra``:
    arena offset, bytes) packed in one host buffer, with the table that puts them in
    place when the engine is loaded (later calls win)."""
    from ..tensor import Tensor
    parts: List[np.ndarray] = []
    segs: List[np.ndarray] = []
    offset = 0
    sources = [(Tensor._of_variable(state.table, v), v.values) for v in state.table.variables
               if v.is_constant and v.size]
    sources += state.initial_values
    for tensor, values in sources:
        data = np.ascontiguousarray(values).view(np.uint8).reshape(-1)
        s = planner.host_segments(tensor, to_device=True)
        s[:, 0] += offset
        segs.append(s)
        parts.append(data)
        offset += data.size
    for arena_offset, data in extra:
        segs.append(np.array([[offset, arena_offset, data.size]], np.int64))
        parts.append(data)
        offset += data.size
    if not parts:
        return -1, np.zeros(1, np.uint8)
    return tables.add(np.concatenate(segs)), np.concatenate(parts)
