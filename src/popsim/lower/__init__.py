"""Lowering: a graph and its programs -> the executable description the core runs.

Steps: validate and lay out memory (layout.py), lower programs to instructions and
copy tables (programs.py, transfers.py), with cycle costs from cost_model.py, and
collect host handles, streams and the initial memory image (initial_image.py).
"""
from __future__ import annotations

import contextlib
import gc
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

import numpy as np

from ..log import phase
from ..target import Target
from ..types import Type
from ..progress import Progress
from ..streams import ReplicatedStreamMode
from .compute_sets import ComputeSetLowerer, VertexTables
from .cost_model import (CATEGORIES, CONTROL_CODE_BYTES, EXCHANGE_CODE_BYTES, SUPERVISOR_STACK_BYTES,
                         WORKER_STACK_BYTES, CostModel)
from .initial_image import initial_image
from .layout import MemoryLayout, plan_memory, tiles_over
from .liveness import allocate_reuse, analyse, tensor_vars
from .programs import LoweredPrograms, ProgramLowerer
from .transfers import CopyTables, TransferPlanner

__all__ = ["Lowered", "HostHandle", "StreamRecord", "lower_graph", "CATEGORIES"]


@dataclass
class HostHandle:
    """A host read/write handle: the copy table between a host buffer and the view."""

    handle: str
    table: int
    dtype: Type
    shape: Tuple[int, ...]


@dataclass
class StreamRecord:
    """A FIFO stream as the engine sees it."""

    handle: str
    dtype: Type
    num_elements: int
    to_device: bool
    index: int
    broadcast: bool = False  # host-to-device, ReplicatedStreamMode.BROADCAST: one transfer for every replica

    @property
    def transfer_bytes(self) -> int:
        return self.num_elements * self.dtype.size


@dataclass
class Lowered:
    """Everything the engine needs to build a core and explain what it ran: plain data,
    with no reference back to the graph, so that it can be saved and loaded. Saving is
    driven by the fields' annotations (popsim/codec.py): a new field is one edit."""

    target: Target                        # one replica's
    replication_factor: int
    layout: MemoryLayout
    programs: LoweredPrograms
    vertices: VertexTables
    copy_runs: np.ndarray                 # every copy table's rows (lower/copy_runs.py), concatenated
    table_begin: np.ndarray               # table t is copy_runs[table_begin[t]:table_begin[t + 1]]
    table_overlaps: np.ndarray
    streams: List[StreamRecord]           # by index
    host_writes: Dict[str, HostHandle]
    host_reads: Dict[str, HostHandle]
    init_table: int                       # copies init_image into tile memory (-1: nothing to copy)
    # uint8: constants' values and initial values, packed in table order (initial_image.py);
    # None in an executable-cache entry: data, not code, they come from the graph on a hit
    init_image: Optional[np.ndarray]
    init_sizes: np.ndarray                # int64: bytes of each of those values, in table order
    vertex_values_table: int              # copies vertex_values into tile memory (-1: nothing to copy)
    vertex_values: np.ndarray             # uint8: vertex state fields' values, packed
    replication_index_offsets: np.ndarray  # int64: arena offsets of the replication-index constants (uint32)
    tiles_out_of_memory: np.ndarray
    program_names: List[str]
    variable_names: List[str]
    graph_counts: Dict[str, int]          # num_vertices, num_edges, num_variables, num_compute_sets

    @property
    def num_programs(self) -> int:
        return len(self.program_names)


def lower_graph(state, programs, interpreted: bool = False, timings: Optional[Dict[str, float]] = None,
                check_races: bool = False, variable_liveness: bool = True) -> Lowered:
    """Lower ``programs`` for the graph ``state``; tiles over their memory are listed in
    ``tiles_out_of_memory`` (the caller decides whether that is an error). With
    ``check_races``, a vertex reading what another writes in one compute set is an error
    (conflicts.py). With ``variable_liveness``, variables that are not always live share
    tile memory where their live ranges do not overlap (liveness.py)."""
    with _no_cyclic_gc():
        return _lower_graph(state, programs, interpreted, {} if timings is None else timings, check_races,
                            variable_liveness)


@contextlib.contextmanager
def _no_cyclic_gc():
    """Python's cyclic garbage collector off while lowering. Lowering allocates many small
    objects (tuples, arrays) and relies on no cycle being collected, but every allocation
    counts towards a collection, and each full collection walks all of the graph's
    millions of objects (with the collector off for a whole SqueezeNet estimate, its CPU
    time fell from 76 s to 64 s). Reference counting still frees what lowering drops; the
    collector resumes afterwards and finds any cycle then."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _lower_graph(state, programs, interpreted: bool, timings: Dict[str, float], check_races: bool,
                 variable_liveness: bool) -> Lowered:
    target = state.target
    variables = state.table.variables
    with phase("memory layout", timings):
        layout = plan_memory(variables, target)
    cost = CostModel(target, state.replication_factor)
    tables = CopyTables()
    planner = TransferPlanner(state.table, layout, cost)
    host_writes = {h: HostHandle(h, tables.add(planner.host_segments(t, to_device=True)), t.dtype, t.shape)
                   for h, t in state.host_writes.items()}
    host_reads = {h: HostHandle(h, tables.add(planner.host_segments(t, to_device=False)), t.dtype, t.shape)
                  for h, t in state.host_reads.items()}
    progress = Progress(sum(len(cs.vertices) for cs in state.compute_sets), "Compiling")
    compute_sets = ComputeSetLowerer(state, layout, planner, tables, cost, interpreted, progress, check_races)
    try:
        with phase("lower programs and compute sets", timings):
            lowerer = ProgramLowerer(state, planner, tables, cost, compute_sets)
            lowered_programs = lowerer.lower(programs)
    finally:
        progress.close()
    _account_code_and_stack(layout, lowered_programs, target)
    if variable_liveness:
        with phase("variable liveness", timings):
            allocate_reuse(layout, analyse(lowerer.live, len(programs), len(variables), _always_live(state)),
                           len(lowered_programs.steps))
    with phase("initial memory image", timings):
        init = initial_image(state, planner, tables, compute_sets.init_entries)
    over = tiles_over(layout, target)
    copy_runs, begin, overlaps = tables.arrays()
    layout.index = None  # only lowering needs the per-element tile lookup
    streams = [StreamRecord(s.handle, s.dtype, s.num_elements, s.is_host_to_device, s.index,
                            s.is_host_to_device and s.replicated_mode is ReplicatedStreamMode.BROADCAST)
               for s in state.streams_by_index()]
    index_offsets = np.asarray([planner.arena_offsets(t._element_ids()[:1])[0] for t in state.replication_index],
                               np.int64)
    num_vertices, num_edges = compute_sets.count_vertices_and_edges(state.compute_sets)
    counts = {"num_vertices": num_vertices, "num_edges": num_edges, "num_variables": len(variables),
              "num_compute_sets": len(state.compute_sets)}
    return Lowered(target=target, replication_factor=state.replication_factor, layout=layout, programs=lowered_programs,
                   vertices=compute_sets.tables_out(),
                   copy_runs=copy_runs, table_begin=begin, table_overlaps=overlaps, streams=streams,
                   host_writes=host_writes, host_reads=host_reads, init_table=init.table, init_image=init.image,
                   init_sizes=init.sizes, vertex_values_table=init.vertex_table, vertex_values=init.vertex_values,
                   replication_index_offsets=index_offsets,
                   tiles_out_of_memory=over, program_names=[p.debug_name or f"program {i}" for i, p in
                                                            enumerate(programs)],
                   variable_names=[v.name for v in variables], graph_counts=counts)


def _always_live(state) -> np.ndarray:
    """Per variable: always live whatever the programs do (liveness.py): constants,
    variables with host read/write handles and variables with initial values."""
    table = state.table
    always = np.fromiter((v.is_constant for v in table.variables), bool, len(table.variables))
    tensors = list(state.host_writes.values()) + list(state.host_reads.values()) + \
        [t for t, _ in state.initial_values]
    for t in tensors:
        always[tensor_vars(table, t)[0]] = True
    return always


def _account_code_and_stack(layout: MemoryLayout, programs: LoweredPrograms, target) -> None:
    """Memory that is not data: exchange code for the tiles each exchange phase involves,
    the control program and the stacks on every tile (cost_model.py has the figures)."""
    for step in programs.steps:
        if step.cost.tile_exchange is not None:
            busy = np.flatnonzero(step.cost.tile_exchange > 0)
            layout.account_many(busy, "exchange_code", np.full(busy.size, EXCHANGE_CODE_BYTES))
    layout.by_category["control_code"] += CONTROL_CODE_BYTES * int(programs.instrs.shape[0])
    layout.by_category["stack"] += target.num_worker_contexts * WORKER_STACK_BYTES + SUPERVISOR_STACK_BYTES
