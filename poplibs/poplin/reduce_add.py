"""The vertex that reduces a convolution's partials across tiles (PopLibs' poplin::ReduceAdd,
multi-input form) and its estimator, the reference's getReduceCycleEstimate (3.5, which the
planner's cost model evaluates as cost_model.reduce_add_cycles).

The vertex is the C++ codelet file reduce_add.cpp. The formula gives the tile's cycles for
the target's workers; a MultiVertex is charged per worker, so the estimate is that divided
by the workers.
"""
import itertools
from pathlib import Path

from popsim import FLOAT, HALF

from ..poputil import template_vertex
from . import cost_model

CPP_CODELETS = Path(__file__).with_name("reduce_add.cpp")
CPP_FLAGS = "-O3"
_NAME = "poplin::ReduceAdd"
_TYPES = (FLOAT, HALF)


def reduce_add_name(out_type, partials_type, partials_mem_constraints: bool = False) -> str:
    """``poplin::ReduceAdd<OutType,PartialsType,false,partialsMemConstraints>``."""
    return template_vertex(_NAME, out_type, partials_type, False, bool(partials_mem_constraints))


def estimator(out_type, partials_type):
    """``fn(vertex_info, target)``: the reference's multi-input ReduceAdd cycles per worker."""
    def estimate(info, target):
        partials = info.initial_value("numPartials")
        elems = info.initial_value("numElems")
        workers = target.num_worker_contexts
        tile = cost_model.reduce_add_cycles(int(elems or 0), int(partials or 0), partials_type == FLOAT,
                                            out_type == FLOAT, workers)
        return -(-tile // workers)
    return estimate


def ensure_codelets(graph) -> None:
    """Add the codelet file to ``graph`` (once) and register every instantiation's estimator."""
    if graph.has_codelet(reduce_add_name(FLOAT, FLOAT)):
        return
    graph.add_codelets(str(CPP_CODELETS), CPP_FLAGS)
    for out_type, partials_type, constrained in itertools.product(_TYPES, _TYPES, (False, True)):
        graph.register_perf_estimator(reduce_add_name(out_type, partials_type, constrained),
                                      estimator(out_type, partials_type))
