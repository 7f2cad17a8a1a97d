"""Benchmark: does the planner's estimate match what runs? For each matmul and convolution,
the plan's cycles (poplin.get_mat_mul_plan / poplin.get_plan: plan.cycles) against the
engine's modelled cycles for the op (every step its program adds, from the execution
profile: operands made with the plan's layouts, so nothing is rearranged first).

Rows: one per shape and type (FLOAT/HALF inputs, float/half partials; matmuls and 3x3,
strided, grouped, 1x1, depthwise and 2-input-channel convolutions): plan cycles, engine cycles, ratio engine / plan.
Target 0.85 <= ratio <= 1.15. Full mode on an ipu2 IPUModel of 1472 tiles with larger
shapes; --quick on 16 tiles with small ones.

Run: python bench/bench_plan_fidelity.py [--quick]
"""
from __future__ import annotations

import os
import sys


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common as C

import popsim
from popsim import FLOAT, HALF, poplin
from popsim.program import Sequence

LOW, HIGH = 0.85, 1.15


def _device(tiles):
    model = popsim.IPUModel("ipu2")
    if tiles:
        model.tiles_per_ipu = tiles
    return model.create_device()


def _run(device, graph, prog) -> float:
    engine = popsim.Engine(graph, prog)
    engine.load(device)
    engine.run(0)
    return engine.get_report().to_dict()["execution"]["total_cycles"]


def mat_mul_row(tiles, m, k, n, dtype, partials) -> C.Result:
    device = _device(tiles)
    g = popsim.Graph(device.target)
    opts = {"partialsType": partials}
    a = poplin.create_mat_mul_input_lhs(g, dtype, (m, k), (k, n), "a", options=opts)
    b = poplin.create_mat_mul_input_rhs(g, dtype, (m, k), (k, n), "b", options=opts)
    prog = Sequence()
    poplin.mat_mul(g, a, b, prog, "mm", options=opts)
    plan = poplin.get_mat_mul_plan(g, dtype, (m, k), (k, n), options=opts)
    return _row(f"mat_mul [{m},{k}]x[{k},{n}] {dtype.name}, {partials} partials", plan, _run(device, g, prog))


def conv_row(tiles, dtype, partials, batch, field, kernel, cin, cout, groups=1, stride=None, padding=None):
    device = _device(tiles)
    g = popsim.Graph(device.target)
    kw = {}
    if stride:
        kw["stride"] = stride
    if padding:
        kw["padding_lower"] = kw["padding_upper"] = padding
    params = poplin.ConvParams(dtype, batch, field, kernel, cin, cout, groups, **kw)
    opts = {"partialsType": partials}
    x = poplin.create_input(g, params, "x", options=opts)
    w = poplin.create_weights(g, params, "w", options=opts)
    prog = Sequence()
    poplin.convolution(g, x, w, params, False, prog, "conv", options=opts)
    plan = poplin.get_plan(device.target, params, opts)
    what = (f"conv {'x'.join(map(str, kernel))} {cin}->{cout}{f' x{groups} groups' if groups > 1 else ''} "
            f"field {'x'.join(map(str, field))} batch {batch}{f' stride {stride[0]}' if stride else ''} "
            f"{dtype.name}, {partials} partials")
    return _row(what, plan, _run(device, g, prog))


def _row(what, plan, cycles) -> C.Result:
    ratio = cycles / plan.cycles
    return C.Result(bench="plan_fidelity", metric=what, unit="cycles", value=cycles, baseline=plan.cycles,
                    baseline_label="plan", ratio=ratio, target=f"{LOW} <= ratio <= {HIGH}",
                    passed=LOW <= ratio <= HIGH,
                    notes=[f"{what}: {_method(plan)}, "
                           f"{plan.tiles_used} tiles, plan terms {dict(plan.cost_breakdown)}"])


def _method(plan) -> str:
    m = plan.method
    if m.kind == "AMP":
        return f"AMP {m.conv_units} units x {m.conv_input_load_elems}"
    return f"{m.kind} ({plan.conv_groups_per_group} conv groups, {plan.in_chans_per_group} in-chans per group)"


def main(argv=None) -> int:
    args = C.parse_args(__doc__.splitlines()[0], argv)
    tiles = 16 if args.quick else None
    types = ((FLOAT, "float"), (HALF, "half"), (HALF, "float"))
    sizes = ((16, 16, 16), (100, 100, 100), (256, 256, 256)) if args.quick else \
        ((64, 64, 64), (256, 256, 256), (1024, 1024, 1024), (1, 1024, 1024), (4096, 64, 256))
    results = [mat_mul_row(tiles, m, k, n, t, p) for m, k, n in sizes for t, p in types]
    field, batch = ((8, 8), 2) if args.quick else ((32, 32), 4)
    convs = [(FLOAT, "float", batch, field, (3, 3), 16, 16, 1, None, (1, 1)),
             (HALF, "half", batch, field, (3, 3), 32, 32, 1, None, (1, 1)),
             (HALF, "float", batch, field, (1, 1), 64, 64, 1, None, None),
             (FLOAT, "float", batch, field, (3, 3), 16, 16, 1, (2, 2), None),
             (HALF, "half", batch, field, (3, 3), 8, 8, 4, None, (1, 1)),
             # few channels: depthwise (32 conv groups of 1 channel: VMAC) and 2 in-channels
             (HALF, "float", batch, field, (3, 3), 1, 1, 32, None, (1, 1)),
             (FLOAT, "float", batch, field, (3, 3), 2, 16, 1, None, (1, 1))]
    results += [conv_row(tiles, *c) for c in convs]
    C.report("bench_plan_fidelity: the plan's cycles against the engine's", results, args, C.environment())
    return 0


if __name__ == "__main__":
    sys.exit(main())
