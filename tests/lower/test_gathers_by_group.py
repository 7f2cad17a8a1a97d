"""A compute set's gathers tile by tile (src/popsim/lower/edge_buffers.py and
compute_sets.py; the core's ComputeEngine::gather): each tile's inputs are copied just
before its own vertices run when no vertex of the set writes what a gather reads, and all
of them first otherwise. Either way every vertex reads the values from before the compute
phase, as the exchange delivers them: the results are checked against numpy."""
import numpy as np
import pytest

import popsim
from popsim import FLOAT, Input, Output, Vector, Vertex
from popsim.contract import COLUMNS
from popsim.errors import PopsimError
from popsim.program import Execute

from graph_helpers import Total, small_device

pytestmark = pytest.mark.compiler
GROUP, CS = COLUMNS["groups"], COLUMNS["compute_sets"]


class AddOne(Vertex):
    x: Input[Vector[float]]
    out: Output[Vector[float]]

    def compute(self):
        for i in range(len(self.x)):
            self.out[i] = self.x[i] + 1.0


def build(writer: bool):
    """y [4, 6] (row k on tile k); on each tile t < 6, a vertex summing column t of y (a
    strided view gathered from four tiles). ``writer``: a vertex on tile 0 also writes
    y[2] (on tile 2), which other tiles' sums read."""
    device = small_device(8)
    g = popsim.Graph(device)
    g.add_codelets([Total, AddOne])
    y = g.add_variable(FLOAT, [4, 6], "y")
    sums = g.add_variable(FLOAT, [6], "sums")
    ones = g.add_variable(FLOAT, [6], "ones")
    y0 = np.arange(24, dtype=np.float32).reshape(4, 6) * 0.5
    g.set_initial_value(y, y0)
    g.set_initial_value(ones, np.full(6, 10, np.float32))
    for k in range(4):
        g.set_tile_mapping(y[k], k)
    g.set_tile_mapping(ones, 0)
    cs = g.add_compute_set("sums")
    for t in range(6):
        g.set_tile_mapping(sums[t], t)
        v = g.add_vertex(cs, Total, {"x": y[:, t], "out": sums[t]})
        g.set_tile_mapping(v, t)
    if writer:
        v = g.add_vertex(cs, AddOne, {"x": ones, "out": y[2]})
        g.set_tile_mapping(v, 0)
    g.create_host_read("sums", sums)
    g.create_host_read("y", y)
    return g, device, Execute(cs), y0


@pytest.mark.parametrize("writer", [False, True])
def test_gathers_run_by_tile_only_when_no_vertex_writes_what_they_read(writer, monkeypatch):
    # The writer's case is a read-after-write race to the race check (which the suite turns
    # on): what is tested is the exchange's answer, a gathered read sees the old value.
    monkeypatch.setenv("POPSIM_CHECK_RACES", "false")
    g, device, prog, y0 = build(writer)
    lw = popsim.compile_graph(g, prog).lowered
    row = lw.vertices.compute_sets[0]
    assert row[CS["exchange_in"]] >= 0
    assert row[CS["gathers_by_group"]] == (0 if writer else 1)
    groups = lw.vertices.groups[row[CS["first_group"]]:row[CS["first_group"]] + row[CS["num_groups"]]]
    first, end = groups[:, GROUP["first_gather"]], groups[:, GROUP["end_gather"]]
    table = row[CS["exchange_in"]]
    rows = lw.table_begin[table + 1] - lw.table_begin[table]
    if writer:
        assert not first.any() and not end.any()
    else:  # the groups' rows cut the table in order, every tile getting its column
        assert first[0] == 0 and (first[1:] == end[:-1]).all() and end[-1] == rows
        assert (end > first).all()
    e = popsim.Engine(g, prog)
    e.load(device)
    for _ in range(2):
        e.run()
        # the sums read y as it was before the compute phase, whoever writes it
        np.testing.assert_allclose(e.read_tensor("sums"), y0.sum(axis=0))
        y0 = y0.copy()
        if writer:
            y0[2] = 11.0
        np.testing.assert_allclose(e.read_tensor("y"), y0)


def test_a_corrupted_gather_cut_is_refused_by_the_core():
    g, device, prog, _ = build(False)
    exe = popsim.compile_graph(g, prog)
    groups = exe.lowered.vertices.groups
    groups[1, GROUP["first_gather"]] += 1   # a gap between group 0's rows and group 1's
    with pytest.raises(PopsimError, match="malformed.*gather rows"):
        e = popsim.Engine(exe)
        e.load(device)


def test_order_free_gathers_are_sorted_by_source_into_few_runs():
    # A vertex reading, position by position, 2 elements of a then 1 of b (a channel slice
    # taken from two regions, as convolutions' inputs are): in view order that is a row per
    # piece; sorted by source, one run per region.
    device = small_device(4)
    g = popsim.Graph(device)
    g.add_codelets([Total])
    n = 50
    a = g.add_variable(FLOAT, [n, 2], "a")
    b = g.add_variable(FLOAT, [n, 1], "b")
    g.set_tile_mapping(a, 1)
    g.set_tile_mapping(b, 2)
    av, bv = np.arange(2 * n, dtype=np.float32).reshape(n, 2), np.arange(n, dtype=np.float32).reshape(n, 1) * 3
    g.set_initial_value(a, av)
    g.set_initial_value(b, bv)
    x = popsim.concat([a, b], 1).flatten()
    sums = g.add_variable(FLOAT, [2], "sums")
    cs = g.add_compute_set("cs")
    for t in (0, 3):
        g.set_tile_mapping(sums[t // 3], t)
        v = g.add_vertex(cs, Total, {"x": x, "out": sums[t // 3]})
        g.set_tile_mapping(v, t)
    g.create_host_read("sums", sums)
    prog = Execute(cs)
    lw = popsim.compile_graph(g, prog).lowered
    row = lw.vertices.compute_sets[0]
    assert row[CS["gathers_by_group"]] == 1
    table = row[CS["exchange_in"]]
    # two regions, two tiles (in view order it was a row per piece: 2 x 100 rows)
    assert lw.table_begin[table + 1] - lw.table_begin[table] == 4
    e = popsim.Engine(g, prog)
    e.load(device)
    e.run()
    np.testing.assert_allclose(e.read_tensor("sums"), [av.sum() + bv.sum()] * 2)
