"""Cycle formulas of the AMP convolution vertices (PopLibs' lib/poplin/PerformanceEstimation.hpp,
as PopLibs' cycle estimators give them), as pure functions of sizes: no graph, no tensors.

The planner calls them to cost a tile's share of a convolution; the vertices' cycle
estimators (conv_vertices) call them with the sizes of the vertex they were given, so the
plan's estimate and the engine's count come from the same formulas.

Vocabulary, as in PopLibs:

* a *worker* is one of the tile's ``num_worker_contexts`` hardware threads (W; the target's,
  6 on an IPU, so every function here takes it as ``num_workers``); a worker's
  *worklist* is a list of *items*, each a run of ``k`` consecutive output positions in one
  output row (``partition_conv_partial_by_worker`` makes them);
* ``float_activations``: the inputs and weights are FLOAT (else HALF);
  ``float_partials``: the accumulators (partials) are FLOAT (else HALF);
* ``conv_units``: AMP units the vertex uses (8 or 16 on ipu2); ``conv_input_load_elems``:
  input elements an AMP unit loads per cycle (4 halves or 2 floats in 64 bits);
* groups: ``num_conv_groups`` (CG), ``num_in_groups`` (IG), ``num_out_groups`` (OG) are
  the vertex's loop counts over conv groups, input-channel groups and output-channel
  groups; ``out_chans_per_group`` output channels make one output-channel group.
"""
import math
from typing import List, NamedTuple, Sequence, Tuple

#: AMP chain length: inChansPerGroup = convInputLoadElems * 4 is fixed by the AMP structure
#: (PopLibs' tests/poplin/codelets/ConvPartial1x1Out.cpp).
CONV_CHAIN_LENGTH = 4
#: float elements per 64-bit vector (the zeroing loop's width).
FLOAT_VECTOR_WIDTH = 2


class PartialRow(NamedTuple):
    """One worklist item: output positions [x_begin, x_end) of row ``outer`` (the indices of
    every field dimension but the innermost) of batch element ``b``."""
    b: int
    outer: Tuple[int, ...]
    x_begin: int
    x_end: int

    @property
    def size(self) -> int:
        return self.x_end - self.x_begin


def partition_conv_partial_by_worker(batch_size: int, out_field_shape: Sequence[int],
                                     num_workers: int) -> List[List[PartialRow]]:
    """PopLibs' partitionConvPartialByWorker: the ``batch_size * prod(out_field_shape)``
    output positions, flattened batch-major then row-major, split evenly over
    ``num_workers``; worker i gets positions [i*N//W, (i+1)*N//W), cut where a row ends.

    batch_size: batch elements on the tile; out_field_shape: the tile's output field (the
    innermost dimension is the row); num_workers: the target's worker contexts.
    Returns one list of PartialRow per worker (empty for a worker with nothing to do)."""
    shape = tuple(int(s) for s in out_field_shape) or (1,)
    row = shape[-1]
    outer_shape = shape[:-1]
    rows_per_batch = math.prod(outer_shape)
    total = batch_size * rows_per_batch * row
    result = []
    for w in range(num_workers):
        begin, end = total * w // num_workers, total * (w + 1) // num_workers
        items = []
        pos = begin
        while pos < end:
            row_index, x = divmod(pos, row) if row else (pos, 0)
            b, r = divmod(row_index, rows_per_batch)
            outer = _unflatten(r, outer_shape)
            x_end = min(row, x + (end - pos))
            items.append(PartialRow(b, outer, x, x_end))
            pos += x_end - x
        result.append(items)
    return result


def _unflatten(index: int, shape: Tuple[int, ...]) -> Tuple[int, ...]:
    out = []
    for s in reversed(shape):
        index, i = divmod(index, s)
        out.append(i)
    return tuple(reversed(out))


class ItemSizes(Sequence):
    """One worker's item sizes as (size, count) runs: a worker's items are a partial row,
    full rows and a partial row, so a field of any size is described, and costed, in O(1)
    (one item per row was a loop of 2**29 rows for a batch of 2**31 on 4 tiles). Reads
    like the list of sizes it stands for."""

    def __init__(self, runs):
        self.runs = tuple((k, n) for k, n in runs if n)

    def __len__(self) -> int:
        return sum(n for _, n in self.runs)

    def __iter__(self):
        for k, n in self.runs:
            for _ in range(n):
                yield k

    def __getitem__(self, index):
        return list(self)[index]

    def __eq__(self, other) -> bool:
        return list(self) == list(other) if isinstance(other, (list, tuple, ItemSizes)) else NotImplemented

    def __repr__(self) -> str:
        return f"ItemSizes({list(self.runs)})"


def _runs(item_sizes) -> Sequence[Tuple[int, int]]:
    """(size, count) runs of a worklist: an ItemSizes' own, else each item once."""
    return item_sizes.runs if isinstance(item_sizes, ItemSizes) else [(k, 1) for k in item_sizes]


def worker_item_sizes(total_positions: int, row_size: int, num_workers: int) -> List[ItemSizes]:
    """The item sizes ``partition_conv_partial_by_worker`` gives, for ``total_positions``
    positions in rows of ``row_size``, without building the rows (the planner's fast path):
    per worker, the rest of the row it starts in, whole rows, the start of its last row."""
    result = []
    for w in range(num_workers):
        begin, end = total_positions * w // num_workers, total_positions * (w + 1) // num_workers
        first = min(row_size - begin % row_size, end - begin)
        rows, last = divmod(end - begin - first, row_size) if end > begin else (0, 0)
        result.append(ItemSizes([(first, 1), (row_size, rows), (last, 1 if last else 0)] if end > begin else []))
    return result


# -- ConvPartial1x1Out ----------------------------------------------------------------------------

def _retention_savings_apply(float_activations: bool, float_partials: bool, conv_units: int) -> bool:
    return not float_activations and (float_partials or conv_units == 16)


def conv_partial_1x1_worker_cycles(item_sizes: Sequence[int], zero_output: bool, float_activations: bool,
                                   float_partials: bool, conv_units: int) -> int:
    """Cycles one worker of ConvPartial1x1Out takes for its worklist.

    item_sizes: the number of output positions of each worklist item; zero_output: the pass
    that zeroes the partials first (the first input-channel group); float_activations,
    float_partials, conv_units: see the module docstring."""
    core = 8 if float_activations else 4
    common = (not float_activations and conv_units == 16) or float_partials
    if float_activations and conv_units == 16:
        z = 8
    elif float_partials:
        z = 4
    else:
        z = 2
    zero = 1 if zero_output else 0
    common_zero = 1 if zero_output else 2
    cycles = 0
    for k, count in _runs(item_sizes):
        if k == 0:
            cost = 20 + common_zero if (common and not float_activations) else 24
        elif k == 1:
            if float_activations:
                cost = 47 + (2 + z) * zero
            elif common:
                cost = 31 + common_zero
            else:
                cost = 39 + (2 + z) * zero
        elif k == 2:
            if float_activations:
                cost = 46 + (2 + 2 * z) * zero
            elif common:
                cost = 40 + common_zero
            else:
                cost = 40 + (2 + 2 * z) * zero
        else:
            if float_activations:
                cost = 46 + (2 + z * k) * zero + (k - 3) * core
            elif common:
                cost = (37 if zero_output else 38) + (k - 3) * core
            else:
                cost = 41 + (2 + z * k) * zero + (k - 3) * core
        cycles += cost * count
    if _retention_savings_apply(float_activations, float_partials, conv_units):
        cycles = max(0, cycles - 7)
    return cycles


def _max_min_tile_cycles(worker_cycles: Sequence[int], num_workers: int) -> Tuple[int, int]:
    """(max, min) of num_workers x each worker's cycles; the min is 0 when a context is idle."""
    scaled = [num_workers * c for c in worker_cycles]
    if not scaled:
        return 0, 0
    low = 0 if len(scaled) < num_workers else min(scaled)
    return max(scaled), low


def conv_partial_1x1_inner_loop_cycles(worklists: Sequence[Sequence[int]], zero_output: bool,
                                       float_activations: bool, float_partials: bool, conv_units: int,
                                       num_workers: int) -> int:
    """ConvPartial1x1Out's inner loop in tile cycles: max(max_w W*worker_w, min_w W*worker_w + 14).

    worklists: per worker, the item sizes (a worker that has none is idle; fewer lists than
    workers count as idle workers); other arguments as conv_partial_1x1_worker_cycles."""
    workers = [conv_partial_1x1_worker_cycles(w, zero_output, float_activations, float_partials, conv_units)
               for w in worklists if len(w)]
    high, low = _max_min_tile_cycles(workers, num_workers)
    return max(high, low + 14)


def num_coefficient_loads(conv_units: int, conv_input_load_elems: int, float_activations: bool,
                          coeff_load_bytes_per_cycle: int) -> int:
    """Cycles to load the weights into the AMP units: conv_units x the bytes of one unit's
    weights (conv_input_load_elems x chain length 4 elements) / coeff_load_bytes_per_cycle
    (8, or 16 with use128BitConvUnitLoad)."""
    weight_bytes_per_unit = conv_input_load_elems * CONV_CHAIN_LENGTH * (4 if float_activations else 2)
    return conv_units * weight_bytes_per_unit // coeff_load_bytes_per_cycle


def conv_partial_1x1_outer_loop_cycles(inner_with_zeroing: int, inner_without_zeroing: int,
                                       num_conv_groups: int, num_in_groups: int, num_out_groups: int,
                                       out_chans_per_group: int, conv_units: int, conv_input_load_elems: int,
                                       coeff_load_bytes_per_cycle: int, float_activations: bool,
                                       float_partials: bool, num_workers: int) -> int:
    """ConvPartial1x1Out's supervisor in tile cycles, given the inner loop with and without
    zeroing (conv_partial_1x1_inner_loop_cycles):

        50 + W*(ret0 + ret1*(IG*CG - 1))
        + CG*(12 + common + (IG-1)*(15 - common + 1 + OG*(19 + passes*(6 + loads + inner_no_zero)))
                + (10 + 1 + OG*(19 - common + passes*(7 + loads + inner_zero))))

    where passes = ceil(out_chans_per_group / conv_units), loads = num_coefficient_loads,
    ret = (7, 3) when the retention savings apply (half inputs with float partials or 16
    units), else (0, 0)."""
    common = 1 if ((not float_activations and conv_units == 16) or float_partials) else 0
    ret = (7, 3) if _retention_savings_apply(float_activations, float_partials, conv_units) else (0, 0)
    passes = -(-out_chans_per_group // conv_units)
    loads = num_coefficient_loads(conv_units, conv_input_load_elems, float_activations, coeff_load_bytes_per_cycle)
    cg, ig, og = num_conv_groups, num_in_groups, num_out_groups
    return (50 + num_workers * (ret[0] + ret[1] * (ig * cg - 1))
            + cg * (12 + common
                    + (ig - 1) * (15 - common + 1 + og * (19 + passes * (6 + loads + inner_without_zeroing)))
                    + (10 + 1 + og * (19 - common + passes * (7 + loads + inner_with_zeroing)))))


def conv_partial_1x1_cycles(worklists: Sequence[Sequence[int]], num_conv_groups: int, num_in_groups: int,
                            num_out_groups: int, out_chans_per_group: int, conv_units: int,
                            conv_input_load_elems: int, coeff_load_bytes_per_cycle: int,
                            float_activations: bool, float_partials: bool, num_workers: int) -> int:
    """The whole ConvPartial1x1Out vertex in tile cycles: the outer loop around the inner
    loops with and without zeroing. Arguments as the two functions above."""
    with_zero = conv_partial_1x1_inner_loop_cycles(worklists, True, float_activations, float_partials,
                                                   conv_units, num_workers)
    without_zero = conv_partial_1x1_inner_loop_cycles(worklists, False, float_activations, float_partials,
                                                      conv_units, num_workers)
    return conv_partial_1x1_outer_loop_cycles(with_zero, without_zero, num_conv_groups, num_in_groups,
                                              num_out_groups, out_chans_per_group, conv_units,
                                              conv_input_load_elems, coeff_load_bytes_per_cycle,
                                              float_activations, float_partials, num_workers)


# -- ConvPartialnx1 -------------------------------------------------------------------------------

def conv_partial_nx1_worker_cycles(item_sizes: Sequence[int], float_activations: bool, float_partials: bool,
                                   conv_units: int) -> int:
    """Cycles one worker of ConvPartialnx1 takes for one kernel position's worklist.

    item_sizes: output positions of each item; others as in the module docstring. Base
    17 (+1 for half partials); each item 3 + by size (0: 17; 1: 33/29; 2: 44/33+extra;
    k>=3: 45/34 + (k-3)*core, float/half inputs) - 9 retention savings."""
    core = 8 if float_activations else 4
    extra = 1 if (not float_activations and ((not float_partials and conv_units == 16)
                                              or (float_partials and conv_units == 8))) else 0
    cycles = 17 + (0 if float_partials else 1)
    for k, count in _runs(item_sizes):
        if k == 0:
            cost = 17
        elif k == 1:
            cost = 33 if float_activations else 29
        elif k == 2:
            cost = 44 if float_activations else 33 + extra
        else:
            cost = (45 if float_activations else 34) + (k - 3) * core
        cycles += (3 + cost - 9) * count
    return cycles


def conv_partial_nx1_innermost_cycles(filter_height: int, conv_units: int, conv_input_load_elems: int,
                                      coeff_load_bytes_per_cycle: int, float_activations: bool) -> int:
    """The supervisor's innermost loop (one output-channel pass): the weight loads plus the
    filter-height dependent part {4: 60, 2: 46, 1: 15, else 20*h} + 3. filter_height: kernel
    rows the AMP chain covers at once (1, 2 or 4)."""
    loads = num_coefficient_loads(conv_units, conv_input_load_elems, float_activations, coeff_load_bytes_per_cycle)
    by_height = {4: 60, 2: 46, 1: 15}.get(filter_height, 20 * filter_height)
    return loads + by_height + 3


def conv_partial_nx1_inner_loop_cycles(worklists_per_kernel_position: Sequence[Sequence[Sequence[int]]],
                                       kernel_outer_elems: int, kernel_inner_elems: int, filter_height: int,
                                       out_chans_per_group: int, conv_units: int, conv_input_load_elems: int,
                                       coeff_load_bytes_per_cycle: int, float_activations: bool,
                                       float_partials: bool, num_workers: int) -> int:
    """ConvPartialnx1's inner loop in tile cycles:

        kernel_outer*(14 + kernel_inner*(12 + passes*innermost)) + kernelLoop
        kernelLoop = sum over kernel positions of max(max_w W*worker, min_w W*worker + 9) * passes

    worklists_per_kernel_position: for each of the kernel_outer_elems x kernel_inner_elems
    kernel positions, per worker the item sizes; passes = out_chans_per_group // conv_units."""
    passes = max(1, out_chans_per_group // conv_units)
    innermost = conv_partial_nx1_innermost_cycles(filter_height, conv_units, conv_input_load_elems,
                                                  coeff_load_bytes_per_cycle, float_activations)
    kernel_loop = 0
    last, cost = None, 0
    for worklists in worklists_per_kernel_position:
        if worklists is not last:   # the planner passes one worklist object for every kernel position
            workers = [conv_partial_nx1_worker_cycles(w, float_activations, float_partials, conv_units)
                       for w in worklists if len(w)]
            high, low = _max_min_tile_cycles(workers, num_workers)
            last, cost = worklists, max(high, low + 9) * passes
        kernel_loop += cost
    return kernel_outer_elems * (14 + kernel_inner_elems * (12 + passes * innermost)) + kernel_loop


def conv_partial_nx1_outer_loop_cycles(inner: int, num_conv_groups: int, num_in_groups: int, num_out_groups: int,
                                       float_partials: bool, num_workers: int) -> int:
    """ConvPartialnx1's supervisor around its inner loop, in tile cycles:

        109 + W*9 + W*(9 if float partials else 10)
        + CG*(OG*17 + (OG-1)*6 + 1) + (CG-1)*6 + 1
        + CG*(16 + IG*(14 + OG*(14 + inner)))"""
    cg, ig, og = num_conv_groups, num_in_groups, num_out_groups
    return (109 + num_workers * 9 + num_workers * (9 if float_partials else 10)
            + cg * (og * 17 + (og - 1) * 6 + 1) + (cg - 1) * 6 + 1
            + cg * (16 + ig * (14 + og * (14 + inner))))


def conv_zero_supervisor_cycles(field_elems: int, num_out_groups: int, num_conv_groups: int,
                                out_chans_per_group: int, num_workers: int) -> int:
    """Zeroing the partials before ConvPartialnx1 accumulates (estimateZeroSupervisorCycles):
    W*OG*CG*(ceil(ceil(field*outChans/W)/float vector width) + 14 - 9).

    field_elems: output positions (batch x field) of the vertex; out_chans_per_group: the
    partials' channels per output group."""
    per_worker = -(-field_elems * out_chans_per_group // num_workers)
    return num_workers * num_out_groups * num_conv_groups * (-(-per_worker // FLOAT_VECTOR_WIDTH) + 14 - 9)


def conv_partial_nx1_cycles(worklists_per_kernel_position: Sequence[Sequence[Sequence[int]]],
                            num_conv_groups: int, num_in_groups: int, num_out_groups: int,
                            kernel_outer_elems: int, kernel_inner_elems: int, filter_height: int,
                            out_chans_per_group: int, conv_units: int, conv_input_load_elems: int,
                            coeff_load_bytes_per_cycle: int, float_activations: bool, float_partials: bool,
                            field_elems: int, num_workers: int) -> int:
    """The whole ConvPartialnx1 vertex in tile cycles: zeroing + outer(inner). Arguments as
    the functions above; field_elems is the output positions zeroed per channel."""
    inner = conv_partial_nx1_inner_loop_cycles(worklists_per_kernel_position, kernel_outer_elems,
                                               kernel_inner_elems, filter_height, out_chans_per_group, conv_units,
                                               conv_input_load_elems, coeff_load_bytes_per_cycle,
                                               float_activations, float_partials, num_workers)
    return (conv_zero_supervisor_cycles(field_elems, num_out_groups, num_conv_groups, out_chans_per_group,
                                        num_workers)
            + conv_partial_nx1_outer_loop_cycles(inner, num_conv_groups, num_in_groups, num_out_groups,
                                                 float_partials, num_workers))
