"""The candidates the planner searches (PopLibs' planner steps 3-4; PopLibs'
ConvPlan.cpp createPlan and ConvVertexType.cpp), method by method: the vertex
configurations amp_configs lists (the vertices the executors run) and their rank in
PopLibs' order of preference. conv_methods.py holds each method's generator and rank, and
its vertex_candidates puts them together (swapOperands, then the methods' candidates).

Three methods run in popsim's poplin: AMP (ConvPartial1x1Out, ConvPartialnx1), HMAC
(ConvPartialHorizontalMac) and VMAC (ConvPartialVerticalMac); SLIC and OuterProduct are
not candidates, and a planConstraints method naming one is refused by the planner.

* AMP: the in-channel group is the AMP chain (4 x the unit's input load: 16 halves, 8
  floats), or for a convolution with a kernel height above 1 also a smaller whole number
  of loads dividing it (half 8, 4; float 4, 2), the chain then holding 2 or 4 kernel rows
  (PopLibs' convUnitWeightHeight). Half inputs with float partials get 8 units, not 16.
* HMAC (PopLibs' getConvVertexHMACCandidates): in-channel groups of 1, 2, ... (half: 2, 4,
  ...) up to the in-channels rounded to that grain, skipping a group that does not lessen
  the number of groups; out-channel groups of 1 (2 with half partials); one conv group per
  group. A few-channel convolution (1-3 in-channels, depthwise) then pads to 1 or 2
  channels, not to the AMP chain's 8 or 16. Not offered for a matmul-shaped convolution,
  which the matmul executor runs with ConvPartial1x1Out only.
* VMAC (PopLibs' getConvVertexVMACCandidates): half inputs, in- and out-channel groups of
  1, 4 conv groups per group (also 8 and 16 with half partials), the conv groups split over
  tiles in grains of that many; only for one out-channel per conv group (depthwise and
  the like), not matmul-shaped.

The planner costs every candidate and keeps the fewest cycles; this order (by effective
MACs per cycle: the method's peak x the fraction of channels that are not padding, then
less padding, PopLibs' sort) only breaks ties.
"""
from dataclasses import dataclass
from typing import List, Tuple

import popsim

from . import amp_configs, conv_hmac
from .conv_params import ConvParams
from .options import ConvOptions
from .plan import Method


@dataclass(frozen=True)
class VertexCandidate:
    """One (swapOperands, vertex configuration) the planner partitions for."""
    swap_operands: bool
    method: Method
    in_chans_per_group: int
    partial_chans_per_group: int
    partials_type: object
    inter_tile_partials_type: object
    conv_groups_per_group: int = 1


def is_mat_mul_shaped(params: ConvParams) -> bool:
    """A 1x1 convolution over a field of ones with no transforms: a matmul (or batch of
    them), whose operands can be swapped."""
    ones = (1,) * params.num_field_dims
    return (params.input_field_shape == ones and params.kernel_shape == ones
            and params.output_field_shape() == ones)


def swap_operands_params(params: ConvParams) -> ConvParams:
    """C = (B' A')': a matmul-shaped convolution with batch and output channels swapped."""
    return params.replace(batch_size=params.output_channels_per_group,
                          output_channels_per_group=params.batch_size)


def _wider(requested, minimum):
    """PopLibs ignores a partials type smaller than the output type."""
    return requested if requested.size >= minimum.size else minimum


def partials_types(params: ConvParams, options: ConvOptions) -> Tuple[object, object]:
    """(tile-level, inter-tile) partials types: FLOAT inputs accumulate in FLOAT; a type
    smaller than the output type is raised to it."""
    tile = options.partials_type if params.data_type == popsim.HALF else popsim.FLOAT
    tile = _wider(tile, params.output_type)
    inter = _wider(options.inter_tile_partials_type, params.output_type)
    return tile, inter


def _padding_fraction(n: int, grain: int) -> float:
    padded = -(-n // grain) * grain
    return 0.0 if padded == 0 else (padded - n) / padded


def amp_candidates(target, params: ConvParams, options: ConvOptions, tile_type, inter_type,
                   swap: bool = False) -> List[VertexCandidate]:
    """The AMP configurations (module docstring), as far as a vertex is instantiated for them
    (amp_configs: what the executor runs) and planConstraints allow them; ``swap``: for the
    swapped operands of a matmul-shaped convolution."""
    pc = options.plan_constraints
    if pc.method not in (None, "AMP"):
        return []
    load = target.conv_unit_input_load_elems(params.data_type)
    weights_per_unit = target.conv_unit_max_pipeline_depth * load
    # the target's units for the input type, and fewer (ipu2 also tries 8 units for half), as
    # far as a vertex exists for them with these partials
    unit_options = amp_configs.unit_options(params.data_type, tile_type, load,
                                            target.num_conv_units(params.data_type))
    # a grouping smaller than the chain stacks kernel rows in it (ConvPartialnx1 only): for
    # convolutions with a kernel height (dimension 0, not the innermost) of more than 1
    groupings = [weights_per_unit]
    if params.num_field_dims >= 2 and params.kernel_shape[0] > 1 and not is_mat_mul_shaped(params):
        groupings = amp_configs.in_chan_groupings(weights_per_unit, load)
    out = []
    for units in unit_options:
        for ocpg in dict.fromkeys((units, weights_per_unit, 8)):
            if ocpg % units:
                continue
            for icpg in groupings:
                if pc.conv_units not in (None, units) or pc.conv_input_load_elems not in (None, load):
                    continue
                if pc.in_chans_per_group not in (None, icpg) or pc.partial_chans_per_group not in (None, ocpg):
                    continue
                if pc.conv_groups_per_group not in (None, 1):
                    continue
                out.append(VertexCandidate(swap, Method("AMP", units, load), icpg, ocpg, tile_type, inter_type))
    return out


# The ranks: (-effective MACs per cycle, padding) of a candidate on ``params`` (swapped when
# the candidate swaps), PopLibs' sort key: the method's peak x the fraction of its channels
# (or conv groups) that are not padding, then less padding.
def amp_rank(target, params: ConvParams, cand: VertexCandidate) -> Tuple[float, float]:
    in_pad = _padding_fraction(params.input_channels_per_group, cand.in_chans_per_group)
    out_pad = _padding_fraction(params.output_channels_per_group, cand.partial_chans_per_group)
    useful = (1 - in_pad) * (1 - out_pad)
    return -cand.method.conv_units * cand.method.conv_input_load_elems * useful, in_pad + out_pad


def hmac_rank(target, params: ConvParams, cand: VertexCandidate) -> Tuple[float, float]:
    in_pad = _padding_fraction(params.input_channels_per_group, cand.in_chans_per_group)
    out_pad = _padding_fraction(params.output_channels_per_group, cand.partial_chans_per_group)
    return -target.vector_width(params.data_type) * (1 - in_pad) * (1 - out_pad), in_pad + out_pad


def vmac_rank(target, params: ConvParams, cand: VertexCandidate) -> Tuple[float, float]:
    cg_pad = _padding_fraction(params.num_conv_groups, cand.conv_groups_per_group)
    return -target.vector_width(params.data_type) * (1 - cg_pad), cg_pad


def hmac_candidates(params: ConvParams, options: ConvOptions, tile_type, inter_type) -> List[VertexCandidate]:
    """PopLibs' getConvVertexHMACCandidates, as far as a vertex runs them (module docstring):
    none for a matmul-shaped convolution or unrunnable types, or when planConstraints rule
    the method or its groupings out."""
    pc = options.plan_constraints
    if pc.method not in (None, "HMAC") or is_mat_mul_shaped(params):
        return []
    if (params.data_type, tile_type) not in amp_configs.HMAC:
        return []
    if pc.conv_units is not None or pc.conv_input_load_elems is not None or pc.conv_groups_per_group not in (None, 1):
        return []
    ocpg = conv_hmac.partial_chans_per_group(tile_type)
    if pc.partial_chans_per_group not in (None, ocpg):
        return []
    grain = 1 if params.data_type == popsim.FLOAT else 2
    rounded = -(-params.input_channels_per_group // grain) * grain
    sizes = range(grain, rounded + 1, grain)
    if pc.in_chans_per_group is not None:
        sizes = [pc.in_chans_per_group] if pc.in_chans_per_group <= rounded and pc.in_chans_per_group % grain == 0 \
            else []
    out, previous = [], 0
    for icpg in sizes:
        groups = -(-rounded // icpg)
        if groups == previous:   # a larger group that needs as many groups only pads more
            continue
        previous = groups
        out.append(VertexCandidate(False, Method("HMAC"), icpg, ocpg, tile_type, inter_type))
    return out


def vmac_candidates(params: ConvParams, options: ConvOptions, tile_type, inter_type) -> List[VertexCandidate]:
    """PopLibs' getConvVertexVMACCandidates, as far as a vertex runs them (module docstring):
    half inputs, one in- and one out-channel per group, 4 conv groups per group (also 8 and
    16 with half partials); only for one out-channel per conv group (PopLibs' model refuses
    a tile with more), not for matmul-shaped convolutions."""
    pc = options.plan_constraints
    if pc.method not in (None, "VMAC") or is_mat_mul_shaped(params) or params.output_channels_per_group != 1:
        return []
    if pc.conv_units is not None or pc.conv_input_load_elems is not None:
        return []
    if pc.in_chans_per_group not in (None, 1) or pc.partial_chans_per_group not in (None, 1):
        return []
    sizes = (4, 8, 16) if tile_type == popsim.HALF else (4,)
    return [VertexCandidate(False, Method("VMAC"), 1, 1, tile_type, inter_type, n) for n in sizes
            if (params.data_type, tile_type, n) in amp_configs.VMAC and pc.conv_groups_per_group in (None, n)]
