"""The vertical-MAC method (PopLibs' ConvPartialVerticalMac): its candidates as PopLibs'
getConvVertexVMACCandidates makes them, its cycle formulas against PopLibs' by hand, the
planner choosing it for depthwise convolutions, and planned convolutions that run it for
4, 8 and 16 conv groups at once: values against numpy, engine cycles within 15 % of the plan."""
import json
import os
import sys

import numpy as np
import pytest

import popsim
from popsim import FLOAT, HALF, poplin
from popsim.poplin import vmac_estimates as ve
from popsim.poplin.conv_candidates import partials_types, vmac_candidates
from popsim.poplin.options import parse_conv_options
from popsim.poputil import PoplibsError
from popsim.program import Sequence

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import poplin_conv_reference as ref
from poplin_harness import load_and_run, small_device

DEPTHWISE = poplin.ConvParams(HALF, 1, (8, 8), (3, 3), 1, 1, 32, padding_lower=(1, 1), padding_upper=(1, 1))


def _groupings(p, options=None):
    opts = parse_conv_options(options or {})
    tile, inter = partials_types(p, opts)
    return [c.conv_groups_per_group for c in vmac_candidates(p, opts, tile, inter)]


def test_candidates_are_poplibs_groupings():
    assert _groupings(DEPTHWISE) == [4]                                   # float partials: the vector width
    assert _groupings(DEPTHWISE, {"partialsType": "half"}) == [4, 8, 16]  # half partials: also 8 and 16
    assert _groupings(poplin.ConvParams(FLOAT, 1, (8, 8), (3, 3), 1, 1, 32)) == []   # half inputs only
    assert _groupings(poplin.ConvParams(HALF, 1, (8, 8), (3, 3), 1, 2, 32)) == []    # one out-channel per group
    assert _groupings(DEPTHWISE, {"partialsType": "half",
                                  "planConstraints": json.dumps({"convGroupsPerGroup": 8})}) == [8]


def test_cycle_formulas_match_poplibs_by_hand():
    assert (ve.dot_product_cycles(3, 4), ve.dot_product_cycles(3, 8), ve.dot_product_cycles(3, 16)) == (7, 9, 15)
    assert ve.worker_cycles([3, 1], 4, True) == 19 + (7 + 5 + 7) + (7 + 5 + 3)
    assert ve.worker_cycles([3], 16, False) == 25 + 2 * (7 + 15 + 9)
    assert ve.reduction_cycles(64, 4, True, 6) == 9 + (9 + 2 * 5) * 11 // 4
    # 64 positions over 6 workers: rowSplitFactor 3, the busiest worker 10 whole items and 2 thirds per kernel row
    assert ve.inner_loop_cycles(8, 8, 1, 3, 3, 4, True, 6) == 6 * (19 + 3 * (10 * 19 + 2 * 15))


def test_the_planner_chooses_vmac_for_a_depthwise_convolution():
    target = small_device().target
    plan = poplin.get_plan(target, DEPTHWISE)
    assert (plan.method.kind, plan.conv_groups_per_group, plan.in_chans_per_group) == ("VMAC", 4, 1)
    assert plan.partition.conv_group_grain_size == 4
    amp = poplin.get_plan(target, DEPTHWISE, {"planConstraints": json.dumps({"method": "AMP"})})
    assert plan.cycles < amp.cycles


CASES = [  # params, partials type, conv groups per group
    (DEPTHWISE, "float", 4),
    (poplin.ConvParams(HALF, 1, (6, 6), (3, 3), 1, 1, 20, padding_lower=(1, 1), padding_upper=(1, 1)), "half", 8),
    (poplin.ConvParams(HALF, 2, (7, 9), (3, 2), 2, 1, 18, stride=(2, 1)), "half", 16),
    (poplin.ConvParams(HALF, 1, (12,), (5,), 1, 1, 4, kernel_dilation=(2,)), "float", 4),
]


@pytest.mark.parametrize("p,partials,groups", CASES, ids=["depthwise 4", "half 8", "2ch strided 16", "1-D dilated"])
def test_vmac_convolutions_run_exactly_and_cost_what_the_plan_says(p, partials, groups):
    options = {"partialsType": partials,
               "planConstraints": json.dumps({"method": "VMAC", "convGroupsPerGroup": groups})}
    device = small_device()
    g = popsim.Graph(device)
    x = poplin.create_input(g, p, "x", options)
    w = poplin.create_weights(g, p, "w", options)
    prog = Sequence()
    y = poplin.convolution(g, x, w, p, False, prog, "conv", options)
    rng = np.random.default_rng(groups)
    hx = rng.integers(-2, 3, p.input_shape()).astype(np.float16)
    hw = rng.integers(-2, 3, p.weights_shape()).astype(np.float16)
    engine, runs = load_and_run(g, device, prog, [y], {x: hx, w: hw})
    got, = runs[0]
    np.testing.assert_array_equal(got.astype(np.float32), ref.conv(hx, hw, p).astype(np.float32))  # exact
    plan = poplin.get_plan(device.target, p, options)
    assert (plan.method.kind, plan.conv_groups_per_group) == ("VMAC", groups)
    cycles = engine.get_report().to_dict()["execution"]["total_cycles"]
    assert 0.85 <= cycles / plan.cycles <= 1.15, (cycles, plan.cycles, dict(plan.cost_breakdown))


def test_vmac_constraints_popsim_cannot_run_are_refused():
    target = small_device().target
    with pytest.raises(PoplibsError, match="method VMAC"):
        poplin.get_plan(target, poplin.ConvParams(FLOAT, 1, (8, 8), (3, 3), 1, 1, 8),
                        {"planConstraints": json.dumps({"method": "VMAC"})})
