"""The geometry and cost rules of a reduction plan (PopLibs' lib/popops/reduction/
ReductionPlan.cpp), free of any graph: how a tile's flat intervals of the input become
boxes, which output elements a box feeds, and the cost estimates that choose where the
last stage runs.

The last-stage rule (PopLibs' documentation "How the reduction is planned",
PL:lib/popops/reduction/ReductionPlan.cpp ``shouldReduceAtDestination``): with ``P`` the
most partials any output element has, ``B`` the partials' bytes, ``w`` their vector width,
``x`` the exchange bytes per cycle and ``s`` the target's largest sync delay,

- at the destination: ``ceil(E_dst·B / x) + P·ceil(E_dst / w) + s``, ``E_dst`` the most
  output elements on one tile of the output's mapping;
- balanced: output elements in groups of 8 spread over all tiles, ``E_bal = ceil(groups /
  tiles)·8``: ``ceil(E_bal·P·B / x) + s + P·ceil(E_bal / w) + ceil(E_dst·B_out / x) + s``;

and the last stage runs at the destination only when that is strictly cheaper. Another
intermediate stage comes first while the partials hold more than 32 elements per output
element (``calculateNextStep``).
"""
import heapq
import math
from typing import List, Sequence, Tuple

import numpy as np

Range = Tuple[int, int]
#: PopLibs' grain of the balanced estimate, and the intermediate-stage threshold
BALANCED_GRAIN = 8
INTERMEDIATE_FACTOR = 32
#: outputs are cut (between workers, into intermediate-stage blocks) in whole grains of this
#: many elements: the reduce vertex's inner loops take blocks of 16 outputs
OUTPUT_GRAIN = 16


def interval_boxes(begin: int, end: int, shape: Sequence[int]) -> List[Tuple[Range, ...]]:
    """The flat row-major interval [begin, end) of ``shape`` as boxes (one range per
    dimension), at most ``2·rank - 1`` of them, in element order."""
    if begin >= end:
        return []
    if not shape:
        return [()]
    inner = math.prod(shape[1:])
    first, first_off = divmod(begin, inner)
    last, last_off = divmod(end, inner)
    if first == last:
        return [((first, first + 1),) + sub for sub in interval_boxes(first_off, last_off, shape[1:])]
    boxes = []
    if first_off:
        boxes += [((first, first + 1),) + sub for sub in interval_boxes(first_off, inner, shape[1:])]
        first += 1
    if last > first:
        boxes.append(((first, last),) + tuple((0, n) for n in shape[1:]))
    if last_off:
        boxes += [((last, last + 1),) + sub for sub in interval_boxes(0, last_off, shape[1:])]
    return boxes


def box_runs(ranges: Sequence[Range], shape: Sequence[int]) -> List[Tuple[int, int, int]]:
    """The box ``ranges`` of a row-major ``shape`` as contiguous runs of flat indices:
    ``(position in the box's own row-major order, first flat index, end)``."""
    if not shape:
        return [(0, 0, 1)]
    first = next((d for d, (lo, hi) in enumerate(ranges) if hi - lo != 1), len(shape))
    if all(ranges[d] == (0, shape[d]) for d in range(first + 1, len(shape))):  # one run: no grid needed
        size = math.prod(hi - lo for lo, hi in ranges)
        if not size:
            return []
        start = int(np.ravel_multi_index([lo for lo, _ in ranges], tuple(shape)))
        return [(0, start, start + size)]
    grids = np.meshgrid(*[np.arange(lo, hi) for lo, hi in ranges], indexing="ij")
    flat = np.ravel_multi_index([g.ravel() for g in grids], tuple(shape))
    if flat.size == 0:
        return []
    breaks = np.flatnonzero(np.diff(flat) != 1) + 1
    starts = np.concatenate(([0], breaks))
    ends = np.concatenate((breaks, [flat.size]))
    return [(int(s), int(flat[s]), int(flat[e - 1]) + 1) for s, e in zip(starts, ends)]


def max_elements_per_tile(mapping) -> int:
    return max((sum(e - b for b, e in intervals) for intervals in mapping), default=0)


def reduce_at_destination_cost(target, partial_type, max_partials: int, out_mapping) -> int:
    """PopLibs' estimateReduceAtDstCost."""
    elements = max_elements_per_tile(out_mapping)
    width = target.vector_width(partial_type)
    return (-(-elements * partial_type.size // target.exchange_bytes_per_cycle)
            + max_partials * -(-elements // width) + target.max_ipu_sync_delay)


def balanced_reduce_cost(target, partial_type, out_type, max_partials: int, num_outputs: int, out_mapping,
                         grain: int = BALANCED_GRAIN) -> int:
    """PopLibs' estimateBalancedReduceCost (groups of ``grain`` outputs over all tiles)."""
    groups = -(-num_outputs // grain)
    elements = -(-groups // target.num_tiles) * grain
    x = target.exchange_bytes_per_cycle
    sync = target.max_ipu_sync_delay
    width = target.vector_width(partial_type)
    pre = -(-elements * max_partials * partial_type.size // x)
    post = -(-max_elements_per_tile(out_mapping) * out_type.size // x)
    return pre + sync + max_partials * -(-elements // width) + post + sync


def should_reduce_at_destination(target, partial_type, out_type, max_partials: int, num_outputs: int,
                                 out_mapping) -> bool:
    """True when reducing on the output's own tiles is strictly cheaper than balanced."""
    return (reduce_at_destination_cost(target, partial_type, max_partials, out_mapping)
            < balanced_reduce_cost(target, partial_type, out_type, max_partials, num_outputs, out_mapping))


def needs_intermediate_stage(total_partials: int, num_outputs: int) -> bool:
    """PopLibs' calculateNextStep: another intermediate stage while the partials hold more
    than 32 elements per output element."""
    return total_partials > num_outputs * INTERMEDIATE_FACTOR


def cover_regions(lo, hi):
    """The output regions over which the same pieces lie, for pieces covering the output
    runs ``[lo[i], hi[i])``: ``(bounds, region, piece)``, region ``r`` being ``[bounds[r],
    bounds[r + 1])`` and ``(region[k], piece[k])`` every pair of a region and a piece over
    it, sorted by region, then piece (numpy arrays; regions no piece covers have no pair)."""
    lo = np.asarray(lo, dtype=np.int64)
    hi = np.asarray(hi, dtype=np.int64)
    bounds = np.unique(np.concatenate((lo, hi)))
    first = np.searchsorted(bounds, lo)
    counts = np.searchsorted(bounds, hi) - first
    piece = np.repeat(np.arange(lo.size), counts)
    starts = np.repeat(np.cumsum(counts) - counts, counts)
    region = np.arange(piece.size) - starts + np.repeat(first, counts)
    order = np.argsort(region, kind="stable")
    return bounds, region[order], piece[order]


def split_region(num_partials: int, width: int, ideal: int, grain: int) -> Tuple[int, int]:
    """How an intermediate stage cuts one output region of ``width`` elements with
    ``num_partials`` partials over it into pieces of about ``ideal`` elements, one a tile:
    ``(groups, blocks)``: the partials in ``groups`` (at least two partials each, at most
    ``INTERMEDIATE_FACTOR`` groups, so that the next stage can be the last) and the width in
    ``blocks`` of whole ``grain``s; ``groups · blocks`` pieces."""
    pieces = max(1, num_partials * width // max(1, ideal))
    groups = max(1, min(pieces, num_partials // 2, INTERMEDIATE_FACTOR))
    blocks = max(1, min(width // max(1, grain), pieces // groups))
    return groups, blocks


def block_bounds(width: int, blocks: int, grain: int) -> List[int]:
    """``blocks + 1`` bounds cutting ``width`` into near-equal blocks of whole ``grain``s."""
    return [width * i // blocks // grain * grain for i in range(blocks)] + [width]


#: the fewest reduced elements a contiguous row needs to be its output element's own partial
ROW_PARTIAL_MIN = 16


def inner_rows(box: Sequence[Range], dims: Sequence[int]) -> int:
    """For a box of the input whose reduced ``dims`` all lie inside every kept dimension
    that spans more than one index (the reduced elements of each output element are one
    contiguous row of the box), the length of those rows when at least
    ``ROW_PARTIAL_MIN``; else 0."""
    spans = [d for d, (lo, hi) in enumerate(box) if hi - lo > 1]
    reduced = [d for d in spans if d in dims]
    if any(d not in dims for d in spans if reduced and d > reduced[0]):
        return 0
    rows = math.prod(box[d][1] - box[d][0] for d in dims)
    return rows if rows >= ROW_PARTIAL_MIN else 0


def lanes(lo, hi) -> np.ndarray:
    """A lane for each piece covering the output run ``[lo[i], hi[i])`` such that the
    pieces of one lane do not overlap (as the rows of a matrix): greedily, in order of
    ``lo``, the free lane that ended first, else a new one. As few lanes as the most
    pieces over one output element."""
    lo = np.asarray(lo, dtype=np.int64)
    hi = np.asarray(hi, dtype=np.int64)
    lane = np.empty(lo.size, dtype=np.int64)
    free: List[Tuple[int, int]] = []  # (end, lane) heap
    count = 0
    for i in np.lexsort((hi, lo)).tolist():
        if free and free[0][0] <= lo[i]:
            lane[i] = free[0][1]
            heapq.heapreplace(free, (int(hi[i]), int(lane[i])))
        else:
            lane[i] = count
            heapq.heappush(free, (int(hi[i]), count))
            count += 1
    return lane
