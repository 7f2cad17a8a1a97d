"""Element-wise ops of activations ``[N, S, ...]`` with per-statistic operands ``[S]``
(dimension 1 indexes the statistic), on the tiles that hold the activations: the norms'
``(x - mean) · invStdDev``, ``x · gamma + beta`` and friends (norm_vertices.STAT_OPS).

The activations may be any view (a convolution's output is channels-innermost in memory,
in groups of G channels, under a ``[B, C, H, W]`` shape). As PopLibs' element-wise ops
reorder their operands to the simplest regions before choosing vector-broadcast vertices,
the op works on a view ``[N, S/G, ..., G]`` (or ``[S/G, N, ..., G]``) whose order follows
memory: G is the run of statistics held contiguously at the first position (1 when there is
none), and of the two orders the one whose tile regions are fewest is taken. Each region is
then a few pieces: blocks of G consecutive statistics repeated over the positions (PopLibs'
BroadcastVectorInner2D work list), or, with G = 1, runs of elements sharing one statistic.
The output is a new variable laid out like the first operand in that view, returned in the
caller's shape. A tile holding one region gets one NormStatisticOp1D MultiVertex (PopLibs'
BroadcastVectorInner1D); else its regions are split between its workers, a NormStatisticOp
each. A vertex gets its regions of every operand, the statistics its elements use (only
those) and its pieces.
"""
import numpy as np

import popsim
from popsim import FLOAT
from popsim.program import Copy, Execute

from .. import popops
from ..poputil import per_tile
from ..poputil.memory_order import tile_grouped_clone
from ..poputil.util import ensure_vertex
from .norm_vertices import STAT_OPS, NormStatisticOp, NormStatisticOp1D

__all__ = ["stat_op", "stat_op_cycles", "stat_op_1d_cycles", "ordered_map", "indexed", "best_order", "channel_grouping",
           "grouped_order", "grouped"]


def indexed(t):
    """``t`` as a view that lists its elements, so that per-tile slices of a permuted or
    broadcast view do not work out its element list again for every tile."""
    return t.flatten().reshape(t.shape)


def stat_op_cycles(op: str, dtype, num_regions: int, piece_lengths, piece_counts) -> int:
    """popsim's estimate (PopLibs has no such vertex; modelled on its BroadcastVectorInner2D
    loops): ``20 + 4·regions + Σ_pieces (6 + vectors · (ops + 1))``, a piece's vectors
    ``count · ceil(len / vw)`` (``ceil(count / vw)`` for a run sharing one statistic,
    ``len`` 1), ``vw`` the vector width (float 2, half 4), ``ops`` the expression's
    arithmetic ops (1, 2 or 4), one more cycle per vector for the load and store."""
    lengths, counts = np.asarray(piece_lengths, np.int64), np.asarray(piece_counts, np.int64)
    return int(_vertex_cycles(op, dtype, np.array([False]), np.array([num_regions]), np.array([lengths.size]),
                              lengths, counts, 1)[0])


def stat_op_1d_cycles(op: str, dtype, piece_lengths, piece_counts, workers: int) -> int:
    """popsim's estimate of the MultiVertex, per worker (each takes its share of every
    piece's blocks): ``20 + Σ_pieces (6 + ceil(vectors / workers) · (ops + 1))``."""
    lengths, counts = np.asarray(piece_lengths, np.int64), np.asarray(piece_counts, np.int64)
    return int(_vertex_cycles(op, dtype, np.array([True]), np.array([1]), np.array([lengths.size]), lengths, counts,
                              workers)[0])


def _vertex_type(graph, op: str, dtype, one_d: bool = False) -> str:
    if one_d:
        return ensure_vertex(graph, NormStatisticOp1D[op, dtype], lambda info, target: stat_op_1d_cycles(
            op, dtype, np.atleast_1d(info.initial_value("pieceLen")),
            np.atleast_1d(info.initial_value("pieceCount")), target.num_worker_contexts))
    return ensure_vertex(graph, NormStatisticOp[op, dtype], lambda info, target: stat_op_cycles(
        op, dtype, len(info.field_sizes("out")), np.atleast_1d(info.initial_value("pieceLen")),
        np.atleast_1d(info.initial_value("pieceCount"))))


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


def _stat_views(stat, needed):
    """``concat([_stat_view(stat, n) for n in needed])``, with each stretch of equal
    consecutive ``needed`` one view broadcast over the stretch: the tiles holding one channel
    group's positions use the same statistics, so a convolution's output spread over 1472
    tiles needs a few views, not 1472."""
    keys = [n.tobytes() for n in needed]
    views = {}   # the view of each distinct need (tiles of one channel group's need it again and again)
    pieces = []
    k = 0
    while k < len(keys):
        j = k + 1
        while j < len(keys) and keys[j] == keys[k]:
            j += 1
        view = views.get(keys[k])
        if view is None:
            view = views[keys[k]] = _stat_view(stat, needed[k])
        pieces.append(view if j - k == 1 else view.expand([0]).broadcast(j - k, 0).flatten())
        k = j
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
        source = _stat_views(stat, needed)
        prog.add(Copy(source, local))
        copies.append(local)
    return copies


def channel_grouping(t) -> int:
    """G: the most statistics (a divisor of ``t.shape[1]``) that ``t`` holds contiguously, in
    order, at its first position (PopLibs' detectInnermostGrouping, from one position); 1
    when there is no such run."""
    channels = int(t.shape[1])
    if channels <= 1 or t.num_elements() == 0:
        return 1
    first = t.slice([0] * t.rank, [1, channels] + [1] * (t.rank - 2)).flatten()
    for g in range(channels, 1, -1):
        if channels % g == 0 and first.slice(0, g).is_contiguous():
            return g
    return 1


def grouped_order(graph, t):
    """(order, block, g): of ``t`` ``[N, S, *F]`` grouped as ``[N, S/G, G, *F]``
    (``grouped``), the permutation to ``[N, S/G, *F, G]`` or ``[S/G, N, *F, G]``, whichever
    has the fewest tile regions (the order that follows memory); ``block`` the elements of
    that view per index of its ``S/G`` dimension; ``g`` the grouping G."""
    shape = [int(d) for d in t.shape]
    g = channel_grouping(t)
    rank = t.rank + 1
    field = int(np.prod(shape[2:], dtype=np.int64))
    candidates = [([0, 1] + list(range(3, rank)) + [2], field * g)]
    if shape[1] // g > 1 and shape[0] > 1:   # else the two orders are one
        candidates.append(([1, 0] + list(range(3, rank)) + [2], shape[0] * field * g))
    best = 0
    if len(candidates) > 1:
        split = grouped(t, g)
        best = int(np.argmin([sum(len(m) for m in graph.get_tile_mapping(split.dim_shuffle(p)))
                              for p, _ in candidates]))
    order, block = candidates[best]
    return order, block, g


def grouped(t, g: int):
    """``t`` ``[N, S, *F]`` as ``[N, S/g, g, *F]`` (a view)."""
    shape = [int(d) for d in t.shape]
    return t.reshape([shape[0], shape[1] // g, g] + shape[2:])


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
    order, block, g = grouped_order(graph, first)
    layout = dict(block=block, groups=int(shape[1]) // g, g=g)
    views = [indexed(grouped(d, g).dim_shuffle(order)) for d in data]
    grouped_shape = tuple(views[0].shape)
    views = [v.flatten() for v in views]
    mapping = graph.get_tile_mapping(views[0])
    # The output as Poplar's clone of the input lays it out: a concatenation's tile by tile (one
    # region a tile for the ops that follow), any other in the grouped order, mapped alike
    out_flat = tile_grouped_clone(graph, views[0], dtype, name, mapping)   # (complete: the same mapping)
    if out_flat is None:
        out_flat = graph.add_variable(dtype, grouped_shape, name).flatten()
        graph.set_tile_mapping(out_flat, mapping)
    width = 2 if dtype == FLOAT else 4
    grain = g if g % width == 0 and g <= 64 else width
    # Every tile's vertices' groups, then the pieces of all of them in one _pieces call (a
    # piece never crosses a region, so each region's pieces are those of its own call)
    tiles, groups_of = [], []
    for tile, regions in enumerate(mapping):
        if regions:
            tiles.append((tile, regions))
            groups_of.append(per_tile.group_regions(graph.target, regions, "auto", grain, 2 * grain))
    flat_regions = [r for groups in groups_of for group in groups for r in group]
    counts, lengths, blocks, starts = _pieces(flat_regions, **layout)
    regions_per_tile = np.array([sum(len(group) for group in groups) for groups in groups_of], np.int64)
    region_tile = np.repeat(np.arange(len(tiles)), regions_per_tile)
    piece_tile = np.repeat(region_tile, counts)
    needed, piece_stats = _needed_by_tile(piece_tile, starts, lengths, len(tiles))
    group_regions = np.array([len(group) for groups in groups_of for group in groups], np.int64)
    group_pieces = np.add.reduceat(counts, np.cumsum(group_regions) - group_regions)
    one_d = np.repeat(np.array([len(r) == 1 for _, r in tiles], bool), [len(groups) for groups in groups_of])
    cycles = _vertex_cycles(op, dtype, one_d, group_regions, group_pieces, lengths, blocks,
                            graph.target.num_worker_contexts)
    region_bounds = np.cumsum(group_regions).tolist()
    piece_bounds = np.cumsum(group_pieces).tolist()
    local = _local_copies(graph, stats, tiles, needed, prog, name)
    cs = graph.add_compute_set(name)
    offset = 0
    lengths, blocks, piece_stats = lengths.astype(np.uint32), blocks.astype(np.uint32), piece_stats.astype(np.uint32)
    counts32 = counts.astype(np.uint32)
    first_region = first_piece = vertex = 0
    types = {}   # one_d -> the vertex type, registered on first use
    for (tile, regions), groups, tile_needed in zip(tiles, groups_of, needed):
        tile_stats = [copy.slice(offset, offset + tile_needed.size) for copy in local]
        offset += tile_needed.size
        one_d = len(regions) == 1   # PopLibs' rule: one region, one MultiVertex
        view = per_tile.regions_view if one_d else per_tile.region_views
        for group in groups:
            last_region, last_piece = region_bounds[vertex], piece_bounds[vertex]
            connections = {"out": view(out_flat, group)}
            for k, v in enumerate(views):
                connections[f"in{k + 1}"] = view(v, group)
            connections.update(zip("abc", tile_stats))
            if not one_d:
                connections["regionPieces"] = counts32[first_region:last_region]
            connections["pieceLen"] = lengths[first_piece:last_piece]
            connections["pieceCount"] = blocks[first_piece:last_piece]
            connections["pieceStat"] = piece_stats[first_piece:last_piece]
            vertex_type = types.get(one_d) or types.setdefault(one_d, _vertex_type(graph, op, dtype, one_d))
            v = graph.add_vertex(cs, vertex_type, connections)
            graph.set_tile_mapping(v, tile)
            # the estimate its type's estimator gives (stat_op_cycles, stat_op_1d_cycles), known here
            graph.set_perf_estimate(v, cycles[vertex])
            first_region, first_piece, vertex = last_region, last_piece, vertex + 1
    prog.add(Execute(cs))
    return out_flat.reshape(grouped_shape).dim_shuffle(_inverse(order)).reshape(shape)


def _statistic(positions, block: int, groups: int, g: int):
    """The statistic of each flat position of the grouped view."""
    positions = np.asarray(positions, np.int64)
    return (positions // block) % groups * g + positions % g


def _needed_by_tile(piece_tile: np.ndarray, starts: np.ndarray, lengths: np.ndarray, num_tiles: int):
    """Per tile (``piece_tile``: each piece's, of ``num_tiles``), the statistics (sorted,
    distinct) its pieces use (a piece uses ``lengths`` of them from ``starts``), and per
    piece the index of its first statistic among its tile's: the union of the pieces'
    intervals, tile by tile, for all the tiles at once."""
    order = np.lexsort((starts, piece_tile))
    tile, begin = piece_tile[order], starts[order]
    end = begin + lengths[order]
    # the furthest end so far within the tile (tiles ascend, so an offset per tile keeps them apart)
    span = int(end.max()) + 1 if end.size else 1
    reach = np.maximum.accumulate(tile * span + end) - tile * span
    new = np.ones(tile.size, bool)
    new[1:] = (tile[1:] != tile[:-1]) | (begin[1:] > reach[:-1])
    heads = np.flatnonzero(new)
    i_begin, i_end = begin[heads], reach[np.append(heads[1:], tile.size) - 1]
    i_tile, size = tile[heads], i_end - begin[heads]
    # each interval's first statistic's index among its tile's
    tile_first = np.searchsorted(i_tile, i_tile, side="left")
    before = np.cumsum(size) - size
    i_rank = before - before[tile_first]
    interval = np.cumsum(new) - 1
    rank = np.empty(tile.size, np.int64)
    rank[order] = i_rank[interval] + begin - i_begin[interval]
    stats = np.repeat(i_begin - before, size) + np.arange(int(size.sum()))
    bounds = np.concatenate(([0], np.cumsum(np.bincount(i_tile, weights=size, minlength=num_tiles)))).astype(np.int64)
    return [stats[b:e] for b, e in zip(bounds[:-1].tolist(), bounds[1:].tolist())], rank


def _vertex_cycles(op: str, dtype, one_d, regions, pieces, lengths, blocks, workers: int) -> list:
    """Each vertex's estimate, the formulas stat_op_cycles (a vertex of several regions) and
    stat_op_1d_cycles (the MultiVertex of a tile of one region) state, for many vertices at
    once: per vertex whether it is ``one_d``, its ``regions`` and ``pieces``; per piece its
    ``lengths`` and ``blocks``, the vertices' pieces one after another."""
    width = 2 if dtype == FLOAT else 4
    vectors = np.where(lengths == 1, -(-blocks // width), blocks * -(-lengths // width))
    first_piece = np.cumsum(pieces) - pieces
    num_data, num_stats, _ = STAT_OPS[op]
    per_vector = num_data + num_stats   # the expression's arithmetic ops (one fewer than its operands), + 1
    two_d = 20 + 4 * regions + 6 * pieces + per_vector * _group_sums(vectors, first_piece, pieces)
    one = 20 + 6 * pieces + per_vector * _group_sums(-(-vectors // workers), first_piece, pieces)
    return np.where(one_d, one, two_d).tolist()


def _group_sums(values: np.ndarray, first: np.ndarray, count: np.ndarray) -> np.ndarray:
    """Sums of ``values[first[i]:first[i] + count[i]]`` (stretches one after another)."""
    totals = np.concatenate(([0], np.cumsum(values)))
    return totals[first + count] - totals[first]


def _pieces(group, block: int, groups: int, g: int):
    """For a vertex's regions ``group`` of the grouped view's flat elements: per region its
    number of pieces, and per piece its length (statistics per block), its blocks and its
    first statistic, in order; one numpy pass. Pieces are cut at the region's ends, at each
    ``block`` boundary, and at the first and last whole block of G inside the region."""
    begins = np.fromiter((b for b, _ in group), np.int64, len(group))
    ends = np.fromiter((e for _, e in group), np.int64, len(group))
    rid = np.arange(len(group))
    # multiples of block strictly inside each region
    first_cut = (begins // block + 1) * block
    inner = np.maximum(0, (ends - 1) // block - begins // block)
    mrid = np.repeat(rid, inner)
    mult = (np.repeat(first_cut, inner)
            + (np.arange(int(inner.sum())) - np.repeat(np.cumsum(inner) - inner, inner)) * block)
    up, down = -(-begins // g) * g, ends // g * g
    cuts = [begins, ends, mult, up, down]
    owners = [rid, rid, mrid, rid, rid]
    pos, own = np.concatenate(cuts), np.concatenate(owners)
    keep = (pos >= begins[own]) & (pos <= ends[own])
    pos, own = pos[keep], own[keep]
    order = np.lexsort((pos, own))
    pos, own = pos[order], own[order]
    fresh = np.ones(pos.size, bool)
    fresh[1:] = (pos[1:] != pos[:-1]) | (own[1:] != own[:-1])
    pos, own = pos[fresh], own[fresh]
    same = own[1:] == own[:-1]
    p, q = pos[:-1][same], pos[1:][same]
    whole = (p % g == 0) & ((q - p) % g == 0)
    lengths = np.where(whole, g, q - p)
    blocks = np.where(whole, (q - p) // g, 1)
    counts = np.bincount(own[:-1][same], minlength=len(group)).astype(np.int64)
    return counts, lengths.astype(np.int64), blocks.astype(np.int64), _statistic(p, block, groups, g)


def _inverse(order):
    return [int(i) for i in np.argsort(order)]


def ordered_map(graph, expression, tensors, prog, name: str, order=None):
    """popops.map of ``expression`` over ``tensors`` (one shape), computed in the dimension
    order in which the first one's tile regions are fewest; the result in the caller's order."""
    order = best_order(graph, tensors[0]) if order is None else order
    shuffled = [indexed(t.dim_shuffle(order)) for t in tensors]
    return popops.map(graph, expression, shuffled, prog, name).dim_shuffle(_inverse(order))
