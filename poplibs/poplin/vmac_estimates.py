"""Cycle formulas of PopLibs' vertical-MAC convolution vertex (ConvPartialVerticalMac;
PopLibs' lib/poplin/PerformanceEstimation.hpp and ConvModel.cpp), as pure functions of
sizes: the planner costs a tile's share with them and the vertex's estimator (conv_vmac)
the vertex it was given, so the plan and the engine agree.

The vertex takes ``conv_groups_per_group`` (4, 8 or 16) conv groups of one in- and one
out-channel at once, a lane each; a worker's item is one output position and one kernel
row: a dot product along the kernel's width (or a part of it: the positions are split over
the workers in parts of rows, PopLibs' rowSplitFactor). Each worker accumulates into its
own copy of the partials, which are zeroed first and reduced at the end. ``num_workers``
(W) is the target's worker contexts.
"""
import math
from typing import List


def dot_product_cycles(size: int, conv_groups_per_group: int) -> int:
    """getVerticalMacDotProductCycles: 3 + (3 per element past the first per 8 lanes, from 8
    lanes; else 2 per 4 lanes)."""
    if conv_groups_per_group >= 8:
        return 3 + 3 * (size - 1) * (conv_groups_per_group // 8)
    return 3 + 2 * (size - 1) * (conv_groups_per_group // 4)


def worker_cycles(conv_sizes: List[int], conv_groups_per_group: int, float_partials: bool) -> int:
    """getConvPartialVerticalMacCycleEstimate: one worker's items (``conv_sizes``: kernel
    elements per item). 8 or 16 lanes with half partials: 13 / 25 + (7 + 15 + dot(8)) per
    item, twice for 16; else 19 (float partials) or 18 + (7 + 5 or 3 + dot) per item."""
    if conv_groups_per_group >= 8 and not float_partials:
        per8 = sum(7 + 15 + dot_product_cycles(k, 8) for k in conv_sizes)
        return (13 if conv_groups_per_group == 8 else 25) + per8 * (1 if conv_groups_per_group == 8 else 2)
    return (19 if float_partials else 18) + sum(
        7 + (5 if float_partials else 3) + dot_product_cycles(k, conv_groups_per_group) for k in conv_sizes)


def inner_loop_cycles(out_height: int, out_width: int, batch: int, kernel_height: int, kernel_width: int,
                      conv_groups_per_group: int, float_partials: bool, num_workers: int) -> int:
    """estimateConvPartialVerticalMacInnerLoopCycles: the busiest worker's items (its share
    of the positions, in parts of ceil(kernel width / rowSplitFactor) when the positions do
    not divide over the workers) for every kernel row, x the workers (PopLibs models one
    worker's list, so the tile's cycles are W x it)."""
    rows = out_height * out_width * batch
    split = num_workers // math.gcd(num_workers, rows) if rows else 1
    max_part_rows = -(-rows * split // num_workers)
    whole, part = divmod(max_part_rows, split)
    sizes = ([kernel_width] * whole + [-(-kernel_width // split)] * part) * kernel_height
    return num_workers * worker_cycles(sizes, conv_groups_per_group, float_partials)


def zero_cycles(out_elems: int, float_partials: bool) -> int:
    """getConvPartialVerticalMacSupervisorZeroInnerLoopCycleEstimate: 4 + ceil(elems / (2 or 4))."""
    return 4 + -(-out_elems // (2 if float_partials else 4))


def reduction_cycles(out_elems: int, conv_groups_per_group: int, float_partials: bool, num_workers: int) -> int:
    """getConvPartialVerticalMacSupervisorReductionInnerLoopCycleEstimate: the workers'
    partials added: 10 - fp + (7 + 2 fp + (2 or 1) (W - 1)) * ceil(elems / W) / lanes."""
    per_worker = -(-out_elems // num_workers)
    per_rpt = 2 if float_partials else 1
    return 10 - float_partials + (7 + 2 * float_partials + per_rpt * (num_workers - 1)) * per_worker \
        // conv_groups_per_group


def vmac_cycles(out_height: int, out_width: int, batch: int, kernel_height: int, kernel_width: int,
                num_conv_groups: int, num_in_groups: int, conv_groups_per_group: int, float_partials: bool,
                num_workers: int) -> int:
    """The whole vertex in tile cycles, as PopLibs' planner costs it (ConvModel.cpp):
    61 + 14 + 25 + fp + CG*(zero + 32 + IG*(24 + inner) + reduction), where CG counts groups
    of ``conv_groups_per_group`` conv groups, IG the in-channels, and the zeroing and
    reduction cover out_height x out_width elements (PopLibs' numOutElems, without the batch)."""
    inner = inner_loop_cycles(out_height, out_width, batch, kernel_height, kernel_width, conv_groups_per_group,
                              float_partials, num_workers)
    elems = out_height * out_width
    per_group = (zero_cycles(elems, float_partials) + 32 + num_in_groups * (24 + inner)
                 + reduction_cycles(elems, conv_groups_per_group, float_partials, num_workers))
    return 61 + 14 + 25 + float_partials + per_group * num_conv_groups


#: a worker's least cycles per item (one position, one kernel row): 7 + 3 + dot(1 element)
MIN_ITEM_CYCLES = 13

__all__ = ["MIN_ITEM_CYCLES", "dot_product_cycles", "inner_loop_cycles", "reduction_cycles", "vmac_cycles",
           "worker_cycles", "zero_cycles"]
