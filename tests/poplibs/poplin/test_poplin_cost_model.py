"""The planner's non-vertex cost terms (PopLibs' planner and PopLibs' cycle estimators) by hand."""
import math

from popsim.poplin import cost_model as cm
from popsim.poplin.planner import split_values


def test_exchange_with_and_without_bus_sharing():
    assert cm.exchange_cycles(100, 4) == 25            # ceil(100*16 / 64)
    assert cm.exchange_cycles(100, 4, 2) == 13         # ceil(1600 / 128)
    assert cm.exchange_cycles(0, 4) == 0


def test_reduce_add_by_hand():
    # accVW 4, cpl 4/2 + 1 = 3, loops 4 (not a multiple of 6, size a multiple of accVW: rounded up), c 7
    assert cm.reduce_add_cycles(16, 4, True, True, 6) == 6 * (32 + (3 * 4 + 7) * 1)
    # loops 2 + popcount(10 & 3) = 3; size not a multiple of 4: rem = 2*2 + 13, loops/W = 0
    assert cm.reduce_add_cycles(10, 2, True, True, 6) == 6 * (32 + 17)
    # half partials, half output: accVW 8, cpl 8/4 + 1 = 3, loops 6 -> 1 per worker, c 8
    assert cm.reduce_add_cycles(48, 3, False, False, 6) == 6 * (32 + (3 * 3 + 8) * 1)


def test_multi_stage_reduction_plan():
    assert cm.reduce_stage_depths(1) == ()
    assert cm.reduce_stage_depths(8) == (8,)
    assert cm.reduce_stage_depths(16) == (4, 4)
    three = cm.reduce_stage_depths(200)
    assert len(three) == 3 and math.prod(three) >= 200
    assert cm.reduce_stage_depths(200, multi_stage=False) == (200,)


def test_conv_reduce_sums_its_stages():
    compute, exchange = cm.conv_reduce_cycles(64, 16, True, True, True, 4, True, 6)
    # stage 1: 4 tiles of 16 outputs adding 4; stage 2: 4 outputs adding 4, exchanged 4*4*4 bytes
    assert compute == cm.reduce_add_cycles(16, 4, True, True, 6) + cm.reduce_add_cycles(4, 4, True, True, 6)
    assert exchange == cm.exchange_cycles(4 * 4 * 4, 4)
    assert cm.conv_reduce_temp_bytes(64, 16, True, True) == 4 * 16 * 4
    assert cm.conv_reduce_temp_bytes(64, 1, True, True) == 0


def test_cast_slice_and_add_in_place_by_hand():
    assert cm.cast_cycles(120, 2, 4, 6) == (max(10, 5) + 26) * 6
    assert cm.dynamic_slice_1d_cycles(100, 2, 1, 6) == 25 + 6 * (39 + (24 + 2 * (17 // 2)))
    assert cm.add_in_place_cycles(100, 2, 6) == 6 * (58 + 9 * 3) + 11


def test_split_values_are_the_smallest_split_per_part_size():
    assert split_values(10, 100) == [1, 2, 3, 4, 5, 10]
    assert split_values(10, 4) == [1, 2, 3, 4]
    for n in range(1, 60):
        values = split_values(n, n)
        sizes = [-(-n // s) for s in values]
        assert sizes == sorted(set(sizes), reverse=True) and set(sizes) == {-(-n // s) for s in range(1, n + 1)}
        for s in values:   # no smaller split gives the same part size
            assert all(-(-n // t) != -(-n // s) for t in range(1, s))
