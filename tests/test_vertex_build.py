"""add_vertex's common call in C (popsim._vertex_build, native/accel/vertex_build.cpp)
against the Python path it stands for (VertexBuilding._add_vertex_in_python).

Random sequences of add_vertex calls (field kinds x view kinds x views the caller keeps or
not x key orders x unusual inputs) run on two graphs built alike, one through add_vertex
(in C whenever the C path takes the call), one through the Python path only. Each call must
end the same way in both (the same error and message, or success), and the compute sets
must hold the same columns and slots: the same records, and the caller's own view objects
where it keeps them. And the C path must take every call the Python path completes on its
lean branch alone (without connect()), so the common call never pays for Python.
"""
import numpy as np
import pytest
from hypothesis import event, given, note, settings
from hypothesis import strategies as st

import popsim
from popsim import FLOAT, INT, InOut, Input, Output, Vector, VectorList
from popsim import _vertex_build
from popsim.tensor import Tensor
from popsim.vertex_store import EdgeList
from popsim.vertices import VertexBuilding


class Fields(popsim.Vertex):
    """One field of each kind: scalar and vector edges in every direction, another element
    type, a list field and a state field."""

    s_in: Input[float]
    v_in: Input[Vector[float]]
    s_out: Output[float]
    v_io: InOut[Vector[float]]
    i_in: Input[Vector[int]]
    s_io: InOut[int]
    lists: Input[VectorList[float]]
    n: int

    def compute(self):
        return True


class Pair(popsim.Vertex):
    """A second type, so one compute set holds vertices of different slot counts."""

    x: Input[float]
    y: Output[Vector[int]]

    def compute(self):
        return True


KEYS = ["s_in", "v_in", "s_out", "v_io", "i_in", "s_io", "lists", "n", "x", "y", "nope", 7]


def odd_shape(t):
    """A strided view of one element whose shape holds a numpy integer instead of an int."""
    x = t["x"]
    return Tensor._strided(x._table, x._var, FLOAT, (np.int64(1),), 5, (1,))


# Fresh views of the tensors build() makes, by name: every view kind, right and wrong types,
# shapes and graphs, constants, and things that are not tensors at all.
VIEWS = {
    "x[1]": lambda t: t["x"][1],
    "x[1, 2]": lambda t: t["x"][1, 2],
    "x[1][2:3]": lambda t: t["x"][1][2:3],
    "x[1:2, 2:3]": lambda t: t["x"][1:2, 2:3],
    "x[:, 1]": lambda t: t["x"][:, 1],
    "x[2][::-1]": lambda t: t["x"][2][::-1],
    "x[0][2:2]": lambda t: t["x"][0][2:2],
    "x": lambda t: t["x"],
    "x.reinterpret(INT)[0]": lambda t: t["x"].reinterpret(INT)[0],
    "concat(x[0], x[2])": lambda t: popsim.concat([t["x"][0], t["x"][2]]),
    "odd shape": odd_shape,
    "k": lambda t: t["k"],
    "k[2]": lambda t: t["k"][2],
    "ints[1:3]": lambda t: t["ints"][1:3],
    "ints[0]": lambda t: t["ints"][0],
    "another graph's x[1]": lambda t: t["elsewhere"][1],
    "a number": lambda t: 3,
    "a list": lambda t: [t["x"][0], t["x"][1][:2]],
    "None": lambda t: None,
}

# values the Python lean branches take but C hands to Python: nothing else (a list: its sub-edges,
# each a strided view the list field takes as it is, are checked by the lean branch for lists;
# a number: a plain int state value, stored by the lean branch for state values)
UNUSUAL = {"odd shape", "a list", "a number"}

# Views each edge field takes (the common call), to draw calls that succeed often.
FITTING = {"s_in": ["x[1, 2]", "x[1][2:3]", "odd shape"], "s_out": ["x[1, 2]", "x[1][2:3]"],
           "v_in": ["x[1]", "x[:, 1]", "x[2][::-1]", "x[0][2:2]", "x", "x[1][2:3]"], "v_io": ["x[1]", "x[:, 1]", "x"],
           "i_in": ["ints[1:3]", "x.reinterpret(INT)[0]"], "s_io": ["ints[0]"], "x": ["x[1, 2]"], "y": ["ints[1:3]"]}
fitting = st.sampled_from(sorted(FITTING)).flatmap(lambda key: st.tuples(st.just(key), st.sampled_from(FITTING[key])))
connection = st.tuples(st.one_of(fitting, st.tuples(st.sampled_from(KEYS), st.sampled_from(sorted(VIEWS)))),
                       st.booleans()).map(lambda c: (*c[0], c[1]))  # key, view, kept by the caller
call = st.fixed_dictionaries({
    "type": st.sampled_from(["Fields", "Fields", "Pair", "Nope", Fields]),
    "connections": st.one_of(st.none(), st.just("a list of pairs"),
                             st.lists(connection, max_size=7, unique_by=lambda c: c[0])),
    "foreign compute set": st.sampled_from([False] * 9 + [True]),
})


def new_graph():
    model = popsim.IPUModel("ipu2")
    model.tiles_per_ipu = 4
    g = popsim.Graph(model.create_device())
    g.add_codelets([Fields, Pair])
    return g


def build(g):
    """The same tensors in every graph, so that views and messages match."""
    elsewhere = new_graph().add_variable(FLOAT, [3, 4], "x")
    return {"x": g.add_variable(FLOAT, [3, 4], "x"), "k": g.add_constant(FLOAT, [4], 1.5, "k"),
            "ints": g.add_variable(INT, [4], "ints"), "elsewhere": elsewhere}


def keep(view, kept: bool, held: list):
    if kept:
        held.append(view)
    return view


def connections_of(spec, t, held: list):
    """The connections dict of a call: a view the caller does not keep is held by the dict
    alone (no local variable refers to it), as in ``add_vertex(cs, T, {"a": x[i]})``."""
    if spec is None or spec == "a list of pairs":
        return None if spec is None else [("v_in", t["x"][0])]
    return {key: keep(VIEWS[name](t), kept, held) for key, name, kept in spec}


def view_key(t):
    if t._ids is None:
        return ("strided", t._dtype, t._shape, t._var.index, t._offset, t._strides)
    return ("indexed", t._dtype, t._shape, t._ids.tolist())


def slot_key(slot, held):
    """What a slot holds, comparable across two graphs built alike; a view the caller kept is
    named by its place in ``held`` (it must be stored as is, not copied)."""
    if slot is None or type(slot) is tuple:
        return slot
    if type(slot) is Tensor:
        return ("view", view_key(slot), next((i for i, h in enumerate(held) if h is slot), None))
    if type(slot) is list:
        return ("list", [None if s is None else view_key(s) for s in slot])
    if type(slot) is EdgeList.TYPE:
        return ("packed", EdgeList.rank(slot), EdgeList.ints(slot).tolist())
    return ("values", slot.dtype.str, slot.tolist())


def columns(cs, held):
    return ([vt.name for vt in cs._types], list(cs._tiles), list(cs._perf), list(cs._first),
            [slot_key(s, held) for s in cs._slots])


def run(calls, python_only: bool):
    """Each call's outcome, the compute set's columns and, per call, whether the Python path
    ran (and whether it called connect())."""
    g = new_graph()
    t = build(g)
    cs = g.add_compute_set("cs")
    foreign = new_graph().add_compute_set("cs")
    trace = []  # per call: [python path ran, connect() calls, the type's build plan was made]

    def python_path(*args):
        trace[-1][0] = True
        return VertexBuilding._add_vertex_in_python(g, *args)

    def connect(*args):
        trace[-1][1] += 1
        return VertexBuilding.connect(g, *args)

    g._add_vertex_in_python = python_path
    g.connect = connect
    add = g._add_vertex_in_python if python_only else g.add_vertex
    outcomes, held = [], []
    for c in calls:
        known = g._state.codelets.types.get(c["type"]) if isinstance(c["type"], str) else None
        trace.append([False, 0, known is not None and "build_plan" in known.extra])
        conns = connections_of(c["connections"], t, held)
        try:
            v = add(foreign if c["foreign compute set"] else cs, c["type"], conns)
            outcomes.append(("ok", v.index, v.compute_set is cs))
        except Exception as e:  # noqa: BLE001 - the error is what is compared
            outcomes.append(("error", type(e), str(e)))
        del conns
    return outcomes, columns(cs, held), trace


@settings(max_examples=150, deadline=None)
@given(st.lists(call, min_size=1, max_size=6))
def test_the_c_path_and_the_python_path_agree(calls):
    note(repr(calls))
    by_c, columns_c, trace_c = run(calls, python_only=False)
    by_python, columns_python, trace_python = run(calls, python_only=True)
    assert by_c == by_python
    assert columns_c == columns_python
    for c, outcome, (_, connects, _), (fell_back, _, planned) in zip(calls, by_python, trace_python, trace_c):
        event("error" if outcome[0] == "error" else "added in Python" if fell_back else "added in C")
        usual = not isinstance(c["connections"], list) or all(name not in UNUSUAL for _, name, _ in c["connections"])
        if outcome[0] == "ok" and connects == 0 and planned and outcome[2] and usual:
            # the Python path needed its lean branch only: C must have taken the call
            assert not fell_back, c


def test_the_common_call_never_runs_python():
    g = new_graph()
    x = g.add_variable(FLOAT, [8, 4], "x")
    ints = g.add_variable(INT, [8, 2], "ints")
    cs = g.add_compute_set("cs")
    g.add_vertex(cs, "Fields")  # the first vertex of a type makes its build plan, in Python
    g._add_vertex_in_python = None  # any call that reaches Python now fails
    kept = x[7]
    for i in range(8):
        v = g.add_vertex(cs, "Fields", {"v_in": x[i], "s_out": x[i, 0], "i_in": ints[i], "s_io": ints[i, 1:2],
                                        "v_io": kept})
        g.set_tile_mapping(v, i % 4)
    v = g.add_vertex(cs, "Fields", None)
    assert v.index == 9 and v.compute_set is cs and v.tile is None
    assert g.num_vertices == 10 and g.num_edges == 40
    slots = cs._slots[cs._first[8]:cs._first[9]]
    assert slots[1] == (x._var.index, 28, (4,), (1,)) and slots[2] == (x._var.index, 28, (), ())
    assert slots[3] is kept and slots[0] is None and slots[5] == (ints._var.index, 15, (1,), (1,))


def test_a_call_the_c_path_does_not_take_changes_nothing():
    g = new_graph()
    x = g.add_variable(FLOAT, [4], "x")
    k = g.add_constant(FLOAT, [4], 1.0, "k")
    cs = g.add_compute_set("cs")
    g.add_vertex(cs, "Fields")
    before = columns(cs, [])
    state = g._state
    for args in [(cs, "Fields", {"v_in": x, "s_out": k[0]}),         # a constant it would write
                 (cs, "Fields", {"v_in": x, "lists": [x]}),           # a list field: connect()'s
                 (cs, "Fields", {"v_in": x, "nope": x}),              # no such field
                 (cs, "Fields", {"v_in": x, 1: x}),                   # not a str key
                 (cs, "Nope", {}), (cs, Fields, {}),                  # unknown, or not a name
                 (cs, "Fields", [("v_in", x)]),                       # not a dict
                 (new_graph().add_compute_set("cs"), "Fields", {}),  # another graph's compute set
                 (cs, "Fields", {f"f{i}": x for i in range(40)})]:    # more than it takes
        assert _vertex_build.lean_add_vertex(state, *args) is None
        assert columns(cs, []) == before
    with pytest.raises(TypeError, match="lean_add_vertex"):
        _vertex_build.lean_add_vertex(state, cs)


def test_configure_refuses_classes_without_the_slots_it_reads():
    class NoSlots:
        pass

    from popsim.variables import Variable
    from popsim.vertex_store import ComputeSet, VertexRef
    with pytest.raises(TypeError, match=r"NoSlots\._var is not a __slots__ attribute"):
        _vertex_build.configure(NoSlots, Variable, ComputeSet, VertexRef)
    g = new_graph()  # the failed call left the module as it was
    x = g.add_variable(FLOAT, [4], "x")
    cs = g.add_compute_set("cs")
    g.add_vertex(cs, "Pair")
    assert _vertex_build.lean_add_vertex(g._state, cs, "Pair", {"x": x[0]}) is not None


def test_the_c_path_holds_exactly_the_references_its_columns_hold():
    import gc
    # Vertex types are shared by graphs of the same codelets: other tests' graphs, freed by
    # a collection in the middle of the count, would take their references with them.
    gc.collect()
    gc.disable()
    try:
        _count_references_of_the_c_path()
    finally:
        gc.enable()


def _count_references_of_the_c_path():
    import sys
    g = new_graph()
    x = g.add_variable(FLOAT, [4, 4], "x")
    cs = g.add_compute_set("cs")
    g.add_vertex(cs, "Fields")
    vt, kept = g.vertex_type("Fields"), x[1]
    counts = lambda: (sys.getrefcount(kept), sys.getrefcount(vt), sys.getrefcount(cs))  # noqa: E731
    before = counts()
    for _ in range(100):
        v = g.add_vertex(cs, "Fields", {"v_in": kept, "s_in": x[2, 1], "v_io": x[3]})
    assert counts() == (before[0] + 100, before[1] + 100, before[2] + 1)  # one per slot, per vertex; the handle
    del v
    assert counts()[2] == before[2]
    del cs._types[1:], cs._tiles[1:], cs._perf[1:], cs._first[1:], cs._slots[len(vt.fields):]
    assert counts() == before


class Lists(popsim.Vertex):
    """List fields of each kind the lean branch for lists checks: read and written, vectors and scalars."""

    ins: Input[VectorList[float]]
    outs: Output[VectorList[float]]
    scalars: Vector[Input[float]]

    def compute(self):
        return True


def test_lists_added_whole_are_stored_and_refused_as_connect_stores_and_refuses_them():
    g = new_graph()
    g.add_codelets([Lists])
    x, k = g.add_variable(FLOAT, [3, 4], "x"), g.add_constant(FLOAT, [4], 1.5, "k")
    ints = g.add_variable(INT, [4], "ints")
    cs = g.add_compute_set("cs")
    fine = {"ins": [x[0], x[1:3, ::2], k], "outs": [x[2][::-1]], "scalars": [x[0, 1], x[1][2:3]]}
    v = g.add_vertex(cs, "Lists", fine)
    w = g.add_vertex(cs, "Lists")
    for name, value in fine.items():
        g.connect(w[name], value)
    assert [slot_key(s, []) for s in cs._slots[:3]] == [slot_key(s, []) for s in cs._slots[3:]]
    assert all(type(s) in (list, EdgeList.TYPE) and s is not fine[name] for s, name in zip(cs._slots[:3], fine))
    assert v.index == 0
    for bad in ({"outs": [x[0], k[1:]]}, {"ins": [x[0], ints]}, {"scalars": [x[0]]}, {"ins": [x[0], x[0, 1]]},
                {"ins": [x[0], popsim.concat([x[0], x[2]])]}, {"ins": [new_graph().add_variable(FLOAT, [2], "y")]},
                {"ins": [x[0], 3]}):
        errors = []
        for how in ("whole", "by connect"):
            u = g.add_vertex(cs, "Lists") if how == "by connect" else None
            try:
                if u is None:
                    g.add_vertex(cs, "Lists", bad)
                else:
                    g.connect(u[next(iter(bad))], next(iter(bad.values())))
                errors.append(None)
            except Exception as e:  # noqa: BLE001 - the error is what is compared
                errors.append((type(e), str(e).replace(f"#{len(cs.vertices) - 1}", "#N").replace(
                    f"#{len(cs.vertices) - 2}", "#N")))
        assert errors[0] == errors[1], bad


class States(popsim.Vertex):
    """State vectors: the values PopLibs' vertices hold per vertex (worklists, piece sizes)."""

    offs: Vector[int]
    lens: Vector[int]

    def compute(self):
        return True


def test_state_vectors_added_whole_are_stored_as_set_initial_value_stores_them():
    g = new_graph()
    g.add_codelets([States])
    cs = g.add_compute_set("cs")
    ints = np.arange(120, dtype=np.int32)   # 480 bytes: more than the shared small values (stored as given)
    # typed 1-D arrays (add_vertex's lean branch), a strided one, and values it leaves to set_initial_value
    for offs, lens in ((ints[:3], ints[3:4]), (ints[::4], ints[:0]), (np.arange(3), [1, 2]),
                       (ints.reshape(10, 12), np.float64(2.0)), (ints, ints[5:])):
        v = g.add_vertex(cs, "States", {"offs": offs, "lens": lens})
        w = g.add_vertex(cs, "States")
        g.set_initial_value(w["offs"], offs)
        g.set_initial_value(w["lens"], lens)
        assert [slot_key(s, []) for s in cs._slots[-4:-2]] == [slot_key(s, []) for s in cs._slots[-2:]]
        assert all(s.dtype == np.int32 and s.flags.c_contiguous for s in cs._slots[-4:])
        assert v.index + 1 == w.index
    before = cs._slots[-4].tolist()
    ints[:] = -1   # the caller's array changes: the vertex keeps the values it was given
    assert cs._slots[-4].tolist() == before
    with pytest.raises(popsim.GraphConnectionError, match="offs"):
        g.add_vertex(cs, "States", {"offs": np.array([1.5], np.float32)})
