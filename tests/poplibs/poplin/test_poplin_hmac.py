"""The horizontal-MAC method (PopLibs' ConvPartialHorizontalMac): its candidates as PopLibs'
getConvVertexHMACCandidates makes them, its cycle formulas against PopLibs' by hand, and
planned (planConstraints method HMAC) convolutions that run it: values against numpy,
engine cycles within 15 % of the plan's."""
import json
import os
import sys

import numpy as np
import pytest

import popsim
from popsim import FLOAT, HALF, poplin
from popsim.poplin import hmac_estimates
from popsim.poplin.conv_candidates import hmac_candidates, partials_types
from popsim.poplin.options import parse_conv_options
from popsim.poputil import PoplibsError
from popsim.program import Sequence

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import poplin_conv_reference as ref
from poplin_harness import load_and_run, small_device

HMAC = {"planConstraints": json.dumps({"method": "HMAC"})}


def _groupings(p, options=None):
    opts = parse_conv_options(options or {})
    tile, inter = partials_types(p, opts)
    return [(c.in_chans_per_group, c.partial_chans_per_group) for c in hmac_candidates(p, opts, tile, inter)]


def test_candidates_are_poplibs_groupings():
    # half: grain 2, 5 channels round to 6: groups of 2, 4, 6 (3, 2, 1 groups); float partials: 1 out-chan
    assert _groupings(poplin.ConvParams(HALF, 1, (4, 4), (3, 3), 5, 4, 1)) == [(2, 1), (4, 1), (6, 1)]
    # half partials take 2 out-chans; float: grain 1, 5 in-chans: 1, 2, 3, 5 (4 gives 2 groups, as 3 does)
    assert _groupings(poplin.ConvParams(HALF, 1, (4, 4), (3, 3), 2, 4, 1), {"partialsType": "half"}) == [(2, 2)]
    assert [g for g, _ in _groupings(poplin.ConvParams(FLOAT, 1, (4, 4), (3, 3), 5, 4, 1))] == [1, 2, 3, 5]
    assert _groupings(poplin.ConvParams(FLOAT, 4, (1,), (1,), 3, 5, 1)) == []    # matmul-shaped: AMP only
    constrained = {"planConstraints": json.dumps({"inChansPerGroup": 4})}
    assert _groupings(poplin.ConvParams(HALF, 1, (4, 4), (3, 3), 5, 4, 1), constrained) == [(4, 1)]


def test_cycle_formulas_match_poplibs_by_hand():
    # getDenseDotProductCycles: half/float, 2 channels: 7 + 1 warm-up + 1 step of 2 cycles - 1
    assert hmac_estimates.dense_dot_product_cycles(4, False, True, 2) == 9
    assert hmac_estimates.dense_dot_product_cycles(2, True, True, 1) == 10      # float, 1 channel
    assert hmac_estimates.dense_dot_product_cycles(4, False, False, 4) == 11    # half/half, 4 channels
    # one worker, one item of 5 positions, 1 out-chan, float 1 channel: 16 + 19 + 5 * (7 + 10)
    assert hmac_estimates.worker_cycles([5], 2, True, True, 1, 1) == 16 + 19 + 5 * 17
    # supervisor: 58 + 6*9 + 0 + CG*(23 + IG*(15 + OG*(10 + inner)))
    assert hmac_estimates.outer_loop_cycles(100, 2, 1, 3, True, True, 6) == 58 + 54 + 2 * (23 + 15 + 3 * 110)


CASES = [  # params, partials type
    (poplin.ConvParams(FLOAT, 1, (8, 8), (3, 3), 2, 8, 1, padding_lower=(1, 1), padding_upper=(1, 1)), "float"),
    (poplin.ConvParams(HALF, 1, (6, 6), (3, 3), 1, 1, 8, padding_lower=(1, 1), padding_upper=(1, 1)), "half"),
    (poplin.ConvParams(HALF, 2, (9, 7), (3, 2), 3, 5, 1, stride=(2, 1)), "float"),
    (poplin.ConvParams(FLOAT, 1, (12,), (5,), 1, 3, 2, kernel_dilation=(2,)), "float"),
]


@pytest.mark.parametrize("p,partials", CASES, ids=["float 2ch", "half depthwise", "half 3ch strided", "1-D dilated"])
def test_hmac_convolutions_run_exactly_and_cost_what_the_plan_says(p, partials):
    options = dict(HMAC, partialsType=partials)
    device = small_device()
    g = popsim.Graph(device)
    x = poplin.create_input(g, p, "x", options)
    w = poplin.create_weights(g, p, "w", options)
    prog = Sequence()
    y = poplin.convolution(g, x, w, p, False, prog, "conv", options)
    rng = np.random.default_rng(p.input_channels_per_group)
    dt = p.data_type.numpy
    hx = rng.integers(-2, 3, p.input_shape()).astype(dt)
    hw = rng.integers(-2, 3, p.weights_shape()).astype(dt)
    engine, runs = load_and_run(g, device, prog, [y], {x: hx, w: hw})
    got, = runs[0]
    np.testing.assert_array_equal(got.astype(np.float32), ref.conv(hx, hw, p).astype(np.float32))  # exact
    plan = poplin.get_plan(device.target, p, options)
    assert plan.method.kind == "HMAC"
    cycles = engine.get_report().to_dict()["execution"]["total_cycles"]
    assert 0.85 <= cycles / plan.cycles <= 1.15, (cycles, plan.cycles, dict(plan.cost_breakdown))


def test_constraints_naming_methods_popsim_lacks_are_refused():
    target = small_device().target
    with pytest.raises(PoplibsError, match="method SLIC"):
        poplin.get_plan(target, poplin.ConvParams(HALF, 1, (8, 8), (3, 3), 1, 1, 4),
                        {"planConstraints": json.dumps({"method": "SLIC"})})
    with pytest.raises(PoplibsError, match="method HMAC.*matmul-shaped"):
        poplin.get_plan(target, poplin.ConvParams(FLOAT, 4, (1,), (1,), 3, 5, 1), HMAC)


def test_the_planner_chooses_hmac_where_its_cycles_are_fewest():
    """A float 1-channel 5x5 convolution on 1472 tiles: each tile's share is a few positions,
    where HMAC's smaller overheads beat AMP's padded chain (PopLibs' formulas for both)."""
    target = popsim.IPUModel("ipu2").create_device().target
    p = poplin.ConvParams(FLOAT, 1, (32, 32), (5, 5), 1, 1, 1)
    plan = poplin.get_plan(target, p)
    assert (plan.method.kind, plan.in_chans_per_group, plan.partial_chans_per_group) == ("HMAC", 1, 1)
    amp = poplin.get_plan(target, p, {"planConstraints": json.dumps({"method": "AMP"})})
    assert plan.cycles < amp.cycles
