"""How compute sets store vertices (vertex_store.py), and the lean paths of add_vertex and
connect.

add_vertex and connect check the common connection (a scalar or vector edge to a strided
view of its element type) on a lean path and store it as a plain record when nobody else
holds the view. These tests check that the lean paths (add_vertex's in C and in Python,
connect's) accept and refuse exactly what the general path does, with the same messages,
that what is stored reads back as the same view, and that VertexRef handles behave like the
vertices they stand for. tests/test_vertex_build.py compares the C and Python paths of
add_vertex on random calls.
"""
import gc

import numpy as np
import pytest

import popsim
from popsim import FLOAT, INT, InOut, Input, Output, Vector, VectorList
from popsim.errors import GraphConnectionError, UnknownFieldError
from popsim.tensor import Tensor


class Fields(popsim.Vertex):
    """One field of each kind the lean path handles, and some it hands to connect()."""

    s_in: Input[float]
    v_in: Input[Vector[float]]
    s_out: Output[float]
    v_io: InOut[Vector[float]]
    i_in: Input[Vector[int]]
    lists: Input[VectorList[float]]
    n: int

    def compute(self):
        return True


def new_graph():
    model = popsim.IPUModel("ipu2")
    model.tiles_per_ipu = 4
    device = model.create_device()
    g = popsim.Graph(device)
    g.add_codelets(Fields)
    return g, device


def build(g):
    """The same variables and constant in every graph, so views (and messages) match."""
    x = g.add_variable(FLOAT, [3, 4], "x")
    k = g.add_constant(FLOAT, [4], 1.5, "k")
    ints = g.add_variable(INT, [4], "ints")
    return {"x": x, "k": k, "ints": ints}


# (description, view of the named tensors): strided and indexed views, right and wrong shapes
VIEWS = [
    ("x[1]", lambda t: t["x"][1]),
    ("x[1, 2]", lambda t: t["x"][1, 2]),
    ("x[1][2:3]", lambda t: t["x"][1][2:3]),
    ("x[1:2, 2:3]", lambda t: t["x"][1:2, 2:3]),
    ("x[:, 1]", lambda t: t["x"][:, 1]),
    ("x.flatten()[5:]", lambda t: t["x"].flatten()[5:]),
    ("x[0].reshape([1])", lambda t: t["x"][0, 0].reshape([1])),
    ("x", lambda t: t["x"]),
    ("x.reinterpret(INT)[0]", lambda t: t["x"].reinterpret(INT)[0]),
    ("concat(x[0], x[2])", lambda t: popsim.concat([t["x"][0], t["x"][2]])),
    ("concat(x[0, :1], x[2, :1])[1:]", lambda t: popsim.concat([t["x"][0, :1], t["x"][2, :1]])[1:]),
    ("k", lambda t: t["k"]),
    ("k[2]", lambda t: t["k"][2]),
    ("ints[1:3]", lambda t: t["ints"][1:3]),
    ("a number", lambda t: 3.0),
    ("a list", lambda t: [t["x"][0]]),
]
FIELDS = ["s_in", "v_in", "s_out", "v_io", "i_in", "lists", "n", "nope"]


def outcome(fn):
    try:
        v = fn()
    except Exception as e:  # noqa: BLE001 - the error is what is compared
        return ("error", type(e), str(e))
    return ("ok", v)


def view_key(t):
    """What identifies a view, comparable across two graphs built alike."""
    assert type(t) is Tensor
    if t._ids is None:
        return (t._dtype, t._shape, "strided", t._var.index, t._var.name, t._offset, t._strides)
    return (t._dtype, t._shape, "indexed", t._ids.tolist())


def same_view(a, b):
    assert view_key(a) == view_key(b)


@pytest.mark.parametrize("field", FIELDS)
@pytest.mark.parametrize("desc,make", VIEWS, ids=[d for d, _ in VIEWS])
def test_add_vertex_and_connect_accept_and_refuse_what_the_general_path_does(field, desc, make):
    g1, _ = new_graph()
    t1 = build(g1)
    cs1 = g1.add_compute_set("cs")
    g1.add_vertex(cs1, "Fields")  # makes the type's build plan: the next call may run in C
    lean = outcome(lambda: g1.add_vertex(cs1, "Fields", {field: make(t1)}))
    g3, _ = new_graph()
    t3 = build(g3)
    cs3 = g3.add_compute_set("cs")
    g3.add_vertex(cs3, "Fields")
    in_python = outcome(lambda: g3._add_vertex_in_python(cs3, "Fields", {field: make(t3)}))

    def by_connect(method):
        g, _ = new_graph()
        t = build(g)
        cs = g.add_compute_set("cs")
        g.add_vertex(cs, "Fields")  # as above: the vertex connected is #1
        v = g.add_vertex(cs, "Fields")
        return outcome(lambda: (getattr(g, method)(v[field], make(t)), v)[1])

    connected = by_connect("connect")
    general = by_connect("_connect_general")
    for other in (lean, in_python, connected):
        assert other[0] == general[0], (other, general)
        if general[0] == "error":
            assert other[1:] == general[1:]
            assert issubclass(other[1], (GraphConnectionError, UnknownFieldError))
            continue
        v, v2 = other[1], general[1]
        pos = v[field].position
        c1, c2 = v.connection(pos), v2.connection(pos)
        if isinstance(c2, Tensor):
            same_view(c1, c2)
            same_view(c1, make(t1))
        elif isinstance(c2, list):
            assert len(c1) == len(c2)
            for a, b in zip(c1, c2):
                same_view(a, b)
        else:
            np.testing.assert_array_equal(c1, c2)


def test_a_view_only_the_dict_holds_is_stored_as_a_record_and_reads_back_the_same():
    g, _ = new_graph()
    x = g.add_variable(FLOAT, [5, 4], "x")
    cs = g.add_compute_set("cs")
    held = x[3]
    v = g.add_vertex(cs, "Fields", {"v_in": x[1][1:3], "v_io": held, "s_in": x[2, 1]})
    slots = cs._slots[cs._first[v.index]:]
    assert type(slots[1]) is tuple and type(slots[0]) is tuple  # only the dict held them: records
    assert slots[3] is held                                      # the caller keeps it: stored as is
    same_view(v.connection(1), x[1][1:3])
    same_view(v.connection(0), x[2, 1])
    same_view(v.connection(3), held)
    conn = v.conn
    assert len(conn) == len(Fields.__annotations__) and conn[2] is None
    same_view(conn[1], x[1][1:3])


def test_building_leaves_no_view_objects_behind():
    g, _ = new_graph()
    x = g.add_variable(FLOAT, [200, 4], "x")
    cs = g.add_compute_set("cs")
    gc.collect()
    before = sum(1 for o in gc.get_objects() if type(o) is Tensor)
    for i in range(200):
        v = g.add_vertex(cs, "Fields", {"v_in": x[i], "s_in": x[i, 0], "s_out": x[i][1:2]})
        g.set_tile_mapping(v, i % 4)
    del v
    gc.collect()
    assert sum(1 for o in gc.get_objects() if type(o) is Tensor) == before
    assert g.num_edges == 600 and g.num_vertices == 200


def test_vertex_handles_equal_hash_and_read_the_store():
    g, _ = new_graph()
    x = g.add_variable(FLOAT, [4], "x")
    cs = g.add_compute_set("cs")
    a = g.add_vertex(cs, "Fields")
    b = g.add_vertex(cs, Fields, {"v_in": x})
    assert cs.vertices[0] == a and cs.vertices[-1] == b and a != b and a != "a"
    assert {a, cs.vertices[0]} == {a} and len({a, b}) == 2
    assert len(cs.vertices) == 2 and list(cs.vertices) == [a, b] and cs.vertices == [a, b]
    assert cs.vertices[::-1] == [b, a] and b in cs.vertices
    with pytest.raises(IndexError, match="vertex index 2 is out of range for compute set 'cs' of 2 vertices"):
        cs.vertices[2]
    g.set_tile_mapping(b, 3)
    g.set_perf_estimate(b, 12)
    assert (b.tile, b.perf_estimate, cs.vertices[1].tile, a.tile, a.perf_estimate) == (3, 12, 3, None, None)
    assert b.type.name == "Fields" and b.compute_set is cs and b.index == 1
    assert "vertex 'Fields' (#1 of compute set 'cs', tile 3)" in repr(b)
    empty = g.add_compute_set("empty")
    assert empty.vertices == [] and len(empty.vertices) == 0 and repr(empty) == "ComputeSet('empty', 0 vertices)"


def test_list_and_state_fields_are_stored_and_counted():
    g, _ = new_graph()
    x = g.add_variable(FLOAT, [3, 4], "x")
    cs = g.add_compute_set("cs")
    v = g.add_vertex(cs, "Fields", {"lists": [x[0], x[1][:2]], "n": 7})
    g.set_field_size(v["lists"], 3)
    assert g.get_field_size(v["lists"]) == 3
    g.connect(v["lists"][2], x[2])
    g.connect(v["lists"][0], x[0][1:])
    stored = v.connection(v["lists"].position)
    assert stored[1] is None and stored[0].shape == (3,) and stored[2].shape == (4,)
    assert v.connection(v["n"].position).tolist() == [7]
    assert g.num_edges == 3  # a list field counts one edge per sub-edge
    w = g.add_vertex(cs, "Fields", {"v_in": x[0], "lists": []})
    g.connect(w["s_in"], x[1, 1])
    assert (g.num_edges, g.num_vertices) == (5, 2)


def test_a_stored_record_runs_like_the_tensor_it_came_from():
    g, device = new_graph()
    x = g.add_variable(FLOAT, [4, 4], "x")
    y = g.add_variable(FLOAT, [4], "y")
    g.set_tile_mapping(x, 0)
    g.set_tile_mapping(y, 1)
    cs = g.add_compute_set("cs")
    for i in range(4):
        # the lean path (records) and connect() (a kept view) side by side
        v = g.add_vertex(cs, Sum, {"ins": x[i][1:], "out": y[i]} if i % 2 else {})
        if not i % 2:
            ins = x[i][1:]
            g.connect(v["ins"], ins)
            g.connect(v["out"], y[i])
        g.set_tile_mapping(v, i % 4)
    data = np.arange(16, dtype=np.float32).reshape(4, 4)
    g.set_initial_value(x, data)
    g.create_host_read("y", y)
    engine = popsim.Engine(g, popsim.Execute(cs))
    engine.load(device)
    engine.run()
    np.testing.assert_array_equal(engine.read_tensor("y"), data[:, 1:].sum(axis=1))


class Sum(popsim.Vertex):
    ins: Input[Vector[float]]
    out: Output[float]

    def compute(self):
        total = 0.0
        for i in range(len(self.ins)):
            total += self.ins[i]
        self.out = total
        return True


def test_records_and_kept_views_give_the_same_executable_cache_key():
    from popsim.digest import graph_digest

    def graph(keep_views):
        g, _ = new_graph()
        x = g.add_variable(FLOAT, [6, 4], "x")
        g.set_tile_mapping(x, 0)
        cs = g.add_compute_set("cs")
        kept = []
        for i in range(6):
            if keep_views:
                kept.append((x[i], x[i, 1], x[(i + 1) % 6][1:3]))
                conns = {"v_in": kept[-1][0], "s_out": kept[-1][1], "v_io": kept[-1][2]}
            else:
                conns = {"v_in": x[i], "s_out": x[i, 1], "v_io": x[(i + 1) % 6][1:3]}
            v = g.add_vertex(cs, "Fields", conns)
            g.set_tile_mapping(v, i % 4)
        slots = cs._slots
        assert all(type(s) is (Tensor if keep_views else tuple) for s in slots if s is not None)
        return graph_digest(g._state, [popsim.Execute(cs)])

    assert graph(True) == graph(False)


class Sums(popsim.Vertex):
    ins: Input[VectorList[float]]
    out: Output[Vector[float]]

    def compute(self):
        for i in range(len(self.ins)):
            total = 0.0
            for j in range(len(self.ins[i])):
                total += self.ins[i][j]
            self.out[i] = total
        return True


def test_a_list_of_strided_views_is_packed_and_reads_back_and_runs_the_same():
    from popsim.digest import graph_digest
    from popsim.vertex_store import EdgeList
    from popsim.vertices import VertexInfo

    def graph(packed):
        g, device = new_graph()
        g.add_codelets(Sums)
        x = g.add_variable(FLOAT, [4, 4], "x")
        y = g.add_variable(FLOAT, [3], "y")
        g.set_tile_mapping(x, 0)
        g.set_tile_mapping(y, 0)
        cs = g.add_compute_set("cs")
        ins = [x[0], x[1][1:3], x[3][::-2]]
        v = g.add_vertex(cs, Sums, {"ins": list(ins), "out": y})
        g.set_tile_mapping(v, 0)
        slot = cs._first[v.index] + v["ins"].position
        assert type(cs._slots[slot]) is EdgeList.TYPE and EdgeList.count(cs._slots[slot]) == 3
        if not packed:   # as the store kept them before: the Tensors themselves
            cs._slots[slot] = ins
        return g, device, v, x, cs, ins

    g, device, v, x, cs, ins = graph(True)
    for got, want in zip(v.conn[v["ins"].position], ins):
        same_view(got, want)
    assert VertexInfo(v).field_sizes("ins") == [4, 2, 2] and VertexInfo(v).field_size("ins") == 3
    assert g.num_edges == 4
    listed = graph(False)
    assert graph_digest(g._state, [popsim.Execute(cs)]) == graph_digest(listed[0]._state, [popsim.Execute(listed[4])])
    data = np.arange(16, dtype=np.float32).reshape(4, 4)
    g.set_initial_value(x, data)
    g.create_host_read("y", v.conn[v["out"].position])
    engine = popsim.Engine(g, popsim.Execute(cs))
    engine.load(device)
    engine.run()
    np.testing.assert_array_equal(engine.read_tensor("y"), [data[0].sum(), data[1, 1:3].sum(), data[3, ::-2].sum()])
    # connecting one sub-edge afterwards unpacks the list, and the rest stay connected
    g.connect(v["ins"][1], x[2])
    same_view(v.connection(v["ins"].position)[1], x[2])
    same_view(v.connection(v["ins"].position)[2], x[3][::-2])


def test_equal_small_state_values_are_one_read_only_array():
    g, _ = new_graph()
    x = g.add_variable(FLOAT, [4], "x")
    cs = g.add_compute_set("cs")
    vs = [g.add_vertex(cs, "Fields", {"v_in": x, "n": 7}) for _ in range(3)]
    w = g.add_vertex(cs, "Fields", {"v_in": x})
    mine = np.array([7], np.int32)
    g.set_initial_value(w["n"], mine)
    stored = [u.connection(u["n"].position) for u in vs + [w]]
    assert all(s is stored[0] for s in stored) and stored[0].tolist() == [7]
    assert not stored[0].flags.writeable and mine.flags.writeable   # the caller's array is not taken
    g.set_initial_value(w["n"], 8)
    assert w.connection(w["n"].position).tolist() == [8] and stored[0].tolist() == [7]


def _list_records(lists):
    """The sub-edges of list slots (lists and EdgeLists) one after another, EdgeLists decoded
    to edge records, as lowering reads them."""
    from popsim.vertex_store import EdgeList
    return [r for c in lists for r in (EdgeList.records(c) if type(c) is EdgeList.TYPE else c)]


def test_edge_lists_of_every_rank_decode_in_slot_order():
    from popsim.vertex_store import edge_record
    from popsim.vertices import packed
    g, _ = new_graph()
    x = g.add_variable(FLOAT, [6, 4], "x")
    slots = [packed([x[0][1:3], x[1][::2]]), [x[2], x[3, 1]], packed([x[4].reshape([2, 2])]), packed([x[5, 0]]),
             packed([x[5][::-1]])]
    assert [type(s) for s in slots] == [bytes, list, bytes, bytes, bytes]
    want = [x[0][1:3], x[1][::2], x[2], x[3, 1], x[4].reshape([2, 2]), x[5, 0], x[5][::-1]]
    got = _list_records(slots)
    assert got[2] is slots[1][0] and got[3] is slots[1][1]   # a plain list's sub-edges as they are
    assert [r if type(r) is tuple else edge_record(r) for r in got] == [edge_record(t) for t in want]


def test_edge_list_columns_are_the_record_columns_of_their_records():
    """Lowering reads many EdgeLists as columns at once (EdgeList.columns): the columns of
    their records, one list after another, whatever the lists' ranks (0 too)."""
    from array import array

    from popsim.vertex_store import EdgeList, record_columns
    rng = np.random.default_rng(5)
    packed = []
    for _ in range(30):
        rank = int(rng.integers(0, 4))
        subs = int(rng.integers(1, 5))
        data = []
        for _ in range(subs):
            data += [int(rng.integers(0, 50)), int(rng.integers(0, 1000))]
            data += rng.integers(1, 9, rank).tolist() + rng.integers(-6, 60, rank).tolist()
        packed.append(EdgeList.pack(rank, array("q", data)))
    got, counts = EdgeList.columns(packed)
    want = record_columns(_list_records(packed))
    assert counts.tolist() == [EdgeList.count(p) for p in packed]
    assert all(np.array_equal(a, b) for a, b in zip(got, want))
    assert [len(c) for c in EdgeList.columns([])] == [5, 0]
