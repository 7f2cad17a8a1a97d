"""The AMP partial-product vertices (PopLibs' ConvPartial1x1Out) and their cycle estimators.

The vertices are the C++ codelet file conv_vertices.cpp (its header gives the fields and how
they map onto PopLibs'), compiled with the host compiler's optimiser. The estimator is the
reference's formula (conv_estimates.conv_partial_1x1_cycles) evaluated for the work the
vertex was given, counted the way PopLibs' AMP vertex would do it (the formula gives the
tile's cycles; a MultiVertex is charged per worker, so the estimate is that divided by the workers):

* in-channel groups of ``convInputLoadElems * 4`` (the AMP chain) over all the vertex's
  in-channels, out-channel groups of ``numConvUnits`` over all its out-channels;
* the positions of one output group as one row (a matmul's batch is flattened into the
  field, as PopLibs' flattenDims transform does), split over the target's workers as
  partitionConvPartialByWorker splits them.
"""
import itertools
import math
from pathlib import Path

from popsim import FLOAT

from ..poputil import PoplibsError, template_vertex
from . import amp_configs, conv_estimates

CPP_CODELETS = Path(__file__).with_name("conv_vertices.cpp")
#: -ffp-contract=fast lets the AVX2 build fuse the multiply-adds (FMA)
CPP_FLAGS = "-O3 -ffp-contract=fast"

#: (input type, partials type, conv units, input load elements) instantiated, as PopLibs does
#: (amp_configs: the table the planner chooses from)
INSTANTIATIONS = amp_configs.ONE_BY_ONE
_NAME = "poplin::ConvPartial1x1Out"


def conv_partial_1x1_name(in_type, partials_type, conv_units: int, conv_input_load_elems: int,
                          use_limited_ver: bool = True, use_128bit_load: bool = False,
                          disable_sr: bool = False) -> str:
    """``poplin::ConvPartial1x1Out<FPType,AccumType,useLimitedVer,use128BitConvUnitLoad,
    numConvUnits,convInputLoadElems,disableSR>``; raises for a combination PopLibs does not
    instantiate."""
    if (in_type, partials_type, conv_units, conv_input_load_elems) not in INSTANTIATIONS:
        raise PoplibsError(
            f"ConvPartial1x1Out: no vertex for {in_type!r} inputs with {partials_type!r} partials, {conv_units} "
            f"conv units and {conv_input_load_elems} input load elements; PopLibs has "
            + ", ".join(f"{a.name}/{b.name}/{u}/{e}" for a, b, u, e in INSTANTIATIONS))
    return template_vertex(_NAME, in_type, partials_type, bool(use_limited_ver), bool(use_128bit_load),
                           int(conv_units), int(conv_input_load_elems), bool(disable_sr))


def _state(info, name: str) -> int:
    value = info.initial_value(name)
    return 0 if value is None else int(value)


def estimator(in_type, partials_type, conv_units: int, conv_input_load_elems: int, use_128bit_load: bool):
    """``fn(vertex_info, target)`` for graph.register_perf_estimator: the reference's
    ConvPartial1x1Out cycles for the vertex's sizes (module docstring)."""
    float_acts, float_partials = in_type == FLOAT, partials_type == FLOAT
    amp_in_chans = conv_input_load_elems * conv_estimates.CONV_CHAIN_LENGTH
    coeff_bytes = 16 if use_128bit_load else 8

    known = {}   # cycles by the sizes read here: a pure function of them

    def estimate(info, target):
        conv_groups = _state(info, "numConvGroupsM1") + 1
        out_groups = _state(info, "numOutGroupsM1") + 1
        in_chans = _state(info, "numInGroups") * _state(info, "inChansPerGroup")
        width = _state(info, "outChansPerGroup")
        out_sizes = info.field_sizes("out")
        positions = out_sizes[0] // width if out_sizes and width else 0
        workers = target.num_worker_contexts
        key = (conv_groups, out_groups, in_chans, width, positions, workers)
        cycles = known.get(key)
        if cycles is None:
            cycles = known[key] = cycles_of(conv_groups, out_groups, in_chans, width, positions, workers)
        return cycles

    def cycles_of(conv_groups, out_groups, in_chans, width, positions, workers):
        worklists = conv_estimates.worker_item_sizes(positions, max(positions, 1), workers)
        tile_cycles = conv_estimates.conv_partial_1x1_cycles(
            worklists, conv_groups, max(1, math.ceil(in_chans / amp_in_chans)),
            max(1, out_groups * math.ceil(width / conv_units)), conv_units, conv_units, conv_input_load_elems,
            coeff_bytes, float_acts, float_partials, workers)
        # a MultiVertex's estimate is charged to each of the tile's workers (docs/cost_model.md)
        return -(-tile_cycles // workers)
    return estimate


def ensure_codelets(graph) -> None:
    """Add the codelet file to ``graph`` (once) and register every instantiation's estimator."""
    if graph.has_codelet(conv_partial_1x1_name(FLOAT, FLOAT, 8, 2)):
        return
    graph.add_codelets(str(CPP_CODELETS), CPP_FLAGS)
    for (in_type, partials_type, units, load), limited, wide, sr in itertools.product(
            INSTANTIATIONS, (False, True), (False, True), (False, True)):
        graph.register_perf_estimator(conv_partial_1x1_name(in_type, partials_type, units, load, limited, wide, sr),
                                      estimator(in_type, partials_type, units, load, wide))
