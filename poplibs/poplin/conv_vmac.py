"""The vertical-MAC convolution vertex (PopLibs' ConvPartialVerticalMac) and its cycle
estimator: the vertex for depthwise-like convolutions (one out-channel per conv group),
taking 4, 8 or 16 conv groups at once (conv_candidates offers it).

The vertex is the C++ codelet file conv_vmac.cpp (its header gives the fields and how they
map onto PopLibs'). The estimator is the reference's formula (vmac_estimates.vmac_cycles)
for the vertex's sizes: its conv groups in groups of the template's convGroupsPerGroup, one
in-group per in-channel, the output field from ``zerosInfo`` (positions), ``batchSize`` and
``outFieldRowSize``, the kernel's rows and width from its kernel sizes, so the plan's
estimate and the engine's count agree. A MultiVertex is charged per worker, so the tile's
cycles are divided by the workers.
"""
import itertools
from pathlib import Path

from popsim import FLOAT, HALF

from ..poputil import PoplibsError, template_vertex
from . import amp_configs, vmac_estimates
from .conv_vertices import CPP_FLAGS

CPP_CODELETS = Path(__file__).with_name("conv_vmac.cpp")
_NAME = "poplin::ConvPartialVerticalMac"


def conv_partial_vmac_name(in_type, partials_type, conv_groups_per_group: int, use_limited_ver: bool = True) -> str:
    """``poplin::ConvPartialVerticalMac<FPType,AccumType,useLimitedVer,convGroupsPerGroup>``;
    raises for a combination PopLibs does not instantiate."""
    if (in_type, partials_type, conv_groups_per_group) not in amp_configs.VMAC:
        raise PoplibsError(
            f"ConvPartialVerticalMac: no vertex for {in_type!r} inputs with {partials_type!r} partials and "
            f"{conv_groups_per_group} conv groups per group; PopLibs has "
            + ", ".join(f"{a.name}/{b.name}/{n}" for a, b, n in amp_configs.VMAC))
    return template_vertex(_NAME, in_type, partials_type, bool(use_limited_ver), int(conv_groups_per_group))


def _state(info, name: str) -> int:
    value = info.initial_value(name)
    return 0 if value is None else int(value)


def estimator(partials_type, conv_groups_per_group: int):
    """``fn(vertex_info, target)`` for graph.register_perf_estimator (module docstring)."""
    float_partials = partials_type == FLOAT

    def estimate(info, target):
        workers = target.num_worker_contexts
        positions = _state(info, "zerosInfo")
        width = max(1, _state(info, "outFieldRowSize"))
        batch = max(1, _state(info, "batchSize"))
        height = positions // (batch * width)
        groups = -(-(_state(info, "numConvGroupsM1") + 1) // conv_groups_per_group)
        in_groups = _state(info, "numInGroups") * _state(info, "inChansPerGroup")
        tile_cycles = vmac_estimates.vmac_cycles(
            height, width, batch, _state(info, "kernelOuterSizeM1") + 1, _state(info, "kernelInnerElementsM1") + 1,
            groups, in_groups, conv_groups_per_group, float_partials, workers)
        return -(-tile_cycles // workers)
    return estimate


def ensure_codelets(graph) -> None:
    """Add conv_vmac.cpp to ``graph`` (once) and register every instantiation's estimator."""
    if graph.has_codelet(conv_partial_vmac_name(HALF, FLOAT, 4)):
        return
    graph.add_codelets(str(CPP_CODELETS), CPP_FLAGS)
    for (in_type, partials_type, n), limited in itertools.product(amp_configs.VMAC, (False, True)):
        graph.register_perf_estimator(conv_partial_vmac_name(in_type, partials_type, n, limited),
                                      estimator(partials_type, n))


__all__ = ["conv_partial_vmac_name", "ensure_codelets", "estimator"]
