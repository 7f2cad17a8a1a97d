"""The AMP vertex for general kernels (PopLibs' ConvPartialnx1) and its cycle estimator.

The vertex is the C++ codelet file conv_nx1.cpp (its header gives the fields and how they
map onto PopLibs'), compiled with the host compiler's optimiser; it shares its inner kernel
with ConvPartial1x1Out (conv_amp_kernel.hpp). The estimator is the reference's formula
(conv_estimates.conv_partial_nx1_cycles) for the vertex's sizes, with the worklists the
planner assumes (every kernel position's output positions split over the workers in rows
of ``outFieldRowSize``), so the plan's estimate and the engine's count agree. A MultiVertex
is charged per worker, so the tile's cycles are divided by the workers.
"""
import itertools
from pathlib import Path

from popsim import FLOAT

from ..poputil import PoplibsError, template_vertex
from . import amp_configs, conv_estimates
from .conv_vertices import CPP_FLAGS

CPP_CODELETS = Path(__file__).with_name("conv_nx1.cpp")
#: (input type, partials type, conv units) instantiated, as PopLibs does
#: (amp_configs: the table the planner chooses from; the load width is the 64-bit one)
INSTANTIATIONS = tuple((i, p, u) for i, p, u, _ in amp_configs.NX1)
_NAME = "poplin::ConvPartialnx1"


def conv_partial_nx1_name(in_type, partials_type, conv_units: int, use_limited_ver: bool = True,
                          use_128bit_load: bool = False) -> str:
    """``poplin::ConvPartialnx1<FPType,AccumType,useLimitedVer,use128BitLoad,numConvUnits>``;
    raises for a combination PopLibs does not instantiate."""
    if (in_type, partials_type, conv_units) not in INSTANTIATIONS:
        raise PoplibsError(
            f"ConvPartialnx1: no vertex for {in_type!r} inputs with {partials_type!r} partials and {conv_units} conv "
            "units; PopLibs has " + ", ".join(f"{a.name}/{b.name}/{u}" for a, b, u in INSTANTIATIONS))
    return template_vertex(_NAME, in_type, partials_type, bool(use_limited_ver), bool(use_128bit_load),
                           int(conv_units))


def _state(info, name: str) -> int:
    value = info.initial_value(name)
    return 0 if value is None else int(value)


#: the state fields the estimate reads
_STATE = ("outChansPerGroup", "zerosInfo", "outFieldRowSize", "kernelOuterSizeM1", "kernelInnerElementsM1",
          "ampKernelHeightM1", "kernelHeight", "numInGroups", "inChansPerGroup", "numOutGroupsM1", "numConvGroupsM1")


def estimator(in_type, partials_type, conv_units: int, use_128bit_load: bool):
    """``fn(vertex_info, target)`` for graph.register_perf_estimator (module docstring)."""
    float_acts, float_partials = in_type == FLOAT, partials_type == FLOAT
    load_elems = 2 if float_acts else 4
    coeff_bytes = 16 if use_128bit_load else 8

    known = {}   # cycles by the vertex's state values and workers: a pure function of them

    def estimate(info, target):
        workers = target.num_worker_contexts
        key = (workers,) + tuple(_state(info, name) for name in _STATE)
        cycles = known.get(key)
        if cycles is None:
            cycles = known[key] = cycles_of(info, workers)
        return cycles

    def cycles_of(info, workers):
        width = _state(info, "outChansPerGroup")
        positions = _state(info, "zerosInfo") // width if width else 0
        row = max(1, _state(info, "outFieldRowSize"))
        outer, inner = _state(info, "kernelOuterSizeM1") + 1, _state(info, "kernelInnerElementsM1") + 1
        worklists = conv_estimates.worker_item_sizes(positions, row, workers)
        # the chain holds ``height`` kernel rows of in-channel groups of chain / height
        # (PopLibs' convUnitWeightHeight): the kernel's rows are taken height at a time
        height = _state(info, "ampKernelHeightM1") + 1
        chain = conv_estimates.CONV_CHAIN_LENGTH * load_elems
        if height > 1:
            rows = max(1, _state(info, "kernelHeight"))
            outer = -(-rows // height) * (outer // rows)
        # the AMP's channel groups: in-channels in groups of the chain's, out-channels in
        # passes of the conv units (the vertex's groups hold many of them)
        in_groups = _state(info, "numInGroups") * max(1, -(-_state(info, "inChansPerGroup") // (chain // height)))
        out_groups = (_state(info, "numOutGroupsM1") + 1) * max(1, -(-width // conv_units))
        tile_cycles = conv_estimates.conv_partial_nx1_cycles(
            [worklists] * (outer * inner), _state(info, "numConvGroupsM1") + 1, in_groups, out_groups, outer, inner,
            height, conv_units, conv_units, load_elems, coeff_bytes, float_acts, float_partials, positions, workers)
        return -(-tile_cycles // workers)
    return estimate


def ensure_codelets(graph) -> None:
    """Add conv_nx1.cpp to ``graph`` (once) and register every instantiation's estimator."""
    if graph.has_codelet(conv_partial_nx1_name(FLOAT, FLOAT, 8)):
        return
    graph.add_codelets(str(CPP_CODELETS), CPP_FLAGS)
    for (in_type, partials_type, units), limited, wide in itertools.product(INSTANTIATIONS, (False, True),
                                                                            (False, True)):
        graph.register_perf_estimator(conv_partial_nx1_name(in_type, partials_type, units, limited, wide),
                                      estimator(in_type, partials_type, units, wide))


__all__ = ["conv_partial_nx1_name", "ensure_codelets", "estimator"]
