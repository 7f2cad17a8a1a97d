"""A compute set's vertices and fields in lowering order, read by column
(src/popsim/lower/vertex_rows.py), and the errors found there, as lower_graph reports them."""
import numpy as np
import pytest

import popsim
from popsim import FLOAT
from popsim.codelet.fields import Direction, FieldKind, FieldSpec
from popsim.codelet.vertex_type import VertexType
from popsim.lower import lower_graph
from popsim.lower.vertex_rows import FieldRows, TypeColumns
from popsim.program import Execute
from popsim.vertex_store import SLOT_LIST, SLOT_NONE, SLOT_RECORD, SLOT_TENSOR, SLOT_VALUES

V, S, EV, ST = FieldKind.VECTOR_EDGE, FieldKind.SCALAR_EDGE, FieldKind.EDGE_VECTOR, FieldKind.STATE
I, O, N = Direction.INPUT, Direction.OUTPUT, Direction.NONE


def vt(name, fields, multi=False, state=16):
    return VertexType(name, tuple(fields), multi, None, name.lower(), state, name + ".c", counts_cycles=True,
                      language="c")


TYPES = {
    "Pair": vt("Pair", [FieldSpec("a", V, I, FLOAT), FieldSpec("out", S, O, FLOAT)]),
    "Scaled": vt("Scaled", [FieldSpec("xs", EV, I, FLOAT, element_kind=S), FieldSpec("k", ST, N, FLOAT),
                            FieldSpec("out", S, O, FLOAT)], multi=True, state=40),
    "Nothing": vt("Nothing", [], state=0),
}


@pytest.fixture
def g():
    model = popsim.IPUModel("ipu2")
    model.tiles_per_ipu = 8
    graph = popsim.Graph(model.create_device())
    graph._state.codelets.types.update(TYPES)
    return graph


def test_types_rows_and_slot_kinds(g):
    x = g.add_variable(FLOAT, [16], "x")
    g.set_tile_mapping(x, 0)
    cs = g.add_compute_set("cs")
    kept = x[9]
    made = [("Scaled", 4), ("Pair", 2), ("Nothing", 2), ("Pair", 0), ("Scaled", 2)]
    for k, (name, tile) in enumerate(made):
        if name == "Pair":
            v = g.add_vertex(cs, name, {"a": x.slice(k, k + 2), "out": kept if k == 1 else x[10 + k]})
        else:
            v = g.add_vertex(cs, name)
        g.set_tile_mapping(v, tile)
    g.connect(cs.vertices[0]["xs"], [x[0], x[1]])
    g.set_initial_value(cs.vertices[0]["k"], 2.0)

    types = TypeColumns(cs._types)
    assert sorted(t.name for t in types.types) == ["Nothing", "Pair", "Scaled"]
    assert [types.types[t].name for t in types.of] == [n for n, _ in made]
    assert [len(t.fields) for t in types.types] == types.num_fields.tolist()
    assert [f.name for f in types.specs] == [f.name for t in types.types for f in t.fields]
    assert types.multi.tolist() == [t.multi for t in types.types]

    order = np.argsort([t for _, t in made], kind="stable")
    assert order.tolist() == [3, 1, 2, 4, 0]  # by tile, then creation order
    rows = FieldRows(cs, types, order)
    assert rows.vertex.tolist() == [3, 3, 1, 1, 4, 4, 4, 0, 0, 0]
    assert rows.position.tolist() == [0, 1, 0, 1, 0, 1, 2, 0, 1, 2]
    assert rows.kind.tolist() == [SLOT_RECORD, SLOT_RECORD, SLOT_RECORD, SLOT_TENSOR, SLOT_NONE, SLOT_NONE,
                                  SLOT_NONE, SLOT_LIST, SLOT_VALUES, SLOT_NONE]
    assert [types.specs[s].name for s in rows.spec] == ["a", "out", "a", "out", "xs", "k", "out", "xs", "k", "out"]
    assert [cs._slots[s] is not None for s in rows.slot] == [k != SLOT_NONE for k in rows.kind]
    assert rows.first_unconnected(cs._slots) == 4
    assert [rows.rank_of_row(r) for r in range(rows.count)] == [0, 0, 1, 1, 3, 3, 3, 4, 4, 4]


def test_a_missing_sub_edge_before_a_missing_field_is_reported_first(g):
    x = g.add_variable(FLOAT, [4], "x")
    g.set_tile_mapping(x, 0)
    cs = g.add_compute_set("cs")
    late = g.add_vertex(cs, "Pair", {"a": x})  # 'out' missing, but on a later tile
    g.set_tile_mapping(late, 3)
    early = g.add_vertex(cs, "Scaled", {"out": x[0]})
    g.set_field_size(early["xs"], 3)
    g.connect(early["xs"][1], x[1])
    g.set_initial_value(early["k"], 1.0)
    g.set_tile_mapping(early, 1)
    with pytest.raises(popsim.GraphConnectionError, match=r"field 'xs' \(Vector<Input<FLOAT>>\) of vertex 'Scaled' "
                                                          r"\(#1 of compute set 'cs', tile 1\) is not connected "
                                                          r"\(sub-edges \[0, 2\]\)"):
        lower_graph(g._state, [Execute(cs)])
    for k in (0, 2):
        g.connect(early["xs"][k], x[2 + k // 2])
    with pytest.raises(popsim.GraphConnectionError, match=r"field 'out' \(Output<FLOAT>\) of vertex 'Pair' "
                                                          r"\(#0 of compute set 'cs', tile 3\) is not connected"):
        lower_graph(g._state, [Execute(cs)])


def test_estimators_run_in_lowering_order_and_not_past_an_error(g):
    x = g.add_variable(FLOAT, [8], "x")
    g.set_tile_mapping(x, 0)
    cs = g.add_compute_set("cs")
    seen = []
    g.register_perf_estimator("Pair", lambda info, target: seen.append(info.tile) or 10 + info.tile)
    for k, tile in enumerate([5, 2, 7, 1]):
        v = g.add_vertex(cs, "Pair", {"a": x.slice(k, k + 1), "out": x[4 + k]})
        g.set_tile_mapping(v, tile)
    g.set_perf_estimate(cs.vertices[2], 3)
    lw = lower_graph(g._state, [Execute(cs)])
    assert seen == [1, 2, 5]
    assert lw.vertices.vertices[:, 6].tolist() == [11, 12, 15, 3]
    bad = g.add_compute_set("bad")
    seen.clear()
    for k, tile in enumerate([6, 0, 4]):
        v = g.add_vertex(bad, "Pair", {"a": x.slice(k, k + 1)} if k == 2 else {"a": x.slice(k, k + 1), "out": x[k]})
        g.set_tile_mapping(v, tile)
    with pytest.raises(popsim.GraphConnectionError, match=r"vertex 'Pair' \(#2 of compute set 'bad', tile 4\)"):
        lower_graph(g._state, [Execute(bad)])
    assert seen == [0]  # the vertices before the unconnected one, as a vertex-by-vertex lowering would


def test_graph_counts_take_lowered_compute_sets_from_their_lowering(g):
    x = g.add_variable(FLOAT, [8], "x")
    g.set_tile_mapping(x, 0)
    run = g.add_compute_set("run")
    for k in range(3):
        v = g.add_vertex(run, "Scaled", {"xs": [x[k], x[k + 1]], "out": x[4 + k]})
        g.set_initial_value(v["k"], 1.0)
        g.set_tile_mapping(v, k)
    idle = g.add_compute_set("idle")  # not run: its unconnected fields are no error, and are not counted
    v = g.add_vertex(idle, "Scaled", {"out": x[7]})
    g.set_field_size(v["xs"], 4)
    g.connect(v["xs"][2], x[0])
    g.add_vertex(idle, "Pair")
    lw = lower_graph(g._state, [Execute(run)])
    assert lw.graph_counts == {"num_vertices": 5, "num_edges": 9 + 5, "num_variables": 1, "num_compute_sets": 2}
    assert (g.num_vertices, g.num_edges) == (5, 14)
