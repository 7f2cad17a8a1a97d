"""The sort's bitonic network and how it is laid out on the tiles (PopLibs'
BitonicTopK.cpp: a compare-and-swap step over work tensors rearranged for each step).

``network_stages(n)`` is the network for rows of ``n`` elements: for block size k = 2, 4,
.., N (N the power of two >= n) a stage comparing ``b+i`` with ``b+k-1-i`` (the block's
halves, the second reversed), then stages comparing ``b+i`` with ``b+i+d`` for d = k/4,
.., 1. Every comparator points the same way, so the network for N sorts n < N elements
once the comparators reaching past n are left out.

``sort_rows`` runs it on the device. The rows live in two work tensors (one more pair for
the values), mapped over the tiles that hold the input in the same proportions, each
tile's part of even length. For each stage the data is copied from one work tensor into
the other in that stage's order: the stage's pairs are shared out between the tiles (in
proportion to their part) and each tile's share between its workers; a tile's pairs lie
at the start of its part as pieces ``[lower elements, upper elements]``, each worker's
one after the other, and the elements no comparator of the stage touches fill the rest of
the part (a stage whose order is the last one's copies nothing). One compare-and-swap
MultiVertex a tile then takes that region as one edge and its workers' pieces as a short
worklist (sort_vertices.py). Vertex state and edges are a few words per worker and stage
on each tile, whatever the size of the data; the data itself takes two copies of the keys
(and two of the values) besides the input.
"""
from typing import List, Optional, Tuple

import numpy as np

import popsim
from popsim.program import Copy, Execute

from .sort_vertices import ensure_compare

__all__ = ["network_stages", "stage_plan", "sort_rows"]


def network_stages(n: int) -> List[List[Tuple[int, int, int, bool]]]:
    """The bitonic network's stages for ``n`` elements: each a list of runs ``(lo, hi,
    length, flipped)``: elements lo+i against hi+i, or against hi-i when flipped (the
    upper run reversed), i < length; comparators reaching past n left out."""
    stages = []
    k = 2
    while k // 2 < n:
        flip = []
        for b in range(0, n, k):
            # b+i against b+k-1-i for i < k/2, kept where b+k-1-i < n: i > b+k-1-n
            first = max(0, b + k - n)
            if first < k // 2:
                flip.append((b + first, b + k - 1 - first, k // 2 - first, True))
        stages.append(flip)
        d = k // 4
        while d >= 1:
            runs = []
            for b in range(0, n, 2 * d):
                length = min(d, n - b - d)
                if length > 0:
                    runs.append((b, b + d, length, False))
            stages.append(runs)
            d //= 2
        k *= 2
    return stages


def work_parts(tile_counts: np.ndarray) -> List[Tuple[int, int, int]]:
    """``(tile, begin, end)`` parts of a work tensor of ``tile_counts.sum()`` elements:
    each tile holding elements of the input gets a part of about as many, of even length
    (the last part excepted), in tile order."""
    total = int(tile_counts.sum())
    bounds = np.minimum(total, 2 * np.round(np.cumsum(tile_counts) / 2).astype(np.int64))
    tiles = np.flatnonzero(tile_counts)
    bounds[tiles[-1]] = total
    parts, begin = [], 0
    for tile in tiles:
        end = int(bounds[tile])
        if end > begin:
            parts.append((int(tile), begin, end))
            begin = end
    return parts


def _pairs(stage, rows: int, n: int):
    """Every comparison of the stage over all rows, in order: (lower element, upper
    element, run number), flat indices into the [rows, n] rows."""
    lo = np.array([r[0] for r in stage], dtype=np.int64)
    hi = np.array([r[1] for r in stage], dtype=np.int64)
    lengths = np.array([r[2] for r in stage], dtype=np.int64)
    step = -1 if stage[0][3] else 1
    run = np.repeat(np.arange(len(stage)), lengths)
    offset = np.arange(int(lengths.sum())) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    row_lo, row_hi = lo[run] + offset, hi[run] + step * offset
    base = (np.arange(rows, dtype=np.int64) * n)[:, None]
    return ((base + row_lo).ravel(), (base + row_hi).ravel(),
            (np.arange(rows)[:, None] * len(stage) + run).ravel())


def _worker_splits(begin: int, count: int, workers: int, run_starts: np.ndarray) -> List[int]:
    """Where a part's ``count`` pairs from ``begin`` are cut between its workers: evenly,
    each cut moved to the nearest start of a run within an eighth of a worker's share (a
    run kept whole keeps its elements in order, so the copies move fewer regions)."""
    used = min(workers, count)
    bounds = [begin + count * w // used for w in range(used + 1)] if used else [begin]
    slack = count // max(used, 1) // 8
    for w in range(1, used):
        k = int(np.searchsorted(run_starts, bounds[w]))
        near = [int(run_starts[x]) for x in (k - 1, k) if 0 <= x < len(run_starts)]
        best = min(near, key=lambda y: abs(y - bounds[w]))
        if abs(best - bounds[w]) <= slack:
            bounds[w] = best
    return bounds


def stage_plan(stage, rows: int, n: int, parts, workers: int):
    """One stage's layout: ``(order, chunks)``. ``order[p]`` is the flat row element at
    position p of the work tensor; ``chunks`` lists ``(tile, begin, end, worklist)`` per
    tile: its region of the work tensor and its workers' pieces (sort_vertices.py)."""
    flipped = stage[0][3]
    lo, hi, run = _pairs(stage, rows, n)
    total, comparisons = rows * n, len(lo)
    caps = np.array([e - b for _, b, e in parts], dtype=np.int64) // 2
    share = np.minimum(caps, comparisons * (caps * 2) // max(total, 1))
    left = comparisons - int(share.sum())
    for i in range(len(parts)):  # what rounding left over goes to the first parts with room
        extra = min(left, int(caps[i] - share[i]))
        share[i] += extra
        left -= extra
    first = np.concatenate([[0], np.cumsum(share)])
    # a piece starts at each run and at each worker's first pair
    starts = np.zeros(comparisons, dtype=bool)
    starts[0] = True
    starts[1:] = run[1:] != run[:-1]
    run_starts = np.flatnonzero(starts)
    splits = [_worker_splits(int(first[i]), int(share[i]), workers, run_starts) for i in range(len(parts))]
    for bounds in splits:
        starts[bounds[:-1]] = True
    piece_start = np.flatnonzero(starts)
    piece = np.cumsum(starts) - 1
    piece_len = np.diff(np.append(piece_start, comparisons))
    part = np.searchsorted(first, np.arange(comparisons), side="right") - 1
    part_base = np.array([b for _, b, _ in parts], dtype=np.int64)
    s, m = piece_start[piece], piece_len[piece]
    j = np.arange(comparisons) - s
    at = part_base[part] + 2 * (s - first[part])
    order = np.full(total, -1, dtype=np.int64)
    order[at + j] = lo
    order[at + m + (m - 1 - j if flipped else j)] = hi
    idle = np.ones(total, dtype=bool)
    idle[lo] = idle[hi] = False
    order[order < 0] = np.flatnonzero(idle)
    chunks = []
    for i, (tile, begin, _) in enumerate(parts):
        count, bounds = int(share[i]), splits[i]
        worklist = [len(bounds) - 1]
        for c0, c1 in zip(bounds, bounds[1:]):
            lengths = piece_len[piece[c0]:piece[c1 - 1] + 1]
            same = np.concatenate([[0], np.flatnonzero(np.diff(lengths)) + 1])  # pieces of one length
            repeats = np.diff(np.append(same, len(lengths)))
            worklist += [2 * (c0 - first[i]), len(same)]
            worklist += np.column_stack([lengths[same], repeats]).ravel().tolist()
        if count:
            chunks.append((tile, begin, begin + 2 * count, [int(x) for x in worklist]))
    return order, chunks


def _gather(src, positions: np.ndarray):
    """The view of the flat ``src`` holding its elements at ``positions`` in that order."""
    breaks = np.flatnonzero(np.diff(positions) != 1) + 1
    begins = np.concatenate([[0], breaks])
    ends = np.append(breaks, len(positions))
    pieces = src.slices([(int(positions[b]), int(positions[e - 1]) + 1) for b, e in zip(begins, ends)])
    return pieces[0] if len(pieces) == 1 else popsim.concat(pieces)


def _work_tensors(graph, dtype, parts, total: int, name: str):
    mapping = [[] for _ in range(graph.target.num_tiles)]
    for tile, b, e in parts:
        mapping[tile].append((b, e))
    tensors = []
    for i in range(2):
        t = graph.add_variable(dtype, (total,), f"{name}/work{i}")
        graph.set_tile_mapping(t, mapping)
        tensors.append(t)
    return tensors


def sort_rows(graph, keys, values, descending: bool, prog, name: str):
    """Sort each row of the 2-D ``keys`` (``values`` moved with them, or None) by the
    network; ``keys`` and ``values`` are only read. Returns flat views ``(keys, values)``
    of the sorted rows in row-major order (views of the work tensors), or None where no
    comparison is needed (fewer than 2 elements a row, or no rows)."""
    rows, n = keys.shape
    stages = [s for s in network_stages(n) if s] if rows else []
    if not stages:
        return None
    total = rows * n
    counts = np.zeros(graph.target.num_tiles, dtype=np.int64)
    for tile, intervals in enumerate(graph.get_tile_mapping(keys)):
        counts[tile] = sum(e - b for b, e in intervals)
    parts = work_parts(counts)
    work_keys = _work_tensors(graph, keys.dtype, parts, total, f"{name}/keys")
    work_values = None if values is None else _work_tensors(graph, values.dtype, parts, total, f"{name}/values")
    vertex_type = ensure_compare(graph, keys.dtype, None if values is None else values.dtype, descending)
    workers = graph.target.num_worker_contexts
    where: Optional[np.ndarray] = None  # where[i]: the position of row element i in the current work tensor
    previous: Optional[np.ndarray] = None  # the last stage's order
    current = 0
    for s, stage in enumerate(stages):
        order, chunks = stage_plan(stage, rows, n, parts, workers)
        if where is None:
            prog.add(Copy(_gather(keys.flatten(), order), work_keys[0]))
            if values is not None:
                prog.add(Copy(_gather(values.flatten(), order), work_values[0]))
        elif not np.array_equal(order, previous):
            source = where[order]
            prog.add(Copy(_gather(work_keys[current], source), work_keys[1 - current]))
            if values is not None:
                prog.add(Copy(_gather(work_values[current], source), work_values[1 - current]))
            current = 1 - current
        previous = order
        where = np.empty(total, dtype=np.int64)
        where[order] = np.arange(total)
        cs = graph.add_compute_set(f"{name}/stage{s}")
        flipped = int(stage[0][3])
        for tile, b, e, worklist in chunks:
            fields = {"keys": work_keys[current].slice(b, e)}
            if values is not None:
                fields["values"] = work_values[current].slice(b, e)
            v = graph.add_vertex(cs, vertex_type, fields)
            graph.set_initial_value(v["worklist"], worklist)
            graph.set_initial_value(v["flipped"], flipped)
            graph.set_tile_mapping(v, tile)
        prog.add(Execute(cs))
    sorted_keys = _gather(work_keys[current], where)
    sorted_values = None if values is None else _gather(work_values[current], where)
    return sorted_keys, sorted_values
