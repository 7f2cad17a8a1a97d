"""The planner: budgets, the AMP/memory trade-off, the least-memory fallback, planConstraints,
the PlanningCache, reports and errors."""
import json
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import popsim
from popsim import FLOAT, HALF, poplin, poputil
from popsim.poplin.conv_params import for_mat_mul


def small_target(tiles=16, bytes_per_tile=65536):
    return popsim.Target.create_ipu_target(tiles_per_ipu=tiles).with_changes(bytes_per_tile=bytes_per_tile)


def plan_quietly(target, params, options=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return poplin.get_plan(target, params, options)


def check_consistent(target, params, plan):
    part = plan.partition
    assert plan.tiles_used == part.total_parallel_split() <= target.num_tiles
    assert plan.cycles == sum(c for _, c in plan.cost_breakdown) > 0
    assert min(part.in_chan_split.serial, part.out_chan_split.serial) == 1   # one kind of serial split
    p = params.replace(batch_size=params.output_channels_per_group, output_channels_per_group=params.batch_size) \
        if plan.transforms[0].swap_operands else params
    assert part.batch_split <= p.batch_size
    assert part.out_chan_split.total <= -(-p.output_channels_per_group // plan.partial_chans_per_group)
    assert part.in_chan_split.total <= -(-p.input_channels_per_group // plan.in_chans_per_group)


@pytest.mark.parametrize("dtype, shapes", [(FLOAT, ((1024, 1024), (1024, 1024))), (HALF, ((64, 300), (300, 10))),
                                           (FLOAT, ((3, 5, 7), (3, 7, 2)))])
def test_the_chosen_plan_fits_its_budget(dtype, shapes):
    target = popsim.Target.create_ipu_target()
    params = for_mat_mul(dtype, *shapes)
    plan = poplin.get_plan(target, params)
    assert plan.temp_bytes_per_tile <= 0.6 * target.bytes_per_tile
    check_consistent(target, params, plan)
    assert plan.method.kind == "AMP" and plan.method.conv_units in (target.num_conv_units(dtype), 8)


def test_a_big_matmul_uses_most_tiles_and_a_1x1_vertex():
    target = popsim.Target.create_ipu_target()
    plan = poplin.get_plan(target, for_mat_mul(FLOAT, (1024, 1024), (1024, 1024)))
    assert plan.tiles_used > 0.9 * target.num_tiles
    assert plan.transforms[1].flatten_dims  # batch and field flattened for ConvPartial1x1Out
    # within 4x of the AMP's peak (16 float MACs per cycle per tile)
    assert plan.cycles < 4 * 1024 ** 3 / (16 * target.num_tiles)


def test_a_convolution_with_a_kernel_plans():
    target = popsim.Target.create_ipu_target(tiles_per_ipu=64)
    params = poplin.ConvParams(HALF, 2, (10, 12), (3, 3), 20, 24, padding_lower=(1, 1), padding_upper=(1, 1))
    plan = poplin.get_plan(target, params)
    check_consistent(target, params, plan)
    assert not plan.transforms[0].swap_operands and not plan.transforms[1].flatten_dims


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 200), st.integers(1, 200), st.integers(1, 200), st.sampled_from([FLOAT, HALF]),
       st.floats(0, 1.5), st.floats(0, 1.5))
def test_lowering_amp_never_raises_temp_memory(m, k, n, dtype, amp_a, amp_b):
    low, high = sorted((amp_a, amp_b))
    target = small_target(16, 32768)
    params = for_mat_mul(dtype, (m, k), (k, n))
    plan_low = plan_quietly(target, params, {"availableMemoryProportion": low})
    plan_high = plan_quietly(target, params, {"availableMemoryProportion": high})
    assert plan_low.temp_bytes_per_tile <= plan_high.temp_bytes_per_tile
    if plan_high.temp_bytes_per_tile <= high * target.bytes_per_tile:
        assert plan_low.cycles >= plan_high.cycles   # a tighter budget cannot buy speed
    check_consistent(target, params, plan_low)


def test_lowering_amp_serialises_and_costs_cycles():
    target = popsim.Target.create_ipu_target()
    params = for_mat_mul(FLOAT, (1024, 1024), (1024, 1024))
    roomy = poplin.get_plan(target, params, {"availableMemoryProportion": 0.6})
    tight = poplin.get_plan(target, params, {"availableMemoryProportion": 0.05})
    assert tight.temp_bytes_per_tile <= 0.05 * target.bytes_per_tile < roomy.temp_bytes_per_tile
    assert tight.partition.total_serial_split() > 1 and tight.cycles > roomy.cycles


def test_amp_too_small_warns_and_returns_the_least_memory_plan():
    target = small_target(16, 65536)
    params = for_mat_mul(FLOAT, (256, 256), (256, 256))
    least = poplin.get_plan(target, params, {"availableMemoryProportion": 0})
    with pytest.warns(UserWarning, match="unable to meet memory target"):
        plan = poplin.get_plan(target, params, {"availableMemoryProportion": 0.001})
    assert plan.temp_bytes_per_tile == least.temp_bytes_per_tile > 0.001 * 65536
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        poplin.get_plan(target, params, {"availableMemoryProportion": 0})   # 0 asks for it: no warning


def test_plan_constraints_are_honoured():
    target = popsim.Target.create_ipu_target(tiles_per_ipu=64)
    params = for_mat_mul(FLOAT, (128, 64), (64, 96))
    pc = {"0": {"transform": {"swapOperands": False},
                "partition": {"batchSplit": 4, "outChanSplit": {"parallel": 2, "serial": 3},
                              "inChanSplit": {"parallel": 2}}}}
    plan = poplin.get_plan(target, params, {"planConstraints": json.dumps(pc)})
    part = plan.partition
    assert not plan.transforms[0].swap_operands
    assert (part.batch_split, part.out_chan_split, part.in_chan_split.parallel) == \
        (4, poplin.Split(3, 2), 2)
    half = poplin.get_plan(target, for_mat_mul(HALF, (64, 64), (64, 64)),
                           {"planConstraints": '{"method": {"type": "AMP", "convUnits": 8}}'})
    assert half.method.conv_units == 8
    swapped = poplin.get_plan(target, params, {"planConstraints": '{"0": {"transform": {"swapOperands": true}}}'})
    assert swapped.transforms[0].swap_operands


@pytest.mark.parametrize("pc, fragment", [
    ({"0": {"partition": {"batchSplit": 500}}}, "batchSplit 500 > the batch size 128"),
    ({"0": {"partition": {"inChanSplit": {"serial": 2}, "outChanSplit": {"serial": 2}}}}, "one kind of serial"),
    ({"method": "HMAC"}, "method HMAC"),
    ({"0": {"partition": {"batchSplit": 64, "outChanSplit": {"parallel": 8}}}}, "use 512 tiles, the target has 64"),
    # 96 out-chans are 12 grains of 8 (swapped, 128 would be 16)
    ({"0": {"partition": {"outChanSplit": {"parallel": 13}}, "transform": {"swapOperands": False}}},
     "no plan satisfies"),
])
def test_constraints_no_plan_satisfies_are_errors(pc, fragment):
    target = popsim.Target.create_ipu_target(tiles_per_ipu=64)
    params = for_mat_mul(FLOAT, (128, 64), (64, 96))
    with pytest.raises(poputil.PoplibsError) as e:
        poplin.get_plan(target, params, {"planConstraints": json.dumps(pc)})
    assert "planConstraints" in str(e.value) and fragment in str(e.value)


def test_the_cache_returns_the_same_plan_object():
    graph = popsim.Graph(popsim.Target.create_ipu_target(tiles_per_ipu=64))
    cache = poplin.PlanningCache()
    a = poplin.get_mat_mul_plan(graph, FLOAT, (100, 50), (50, 70), cache=cache)
    assert poplin.get_mat_mul_plan(graph, FLOAT, (100, 50), (50, 70), cache=cache) is a
    assert poplin.get_mat_mul_plan(graph, FLOAT, (100, 50), (50, 70), {"availableMemoryProportion": "0.6"},
                                   cache=cache) is a   # the same options, spelt as a string
    b = poplin.get_mat_mul_plan(graph, FLOAT, (100, 50), (50, 70), {"availableMemoryProportion": 0.1}, cache=cache)
    assert b is not a and len(cache) == 2
    other = popsim.Graph(popsim.Target.create_ipu_target(tiles_per_ipu=32))
    assert poplin.get_mat_mul_plan(other, FLOAT, (100, 50), (50, 70), cache=cache).tiles_used <= 32
    assert len(cache) == 3
    assert poplin.get_mat_mul_plan(graph, FLOAT, (100, 50), (50, 70)) == a   # planning is deterministic


def test_reports_say_what_was_chosen_and_why():
    graph = popsim.Graph(popsim.Target.create_ipu_target())
    text = poplin.mat_mul_report_plan(graph, HALF, (512, 256), (256, 128))
    plan = poplin.get_mat_mul_plan(graph, HALF, (512, 256), (256, 128))
    for fragment in ("partition: batch", "serial splits", "per tile", f"tiles used: {plan.tiles_used} of 1472",
                     f"estimated cycles: {plan.cycles}", "partial_calc", "exchange",
                     f"temporary bytes per tile: {plan.temp_bytes_per_tile}", "budget 383385", "runner-up"):
        assert fragment in text
    params = poplin.ConvParams(FLOAT, 1, (8, 8), (3, 3), 4, 8)
    info = poplin.report_plan_info(graph, params, {"pass": "TRAINING_FWD"})
    assert "weights (1, 8, 4, 3, 3)" in info and "estimated cycles" in info


def test_errors():
    graph = popsim.Graph(popsim.Target.create_ipu_target(tiles_per_ipu=16))
    target = graph.target
    with pytest.raises(poputil.PoplibsError, match=r"\(4, 5\) and \(6, 7\) do not multiply"):
        poplin.get_mat_mul_plan(graph, FLOAT, (4, 5), (6, 7))
    with pytest.raises(poputil.PoplibsError, match="a_shape \\(5,\\) must have rank 2"):
        poplin.get_mat_mul_plan(graph, FLOAT, (5,), (5, 7))
    with pytest.raises(poputil.PoplibsError, match="partialsType"):
        poplin.mat_mul_report_plan(graph, FLOAT, (4, 5), (5, 7), {"partialsType": "double"})
    with pytest.raises(poputil.PoplibsError, match="availableMemoryProportion"):
        poplin.get_mat_mul_plan(graph, FLOAT, (4, 5), (5, 7), {"availableMemoryProportion": -1})
    with pytest.raises(poputil.PoplibsError, match="must be a poplin.ConvParams"):
        poplin.get_plan(target, (4, 5, 7))
    with pytest.raises(poputil.PoplibsError, match="PlanningCache"):
        poplin.get_plan(target, for_mat_mul(FLOAT, (4, 5), (5, 7)), None, {})
    with pytest.raises(poputil.PoplibsError, match="expected a popsim.Graph"):
        poplin.get_mat_mul_plan(target, FLOAT, (4, 5), (5, 7))


def test_tiny_and_degenerate_shapes():
    target = popsim.Target.create_ipu_target(tiles_per_ipu=8)
    for shapes in (((1, 1), (1, 1)), ((1, 3), (3, 1)), ((7, 1), (1, 9)), ((2, 1, 1), (2, 1, 1))):
        params = for_mat_mul(HALF, *shapes)
        check_consistent(target, params, poplin.get_plan(target, params))


@pytest.mark.parametrize("params, role", [
    (poplin.ConvParams(FLOAT, 2 ** 31, [4, 4], [3, 3], 1, 1), "input"),
    (poplin.ConvParams(FLOAT, 1, [4, 4], [3, 3], 1, 2 ** 31), "weights"),
    (for_mat_mul(FLOAT, (2 ** 16, 2 ** 15), (2 ** 15, 2)), "input"),
])
def test_a_convolution_past_the_tensor_limit_is_refused_before_planning(params, role):
    """A batch or channel count of 2**31 made the planner's worklists, or the layout's
    blocks, loop for hours; now refused at once, naming the tensor."""
    with pytest.raises(poputil.PoplibsError, match=f"'s {role} .* elements, more than popsim plans for one tensor "
                                                   r"\(1,073,741,824"):
        poplin.get_plan(popsim.Target.create_ipu_target(tiles_per_ipu=4), params)


def test_worklists_of_a_big_field_are_runs():
    """A worker's items are a partial row, whole rows and a partial row: described and
    costed without a loop over the rows, with the costs of the items one by one."""
    from popsim.poplin import conv_estimates as ce
    lists = ce.worker_item_sizes(2 ** 40, 1000, 6)
    assert sum(len(w) for w in lists) > 10 ** 9 and all(len(w.runs) <= 3 for w in lists)
    small = ce.worker_item_sizes(50, 7, 6)
    for w in small:
        assert ce.conv_partial_nx1_worker_cycles(w, True, True, 8) == \
            ce.conv_partial_nx1_worker_cycles(list(w), True, True, 8)
        assert ce.conv_partial_1x1_worker_cycles(w, True, True, True, 8) == \
            ce.conv_partial_1x1_worker_cycles(list(w), True, True, True, 8)


@pytest.mark.parametrize("kernel, field, dtype", [((3, 3), (14, 14), FLOAT), ((7, 7), (30, 30), HALF),
                                                  ((1, 3), (8, 9), FLOAT), ((5,), (40,), HALF)])
def test_the_planners_nx1_vertex_cycles_are_conv_partial_nx1_cycles(kernel, field, dtype):
    """The planner reuses a ConvPartialnx1's inner loop for every channel split of one box:
    its vertex_cycles must be conv_partial_nx1_cycles of the same box."""
    import math
    from popsim.poplin import conv_estimates as ce
    from popsim.poplin.conv_methods import CONV_PARTIAL_NX1, vertex_candidates
    from popsim.poplin.options import parse_conv_options
    from popsim.poplin.planner import _Search
    target = popsim.Target.create_ipu_target()
    params = poplin.ConvParams(dtype, 2, field, kernel, 16, 32, 1)
    options = parse_conv_options({})
    candidates = [c for c in vertex_candidates(target, params, options) if c.method.kind == "AMP"]
    searches = [s for s in (_Search(target, params, c, options, None, False) for c in candidates)
                if s.vertex is CONV_PARTIAL_NX1]
    assert searches
    for search in searches:
        c = search.c
        for bt, ft, kt, cgt, ict, oct_ in [(1, field, kernel, 1, 2, 1), (2, tuple(-(-n // 2) for n in field), kernel,
                                                                        1, 1, 2),
                                           (1, field, tuple(-(-k // 2) for k in kernel), 1, 4, 3)] * 2:
            outer = math.prod(kt[:-1]) if search.h == 1 else -(-kt[0] // search.h) * math.prod(kt[1:-1])
            positions = bt * math.prod(ft)
            worklists = ce.worker_item_sizes(positions, max(ft[-1], 1), search.workers)
            want = ce.conv_partial_nx1_cycles([worklists] * (outer * kt[-1]), cgt, ict, oct_, outer, kt[-1], search.h,
                                              c.partial_chans_per_group, c.method.conv_units,
                                              c.method.conv_input_load_elems, search.coeff_bytes, search.float_acts,
                                              search.fp, positions, search.workers)
            assert search.vertex_cycles(bt, tuple(ft), tuple(kt), cgt, ict, oct_) == want
