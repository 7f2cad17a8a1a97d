"""Element-wise ops of activations ``[N, S, ...]`` with per-statistic operands ``[S]``
(dimension 1 indexes the statistic), on the tiles that hold the activations: the norms'
``(x - mean) · invStdDev``, ``x · gamma + beta`` and friends (norm_vertices.STAT_OPS).

The activations may be any view (a convolution's output is channels-innermost in memory
under a ``[B, C, H, W]`` shape). The op works in the dimension order in which the first
operand's tile regions are fewest (its own, statistics last, or the first two swapped), so
that each tile's elements are a few long regions; the output is a new variable laid out
like the first operand in that order, returned viewed in the caller's order. Each tile's
regions are split between its workers; a vertex gets its regions of every operand, the
statistics its elements use (only those), and the runs of elements sharing a statistic.
"""
import numpy as np

import popsim
from popsim import FLOAT
from popsim.program import Copy, Execute

from .. import popops
from ..poputil import per_tile
from .norm_vertices import STAT_OPS, NormStatisticOp

__all__ = ["stat_op", "stat_op_cycles", "ordered_map", "indexed", "best_order"]

_OP_CYCLES = {"CENTRE": 1, "SCALE": 1, "WHITEN": 2, "AFFINE": 2, "GRADIENT": 4}


def indexed(t):
    """``t`` as a view that lists its elements, so that per-tile slices of a permuted or
    broadcast view do not work out its element list again for every tile."""
    return t.flatten().reshape(t.shape)


def stat_op_cycles(op: str, dtype, num_regions: int, run_lengths) -> int:
    """popsim's estimate (PopLibs has no such vertex; modelled on its BroadcastVectorInner
    loops): ``20 + 4·regions + Σ_runs (6 + ceil(n / vw) · (ops + 1))``, ``vw`` the vector width
    (float 2, half 4), ``ops`` the expression's arithmetic ops (1, 2 or 4), one more cycle
    per vector for the load and store."""
    width = 2 if dtype == FLOAT else 4
    per_vector = _OP_CYCLES[op] + 1
    lengths = np.asarray(run_lengths, dtype=np.int64)
    return int(20 + 4 * num_regions + 6 * lengths.size + per_vector * int(np.sum(-(-lengths // width))))


def _vertex_type(graph, op: str, dtype) -> str:
    name = NormStatisticOp.vertex_name(op, dtype)
    if not graph.has_codelet(name):
        graph.add_codelets(NormStatisticOp[op, dtype])
        graph.register_perf_estimator(name, lambda info, target: stat_op_cycles(
            op, dtype, len(info.field_sizes("out")), np.atleast_1d(info.initial_value("runLengths"))))
    return name


def best_order(graph, t):
    """The dimension order (a permutation) in which ``t``'s tile regions are fewest."""
    rank = t.rank
    candidates = [list(range(rank))]
    if rank > 2:
        candidates.append([0] + list(range(2, rank)) + [1])
    candidates.append([1, 0] + list(range(2, rank)))
    counts = [sum(len(m) for m in graph.get_tile_mapping(t.dim_shuffle(p))) for p in candidates]
    return candidates[int(np.argmin(counts))]


def _stat_view(stat, needed: np.ndarray):
    """The elements ``needed`` (sorted, distinct) of the 1-D ``stat``, as one 1-D view."""
    breaks = np.flatnonzero(np.diff(needed) != 1) + 1
    starts = np.concatenate(([0], breaks))
    ends = np.concatenate((breaks, [needed.size]))
    pieces = [stat.slice(int(needed[b]), int(needed[e - 1]) + 1) for b, e in zip(starts, ends)]
    return pieces[0] if len(pieces) == 1 else popsim.concat(pieces)


def _local_copies(graph, stats, tiles, needed, prog, name: str):
    """Per statistics operand, one variable holding, tile by tile, the statistics that tile's
    elements use, filled by one Copy: each tile receives them once for all its vertices."""
    sizes = [n.size for n in needed]
    bounds = np.concatenate(([0], np.cumsum(sizes)))
    mapping = [[] for _ in range(graph.target.num_tiles)]
    for (tile, _), begin, end in zip(tiles, bounds[:-1], bounds[1:]):
        mapping[tile].append((int(begin), int(end)))
    copies = []
    for k, stat in enumerate(stats):
        local = graph.add_variable(stat.dtype, (int(bounds[-1]),), f"{name}/stats{k}")
        graph.set_tile_mapping(local, mapping)
        source = popsim.concat([_stat_view(stat, n) for n in needed])
        prog.add(Copy(source, local))
        copies.append(local)
    return copies


def stat_op(graph, op: str, data, stats, prog, name: str):
    """``op`` (norm_vertices.STAT_OPS) over ``data`` (tensors of one shape ``[N, S, ...]``)
    and ``stats`` (1-D ``[S]`` tensors), into a new tensor of that shape; one compute set."""
    num_data, num_stats, _ = STAT_OPS[op]
    assert len(data) == num_data and len(stats) == num_stats, op
    first = data[0]
    shape, dtype = tuple(first.shape), first.dtype
    if first.num_elements() == 0:  # nothing to compute: an empty result
        out = graph.add_variable(dtype, shape, name)
        graph.set_tile_mapping(out, 0)
        return out
    order = best_order(graph, first)
    views = [indexed(d.dim_shuffle(order)).flatten() for d in data]
    stat_index = np.broadcast_to(np.arange(shape[1], dtype=np.int64).reshape((1, -1) + (1,) * (len(shape) - 2)),
                                 shape).transpose(order).reshape(-1)
    out = graph.add_variable(dtype, tuple(shape[d] for d in order), name)
    mapping = graph.get_tile_mapping(views[0])
    graph.set_tile_mapping(out, mapping)
    out_flat = out.flatten()
    tiles = [(tile, regions) for tile, regions in enumerate(mapping) if regions]
    needed = [np.unique(np.concatenate([stat_index[b:e] for b, e in regions])) for _, regions in tiles]
    local = _local_copies(graph, stats, tiles, needed, prog, name)
    vertex_type = _vertex_type(graph, op, dtype)
    width = 2 if dtype == FLOAT else 4
    cs = graph.add_compute_set(name)
    offset = 0
    for (tile, regions), tile_needed in zip(tiles, needed):
        tile_stats = [copy.slice(offset, offset + tile_needed.size) for copy in local]
        offset += tile_needed.size
        for group in per_tile.group_regions(graph.target, regions, "workers", width, 2 * width):
            region_runs, lengths, run_stats = _runs(stat_index, group)
            connections = {"out": per_tile.region_views(out_flat, group)}
            for k, view in enumerate(views):
                connections[f"in{k + 1}"] = per_tile.region_views(view, group)
            connections.update(zip("abc", tile_stats))
            vertex = graph.add_vertex(cs, vertex_type, connections)
            graph.set_initial_value(vertex["regionRuns"], region_runs.astype(np.uint32))
            graph.set_initial_value(vertex["runLengths"], lengths.astype(np.uint32))
            run_stats = np.searchsorted(tile_needed, run_stats).astype(np.uint32)
            graph.set_initial_value(vertex["runStat"], run_stats)
            graph.set_tile_mapping(vertex, tile)
    prog.add(Execute(cs))
    return out.dim_shuffle(_inverse(order))


def _runs(stat_index: np.ndarray, group):
    """For a vertex's regions ``group`` of the flat elements whose statistics are
    ``stat_index``: per region its number of runs (elements in a row sharing a statistic),
    each run's length and each run's statistic, in order; one numpy pass over the group."""
    begins = np.fromiter((b for b, _ in group), np.int64, len(group))
    sizes = np.fromiter((e for _, e in group), np.int64, len(group)) - begins
    firsts = np.cumsum(sizes) - sizes   # each region's first element in the group's
    total = int(sizes.sum())
    if total == 0 or not sizes.all():   # an empty region: the region-by-region rule (which refuses it)
        cuts = [np.concatenate(([0], np.flatnonzero(np.diff(stat_index[b:e])) + 1, [e - b])) for b, e in group]
        return (np.asarray([c.size - 1 for c in cuts], np.int64), np.concatenate([np.diff(c) for c in cuts]),
                np.concatenate([stat_index[b:e][c[:-1]] for (b, e), c in zip(group, cuts)]))
    ids = stat_index[np.repeat(begins - firsts, sizes) + np.arange(total)]
    starts = np.empty(total, bool)
    starts[0] = True
    np.not_equal(ids[1:], ids[:-1], out=starts[1:])
    starts[firsts] = True
    cut = np.flatnonzero(starts)
    return np.add.reduceat(starts.astype(np.int64), firsts), np.diff(np.append(cut, total)), ids[cut]


def _inverse(order):
    return [int(i) for i in np.argsort(order)]


def ordered_map(graph, expression, tensors, prog, name: str, order=None):
    """popops.map of ``expression`` over ``tensors`` (one shape), computed in the dimension
    order in which the first one's tile regions are fewest; the result in the caller's order."""
    order = best_order(graph, tensors[0]) if order is None else order
    shuffled = [indexed(t.dim_shuffle(order)) for t in tensors]
    return popops.map(graph, expression, shuffled, prog, name).dim_shuffle(_inverse(order))
