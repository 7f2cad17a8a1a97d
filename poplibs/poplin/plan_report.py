"""Plans as data and as text (PopLibs' matMulReportPlan, reportPlanInfo): what the planner
chose for a matmul or convolution, what each tile does, what the model says it costs, and
why it won.
"""
import math
from typing import Optional, Sequence

from ..poputil import PoplibsError
from . import conv_methods
from .conv_params import ConvParams, for_mat_mul
from .options import parse_mat_mul_options
from .plan import Plan
from .planner import PlanDetails, PlanningCache, plan_with_details, swap_operands_params


def _target(graph):
    target = getattr(graph, "target", None)
    if target is None:
        raise PoplibsError(f"poplin: expected a popsim.Graph, found {type(graph).__name__}")
    return target


def _check_shapes(a_shape, b_shape) -> None:
    for name, shape in (("a_shape", a_shape), ("b_shape", b_shape)):
        if len(tuple(shape)) not in (2, 3):
            raise PoplibsError(f"matmul: {name} {tuple(shape)} must have rank 2 ([M, K] / [K, N]) or 3 (grouped "
                               f"[G, M, K] / [G, K, N])")


def get_mat_mul_plan(graph, dtype, a_shape: Sequence[int], b_shape: Sequence[int], options=None,
                     cache: Optional[PlanningCache] = None) -> Plan:
    """The plan poplin.mat_mul uses for A[a_shape] @ B[b_shape] of ``dtype`` (planned as a
    1-D convolution: batch M, in-channels K, out-channels N, G conv groups)."""
    _check_shapes(a_shape, b_shape)
    params = for_mat_mul(dtype, a_shape, b_shape)
    return plan_with_details(_target(graph), params, parse_mat_mul_options(options), cache)[0]


def _per_tile(params: ConvParams, plan: Plan) -> str:
    part = plan.partition
    p = swap_operands_params(params) if plan.transforms[0].swap_operands else params
    icpg, ocpg = plan.in_chans_per_group, plan.partial_chans_per_group
    ic_grains = -(-p.input_channels_per_group // icpg)
    oc_grains = -(-p.output_channels_per_group // ocpg)
    ic = -(-(-(-ic_grains // part.in_chan_split.serial)) // part.in_chan_split.parallel) * icpg
    oc = -(-(-(-oc_grains // part.out_chan_split.serial)) // part.out_chan_split.parallel) * ocpg
    batch = -(-p.batch_size // part.batch_split)
    field = tuple(-(-n // s) for n, s in zip(p.output_field_shape(), part.field_split))
    kernel = tuple(-(-n // s) for n, s in zip(p.kernel_shape, part.kernel_split))
    g_grain = max(1, part.conv_group_grain_size)   # VMAC's conv groups at once
    groups = -(-(-(-p.num_conv_groups // g_grain)) // part.conv_group_split) * g_grain
    macs = batch * math.prod(field) * math.prod(kernel) * groups * ic * oc
    return (f"  per tile (per serial step): batch {batch}, field {field}, kernel {kernel}, conv groups {groups}, "
            f"in-chans {ic}, out-chans {oc} ({macs} MACs)")


def _text(params: ConvParams, plan: Plan, details: PlanDetails, target) -> str:
    part = plan.partition
    m = plan.method
    entry = conv_methods.find(m.kind)
    vertex = entry.report(m) if entry is not None else ""
    macs = m.macs_per_cycle(target.vector_width(params.data_type), plan.in_chans_per_group)
    lines = [
        f"poplin plan for input {params.input_shape()} x weights {params.weights_shape()} -> output "
        f"{params.output_shape()} ({params.data_type}, partials {plan.partials_type}, inter-tile "
        f"{plan.inter_tile_partials_type})",
        f"  transform: swapOperands={plan.transforms[0].swap_operands}",
        f"  method: {m.kind} {vertex} ({macs} MACs/cycle); groups: {plan.in_chans_per_group} in-chans, "
        f"{plan.partial_chans_per_group} out-chans, {plan.conv_groups_per_group} conv groups",
        f"  partition: batch {part.batch_split}, field {part.field_split}, kernel {part.kernel_split}, "
        f"conv groups {part.conv_group_split}, in-chans parallel {part.in_chan_split.parallel}, "
        f"out-chans parallel {part.out_chan_split.parallel}",
        f"  serial splits: in-chans {part.in_chan_split.serial}, out-chans {part.out_chan_split.serial}",
        _per_tile(params, plan),
        f"  tiles used: {plan.tiles_used} of {target.num_tiles}",
        f"  estimated cycles: {plan.cycles} = " + " + ".join(f"{name} {c}" for name, c in plan.cost_breakdown),
        f"  temporary bytes per tile: {plan.temp_bytes_per_tile}",
        f"  why: objective {details.objective}; budget {details.budget_bytes} bytes per tile "
        f"({'met' if details.budget_met else 'NOT met'})",
    ]
    if details.runner_up is None:
        lines.append("  runner-up: none (one candidate configuration, or the others were pruned by the lower bound)")
    else:
        desc, cycles, temp = details.runner_up
        lines.append(f"  runner-up: {desc}: {cycles} cycles, {temp} temporary bytes per tile")
    return "\n".join(lines) + "\n"


def mat_mul_report_plan(graph, dtype, a_shape: Sequence[int], b_shape: Sequence[int], options=None,
                        cache: Optional[PlanningCache] = None) -> str:
    """The matmul's plan as text (PopLibs' matMulReportPlan writes it to a stream; this
    returns it): partition, serial splits, per-tile work, cycles by term, temp bytes,
    tiles used, and why it won."""
    _check_shapes(a_shape, b_shape)
    params = for_mat_mul(dtype, a_shape, b_shape)
    target = _target(graph)
    plan, details = plan_with_details(target, params, parse_mat_mul_options(options), cache)
    return _text(params, plan, details, target)


def report_plan_info(graph, params: ConvParams, options=None, cache: Optional[PlanningCache] = None) -> str:
    """A convolution's plan as text (PopLibs' reportPlanInfo)."""
    target = _target(graph)
    plan, details = plan_with_details(target, params, options, cache)
    return _text(params, plan, details, target)
