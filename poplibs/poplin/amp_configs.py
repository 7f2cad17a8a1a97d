"""The vertex configurations popsim's poplin can run: each vertex's instantiations, which
the planner chooses from (conv_candidates) and the executors check a plan against (each
vertex's entry in conv_methods names its table here: ConvVertex.vertex_type).
AMP (below); HMAC: PopLibs' ConvPartialHorizontalMac, instantiated (conv_hmac.cpp) for
float/float, half/float and half/half (input/partials), as PopLibs does; VMAC: PopLibs'
ConvPartialVerticalMac (conv_vmac.cpp), half inputs with float or half partials and 4, 8
or 16 conv groups per group, as PopLibs instantiates it.


A configuration is (input type, partials type, conv units, input load elements). The
table is PopLibs' instantiations of its AMP vertices (PopLibs' lib/poplin/codelets/
ConvPartial1x1Out.cpp and ConvPartialnx1.cpp instantiate the same set): conv_vertices.cpp
instantiates every one of them; conv_nx1.cpp those with 64-bit input loads (4 halves or 2
floats), the only load width popsim's nx1 vertex takes. There is no half-input, float-
partials vertex with 16 units and 64-bit loads (PopLibs' getNumConvUnits gives 8 units for
half inputs with float partials), so the planner never offers one, and an executor given a
plan outside the table raises instead of running another configuration than was costed.
"""
from typing import List

from popsim import FLOAT, HALF

#: ConvPartial1x1Out's instantiations, PopLibs' order
ONE_BY_ONE = (
    (HALF, HALF, 8, 4), (HALF, FLOAT, 8, 4), (FLOAT, FLOAT, 8, 2), (HALF, HALF, 16, 4), (FLOAT, FLOAT, 16, 2),
    (HALF, HALF, 8, 8), (HALF, FLOAT, 8, 8), (FLOAT, FLOAT, 8, 4), (HALF, HALF, 16, 8), (HALF, FLOAT, 16, 8),
    (FLOAT, FLOAT, 16, 4),
)


def _load_64bit(in_type) -> int:
    return 8 // in_type.size


#: ConvPartialnx1's instantiations in popsim: the 64-bit-load ones
NX1 = tuple(c for c in ONE_BY_ONE if c[3] == _load_64bit(c[0]))

_TABLES = {"1x1": ONE_BY_ONE, "nx1": NX1}

#: ConvPartialHorizontalMac's (input type, partials type) instantiations, PopLibs' order
HMAC = ((FLOAT, FLOAT), (HALF, FLOAT), (HALF, HALF))

#: ConvPartialVerticalMac's (input type, partials type, conv groups per group) instantiations
VMAC = tuple((HALF, p, n) for n in (4, 8, 16) for p in (FLOAT, HALF))

def is_runnable(in_type, partials_type, conv_units: int, conv_input_load_elems: int, vertex: str = "both") -> bool:
    """Whether the vertex (``"1x1"``, ``"nx1"`` or ``"both"``) exists for the configuration."""
    key = (in_type, partials_type, conv_units, conv_input_load_elems)
    tables = _TABLES.values() if vertex == "both" else (_TABLES[vertex],)
    return all(key in t for t in tables)


def unit_options(in_type, partials_type, conv_input_load_elems: int, max_units: int) -> List[int]:
    """The conv-unit counts (most first) of runnable configurations of these types and load
    width, at most the target's ``max_units``."""
    units = {u for i, p, u, e in NX1 if (i, p, e) == (in_type, partials_type, conv_input_load_elems)
             and u <= max_units}
    return sorted(units, reverse=True)


def in_chan_groupings(weights_per_unit: int, conv_input_load_elems: int) -> List[int]:
    """The AMP in-channel groupings (most first): divisors of the chain's weights per unit
    that are whole loads (PopLibs' getConvVertexAMPCandidates): half 16, 8, 4; float 8, 4,
    2. A grouping g < weights_per_unit fills the chain with weights_per_unit / g kernel rows
    (PopLibs' convUnitWeightHeight), which only ConvPartialnx1 does."""
    return [g for g in range(weights_per_unit, 0, -1)
            if weights_per_unit % g == 0 and g % conv_input_load_elems == 0]


__all__ = ["HMAC", "NX1", "VMAC", "ONE_BY_ONE", "in_chan_groupings", "is_runnable", "unit_options"]
