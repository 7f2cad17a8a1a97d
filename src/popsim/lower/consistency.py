"""Checking a Lowered that did not come from the lowering (a deserialized executable).

The core checks what it runs (native/core/validate.cpp, when the engine is built);
this checks the rest, what the Python side indexes with: host handles, stream records,
PrintTensor callbacks, step and vertex metadata for messages and reports, the memory
layout. Every inconsistency is a ValueError naming the field, so that a malformed file
fails when it is loaded instead of with an IndexError in the middle of a run.
"""
from __future__ import annotations

import math
from typing import List, Union

import numpy as np

from ..contract import COLUMNS, COPY_RUN_LIMIT, NUM_CATEGORIES, ROW_WIDTHS, Op
from .copy_runs import run_extents
from .layout import MEMORY_CATEGORIES

__all__ = ["check_lowered", "check_initial_image"]

_INT = "iu"
_ROWS = "i"  # the tables of rows the core runs: int64 in the hand-over (native.describe)


def _need(ok: bool, what: str) -> None:
    if not ok:
        raise ValueError(what)


def _array(a, name: str, kinds: str, shape) -> np.ndarray:
    """``a`` is a numpy array of one of ``kinds`` with ``shape`` (None: any length)."""
    if not (isinstance(a, np.ndarray) and a.dtype.kind in kinds and a.ndim == len(shape) and
            all(want is None or have == want for have, want in zip(a.shape, shape))):
        # The message only when it fails: this runs for every step's arrays of every load.
        raise ValueError(f"{name}: expected a {'/'.join(kinds)} array of shape {shape}, found "
                         f"{getattr(a, 'dtype', type(a).__name__)} {getattr(a, 'shape', '')}")
    return a


def _indices(a: np.ndarray, limit: int, name: str, low: int = 0) -> None:
    """Every value of ``a`` in [low, limit); else the first one that is not, by its row."""
    if a.size == 0:
        return
    if low == 0:  # one pass, not two: negative values read as unsigned are past any limit
        if int(a.view(a.dtype.str.replace("i", "u")).max()) < limit:
            return
    elif int(a.min()) >= low and int(a.max()) < limit:
        return
    flat = a.reshape(-1)
    i = int(np.argmax((flat < low) | (flat >= limit)))
    where = f" row {i}" if a.ndim == 1 else f" row {i // a.shape[1]}, column {i % a.shape[1]}"
    raise ValueError(f"{name}{where}: expected {low}..{limit - 1}, found {int(flat[i])}")


def _column(table: np.ndarray, table_name: str, column: str) -> np.ndarray:
    """Column ``column`` of the rows of ``table`` (named in the contract's COLUMNS)."""
    return table[:, COLUMNS[table_name][column]]


def _same(have: np.ndarray, want: np.ndarray, name: str, source: str) -> None:
    """``have`` repeats ``want`` (what the core runs, for the report's sake): the first
    row where they differ is named."""
    _need(have.shape == want.shape, f"{name}: {have.shape[0] if have.ndim else 0} rows, but {source} has "
                                    f"{want.shape[0] if want.ndim else 0}")
    differ: Union[np.ndarray, List[int]] = \
        np.flatnonzero(np.any((have != want).reshape(have.shape[0], -1), axis=1)) if have.size else []
    if len(differ):
        row = int(differ[0])
        raise ValueError(f"{name} row {row}: expected {want[row].tolist()} (as {source}), found {have[row].tolist()}")


def _host_extents(lw):
    """Per copy table: the bytes its host-side (source) and arena-side reach. Tables are
    consecutive stretches of copy_runs (table_begin is checked first), so each is one
    reduceat range: a non-empty table's reaches to the next non-empty one's start."""
    runs, begin = lw.copy_runs, lw.table_begin
    ntables = begin.size - 1
    src, dst = np.zeros(ntables, np.int64), np.zeros(ntables, np.int64)
    filled = np.flatnonzero(np.diff(begin) > 0)
    if filled.size:
        starts = begin[filled]
        src[filled] = np.maximum.reduceat(run_extents(runs, "src")[1], starts)
        dst[filled] = np.maximum.reduceat(run_extents(runs, "dst")[1], starts)
    return src, dst


def _check_runs(runs: np.ndarray) -> None:
    """Run rows within the core's bounds (it checks them again, with the memories)."""
    if not runs.size:
        return
    col = COLUMNS["copy_runs"]
    sizes = runs[:, [col["len"], col["count"], col["outer"]]]
    _need(int(sizes.min()) >= 1 and int(sizes.max()) <= COPY_RUN_LIMIT,
          f"copy_runs: len, count and outer must be 1 to {COPY_RUN_LIMIT}")
    strides = runs[:, [col["src_stride"], col["dst_stride"], col["outer_src"], col["outer_dst"]]]
    _need(int(np.abs(strides).max()) <= COPY_RUN_LIMIT, f"copy_runs: a stride past {COPY_RUN_LIMIT} bytes")
    # Below 2**62, with the bounds above no extent overflows int64 (the core allows more).
    _need(int(runs[:, [col["src"], col["dst"]]].max()) < 1 << 62, "copy_runs: an offset past 2**62")
    _need(min(int(run_extents(runs, side)[0].min()) for side in ("src", "dst")) >= 0,
          "copy_runs: a run reaching below offset 0")


def _host_table(lw, table: int, nbytes: int, name: str, extents, to_device: bool) -> None:
    src, dst = extents
    _need(0 <= table < src.size, f"{name}: copy table {table} does not exist")
    host, arena = (src[table], dst[table]) if to_device else (dst[table], src[table])
    _covers(lw, host, arena, nbytes, name)


def _covers(lw, host: int, arena: int, nbytes: int, name: str) -> None:
    """A copy table reaching ``host`` bytes of its host buffer and ``arena`` bytes of
    tile memory fits a host buffer of ``nbytes``, exactly."""
    _need(int(host) == nbytes, f"{name}: its copy table does not cover exactly the host buffer's {nbytes} bytes")
    _need(int(arena) <= lw.layout.arena_bytes, f"{name}: its copy table reaches past tile memory")


def check_initial_image(lw, extents=None) -> None:
    """Raise ValueError unless ``lw.init_image`` holds the values ``init_sizes`` lists and
    its copy table covers exactly that buffer: run on the image a cache hit packs from
    the graph, so that an entry whose table does not fit the graph's values is refused."""
    image = _array(lw.init_image, "init_image", "u", (None,))
    _need(int(lw.init_sizes.sum()) == image.size,
          f"init_image: {image.size:,} bytes, but init_sizes lists {int(lw.init_sizes.sum()):,}")
    if lw.init_table < 0:
        _need(image.size == 0, "init_image: values but no copy table for them")
        return
    if extents is not None:
        _host_table(lw, lw.init_table, image.size, "init_table", extents, True)
        return
    table = lw.init_table  # this table's reach only: a cache hit checks no other
    _need(table < lw.table_begin.size - 1, f"init_table: copy table {table} does not exist")
    runs = lw.copy_runs[lw.table_begin[table]:lw.table_begin[table + 1]]
    host, arena = (run_extents(runs, "src")[1].max(), run_extents(runs, "dst")[1].max()) if runs.size else (0, 0)
    _covers(lw, host, arena, image.size, "init_table")


def check_lowered(lw) -> None:
    """Raise ValueError, naming the field, if ``lw`` is not self-consistent."""
    t = lw.target
    _need(1 <= t.num_ipus and 1 <= t.tiles_per_ipu and t.num_tiles <= 1 << 24, "target: bad tile counts")
    _need(1 <= t.num_worker_contexts <= 64, "target.num_worker_contexts must be 1..64")
    _need(t.bytes_per_tile >= 0 and math.isfinite(t.tile_clock_frequency), "target: bad memory or clock")
    tiles = t.num_tiles
    p, v, m = lw.programs, lw.vertices, lw.layout

    # Tables the core runs (the core checks their contents; here, their shapes).
    _array(lw.copy_runs, "copy_runs", _ROWS, (None, ROW_WIDTHS["copy_runs"]))
    _array(lw.table_begin, "table_begin", _INT, (None,))
    _need(lw.table_begin.size >= 1 and lw.table_begin[0] == 0 and lw.table_begin[-1] == lw.copy_runs.shape[0] and
          bool(np.all(np.diff(lw.table_begin) >= 0)), "table_begin: bad table ranges")
    _check_runs(lw.copy_runs)
    extents = _host_extents(lw)
    _array(p.instrs, "programs.instrs", _ROWS, (None, ROW_WIDTHS["instrs"]))
    _array(p.entries, "programs.entries", _INT, (None,))
    nsteps = len(p.steps)
    ipus = t.num_ipus
    _need(isinstance(lw.replication_factor, int) and 1 <= lw.replication_factor <= 1 << 16,
          "replication_factor out of range")
    _array(p.step_costs, "programs.step_costs", "f", (nsteps, ipus, NUM_CATEGORIES))
    _array(p.step_ipus, "programs.step_ipus", _ROWS, (nsteps, ROW_WIDTHS["step_ipus"]))
    _array(p.replica_maps, "programs.replica_maps", _INT, (None, lw.replication_factor))
    _array(lw.replication_index_offsets, "replication_index_offsets", _INT, (None,))
    _need(set(lw.graph_counts) == {"num_vertices", "num_edges", "num_variables", "num_compute_sets"},
          "graph_counts: unexpected keys")
    _need(len(lw.program_names) == p.entries.size and len(p.program_streams) == p.entries.size,
          "program_names / program_streams: one per program expected")

    # Streams, host handles, PrintTensor callbacks, the initial image.
    for i, s in enumerate(lw.streams):
        _need(s.index == i and s.num_elements >= 0, f"streams.{i}: bad index or size")
    for i, used in enumerate(p.program_streams):
        _need(all(0 <= s < len(lw.streams) for s in used), f"programs.program_streams.{i}: unknown stream")
    for kind, handles in (("host_writes", lw.host_writes), ("host_reads", lw.host_reads)):
        for name, h in handles.items():
            _need(h.handle == name and all(d >= 0 for d in h.shape), f"{kind}.{name}: bad handle")
            _host_table(lw, h.table, math.prod(h.shape) * h.dtype.size, f"{kind}.{name}", extents,
                        kind == "host_writes")
    for i, cb in enumerate(p.callbacks):
        _need(all(d >= 0 for d in cb.shape), f"programs.callbacks.{i}: bad shape")
        _host_table(lw, cb.table, math.prod(cb.shape) * cb.dtype.size, f"programs.callbacks.{i}", extents, False)
    _indices(_array(lw.init_sizes, "init_sizes", _INT, (None,)), 1 << 62, "init_sizes")
    if lw.init_image is not None:  # None: a cache entry, whose values the graph supplies (check_initial_image)
        check_initial_image(lw, extents)
    _array(lw.vertex_values, "vertex_values", "u", (None,))
    _need(lw.vertex_values_table >= 0 or lw.vertex_values.size == 0, "vertex_values: no copy table for them")
    if lw.vertex_values_table >= 0:
        _host_table(lw, lw.vertex_values_table, lw.vertex_values.size, "vertex_values_table", extents, True)
    ops, col = p.instrs[:, COLUMNS["instrs"]["op"]], COLUMNS["instrs"]
    for op, to_device in ((Op.STREAM_TO_DEVICE, True), (Op.STREAM_FROM_DEVICE, False)):
        for row in p.instrs[ops == op]:
            stream, table = int(row[col["a"]]), int(row[col["b"]])
            _need(0 <= stream < len(lw.streams), "programs.instrs: a stream copy of an unknown stream")
            _host_table(lw, table, lw.streams[stream].transfer_bytes, f"streams.{stream}", extents, to_device)
    for s in lw.streams:
        _need(s.transfer_bytes <= max(lw.layout.arena_bytes, 1 << 20),
              f"streams.{s.index}: a transfer of {s.transfer_bytes} bytes, larger than tile memory")

    # Steps.
    ncs = v.compute_sets.shape[0] if isinstance(v.compute_sets, np.ndarray) else 0
    for i, step in enumerate(p.steps):
        c = step.cost
        _need(-1 <= step.compute_set < ncs, f"programs.steps.{i}.compute_set out of range")
        _array(c.vector, f"programs.steps.{i}.cost.vector", "f", (ipus, NUM_CATEGORIES))
        for name in ("tile_compute", "tile_exchange"):
            if getattr(c, name) is not None:
                _array(getattr(c, name), f"programs.steps.{i}.cost.{name}", "f" + _INT, (tiles,))

    # Vertices: what messages, reports and the hand-over (native.describe) index with.
    # The core checks the rows it runs when an engine is built; the report may be built
    # without one, so the ranges it slices with are checked here too.
    nverts = _array(v.vertices, "vertices.vertices", _ROWS, (None, ROW_WIDTHS["vertices"])).shape[0]
    ngroups = _array(v.groups, "vertices.groups", _ROWS, (None, ROW_WIDTHS["groups"])).shape[0]
    _array(v.compute_sets, "vertices.compute_sets", _ROWS, (None, ROW_WIDTHS["compute_sets"]))
    _need(len(v.codelet_fields) == len(v.codelets), "vertices.codelet_fields: one per codelet expected")
    ntypes = len(v.type_names)
    _need(len(v.type_fields) == ntypes and len(v.type_sources) == ntypes, "vertices.type_*: one per type expected")
    for name, limit in (("row_type", ntypes), ("row_cs", ncs), ("row_index", 1 << 62)):
        _indices(_array(getattr(v, name), f"vertices.{name}", _INT, (nverts,)), limit, f"vertices.{name}")
    _indices(_column(v.vertices, "vertices", "codelet"), len(v.codelets), "vertices.vertices (codelet column)")
    _indices(_column(v.vertices, "vertices", "tile"), tiles, "vertices.vertices (tile column)")
    _indices(_column(v.groups, "groups", "tile"), tiles, "vertices.groups (tile column)")
    _need(len(v.cs_names) == ncs and len(v.cs_buffer_bytes) == ncs and len(v.cs_shared_bytes) == ncs and
          len(v.cs_groups) == ncs, "vertices.cs_*: one per compute set expected")
    # group_tiles and cs_groups repeat columns of the tables the core runs, for the
    # report: each group's compute cycles are added to the tile group_tiles names.
    _same(_array(v.group_tiles, "vertices.group_tiles", _INT, (ngroups,)), _column(v.groups, "groups", "tile"),
          "vertices.group_tiles", "vertices.groups' tile column")
    first = _column(v.compute_sets, "compute_sets", "first_group")
    count = _column(v.compute_sets, "compute_sets", "num_groups")
    bad = np.flatnonzero((first < 0) | (count < 0) | (first > ngroups - count))
    _need(bad.size == 0, f"vertices.compute_sets row {int(bad[0]) if bad.size else 0}: tile groups out of range "
                         f"(expected within the {ngroups} groups)")
    cs_groups = np.array(v.cs_groups, np.int64).reshape(len(v.cs_groups), 2)
    _same(cs_groups, np.stack([first, count], axis=1), "vertices.cs_groups",
          "vertices.compute_sets' first_group and num_groups columns")
    _array(v.exchange_costs, "vertices.exchange_costs", "f", (ncs, 2, ipus, NUM_CATEGORIES))

    # Memory layout.
    nvars = len(lw.variable_names)
    _array(m.var_offsets, "layout.var_offsets", _INT, (nvars,))
    nregions = _array(m.region_var, "layout.region_var", _INT, (None,)).size
    _indices(m.region_var, nvars, "layout.region_var")
    _indices(_array(m.region_tile, "layout.region_tile", _INT, (nregions,)), tiles, "layout.region_tile")
    _array(m.region_bytes, "layout.region_bytes", _INT, (nregions,))
    _need(set(m.by_category) == set(MEMORY_CATEGORIES), "layout.by_category: unexpected memory categories")
    for name, values in m.by_category.items():
        _array(values, f"layout.by_category.{name}", _INT, (tiles,))
    _indices(_array(lw.tiles_out_of_memory, "tiles_out_of_memory", _INT, (None,)), tiles, "tiles_out_of_memory")
