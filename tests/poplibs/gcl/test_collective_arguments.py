"""GCL's argument checks (poplibs/gcl: collective_types.py, options.py, cross_replica.py):
every bad group, operator, element type, tensor, program and option is refused with a
message that says what is wrong; a refused call appends nothing to the program, and a
valid collective built on the same graph after all the refusals runs and is right. The
within-replica forms get a smoke check only (test_within_replica.py tests them)."""
import json
from types import SimpleNamespace

import numpy as np
import pytest

import popsim
from popsim import BOOL, FLOAT, INT, LONGLONG, SHORT, InvalidOptionError, PopsimError, gcl
from popsim.gcl import CollectiveOperator as Op, CommGroup, CommGroupType
from popsim.gcl.collective_types import group_members
from popsim.program import Sequence

from graph_helpers import small_model

pytestmark = pytest.mark.compiler  # two tests build and run engines (the ring vertices compile to C)

R = 4
AR, IP, TO = (gcl.all_reduce_cross_replica, gcl.all_reduce_in_place_cross_replica,
              gcl.all_reduce_to_destination_cross_replica)
RS, AG, A2A = gcl.reduce_scatter_cross_replica, gcl.all_gather_cross_replica, gcl.all_to_all_cross_replica


@pytest.fixture(autouse=True)
def no_gcl_options(monkeypatch):
    monkeypatch.delenv("GCL_OPTIONS", raising=False)  # the caller's environment must not steer the methods


def _graph(replicas=R):
    """A 2-tile IPU per replica and its tensors, each spread over both tiles."""
    device = small_model(2, num_ipus=replicas).create_device()
    g = popsim.Graph(device, replication_factor=replicas)
    ns = SimpleNamespace(device=device, g=g)
    for name, dtype, shape in (("x", FLOAT, [8]), ("y", FLOAT, [8]), ("xi", INT, [8]), ("xb", BOOL, [8]),
                               ("xs", SHORT, [replicas, 2]), ("xl", LONGLONG, [replicas, 2]), ("m", FLOAT, [2, 4]),
                               ("rows", INT, [replicas, 2])):
        t = g.add_variable(dtype, shape, name)
        g.set_tile_mapping(t, [[(0, t.num_elements() // 2)], [(t.num_elements() // 2, t.num_elements())]])
        setattr(ns, name, t)
    ns.c = g.add_constant(FLOAT, [8], 1.0)
    g.set_tile_mapping(ns.c, 0)
    other = popsim.Graph(small_model(2, num_ipus=replicas).create_device(), replication_factor=replicas)
    ns.foreign = other.add_variable(FLOAT, [8], "foreign")
    return ns


_TYPES = "FLOAT, HALF, INT, UNSIGNED_INT"
_NOT_WRITABLE = "must be writable: it contains a constant or some elements more than once"
_BYTES = r"syncful.maxBroadcastSize to .*; expected a number of bytes \(a non-negative integer\)"
# (id, call(ns, prog), exception, a stable piece of its message)
REFUSALS = [
    ("op-name", lambda n, p: AR(n.g, n.x, "SUM", p), PopsimError,
     r"the operator must be a gcl\.CollectiveOperator \(ADD, MEAN, MUL, MIN, MAX, LOGICAL_AND, LOGICAL_OR, "
     r"SQUARE_ADD, LOCAL\), found 'SUM'"),
    ("op-int", lambda n, p: RS(n.g, n.x, 3, p), PopsimError, "must be a gcl.CollectiveOperator .* found 3"),
    ("mean-int", lambda n, p: AR(n.g, n.xi, Op.MEAN, p), PopsimError,
     r"MEAN does not take INT tensors; it takes FLOAT, HALF \(cast the tensor, or use ADD and divide\)"),
    ("square-add-int", lambda n, p: RS(n.g, n.xi, Op.SQUARE_ADD, p), PopsimError,
     "SQUARE_ADD does not take INT tensors; it takes FLOAT, HALF"),
    ("and-float", lambda n, p: IP(n.g, n.x, Op.LOGICAL_AND, p), PopsimError,
     "LOGICAL_AND does not take FLOAT tensors; it takes BOOL"),
    ("add-bool", lambda n, p: AR(n.g, n.xb, Op.ADD, p), PopsimError,
     f"ADD does not take BOOL tensors; it takes {_TYPES}"),
    ("max-bool", lambda n, p: RS(n.g, n.xb, Op.MAX, p), PopsimError,
     f"MAX does not take BOOL tensors; it takes {_TYPES}"),
    ("gather-short", lambda n, p: AG(n.g, n.xs, p), PopsimError,
     f"SHORT tensors are not supported; GCL moves {_TYPES}, BOOL"),
    ("all-to-all-longlong", lambda n, p: A2A(n.g, n.xl, p), PopsimError, "LONGLONG tensors are not supported"),
    ("not-a-tensor", lambda n, p: AR(n.g, np.zeros(8, np.float32), Op.ADD, p), TypeError,
     "expected a popsim.Tensor as the data, found ndarray"),
    ("other-graph", lambda n, p: AG(n.g, n.foreign, p), PopsimError, "data 'foreign' belongs to another graph"),
    ("prog-none", lambda n, p: AR(n.g, n.x, Op.ADD, None), PopsimError,
     "prog must be a popsim.Sequence to append the op to, found NoneType"),
    ("all-to-all-rows", lambda n, p: A2A(n.g, n.m, p), PopsimError,
     r"one row per replica of the group \(leading dimension 4\), found shape \[2, 4\]"),
    ("in-place-constant", lambda n, p: IP(n.g, n.c, Op.ADD, p), PopsimError, _NOT_WRITABLE),
    ("in-place-broadcast", lambda n, p: IP(n.g, n.x[0:2].broadcast(4, 0), Op.ADD, p), PopsimError, _NOT_WRITABLE),
    ("in-place-concat", lambda n, p: IP(n.g, popsim.concat([n.x, n.x]), Op.ADD, p), PopsimError, _NOT_WRITABLE),
    ("in-place-list", lambda n, p: IP(n.g, [n.x, n.y, n.x], Op.ADD, p), PopsimError, _NOT_WRITABLE),
    ("destination-shape", lambda n, p: TO(n.g, n.x, n.m, Op.ADD, p), PopsimError,
     r"the destination 'm' is FLOAT\[2, 4\], the data FLOAT\[8\]; they must have the same shape and type"),
    ("destination-type", lambda n, p: TO(n.g, n.x, n.xi, Op.ADD, p), PopsimError, r"'xi' is INT\[8\], the data FLOAT"),
    ("destination-overlap", lambda n, p: TO(n.g, n.x[0:4], n.x[2:6], Op.ADD, p), PopsimError,
     "overlaps the data; use all_reduce_in_place_cross_replica"),
    ("destination-constant", lambda n, p: TO(n.g, n.x, n.c, Op.ADD, p), PopsimError, _NOT_WRITABLE),
    ("destination-aliases", lambda n, p: TO(n.g, n.x, n.y[0:4].broadcast(2, 0), Op.ADD, p), PopsimError,
     _NOT_WRITABLE),
    ("list-mixed-types", lambda n, p: AR(n.g, [n.x, n.xi], Op.ADD, p), PopsimError,
     "must share an element type, found FLOAT, INT; make one call per type"),
    ("list-empty", lambda n, p: AR(n.g, [], Op.ADD, p), PopsimError, "the list of tensors is empty"),
    ("list-not-a-tensor", lambda n, p: AR(n.g, [n.x, 3], Op.ADD, p), TypeError, "tensor 1 of the list, found int"),
    ("top-level-view", lambda n, p: AR(n.g.get_top_level_graph(), n.x, Op.ADD, p), PopsimError,
     "called on the top-level view of a graph of 4 replicas; call it on the replicated graph"),
    ("group-not-dividing", lambda n, p: AR(n.g, n.x, Op.ADD, p, group=CommGroup(CommGroupType.CONSECUTIVE, 3)),
     PopsimError, "a CONSECUTIVE group of 3 replicas does not divide the replication factor 4"),
    ("group-all-size", lambda n, p: AG(n.g, n.x, p, group=CommGroup(CommGroupType.ALL, 2)), PopsimError,
     "type ALL spans all 4 replicas; its replica_group_size must be 0 or 4, found 2"),
    ("group-not-a-group", lambda n, p: RS(n.g, n.x, Op.ADD, p, group=2), PopsimError,
     "group must be a gcl.CommGroup, found int"),
    ("option-unknown", lambda n, p: AR(n.g, n.x, Op.ADD, p, options={"methd": "auto"}), InvalidOptionError,
     "unknown GCL option 'methd' in options; popsim's GCL takes 'method' and 'syncful.maxBroadcastSize'"),
    ("option-method", lambda n, p: AG(n.g, n.x, p, options={"method": "ring"}), InvalidOptionError,
     "options sets method to 'ring'; GCL's methods are auto, clockwise_ring, anticlockwise_ring"),
    ("options-not-a-dict", lambda n, p: AR(n.g, n.x, Op.ADD, p, options=[("method", "auto")]), InvalidOptionError,
     "options must be a dict of option name to value, found list"),
    ("broadcast-size-negative", lambda n, p: AR(n.g, n.x, Op.ADD, p, options={"syncful.maxBroadcastSize": -1}),
     InvalidOptionError, _BYTES),
    ("broadcast-size-text", lambda n, p: AR(n.g, n.x, Op.ADD, p, options={"syncful.maxBroadcastSize": "1k"}),
     InvalidOptionError, _BYTES),
    ("scatter-broadcast", lambda n, p: RS(n.g, n.x, Op.ADD, p, options={"method": "broadcast"}), PopsimError,
     "the broadcast method is for all-reduce and all-gather; reduce-scatter runs on rings"),
]


@pytest.mark.parametrize("call, error, message", [c[1:] for c in REFUSALS], ids=[c[0] for c in REFUSALS])
def test_each_refusal_names_the_problem_and_appends_nothing(call, error, message):
    ns, prog = _graph(), Sequence()
    with pytest.raises(error, match=message):
        call(ns, prog)
    assert prog.is_empty()


def test_a_valid_collective_runs_after_every_refusal_on_the_same_graph():
    ns, prog = _graph(), Sequence()
    for name, call, error, message in REFUSALS:
        with pytest.raises(error, match=message):
            call(ns, prog)
        assert prog.is_empty(), name
    y = AR(ns.g, ns.x, "ADD", prog)  # the operator by name
    rs = RS(ns.g, ns.x, Op.MAX, prog, options={"method": "meet_in_middle_ring"})
    ag = AG(ns.g, ns.x, prog)
    a2a = A2A(ns.g, ns.rows, prog)
    for name, t in (("x", ns.x), ("rows", ns.rows)):
        ns.g.create_host_write(name, t)
    for name, t in (("y", y), ("rs", rs), ("ag", ag), ("a2a", a2a)):
        ns.g.create_host_read(name, t)
    engine = popsim.Engine(ns.g, [prog])
    engine.load(ns.device)
    x = np.arange(R * 8, dtype=np.float32).reshape(R, 8) * 0.5
    rows = np.arange(R * R * 2, dtype=np.int32).reshape(R, R, 2)
    for name, values in (("x", x), ("rows", rows)):
        engine.write_tensor(name, values)
    engine.run(0)
    np.testing.assert_array_equal(engine.read_tensor("y"), np.broadcast_to(x.sum(0), (R, 8)))
    np.testing.assert_array_equal(engine.read_tensor("rs"), x.max(0).reshape(R, 2))
    np.testing.assert_array_equal(engine.read_tensor("ag"), np.broadcast_to(x, (R, R, 8)))
    np.testing.assert_array_equal(engine.read_tensor("a2a"), rows.transpose(1, 0, 2))


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(type="ALL"), TypeError, r"type must be a gcl.CommGroupType \(ALL, CONSECUTIVE, ORTHOGONAL\), found 'ALL'"),
    (dict(replica_group_size=-2), ValueError, "replica_group_size must be a non-negative int, found -2"),
    (dict(replica_group_size=2.0), ValueError, "replica_group_size must be a non-negative int, found 2.0"),
    (dict(stride=2), ValueError, "stride 2 is not supported"),
    (dict(stride=-1), ValueError, "stride must be a non-negative int, found -1"),
])
def test_comm_group_fields(kwargs, error, message):
    with pytest.raises(error, match=message):
        CommGroup(**kwargs)


@pytest.mark.parametrize("kind, size, members", [
    ("CONSECUTIVE", 2, [[0, 1], [2, 3], [4, 5], [6, 7]]), ("CONSECUTIVE", 4, [[0, 1, 2, 3], [4, 5, 6, 7]]),
    ("ORTHOGONAL", 2, [[0, 4], [1, 5], [2, 6], [3, 7]]), ("ORTHOGONAL", 4, [[0, 2, 4, 6], [1, 3, 5, 7]]),
    ("ALL", 0, [list(range(8))]), ("ALL", 8, [list(range(8))]), ("CONSECUTIVE", 0, [list(range(8))]),
])
def test_group_members_of_eight_replicas(kind, size, members):
    assert group_members(CommGroup(CommGroupType[kind], size), 8, "f") == members


@pytest.mark.parametrize("kind, size", [("ALL", 4), ("ALL", 16), ("CONSECUTIVE", 3), ("ORTHOGONAL", 3),
                                        ("ORTHOGONAL", 16), ("CONSECUTIVE", 6)])
def test_group_sizes_that_do_not_fit_eight_replicas(kind, size):
    message = (f"must be 0 or 8, found {size}" if kind == "ALL" else
               f"a {kind} group of {size} replicas does not divide the replication factor 8")
    with pytest.raises(PopsimError, match=message):
        group_members(CommGroup(CommGroupType[kind], size), 8, "f")


def test_one_replica_is_allowed():
    """R = 1: every collective is accepted (the identity, as GCL; test_cross_replica.py checks the values)."""
    ns, prog = _graph(replicas=1), Sequence()
    AR(ns.g, ns.x, Op.MEAN, prog)
    IP(ns.g, ns.y, Op.ADD, prog, group=CommGroup(CommGroupType.CONSECUTIVE, 1))
    RS(ns.g, ns.x, Op.ADD, prog)
    AG(ns.g, ns.x, prog)
    assert A2A(ns.g, ns.rows, prog).shape == (1, 2)
    assert not prog.is_empty()


def _step_names(prog):
    out, todo = [], [prog]
    while todo:
        p = todo.pop()
        out.append(p.describe())
        todo.extend(p.children())
    return " ".join(out)


def test_max_broadcast_size_is_read():
    """auto all-reduces 4 x 32 bytes by broadcast under GCL's default threshold, on rings under a threshold of 0."""
    ns, by_default, by_option = _graph(), Sequence(), Sequence()
    AR(ns.g, ns.x, Op.ADD, by_default)
    AR(ns.g, ns.x, Op.ADD, by_option, options={"syncful.maxBroadcastSize": "0"})
    assert "/broadcast" in _step_names(by_default) and "/ring+" not in _step_names(by_default)
    assert "/ring+" in _step_names(by_option) and "/broadcast" not in _step_names(by_option)


def test_gcl_options_from_the_environment_win(monkeypatch):
    ns, prog = _graph(), Sequence()
    monkeypatch.setenv("GCL_OPTIONS", json.dumps({"method": "broadcast"}))
    with pytest.raises(PopsimError, match="the broadcast method is for all-reduce and all-gather"):
        RS(ns.g, ns.x, Op.ADD, prog, options={"method": "clockwise_ring"})
    monkeypatch.setenv("GCL_OPTIONS", json.dumps({"method": "clockwise_ring"}))
    AR(ns.g, ns.x, Op.ADD, prog, options={"method": "broadcast"})
    assert "/ring+" in _step_names(prog) and "/broadcast" not in _step_names(prog)
    monkeypatch.setenv("GCL_OPTIONS", "")  # empty: no options
    AR(ns.g, ns.x, Op.ADD, prog, options={"method": "broadcast"})


@pytest.mark.parametrize("text, message", [
    ('{"method": clockwise_ring}', r"the environment variable GCL_OPTIONS is not valid JSON \(.*\); set it to an "
                                   "object such as"),
    ('["method"]', "GCL_OPTIONS must be a dict of option name to value, found list"),
    ('{"method": "spiral"}', "GCL_OPTIONS sets method to 'spiral'; GCL's methods are"),
    ('{"foo": 1}', "unknown GCL option 'foo' in GCL_OPTIONS"),
    ('{"syncful.maxBroadcastSize": "big"}', "GCL_OPTIONS sets " + _BYTES),
])
def test_bad_gcl_options_in_the_environment(monkeypatch, text, message):
    ns, prog = _graph(), Sequence()
    monkeypatch.setenv("GCL_OPTIONS", text)
    with pytest.raises(InvalidOptionError, match=message):
        AR(ns.g, ns.x, Op.ADD, prog)
    assert prog.is_empty()


@pytest.mark.parametrize("value", [1.5, True])
def test_max_broadcast_size_must_be_a_whole_number(value):
    ns = _graph()
    with pytest.raises(InvalidOptionError, match=_BYTES):
        AR(ns.g, ns.x, Op.ADD, Sequence(), options={"syncful.maxBroadcastSize": value})


@pytest.mark.parametrize("call", [lambda n: AR(n.g, n.x, "SUM", Sequence()),
                                  lambda n: AR(n.g, [n.x, n.y], Op.LOGICAL_AND, Sequence())], ids=["one", "list"])
def test_a_refused_operator_adds_no_variable(call):
    ns = _graph()
    before = len(ns.g.description.table)
    with pytest.raises(PopsimError):
        call(ns)
    assert len(ns.g.description.table) == before


_UNMAPPED = {"all_reduce_cross_replica": lambda n, t, p: AR(n.g, t, Op.ADD, p),
             "reduce_scatter_cross_replica": lambda n, t, p: RS(n.g, t.flatten(), Op.ADD, p),
             "all_gather_cross_replica": lambda n, t, p: AG(n.g, t, p),
             "all_to_all_cross_replica": lambda n, t, p: A2A(n.g, t, p)}


@pytest.mark.parametrize("fn", _UNMAPPED)
def test_unmapped_data_is_refused_up_front(fn):
    ns, prog = _graph(), Sequence()
    u = ns.g.add_variable(FLOAT, [R, 2], "u")
    with pytest.raises(PopsimError) as info:
        _UNMAPPED[fn](ns, u, prog)
    assert f"gcl.{fn}" in str(info.value) and "'u'" in str(info.value)
    assert prog.is_empty()


@pytest.mark.parametrize("fn", _UNMAPPED)
def test_a_collective_refused_for_unmapped_data_leaves_the_graph_usable(fn):
    ns = _graph()
    u = ns.g.add_variable(FLOAT, [R, 2], "u")
    with pytest.raises(PopsimError):
        _UNMAPPED[fn](ns, u, Sequence())
    ns.g.set_tile_mapping(u, 0)  # fixed: the same collective now builds and runs
    prog = Sequence()
    _UNMAPPED[fn](ns, u, prog)
    engine = popsim.Engine(ns.g, [prog])
    engine.load(ns.device)
    engine.run(0)


def test_within_replica_smoke(monkeypatch):
    device = small_model(2, num_ipus=2).create_device()
    g = popsim.Graph(device)
    w, wi = g.add_variable(FLOAT, [2, 3], "w"), g.add_variable(INT, [2, 3], "wi")
    for t in (w, wi):
        g.set_tile_mapping(t, [[(0, 3)], [], [(3, 6)], []])  # shard i on IPU i
    assert gcl.all_reduce_within_replica(g, w, "MAX", Sequence()).shape == (2, 3)
    with pytest.raises(InvalidOptionError, match="method must be auto or clockwise_ring .* found 'broadcast'"):
        gcl.all_reduce_within_replica(g, w, Op.ADD, Sequence(), options={"method": "broadcast"})
    with pytest.raises(PopsimError, match="MEAN does not take INT tensors"):
        gcl.reduce_scatter_within_replica(g, wi, Op.MEAN, Sequence())
    monkeypatch.setenv("GCL_OPTIONS", '{"method": "meet_in_middle_ring"}')
    with pytest.raises(InvalidOptionError, match="found 'meet_in_middle_ring'"):
        gcl.all_reduce_within_replica(g, w, Op.ADD, Sequence())
