"""Cycles per vertex, summed over runs (native/core/compute_set.cpp): vertices with a
fixed estimate are counted by the runs of their compute set, vertices that count their
own cycles one run at a time, and a run cut short by a failing vertex counts exactly
the vertices that ran before it. The report's cycles per vertex type show them."""
import numpy as np
import pytest

import popsim
from popsim import FLOAT, INT
from popsim.program import Execute, Repeat
from test_compute_sets import abi_vertex_types

pytestmark = pytest.mark.compiler


@pytest.fixture(scope="module")
def vertex_types():
    return abi_vertex_types()


def cycles_by_type(engine):
    return {t.name: t.cycles for t in engine.get_report().execution.vertex_types}


def graph_of_three_tiles(device, vertex_types):
    """tile 0: Sum (estimate 10), Sum (counts 5 + 2), Fails (fails while i != 0), Sum (estimate 20)
    tile 1: Scale (MultiVertex, counts 3 per worker), Sum (estimate 4)
    tile 2: WorkerId (estimate 7), Scale (estimate 2 per worker): all estimated"""
    g = popsim.Graph(device)
    g._state.codelets.types.update(vertex_types)
    x = g.add_variable(FLOAT, [3, 4], "x")
    y = g.add_variable(FLOAT, [3, 4], "y")
    z = g.add_variable(FLOAT, [3, 4], "z")
    i = g.add_variable(INT, [1], "i")
    w = g.add_variable(INT, [1], "w")
    for t in range(3):
        g.set_tile_mapping(x[t], t)
        g.set_tile_mapping(y[t], t)
        g.set_tile_mapping(z[t], t)
    g.set_tile_mapping(i, 0)
    g.set_tile_mapping(w, 2)
    g.set_initial_value(x, np.ones((3, 4)))
    g.create_host_write("i", i)
    cs = g.add_compute_set("cs")

    def vertex(tile, kind, fields, estimate=None, k=None):
        v = g.add_vertex(cs, kind, fields)
        g.set_tile_mapping(v, tile)
        if estimate is not None:
            g.set_perf_estimate(v, estimate)
        if k is not None:
            g.set_initial_value(v["k"], k)
        return v
    vertex(0, "Sum", {"in": x[0], "out": y[0, 0]}, estimate=10)
    vertex(0, "Sum", {"in": x[0, 0:2], "out": y[0, 1]})
    vertex(0, "Fails", {"x": i[0]})
    vertex(0, "Sum", {"in": x[0, 0:3], "out": y[0, 2]}, estimate=20)
    vertex(1, "Scale", {"data": z[1]}, k=2.0)
    vertex(1, "Sum", {"in": x[1, 0:1], "out": y[1, 0]}, estimate=4)
    vertex(2, "WorkerId", {"out": w[0]}, estimate=7)
    vertex(2, "Scale", {"data": z[2]}, estimate=2, k=1.0)
    return g, cs


def test_cycles_per_vertex_add_up_over_runs(device, vertex_types):
    g, cs = graph_of_three_tiles(device, vertex_types)
    e = popsim.Engine(g, Repeat(3, Execute(cs)))
    e.load(device)
    e.write_tensor("i", np.zeros(1, np.int32))
    e.run()
    workers = device.target.num_worker_contexts
    fails = popsim.lower.cost_model.DEFAULT_VERTEX_CYCLES
    assert cycles_by_type(e) == {"Sum": 3 * (10 + 7 + 20 + 4), "Fails": 3 * fails,
                                 "Scale": 3 * (workers * 3 + workers * 2), "WorkerId": 3 * 7}
    e.run()
    assert cycles_by_type(e)["Sum"] == 6 * (10 + 7 + 20 + 4)


def test_a_run_cut_short_counts_the_vertices_that_ran(device, vertex_types):
    """The failing vertex and those after it on its tile are not counted; every other
    tile ran whole."""
    g, cs = graph_of_three_tiles(device, vertex_types)
    e = popsim.Engine(g, Execute(cs))
    e.load(device)
    e.write_tensor("i", np.ones(1, np.int32))
    with pytest.raises(popsim.PopsimError, match="Fails"):
        e.run()
    workers = device.target.num_worker_contexts
    first = {"Sum": 10 + 7 + 4, "Fails": 0, "Scale": workers * 3 + workers * 2, "WorkerId": 7}
    assert cycles_by_type(e) == first
    e.write_tensor("i", np.zeros(1, np.int32))
    e.run()  # the engine stays usable; this run counts every vertex
    fails = popsim.lower.cost_model.DEFAULT_VERTEX_CYCLES
    assert cycles_by_type(e) == {"Sum": first["Sum"] + 10 + 7 + 20 + 4, "Fails": fails,
                                 "Scale": 2 * first["Scale"], "WorkerId": 14}
