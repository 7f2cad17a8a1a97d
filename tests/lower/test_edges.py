"""Edges read by column from the vertex store (src/popsim/lower/edges.py).

Edge records are grouped by geometry and turned into runs without a view per edge;
Tensors kept by the caller and views not of one variable go through Python per edge.
Each path is checked against the views' own element runs (Tensor._runs, the
reference), and the paths against each other: a graph connected through records,
through kept Tensors or through id views lowers to the same tables.
"""
import numpy as np
import pytest

import popsim
from popsim import FLOAT, INT
from popsim.codelet.fields import Direction, FieldKind, FieldSpec
from popsim.codelet.vertex_type import VertexType
from popsim.lower import lower_graph
from popsim.lower.edges import read_edges
from popsim.lower.vertex_rows import FieldRows, TypeColumns
from popsim.program import Execute
from popsim.runs import runs_of
from popsim.tensor import Tensor
from popsim.vertex_store import SLOT_RECORD, SLOT_TENSOR

V, S, L, EV = FieldKind.VECTOR_EDGE, FieldKind.SCALAR_EDGE, FieldKind.VECTOR_LIST, FieldKind.EDGE_VECTOR
I, O = Direction.INPUT, Direction.OUTPUT


def vertex_types():
    def vt(name, fields, multi=False):
        return VertexType(name, tuple(fields), multi, None, name.lower(), 16, name + ".c", counts_cycles=True,
                          language="c")
    return {"Read": vt("Read", [FieldSpec("a", V, I, FLOAT), FieldSpec("out", S, O, FLOAT)]),
            "Lists": vt("Lists", [FieldSpec("rows", L, I, FLOAT), FieldSpec("xs", EV, I, FLOAT, element_kind=S),
                                  FieldSpec("out", V, O, FLOAT)])}


def graph(tiles=8):
    model = popsim.IPUModel("ipu2")
    model.tiles_per_ipu = tiles
    g = popsim.Graph(model.create_device())
    g._state.codelets.types.update(vertex_types())
    return g


VIEWS = {  # name -> view of m (a [6, 5] float variable)
    "row": lambda m: m[2],
    "row slice": lambda m: m[1].slice(1, 4),
    "whole": lambda m: m.flatten(),
    "block rows": lambda m: m.slice(1, 3, 0).flatten(),
    "column": lambda m: m.transpose()[3],
    "transposed": lambda m: m.transpose().flatten(),
    "every other": lambda m: m.flatten()[::2],
    "reversed row": lambda m: m[4][::-1],
    "inner block": lambda m: m.slice(1, 4, 0).slice(2, 4, 1).flatten(),
    "empty": lambda m: m.flatten().slice(3, 3),
    "empty with steps": lambda m: m.flatten()[::2].slice(4, 4),
    "empty column": lambda m: m.transpose()[1].slice(2, 2),
    "one element": lambda m: m.flatten().slice(7, 8),
    "concat": lambda m: popsim.concat([m[0].slice(0, 2), m[5].slice(3, 5)]),
    "id view": lambda m: Tensor._indexed(m._table, m._dtype, m.transpose()[1]._id_array()),
}


def build(hold: bool, views=VIEWS, tile_of=lambda k: k % 3):
    """One Read vertex per view (twice, to share), on tiles 0-2; m on tiles 0 and 1."""
    g = graph()
    m = g.add_variable(FLOAT, [6, 5], "m")
    g.set_tile_mapping(m.slice(0, 3, 0), 0)
    g.set_tile_mapping(m.slice(3, 6, 0), 1)
    out = g.add_variable(FLOAT, [2 * len(views)], "out")
    g.set_tile_mapping(out, 2)
    cs = g.add_compute_set("cs")
    kept = []
    for k, view in enumerate(list(views.values()) * 2):
        if hold:  # views the caller keeps are stored as Tensors
            kept += [view(m), out[k]]
            v = g.add_vertex(cs, "Read", {"a": kept[-2], "out": kept[-1]})
        else:  # views only the dict holds, as edge records
            v = g.add_vertex(cs, "Read", {"a": view(m), "out": out[k]})
        g.set_tile_mapping(v, tile_of(k))
    return g, cs


def edges_of(cs):
    types = TypeColumns(cs._types)
    order = np.argsort(np.array(cs._tiles), kind="stable")
    rows = FieldRows(cs, types, order)
    tiles = np.array(cs._tiles, np.int64)
    edges, start, count = read_edges(cs, rows.slot, rows.kind, rows.vertex, rows.position, tiles[rows.vertex],
                                     types.itemsize[rows.spec], types.reads[rows.spec], types.writes[rows.spec])
    return edges, rows, start, count


@pytest.mark.parametrize("hold", [False, True], ids=["records", "kept views"])
def test_edges_match_the_runs_of_their_views(hold):
    g, cs = build(hold)
    kinds = {int(k) for k in FieldRows(cs, TypeColumns(cs._types), np.arange(len(cs._types))).kind}
    assert (SLOT_TENSOR if hold else SLOT_RECORD) in kinds
    edges, rows, start, count = edges_of(cs)
    assert edges.count == 2 * len(cs._types)
    runs = {}
    for e in range(edges.count):
        v, name = edges.owner(e)
        assert name == ("a", "out")[e % 2] and v.index == int(edges.vertex[e])
        t = v.connection(int(edges.position[e]))
        want = runs_of(t)
        assert edges.n[e] == t.num_elements()
        mine = edges.run_edge == e
        if edges.gid[e] >= 0:  # one run of one variable
            assert t._var is not None and t.is_contiguous() and not mine.any()
            assert want.size <= 1 and (want.size == 0 or want.gid[0] == edges.gid[e])
        else:
            assert np.array_equal(edges.run_pos[mine], want.pos)
            assert np.array_equal(edges.run_gid[mine], want.gid)
            assert np.array_equal(edges.run_len[mine], want.length)
            runs[e] = (want.gid.tobytes(), want.length.tobytes())
    # Equal view keys exactly when the runs are equal.
    for e in runs:
        for f in runs:
            same_key = (edges.view_pattern[e], edges.view_first[e]) == (edges.view_pattern[f], edges.view_first[f])
            assert same_key == (runs[e] == runs[f])


def tables(lw):
    vt = lw.vertices
    return [vt.vertices, vt.fields, vt.spans, vt.groups, vt.compute_sets, vt.row_index, lw.copy_runs, lw.table_begin,
            lw.layout.by_category["exchange_buffers"], lw.programs.step_costs, np.array(vt.cs_shared_bytes)]


def test_records_and_kept_views_lower_to_the_same_tables():
    lowered = []
    for hold in (False, True):
        g, cs = build(hold)
        lowered.append(tables(lower_graph(g._state, [Execute(cs)], check_races=True)))
    for a, b in zip(*lowered):
        assert np.array_equal(a, b)


def test_a_record_and_an_id_view_of_the_same_elements_share_a_buffer():
    views = {"column": VIEWS["column"],
             "id column": lambda m: Tensor._indexed(m._table, m._dtype, m.transpose()[3]._id_array())}
    g, cs = build(False, views, tile_of=lambda k: 2)
    lw = lower_graph(g._state, [Execute(cs)])
    fields = lw.vertices.fields
    a_rows = fields[0::2]  # the 'a' field of each of the four vertices
    assert len(set(a_rows[:, 1].tolist())) == 1  # one buffer for all four readers
    assert lw.vertices.cs_shared_bytes == [3 * 6 * 4]


def test_a_view_of_no_one_variable_shape_that_is_one_run_is_an_edge_of_one_run():
    # A block of a blocked layout (dim_shuffle + reshape: no strided form) whose elements are
    # consecutive after all, as poplin's matmul operands are: one run, read in place from
    # another tile, no gather copy (they were exchanged piece by piece, 138 MB a 1024^3 run).
    g = graph()
    var = g.add_variable(FLOAT, [2, 3, 4, 5], "blocks")
    g.set_tile_mapping(var, 1)
    blocked = var.dim_shuffle([0, 2, 1, 3]).reshape([8, 15])  # row (a, c), column (b, d)
    block = blocked.slice([0, 5], [4, 10]).flatten()  # var[0, 1]: 20 consecutive elements
    assert block._var is None and block.is_contiguous()
    out = g.add_variable(FLOAT, [1], "out")
    g.set_tile_mapping(out, 2)
    cs = g.add_compute_set("cs")
    v = g.add_vertex(cs, "Read", {"a": block, "out": out[0]})
    g.set_tile_mapping(v, 2)
    edges, *_ = edges_of(cs)
    assert edges.gid[0] == int(runs_of(block).gid[0]) and edges.n[0] == 20 and not (edges.run_edge == 0).any()
    lw = lower_graph(g._state, [Execute(cs)])
    assert lw.copy_runs.shape[0] == 0  # nothing to gather: the source is read in place


def test_list_fields_give_one_edge_per_sub_edge_in_order():
    g = graph()
    x = g.add_variable(FLOAT, [12], "x")
    g.set_tile_mapping(x, 0)
    out = g.add_variable(FLOAT, [4], "out")
    g.set_tile_mapping(out, 0)
    cs = g.add_compute_set("cs")
    v = g.add_vertex(cs, "Lists", {"out": out.slice(0, 2)})
    g.connect(v["rows"], [x.slice(0, 3), x[::4], x.slice(5, 5)])
    g.set_field_size(v["xs"], 2)
    g.connect(v["xs"][1], x[7])
    g.connect(v["xs"][0], x[11])
    g.set_tile_mapping(v, 0)
    edges, rows, start, count = edges_of(cs)
    assert count.tolist() == [3, 2, 1] and start.tolist() == [0, 3, 5]
    assert edges.n.tolist() == [3, 3, 0, 1, 1, 2]
    assert edges.gid.tolist()[:2] == [0, -1] and edges.gid.tolist()[3:] == [11, 7, 12]
    assert edges.position.tolist() == [0, 0, 0, 1, 1, 2]
    lw = lower_graph(g._state, [Execute(cs)])
    fields, spans = lw.vertices.fields, lw.vertices.spans
    assert fields[:, 0].tolist() == [1, 1, 0] and fields[:2, 1:].tolist() == [[0, 3], [3, 2]]
    assert spans[:, 1].tolist() == [3, 3, 0, 1, 1]
    arena = lw.layout.var_offsets
    assert spans[0, 0] == arena[0] and spans[3, 0] == arena[0] + 11 * 4 and spans[4, 0] == arena[0] + 7 * 4


def test_edges_of_many_vertices_are_numbered_in_lowering_order():
    g = graph()
    x = g.add_variable(INT, [40], "x")
    g.set_tile_mapping(x, 0)
    cs = g.add_compute_set("cs")
    ints = VertexType("Ints", (FieldSpec("a", V, I, INT), FieldSpec("b", S, O, INT)), False, None, "ints", 16, "",
                      counts_cycles=True, language="c")
    g._state.codelets.types["Ints"] = ints
    tiles = [3, 1, 3, 0, 1, 0, 2, 3]
    for k, tile in enumerate(tiles):
        v = g.add_vertex(cs, "Ints", {"a": x.slice(k, k + 2), "b": x[20 + k]})
        g.set_tile_mapping(v, tile)
    edges, *_ = edges_of(cs)
    order = sorted(range(len(tiles)), key=lambda k: (tiles[k], k))
    assert edges.vertex.tolist() == [k for k in order for _ in range(2)]
    assert edges.gid.tolist() == [g for k in order for g in (k, 20 + k)]
    assert edges.tile.tolist() == [tiles[k] for k in order for _ in range(2)]


def random_view(rng, m):
    """A random view of ``m`` (a [4, 6, 5] float variable): slices with steps (negative
    too), transposes, reshapes, elements, concatenations."""
    t = m
    for _ in range(int(rng.integers(1, 4))):
        k = int(rng.integers(6))
        rank = len(t.shape)
        if k == 0 and rank == 2:
            t = t.transpose()
        elif k == 1 and rank > 0 and t.shape[0] > 0:
            t = t[int(rng.integers(t.shape[0]))]
        elif k == 2 and rank > 0:
            n = t.shape[0]
            a, b = sorted(rng.integers(0, n + 1, 2).tolist())
            step = int(rng.choice([1, 2, 3, -1, -2]))
            t = t[a:b:step] if step > 0 else t[b:a:step] if b > a else t[a:b]
        elif k == 3:
            t = t.flatten()
        elif k == 4 and rank > 1:
            t = t.dim_shuffle([int(d) for d in rng.permutation(rank)])
        elif k == 5:
            t = popsim.concat([t.flatten(), m[1][2]])
    return t.flatten() if len(t.shape) != 1 else t


@pytest.mark.parametrize("seed", range(12))
def test_random_views_match_their_runs_and_share_exactly_when_equal(seed):
    rng = np.random.default_rng(seed)
    views = {f"v{k}": (lambda m, s=int(rng.integers(1 << 30)): random_view(np.random.default_rng(s), m))
             for k in range(12)}
    g = graph()
    m = g.add_variable(FLOAT, [4, 6, 5], "m")
    for k in range(4):
        g.set_tile_mapping(m[k], int(rng.integers(8)))
    out = g.add_variable(FLOAT, [2 * len(views)], "out")
    g.set_tile_mapping(out, 2)
    cs = g.add_compute_set("cs")
    for k, view in enumerate(list(views.values()) * 2):
        v = g.add_vertex(cs, "Read", {"a": view(m), "out": out[k]})
        g.set_tile_mapping(v, int(rng.integers(3)))
    keys = _checked_run_keys(cs)
    assert all(len(runs) == 1 for runs in keys.values())  # one key, one sequence of runs
    assert len({next(iter(r)) for r in keys.values()}) == len(keys)  # and one sequence, one key


def test_vertices_reading_one_window_of_an_id_array_get_its_runs_each():
    """Windows of one id view read by several vertices (a convolution's input window, read
    per out-channel part) are worked out once and given to each edge: the same runs as the
    view's own, the same buffer key for the same elements."""
    g = graph()
    m = g.add_variable(FLOAT, [6, 5], "m")
    g.set_tile_mapping(m.slice(0, 3, 0), 0)
    g.set_tile_mapping(m.slice(3, 6, 0), 1)
    flat = m.transpose().flatten()                           # ids listed: 30 one-element runs
    grid = popsim.concat([m.slice(0, 2, 0), m.slice(4, 6, 0)]).transpose()   # a 2-D id view, [5, 4]
    windows = [lambda: flat.slice(3, 17), lambda: flat.slice(0, 1), lambda: flat.slice(5, 5),
               lambda: grid.slice([1, 0], [4, 3]), lambda: grid.slice([1, 0], [4, 3]).flatten(),
               lambda: grid[2]]
    out = g.add_variable(FLOAT, [3 * len(windows)], "out")
    g.set_tile_mapping(out, 2)
    cs = g.add_compute_set("cs")
    for k, window in enumerate(windows * 3):
        v = g.add_vertex(cs, "Read", {"a": window().flatten() if k % 2 else window().reshape([-1]),
                                      "out": out[k]})
        g.set_tile_mapping(v, k % 3)
    keys = _checked_run_keys(cs)
    assert len(keys) >= 3 and all(len(runs) == 1 for runs in keys.values())


def _checked_run_keys(cs):
    """Check every edge of ``cs`` against its view's own runs (one run: its first id; else
    its runs, positions and lengths); {(view_pattern, view_first): {runs}} of the others."""
    edges, *_ = edges_of(cs)
    keys = {}
    for e in range(edges.count):
        v, _ = edges.owner(e)
        t = v.connection(int(edges.position[e]))
        want = runs_of(t)
        assert edges.n[e] == t.num_elements()
        if edges.gid[e] >= 0:
            assert want.size <= 1 and (want.size == 0 or want.gid[0] == edges.gid[e])  # one run, any view
            continue
        mine = edges.run_edge == e
        assert np.array_equal(edges.run_gid[mine], want.gid) and np.array_equal(edges.run_len[mine], want.length)
        assert np.array_equal(edges.run_pos[mine], want.pos)
        keys.setdefault((int(edges.view_pattern[e]), int(edges.view_first[e])), set()).add(
            (want.gid.tobytes(), want.length.tobytes()))
    return keys
