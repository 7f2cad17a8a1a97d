"""The AMP vertex cycle formulas (PopLibs' cycle estimators) evaluated by hand."""
from popsim.poplin import conv_estimates as ce


def test_partition_by_worker_splits_evenly_and_cuts_rows():
    parts = ce.partition_conv_partial_by_worker(1, (10,), 6)
    # positions 10*w//6: 0 1 3 5 6 8 10
    assert [[r.size for r in w] for w in parts] == [[1], [2], [2], [1], [2], [2]]
    parts = ce.partition_conv_partial_by_worker(2, (2, 3), 6)
    # 12 positions, 2 each; worker 1 takes x=2 of row 0 and x=0 of row 1
    assert parts[1] == [ce.PartialRow(0, (0,), 2, 3), ce.PartialRow(0, (1,), 0, 1)]
    assert parts[5] == [ce.PartialRow(1, (1,), 1, 3)]
    covered = sorted((r.b, r.outer, x) for w in parts for r in w for x in range(r.x_begin, r.x_end))
    assert covered == [(b, (o,), x) for b in range(2) for o in range(2) for x in range(3)]


def test_partition_with_fewer_positions_than_workers_leaves_workers_idle():
    parts = ce.partition_conv_partial_by_worker(1, (3,), 6)
    assert [len(w) for w in parts] == [0, 1, 0, 1, 0, 1]


def test_worker_item_sizes_match_the_rows():
    for batch, field in ((1, (10,)), (2, (2, 3)), (3, (1,)), (5, (4, 7))):
        rows = ce.partition_conv_partial_by_worker(batch, field, 6)
        total = batch * __import__("math").prod(field)
        assert ce.worker_item_sizes(total, field[-1], 6) == [[r.size for r in w] for w in rows]


def test_1x1_worker_by_hand():
    # half inputs, float partials, 16 units: "common" path, k=8: 37 + 5*4 - 7 retention
    assert ce.conv_partial_1x1_worker_cycles([8], True, False, True, 16) == 50
    assert ce.conv_partial_1x1_worker_cycles([8], False, False, True, 16) == 51
    # float inputs, float partials, 8 units, zeroing: z = 4; k=1: 47 + 6; k=3: 46 + (2 + 12)
    assert ce.conv_partial_1x1_worker_cycles([1, 3], True, True, True, 8) == 53 + 60
    # half/half, 8 units: z = 2, k=2: 40 + (2 + 4); no retention savings
    assert ce.conv_partial_1x1_worker_cycles([2], True, False, False, 8) == 46
    # empty item: 24 for float, 20 + 1|2 on the common path
    assert ce.conv_partial_1x1_worker_cycles([0], True, True, True, 8) == 24
    assert ce.conv_partial_1x1_worker_cycles([0], False, False, True, 16) == 22 - 7


def test_1x1_inner_and_outer_loops_by_hand():
    six = [[8]] * 6
    assert ce.conv_partial_1x1_inner_loop_cycles(six, True, False, True, 16, 6) == 6 * 50 + 14
    # one busy worker: the idle ones make the minimum 0
    assert ce.conv_partial_1x1_inner_loop_cycles([[8]], True, False, True, 16, 6) == 300
    loads = ce.num_coefficient_loads(16, 4, False, 8)
    assert loads == 16 * 4 * 4 * 2 // 8 == 64
    # 50 + 6*(7 + 3*(2*1 - 1)) + 1*(12 + 1 + 1*(15 - 1 + 1 + 1*(19 + 1*(6 + 64 + 320)))
    #                                  + (10 + 1 + 1*(19 - 1 + 1*(7 + 64 + 314))))
    assert ce.conv_partial_1x1_outer_loop_cycles(314, 320, 1, 2, 1, 16, 16, 4, 8, False, True, 6) == 961
    assert ce.conv_partial_1x1_cycles(six, 1, 2, 1, 16, 16, 4, 8, False, True, 6) == 961


def test_nx1_worker_by_hand():
    # base 17; k=4: 3 + 34 + 4 - 9; k=1: 3 + 29 - 9
    assert ce.conv_partial_nx1_worker_cycles([4, 1], False, True, 16) == 17 + 32 + 23
    assert ce.conv_partial_nx1_worker_cycles([2], True, True, 8) == 17 + 3 + 44 - 9
    # half partials: base 18; half/half with 16 units takes the extra cycle at k=2
    assert ce.conv_partial_nx1_worker_cycles([2], False, False, 16) == 18 + 3 + 34 - 9
    assert ce.conv_partial_nx1_worker_cycles([2], False, False, 8) == 18 + 3 + 33 - 9


def test_nx1_supervisor_and_zeroing_by_hand():
    assert ce.conv_partial_nx1_innermost_cycles(1, 16, 4, 8, False) == 64 + 15 + 3
    assert ce.conv_partial_nx1_innermost_cycles(4, 16, 4, 8, False) == 64 + 60 + 3
    assert ce.conv_partial_nx1_innermost_cycles(3, 16, 4, 8, False) == 64 + 60 + 3
    worklists = [[[4, 1]] * 6]
    inner = ce.conv_partial_nx1_inner_loop_cycles(worklists, 1, 1, 1, 16, 16, 4, 8, False, True, 6)
    assert inner == 1 * (14 + 1 * (12 + 1 * 82)) + max(6 * 72, 6 * 72 + 9) * 1 == 549
    # 109 + 6*9 + 6*9 + (17 + 0 + 1) + 0 + 1 + (16 + 1*(14 + 1*(14 + 549)))
    assert ce.conv_partial_nx1_outer_loop_cycles(549, 1, 1, 1, True, 6) == 829
    # ceil(12*16/6) = 32; ceil(32/2) = 16; 6 * (16 + 5)
    assert ce.conv_zero_supervisor_cycles(12, 1, 1, 16, 6) == 126
    assert ce.conv_partial_nx1_cycles(worklists, 1, 1, 1, 1, 1, 1, 16, 16, 4, 8, False, True, 12, 6) == 829 + 126


def test_more_work_never_costs_fewer_cycles():
    for k in range(0, 40):
        for flags in ((True, True, 8), (False, True, 16), (False, False, 16), (False, False, 8)):
            assert ce.conv_partial_nx1_worker_cycles([k + 1], *flags) >= ce.conv_partial_nx1_worker_cycles([k], *flags)
            if k >= 3:
                assert ce.conv_partial_1x1_worker_cycles([k + 1], False, *flags) >= \
                    ce.conv_partial_1x1_worker_cycles([k], False, *flags)
