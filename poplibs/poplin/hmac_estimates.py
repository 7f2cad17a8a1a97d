"""Cycle formulas of PopLibs' horizontal-MAC convolution vertex (ConvPartialHorizontalMac;
PopLibs' lib/poplin/PerformanceEstimation.hpp and ConvModel.cpp, the general vertex, not its
1x1 specialisation, which popsim does not have), as pure functions of sizes.

The planner costs a tile's share with them, and the vertex's cycle estimator (conv_hmac)
with the sizes of the vertex it was given, so the plan's estimate and the engine's count
come from the same formulas. Vocabulary as in conv_estimates: workers, worklists of items
(runs of output positions in one row), conv/in/out groups (CG, IG, OG); ``num_workers``
(W) is the target's worker contexts.
"""
from typing import Sequence

from .conv_estimates import _max_min_tile_cycles, _runs, conv_zero_supervisor_cycles


def dense_dot_product_cycles(vector_width: int, float_activations: bool, float_partials: bool, size: int) -> int:
    """One output's dot product over ``size`` in-channels (PopLibs' getDenseDotProductCycles):
    the widest power of two up to the vector width dividing ``size`` is the step; a step of
    less than 64 bits cannot load inputs and weights together (2 cycles a step, and one
    more per output channel to warm up)."""
    acts_per_64 = 2 if float_activations else 4
    half_half = not float_activations and not float_partials
    out_chans = 2 if half_half else 1
    inner = 3 * out_chans + half_half + 3 + 1
    width = 1 << max(0, vector_width.bit_length() - 1)
    while size % width:
        width //= 2
    per_step = 1 if width >= acts_per_64 else 2
    extra = out_chans if width < acts_per_64 else 0
    return inner + extra + (size // width) * per_step - (not float_activations)


def _worker_retention_savings(float_activations: bool) -> int:
    """convHzmacWorkerRetentionSavings of the general vertex."""
    return 0 if float_activations else 6


def worker_cycles(item_sizes: Sequence[int], vector_width: int, float_activations: bool, float_partials: bool,
                  in_chans_per_group: int, out_chans_per_group: int) -> int:
    """One worker at one kernel position (getConvPartialHorizontalMacCycleEstimate):
    16 - savings + per item of k positions 19 + k*(7 + outChans*dot) (7 for an empty item);
    half partials take two out-channels a loop."""
    out_chans = out_chans_per_group if float_partials else -(-out_chans_per_group // 2)
    dot = dense_dot_product_cycles(vector_width, float_activations, float_partials, in_chans_per_group)
    cycles = 16 - _worker_retention_savings(float_activations)
    for k, n in _runs(item_sizes):
        cycles += n * (7 if k == 0 else 19 + k * (7 + out_chans * dot))
    return cycles


def inner_loop_cycles(worklists: Sequence[Sequence[int]], kernel_size: int, vector_width: int,
                      float_activations: bool, float_partials: bool, in_chans_per_group: int,
                      out_chans_per_group: int, num_workers: int) -> int:
    """The workers' part, in tile cycles (getConvPartialHorizontalMacSupervisorInnerLoop-
    CycleEstimate): each used worker does every kernel position's items plus 16; the tile
    takes W x the slowest (``worklists``: per worker the item sizes, the same at every
    kernel position)."""
    workers = []
    for items in worklists:
        if not len(items):
            continue
        one = worker_cycles(items, vector_width, float_activations, float_partials, in_chans_per_group,
                            out_chans_per_group)
        workers.append(kernel_size * one + 16)
    high, low = _max_min_tile_cycles(workers, num_workers)
    return max(high, low)


def outer_loop_cycles(inner: int, num_conv_groups: int, num_in_groups: int, num_out_groups: int,
                      float_activations: bool, float_partials: bool, num_workers: int) -> int:
    """The supervisor around the inner loop (getConvPartialHorizontalMacSupervisorOuterLoop-
    CycleEstimate): (58 float / 65 half inputs) + W*(9 or 10 zeroing savings) + W*(0 or 6)
    + CG*(23 + IG*(15 + OG*(10 + inner))). PopLibs passes the partials' floatness where the
    worker savings take the activations'; so does this."""
    overhead = 58 if float_activations else 65
    return (overhead + num_workers * (9 if float_partials else 10)
            + num_workers * _worker_retention_savings(float_partials)
            + num_conv_groups * (23 + num_in_groups * (15 + num_out_groups * (10 + inner))))


def hmac_cycles(worklists: Sequence[Sequence[int]], kernel_size: int, num_conv_groups: int, num_in_groups: int,
                num_out_groups: int, in_chans_per_group: int, out_chans_per_group: int, vector_width: int,
                float_activations: bool, float_partials: bool, field_elems: int, num_workers: int) -> int:
    """The whole vertex in tile cycles, as PopLibs' planner costs it (ConvModel.cpp): zeroing
    the partials (estimateZeroSupervisorCycles) + outer(inner). ``field_elems``: the output
    positions (batch x field) of the vertex."""
    inner = inner_loop_cycles(worklists, kernel_size, vector_width, float_activations, float_partials,
                              in_chans_per_group, out_chans_per_group, num_workers)
    return (conv_zero_supervisor_cycles(field_elems, num_out_groups, num_conv_groups, out_chans_per_group,
                                        num_workers)
            + outer_loop_cycles(inner, num_conv_groups, num_in_groups, num_out_groups, float_activations,
                                float_partials, num_workers))


def min_cycles_per_position(vector_width: int, float_activations: bool, float_partials: bool,
                            in_chans_per_group: int, out_chans_per_group: int) -> int:
    """A lower bound on a worker's cycles per output position per kernel position and
    channel group (the planner's pruning): 7 + outChans x dot."""
    out_chans = out_chans_per_group if float_partials else -(-out_chans_per_group // 2)
    return 7 + out_chans * dense_dot_product_cycles(vector_width, float_activations, float_partials,
                                                    in_chans_per_group)


__all__ = ["dense_dot_product_cycles", "hmac_cycles", "inner_loop_cycles", "min_cycles_per_position",
           "outer_loop_cycles", "worker_cycles"]
