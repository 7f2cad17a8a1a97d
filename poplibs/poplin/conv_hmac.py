"""The horizontal-MAC convolution vertex (PopLibs' ConvPartialHorizontalMac) and its cycle
estimator: the vertex for few channels, any kernel (conv_candidates offers it).

The vertex is the C++ codelet file conv_hmac.cpp (its header gives the fields and how they
map onto PopLibs'). The estimator is the reference's formula (hmac_estimates.hmac_cycles)
for the vertex's sizes: in-channels in groups of the plan's grouping (the field
``inChanGrouping``), out-channels in groups of 1 (2 with half partials), and the worklists
the planner assumes (every kernel position's output positions split over the workers in
rows of ``outFieldRowSize``), so the plan's estimate and the engine's count agree. A
MultiVertex is charged per worker, so the tile's cycles are divided by the workers.
"""
import itertools
from pathlib import Path

from popsim import FLOAT

from ..poputil import PoplibsError, template_vertex
from . import amp_configs, conv_estimates, hmac_estimates
from .conv_vertices import CPP_FLAGS

CPP_CODELETS = Path(__file__).with_name("conv_hmac.cpp")
_NAME = "poplin::ConvPartialHorizontalMac"


def conv_partial_hmac_name(in_type, partials_type, use_limited_ver: bool = True) -> str:
    """``poplin::ConvPartialHorizontalMac<FPType,AccumType,useLimitedVer>``; raises for a
    combination PopLibs does not instantiate."""
    if (in_type, partials_type) not in amp_configs.HMAC:
        raise PoplibsError(
            f"ConvPartialHorizontalMac: no vertex for {in_type!r} inputs with {partials_type!r} partials; PopLibs has "
            + ", ".join(f"{a.name}/{b.name}" for a, b in amp_configs.HMAC))
    return template_vertex(_NAME, in_type, partials_type, bool(use_limited_ver))


def partial_chans_per_group(partials_type) -> int:
    """Out-channels the vertex's inner loop takes at once: 1, or 2 with half partials
    (PopLibs' getConvVertexHMACCandidates)."""
    return 1 if partials_type == FLOAT else 2


def _state(info, name: str) -> int:
    value = info.initial_value(name)
    return 0 if value is None else int(value)


def estimator(in_type, partials_type):
    """``fn(vertex_info, target)`` for graph.register_perf_estimator (module docstring)."""
    float_acts, float_partials = in_type == FLOAT, partials_type == FLOAT
    out_group = partial_chans_per_group(partials_type)

    def estimate(info, target):
        width = _state(info, "outChansPerGroup")
        positions = _state(info, "zerosInfo") // width if width else 0
        row = max(1, _state(info, "outFieldRowSize"))
        workers = target.num_worker_contexts
        vector_width = target.vector_width(in_type)
        worklists = conv_estimates.worker_item_sizes(positions, row, workers)
        kernel = (_state(info, "kernelOuterSizeM1") + 1) * (_state(info, "kernelInnerElementsM1") + 1)
        grouping = max(1, _state(info, "inChanGrouping"))
        in_groups = _state(info, "numInGroups") * max(1, -(-_state(info, "inChansPerGroup") // grouping))
        out_groups = (_state(info, "numOutGroupsM1") + 1) * max(1, -(-width // out_group))
        tile_cycles = hmac_estimates.hmac_cycles(
            worklists, kernel, _state(info, "numConvGroupsM1") + 1, in_groups, out_groups, grouping, out_group,
            vector_width, float_acts, float_partials, positions, workers)
        return -(-tile_cycles // workers)
    return estimate


def ensure_codelets(graph) -> None:
    """Add conv_hmac.cpp to ``graph`` (once) and register every instantiation's estimator."""
    if graph.has_codelet(conv_partial_hmac_name(FLOAT, FLOAT)):
        return
    graph.add_codelets(str(CPP_CODELETS), CPP_FLAGS)
    for (in_type, partials_type), limited in itertools.product(amp_configs.HMAC, (False, True)):
        graph.register_perf_estimator(conv_partial_hmac_name(in_type, partials_type, limited),
                                      estimator(in_type, partials_type))


__all__ = ["conv_partial_hmac_name", "ensure_codelets", "estimator", "partial_chans_per_group"]
