"""Where edges point and what their exchange checks find (src/popsim/lower/edge_buffers.py),
the same whether views are stored as edge records or as the Tensors a caller kept:
buffers, sharing, and every conflict message naming the vertices, fields and tensor."""
import numpy as np
import pytest

import popsim
from popsim import FLOAT
from popsim.codelet.fields import Direction, FieldKind, FieldSpec
from popsim.codelet.vertex_type import VertexType
from popsim.lower import lower_graph
from popsim.program import Execute

V, S = FieldKind.VECTOR_EDGE, FieldKind.SCALAR_EDGE
I, O = Direction.INPUT, Direction.OUTPUT

COPY = VertexType("Copy", (FieldSpec("a", V, I, FLOAT), FieldSpec("b", V, I, FLOAT), FieldSpec("o", V, O, FLOAT)),
                  False, None, "copy", 16, "copy.c", counts_cycles=True, language="c")


def lower(vertices, hold, check_races=True):
    """``vertices``: (tile, {field: view of y (64 floats, tiles 0-3)}) each; lowered with
    the views as records (``hold`` False) or as kept Tensors."""
    model = popsim.IPUModel("ipu2")
    model.tiles_per_ipu = 8
    g = popsim.Graph(model.create_device())
    g._state.codelets.types["Copy"] = COPY
    y = g.add_variable(FLOAT, [64], "y")
    for k in range(4):
        g.set_tile_mapping(y.slice(16 * k, 16 * k + 16), k)
    cs = g.add_compute_set("cs")
    kept = []
    for tile, fields in vertices:
        if hold:
            kept.append({name: view(y) for name, view in fields.items()})
            v = g.add_vertex(cs, "Copy", kept[-1])
        else:
            v = g.add_vertex(cs, "Copy", {name: view(y) for name, view in fields.items()})
        g.set_tile_mapping(v, tile)
    return lower_graph(g._state, [Execute(cs)], check_races=check_races)


def fields(a, b, o):
    return {"a": a, "b": b, "o": o}


CASES = {
    "two writers": ([(5, fields(lambda y: y.slice(0, 4), lambda y: y.slice(4, 8), lambda y: y.slice(40, 44))),
                     (2, fields(lambda y: y.slice(0, 4), lambda y: y.slice(4, 8), lambda y: y.slice(42, 46)))],
                    r"field 'o' of vertex 'Copy' \(#1 of compute set 'cs', tile 2\) and field 'o' of vertex 'Copy' "
                    r"\(#0 of compute set 'cs', tile 5\) both write elements \[42:44\) of variable 'y'"),
    "scattered writers": ([(1, fields(lambda y: y.slice(0, 4), lambda y: y.slice(4, 8), lambda y: y[33::8])),
                           (6, fields(lambda y: y.slice(0, 4), lambda y: y.slice(4, 8), lambda y: y.slice(57, 60)))],
                          r"field 'o' of vertex 'Copy' \(#0 of compute set 'cs', tile 1\) and field 'o' of vertex "
                          r"'Copy' \(#1 of compute set 'cs', tile 6\) both write elements \[57:58\) of variable 'y'"),
    "read after write": ([(3, fields(lambda y: y.slice(0, 4), lambda y: y.slice(4, 8), lambda y: y.slice(20, 24))),
                          (0, fields(lambda y: y[::11], lambda y: y.slice(8, 9), lambda y: y.slice(30, 31)))],
                         r"field 'a' of vertex 'Copy' \(#1 of compute set 'cs', tile 0\) reads elements \[22:23\) of "
                         r"variable 'y', which field 'o' of vertex 'Copy' \(#0 of compute set 'cs', tile 3\) writes"),
    "own write": ([(7, fields(lambda y: y.slice(0, 4), lambda y: y.slice(48, 52), lambda y: y.slice(50, 54)))],
                  r"field 'b' of vertex 'Copy' \(#0 of compute set 'cs', tile 7\) reads elements \[50:52\) of "
                  r"variable 'y', which its field 'o' writes"),
}


@pytest.mark.parametrize("hold", [False, True], ids=["records", "kept views"])
@pytest.mark.parametrize("case", list(CASES))
def test_conflicts_name_the_same_vertices_and_elements_either_way(case, hold):
    vertices, message = CASES[case]
    with pytest.raises(popsim.GraphCycleError, match=message):
        lower(vertices, hold)


def test_identical_scattered_reads_on_a_tile_share_one_buffer_and_writers_do_not():
    column = lambda y: y[3::16]  # noqa: E731 (one element on each of tiles 0-3)
    vertices = [(5, fields(column, column, lambda y, k=k: y.slice(8 * k, 8 * k + 2))) for k in range(3)]
    vertices.append((6, fields(column, lambda y: y.slice(60, 61), lambda y: y.slice(40, 42))))
    for hold in (False, True):
        lw = lower(vertices, hold)
        f = lw.vertices.fields
        on_5 = [f[3 * r:3 * r + 2, 1] for r in range(3)]  # 'a' and 'b' of the three vertices on tile 5
        assert len({int(x) for pair in on_5 for x in pair}) == 1
        assert f[9, 1] not in {int(x) for pair in on_5 for x in pair}  # tile 6 has its own
        assert lw.vertices.cs_shared_bytes == [5 * 16]  # five reads of 4 floats share tile 5's one buffer
        outs = f[2::3, 1]
        assert len(set(outs.tolist())) == 4 and np.all(f[2::3, 2] == 2)


def _everything(lw):
    vt = lw.vertices
    return [vt.vertices, vt.fields, vt.spans, vt.groups, vt.compute_sets, lw.copy_runs, lw.table_begin,
            lw.programs.step_costs, vt.exchange_costs, np.array(vt.cs_buffer_bytes), np.array(vt.cs_shared_bytes)] + \
        [lw.layout.by_category[k] for k in sorted(lw.layout.by_category)]


SCATTERED = [  # scattered reads (of y[:40]) and writes (of y[40:]) on and off their tiles, some shared
    (5, fields(lambda y: y[3:40:8], lambda y: y[3:40:8], lambda y: y[41:49:2])),
    (5, fields(lambda y: y.slice(0, 40)[::-1], lambda y: y[3:40:8], lambda y: y[42:50:2])),
    (1, fields(lambda y: y[16:32], lambda y: y.slice(0, 8), lambda y: y.slice(60, 64))),
    (6, fields(lambda y: y[0:40:5], lambda y: y[0:40:7], lambda y: y[50:60:3])),
    (2, fields(lambda y: y[1:40:4], lambda y: y[32:40], lambda y: y[51:60:3])),
    (7, fields(lambda y: y[1:8:2], lambda y: y[8:16:2], lambda y: y.slice(40, 41))),   # a's last copy, b's first: one
]


@pytest.mark.parametrize("batch", [1, 2, 3])
def test_lowering_views_a_few_runs_at_a_time_gives_the_same_tables_and_conflicts(monkeypatch, batch):
    # EdgePlacer._view_pieces and liveness.edge_access work through a compute set's runs a
    # batch at a time (a bound on their temporaries): the tables, costs, buffers and memory,
    # and the conflicts found, must be those of one pass over all of them.
    from popsim.lower import edge_buffers, liveness
    whole = {hold: _everything(lower(SCATTERED, hold)) for hold in (False, True)}
    monkeypatch.setattr(edge_buffers, "VIEW_RUNS_AT_ONCE", batch)
    monkeypatch.setattr(liveness, "RUNS_AT_ONCE", batch)
    for hold in (False, True):
        for a, b in zip(whole[hold], _everything(lower(SCATTERED, hold))):
            assert np.array_equal(a, b)
    vertices, message = CASES["scattered writers"]
    with pytest.raises(popsim.GraphCycleError, match=message):
        lower(vertices, False)
