"""The convolution method table (conv_methods.py): every entry is complete, so that a new
method or vertex is one entry: each vertex's instantiations name codelets its module adds,
the methods are PopLibs' (in its order of preference), and the planner and the executor
pick the vertex the other expects."""
import json

import pytest

import popsim
from popsim import FLOAT, HALF, poplin
from popsim.poplin import conv_methods as cm
from popsim.poplin.conv_transforms import canonical_views
from popsim.poplin.plan import METHODS, Method, Partition, Plan
from popsim.poputil import PoplibsError


def _plan(kind, config):
    """A plan of method ``kind`` whose vertex configuration is ``config`` (amp_configs' key)."""
    if kind == "AMP":
        return Plan(Partition(field_split=(1,)), Method("AMP", config[2], config[3]))
    return Plan(Partition(field_split=(1,)), Method(kind), conv_groups_per_group=config[2] if kind == "VMAC" else 1)


def test_the_methods_are_poplibs_in_its_order_of_preference():
    assert cm.RUNNABLE_METHODS == tuple(k for k in METHODS if k in cm.RUNNABLE_METHODS)
    assert all(m.vertices for m in cm.METHODS)
    assert cm.find("SLIC") is None
    with pytest.raises(PoplibsError, match="SLIC, which does not run here"):
        cm.method_of(Method("SLIC"), "test")


@pytest.mark.parametrize("method", cm.METHODS, ids=lambda m: m.kind)
def test_every_instantiation_names_a_codelet_its_module_adds(method):
    for vertex in method.vertices:
        for config in vertex.instantiations:
            graph = popsim.Graph(popsim.Target.create_ipu_target(tiles_per_ipu=4))
            plan = _plan(method.kind, config)
            name = vertex.vertex_type(graph, plan, config[0], config[1], "test")
            assert graph.has_codelet(name), (vertex.name, config)


def test_a_plan_outside_the_instantiations_or_of_another_method_is_refused():
    graph = popsim.Graph(popsim.Target.create_ipu_target(tiles_per_ipu=4))
    with pytest.raises(PoplibsError, match="no ConvPartialnx1 vertex"):
        cm.CONV_PARTIAL_NX1.vertex_type(graph, _plan("AMP", (HALF, FLOAT, 16, 4)), HALF, FLOAT, "test")
    with pytest.raises(PoplibsError, match="HMAC, which does not run here"):
        cm.CONV_PARTIAL_1X1_OUT.vertex_type(graph, _plan("HMAC", (FLOAT, FLOAT)), FLOAT, FLOAT, "test")


CASES = [  # params, planConstraints method, the vertex planned and run
    (poplin.ConvParams(FLOAT, 2, (4, 4), (1, 1), 8, 16, 1), "AMP", cm.CONV_PARTIAL_1X1_OUT),
    (poplin.ConvParams(HALF, 1, (6, 6), (3, 3), 8, 8, 1), "AMP", cm.CONV_PARTIAL_NX1),
    (poplin.ConvParams(FLOAT, 1, (6, 6), (3, 3), 2, 4, 1), "HMAC", cm.CONV_PARTIAL_HORIZONTAL_MAC),
    (poplin.ConvParams(HALF, 1, (6, 6), (3, 3), 1, 1, 8), "VMAC", cm.CONV_PARTIAL_VERTICAL_MAC),
]


@pytest.mark.parametrize("params,kind,vertex", CASES, ids=[c[2].name for c in CASES])
def test_the_executor_runs_the_vertex_the_planner_costed(params, kind, vertex):
    target = popsim.Target.create_ipu_target(tiles_per_ipu=16)
    plan = poplin.get_plan(target, params, {"planConstraints": json.dumps({"method": kind})})
    method = cm.method_of(plan.method, "test")
    assert method.planned_vertex(params) is vertex
    canon, _, _ = canonical_views(params, None, None)
    assert method.executed_vertex(plan, canon) is vertex
    # the flattened vertex is the one whose plans flatten the tile level
    assert bool(plan.transforms[1].flatten_dims) == vertex.flattens
