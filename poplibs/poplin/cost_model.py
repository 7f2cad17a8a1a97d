"""The planner's cost terms other than the vertex itself (PopLibs' planner and cycle
estimators: ConvModel.cpp addEstimates, ConvReducePlan.cpp, ExchangeEstimator): exchange
(PopLibs' rule with bus sharing, and the engine's, which the planner uses: the estimate is
what runs), the cross-tile reduction of partials over a multi-stage plan, casts, and the
serial loop's slices, updates and in-place additions. Pure functions of sizes and the
target's worker contexts (``num_workers``, W: no default, the caller has the target); the
planner (planner.py) adds them up per candidate.
"""
import functools
import math
from typing import List

#: exchange costs are computed in 1/16ths of a byte per cycle (PopLibs' exchangeBytesScalingFactor)
EXCHANGE_SCALE = 16


def exchange_cycles(num_bytes: int, exchange_bytes_per_cycle: float, sharing_factor: int = 1) -> int:
    """Cycles to receive ``num_bytes`` on a tile: ceil(bytes*16 / (round(bpc*16) * m)), where
    m = 2 when two tiles of a shared exchange bus receive the same broadcast."""
    scaled = round(exchange_bytes_per_cycle * EXCHANGE_SCALE)
    return -(-num_bytes * EXCHANGE_SCALE // (scaled * sharing_factor))


#: cycles the engine adds to each tile's part of an exchange phase (docs/cost_model.md)
ENGINE_EXCHANGE_OVERHEAD_CYCLES = 10


def engine_exchange_cycles(num_bytes: int, exchange_bytes_per_cycle: float) -> int:
    """A tile receiving ``num_bytes`` in one exchange phase, as popsim's engine costs it:
    ceil(bytes / bytes per cycle) + 10 (nothing when nothing moves). The engine has no
    shared exchange buses, so a broadcast is received at the tile's own rate."""
    if num_bytes <= 0:
        return 0
    return math.ceil(num_bytes / exchange_bytes_per_cycle) + ENGINE_EXCHANGE_OVERHEAD_CYCLES


def reduce_exchange_cycles(partials: int, depth: int, grain: int, partials_bytes: int,
                           exchange_bytes_per_cycle: float) -> int:
    """The executor's one-stage reduction (mat_mul_execute.reduce_partials): the ``partials``
    of an output block are shared out over the ``depth`` tiles holding them in pieces of
    whole ``grain`` elements (split_bounds); the tile with the largest piece receives that
    piece of the other depth - 1 tiles' partials and sums it where it is, into the piece of
    the output it holds (create_output maps the output so), so no sum moves again. No tile
    sends more than it receives: a tile without a piece sends its whole block, and the
    pieces of the other tiles cover it."""
    piece = min(partials, -(-(-(-partials // grain)) // depth) * grain)
    return engine_exchange_cycles((depth - 1) * piece * partials_bytes, exchange_bytes_per_cycle)


# -- the reduction of partials across tiles ------------------------------------------------------

@functools.lru_cache(maxsize=4096)
def reduce_stage_depths(depth: int, multi_stage: bool = True) -> List[int]:
    """PopLibs' multi-stage reduction plan for ``depth`` partials per output: 1 stage below
    16, 2 below 125, else 3 (only with enableMultiStageReduce); each stage's depth chosen by
    recursion on depth^((n-1)/n), rounded down or up, to minimise the messages (sum of
    the stage depths). The product of the stages covers ``depth``."""
    if depth <= 1:
        return ()
    stages = 1 if (not multi_stage or depth < 16) else 2 if depth < 125 else 3
    return tuple(_stage_depths(depth, stages))


def _stage_depths(depth: int, stages: int) -> List[int]:
    if stages <= 1 or depth <= 2:
        return [depth]
    target = depth ** ((stages - 1) / stages)
    best = None
    for rest in {max(1, math.floor(target)), max(1, math.ceil(target))}:
        first = -(-depth // rest)
        plan = [first] + _stage_depths(rest, stages - 1)
        if best is None or sum(plan) < sum(best):
            best = plan
    return [d for d in best if d > 1] or [depth]


def reduce_add_cycles(out_size: int, num_partials: int, float_partials: bool, float_output: bool,
                      num_workers: int) -> int:
    """poplin::ReduceAdd (multi-input form), reference 3.5: one tile adds ``num_partials``
    partials of ``out_size`` outputs:  W*(32 + rem + (cpl*numPartials + c)*(loops/W))."""
    acc_vw = 4 if float_partials else 8
    partials_in_dp = 64 // (32 if float_partials else 16)
    cycles_per_loop = acc_vw // min(acc_vw, partials_in_dp) + 1
    loops = out_size // acc_vw + bin(out_size & (acc_vw - 1)).count("1")
    c = (7 if float_partials else 9) if float_output else (6 if float_partials else 8)
    rem = 0
    if loops % num_workers:
        if out_size % acc_vw:
            rem = 2 * num_partials + (13 if float_partials else 11)
            per_worker = loops // num_workers
        else:
            per_worker = -(-loops // num_workers)
    else:
        per_worker = loops // num_workers
    return num_workers * (32 + rem + (cycles_per_loop * num_partials + c) * per_worker)


def cast_cycles(n: int, from_vector_width: int, to_vector_width: int, num_workers: int) -> int:
    """PopLibs' estimateCastCycles: (max(ceil(n/W/fromVW), ceil(n/W/toVW)) + 26) * W. (The
    planner costs the vertex that runs instead: popops' Cast1D estimator.)"""
    per_worker = -(-n // num_workers)
    return (max(-(-per_worker // from_vector_width), -(-per_worker // to_vector_width)) + 26) * num_workers


def conv_reduce_cycles(outputs: int, depth: int, float_partials: bool, float_inter_tile: bool, float_output: bool,
                       exchange_bytes_per_cycle: float, multi_stage: bool, num_workers: int):
    """estimateConvReduceCycles over the multi-stage plan: (compute cycles, exchange cycles of
    the stages after the first). Each stage spreads its outputs over its ``d`` tiles, each
    adding ``d`` partials; the last stage writes the inter-tile partials type. ``outputs``:
    partials per tile before the reduction."""
    compute = exchange = 0
    size = outputs
    inter_bytes = 4 if float_inter_tile else 2
    stages = reduce_stage_depths(depth, multi_stage)
    for i, d in enumerate(stages):
        size = -(-size // d)
        last = i == len(stages) - 1
        compute += reduce_add_cycles(size, d, float_partials if i == 0 else float_inter_tile,
                                     float_inter_tile if last else float_partials, num_workers)
        if i > 0:
            exchange += exchange_cycles(size * d * inter_bytes, exchange_bytes_per_cycle)
    return compute, exchange


def conv_reduce_temp_bytes(outputs: int, depth: int, float_partials: bool, float_inter_tile: bool,
                           multi_stage: bool = True) -> int:
    """The reduction's temporary bytes on a tile: the largest stage input (d partials of the
    tile's ceil(size/d) outputs)."""
    temp = 0
    size = outputs
    for i, d in enumerate(reduce_stage_depths(depth, multi_stage)):
        size = -(-size // d)
        temp = max(temp, d * size * (4 if (float_partials if i == 0 else float_inter_tile) else 2))
    return temp


# -- serial-loop extras ----------------------------------------------------------------------------

def dynamic_slice_1d_cycles(region_size: int, vector_width: int, num_sub_elements: int, num_workers: int) -> int:
    """getDynamicSlice1DEstimate: 25 + W*(39 + (24 + 2*(ceil(region/W)/vw))*numSubElements)."""
    per_worker = -(-region_size // num_workers)
    return 11 + 1 + 6 + 1 + 6 + num_workers * (39 + (24 + 2 * (per_worker // vector_width)) * num_sub_elements)


def add_in_place_cycles(n: int, vector_width: int, num_workers: int) -> int:
    """getBinaryOp1DInPlaceEstimate(ADD) for float/half: W*(58 + ceil(ceil(n/W)/vw)*3) + 11."""
    per_worker = -(-n // num_workers)
    return num_workers * (58 + -(-per_worker // vector_width) * 3) + 11


def counter_increment_cycles(num_workers: int) -> int:
    """A serial loop's counter (one UNSIGNED_INT) incremented in place, as the executor does
    it (popops.add_in_place): getBinaryOp1DInPlaceEstimate(ADD) for one integer, 7 cycles
    per element and no vectorisation: W*(58 + 7) + 11."""
    return num_workers * (58 + 7) + 11


#: cycles the engine adds per contiguous run of an on-tile copy (docs/cost_model.md)
ENGINE_COPY_RUN_OVERHEAD_CYCLES = 4


def on_tile_copy_cycles(num_bytes: int, runs: int, memcpy_bytes_per_cycle: int) -> int:
    """An on-tile rearrangement of ``num_bytes`` in ``runs`` runs, as popsim's engine costs
    it: ceil(bytes / memcpy bytes per cycle) + 4 per run."""
    return -(-num_bytes // memcpy_bytes_per_cycle) + ENGINE_COPY_RUN_OVERHEAD_CYCLES * runs
