"""Replicated graphs (Graph(device, replication_factor=R)): one replica's graph run R
times, each replica with its own memory. Every result is checked against numpy or a
hand-computed value, on the engine and on the reference executor (the living
specification, popsim.reference) alike; tests/reference/test_reference_replication.py
holds what only the reference executor defines."""
import os

import numpy as np
import pytest

import popsim
from popsim import popops
from popsim import FLOAT, INT, UNSIGNED_INT, InOut, Input, ReplicatedStreamMode, Vector, Vertex
from popsim.errors import (ApplicationRuntimeError, ControlProgramError, InvalidTileMappingError, PopsimError,
                           StreamConnectionError, TensorCreationError, TensorIOError)
from popsim.program import (AbortOnCondition, Copy, CrossReplicaCopy, Execute, If, PrintTensor, Repeat,
                            RepeatWhileTrue, Sequence, Switch)

from graph_helpers import mapped, mapped_const, replicated, runner, runners, small_model

pytestmark = pytest.mark.compiler

TUT3_CODELETS = os.path.join(os.path.dirname(__file__), "..", "tutorials", "codelets", "tut3_codelets.cpp")


RUNNERS = ["engine", "reference"]


# -- the graph -----------------------------------------------------------------------------------
def test_a_replicated_graphs_target_is_one_replica():
    device = small_model(4, num_ipus=4).create_device()
    for r, ipus in ((1, 4), (2, 2), (4, 1)):
        g = popsim.Graph(device, replication_factor=r)
        assert (g.target.num_ipus, g.target.num_tiles, g.target.tiles_per_ipu) == (ipus, 4 * ipus, 4)
        assert g.replication_factor == g.description.replication_factor == r
        assert g.description.device_ipus == 4
    assert popsim.Graph(device).replication_factor == 1
    assert popsim.Graph(device).target == device.target


@pytest.mark.parametrize("r", [3, 8])
def test_the_replication_factor_must_divide_the_ipus(r):
    device = small_model(4, num_ipus=4).create_device()
    with pytest.raises(PopsimError, match=rf"replication_factor {r} does not divide the target's 4 IPU"):
        popsim.Graph(device, replication_factor=r)


@pytest.mark.parametrize("r", [0, -2, True, 1.5])
def test_the_replication_factor_must_be_a_positive_integer(r):
    with pytest.raises(PopsimError, match="positive integer"):
        popsim.Graph(small_model(4, num_ipus=4).create_device(), replication_factor=r)


def test_tiles_are_a_replicas_tiles():
    _, g = replicated(2, ipus_per_replica=2)  # 4 IPUs x 4 tiles: a replica has tiles 0..7
    t = g.add_variable(FLOAT, (2,), "t")
    g.set_tile_mapping(t, 7)
    with pytest.raises(InvalidTileMappingError, match=r"tile 8 is out of range: the replica has 8 tiles \(0..7\)"):
        g.set_tile_mapping(t, 8)
    assert g.create_virtual_graph(4, 8).target.num_tiles == 4  # the second IPU of each replica


def test_the_top_level_graph_views_the_whole_device():
    device, g = replicated(2, ipus_per_replica=2)
    top = g.get_top_level_graph()
    assert (top.target.num_ipus, top.target.num_tiles) == (4, 16)
    assert top.replication_factor == 1 and g.replication_factor == 2
    t = g.add_variable(FLOAT, (2,), "t")
    with pytest.raises(InvalidTileMappingError, match="replicated graph"):
        top.set_tile_mapping(t, 0)
    with pytest.raises(TensorCreationError, match="replicated graph"):
        top.add_replication_index_constant()
    plain = popsim.Graph(device)  # not replicated: the top-level graph is the graph
    assert plain.get_top_level_graph().target == plain.target
    plain.get_top_level_graph().set_tile_mapping(plain.add_variable(FLOAT, (2,), "u"), 15)


def test_poplars_other_replication_calls_say_what_to_write():
    device, g = replicated(2)
    with pytest.raises(popsim.PopsimError, match=r"popsim.Graph\(device, replication_factor=R\)"):
        popsim.Graph(device).create_replicated_graph(2)
    with pytest.raises(popsim.PopsimError, match="read_tensor"):
        g.get_non_replicated_tensor(g.add_variable(FLOAT, (2,), "t"))
    with pytest.raises(AttributeError, match="create_replicated_graph"):
        g.createReplicatedGraph(2)  # Poplar's spelling names popsim's


def test_the_report_says_how_many_replicas():
    device, g = replicated(4)
    x = mapped(g, FLOAT, (4,), "x")
    engine = popsim.Engine(g, Copy(x, x))
    engine.load(device)
    engine.run(0)
    report = engine.get_report()
    assert (report.target.replicas, report.target.num_ipus) == (4, 1)
    assert "Replicas:" in report.summary() and "4 (the target above is one replica's)" in report.summary()
    assert popsim.Report.from_dict(report.to_dict()).target.replicas == 4


@pytest.mark.parametrize("kind", RUNNERS)
@pytest.mark.parametrize("r", [1, 2, 4])
def test_the_replication_index_constant_holds_each_replicas_index(kind, r):
    device, g = replicated(r)
    rid = g.add_replication_index_constant()
    assert rid.dtype == UNSIGNED_INT and rid.shape == () and g.description.replication_index == [rid]
    g.set_tile_mapping(rid, 1)
    x = mapped(g, UNSIGNED_INT, (), "x", tile=3)
    g.create_host_read("x", x)
    run = runner(kind, g, device, Copy(rid, x))
    run.run()
    expected = np.arange(r, dtype=np.uint32)
    got = run.read_tensor("x")
    assert got.dtype == np.uint32 and got.shape == (() if r == 1 else (r,))
    np.testing.assert_array_equal(got, expected if r > 1 else 0)
    assert [int(run.read_tensor("x", replica=k)) for k in range(r)] == list(range(r))
    if kind == "engine":
        run.load(device)  # load writes the indices again
        run.run()
        assert [int(run.read_tensor("x", replica=k)) for k in range(r)] == list(range(r))


# -- vertices, per replica -------------------------------------------------------------------------
class Axpy(Vertex):
    """y = a * x + y, element-wise."""
    a: Input[int]
    x: Input[Vector[int]]
    y: InOut[Vector[int]]

    def compute(self):
        for i in range(len(self.y)):
            self.y[i] = self.a * self.x[i] + self.y[i]


@pytest.mark.parametrize("r", [2, 4])
def test_popops_ops_per_replica(r):
    device, g = replicated(r, tiles=4)
    a = g.add_variable(FLOAT, (6,), "a")
    g.set_tile_mapping(a.slice(0, 3), 0)
    g.set_tile_mapping(a.slice(3, 6), 1)
    b = mapped(g, FLOAT, (6,), "b", tile=2)
    prog = popsim.program.Sequence()
    d = popops.mul(g, popops.add(g, a, b, prog), a, prog)
    g.create_host_write("a", a)
    g.create_host_write("b", b)
    g.create_host_read("d", d)
    rng = np.random.default_rng(r)
    A, B = (rng.integers(-8, 8, (r, 6)).astype(np.float32) for _ in range(2))
    results = []
    for run in runners(g, device, prog):
        run.write_tensor("a", A)
        run.write_tensor("b", B)
        run.run()
        results.append(run.read_tensor("d"))
        np.testing.assert_array_equal(results[-1], (A + B) * A)
    np.testing.assert_array_equal(results[0], results[1])


@pytest.mark.parametrize("mode", ["compiled", "interpreted", "deserialized"])
def test_a_replicated_executable_in_every_codelet_mode_and_from_a_file(mode, monkeypatch, tmp_path):
    """Interpreted vertices run on each replica's tile memory; a saved executable keeps
    its replicas."""
    if mode == "interpreted":
        monkeypatch.setenv("POPSIM_CODELET_MODE", "interpreted")
    device, g = replicated(2, ipus_per_replica=2)
    g.add_codelets([Axpy])
    a, x, y = mapped(g, INT, (), "a", tile=0), mapped(g, INT, (3,), "x", tile=5), mapped(g, INT, (3,), "y", tile=1)
    cs = g.add_compute_set("axpy")
    g.set_tile_mapping(g.add_vertex(cs, "Axpy", {"a": a, "x": x, "y": y}), 1)
    for name, t in (("a", a), ("x", x), ("y", y)):
        g.create_host_write(name, t)
    g.create_host_read("y", y)
    exe = popsim.compile_graph(g, Execute(cs))
    if mode == "deserialized":
        exe.serialize(tmp_path / "axpy.popsimexe")
        exe = popsim.Executable.deserialize(tmp_path / "axpy.popsimexe")
    engine = popsim.Engine(exe)
    engine.load(device)
    engine.write_tensor("a", np.array([2, -3], np.int32))
    engine.write_tensor("x", np.array([[1, 2, 3], [4, 5, 6]], np.int32))
    engine.write_tensor("y", np.array([10, 20, 30], np.int32))  # the same on both replicas
    engine.run(0)
    np.testing.assert_array_equal(engine.read_tensor("y"), [[12, 24, 36], [-2, 5, 12]])


@pytest.mark.parametrize("r, ipus", [(2, 1), (2, 2), (4, 1)])
def test_a_python_vertex_per_replica_reading_across_ipus(r, ipus):
    device, g = replicated(r, ipus_per_replica=ipus)
    g.add_codelets([Axpy])
    far = g.target.num_tiles - 1  # on the replica's last IPU
    a = mapped(g, INT, (), "a", tile=0)
    x = mapped(g, INT, (5,), "x", tile=far)
    y = mapped(g, INT, (5,), "y", tile=1)
    cs = g.add_compute_set("axpy")
    g.set_tile_mapping(g.add_vertex(cs, "Axpy", {"a": a, "x": x, "y": y}), 1)
    prog = Repeat(2, Execute(cs))
    for name, t in (("a", a), ("x", x), ("y", y)):
        g.create_host_write(name, t)
    g.create_host_read("y", y)
    rng = np.random.default_rng(7)
    A = np.arange(r, dtype=np.int32) + 2
    X, Y = (rng.integers(-50, 50, (r, 5)).astype(np.int32) for _ in range(2))
    for run in runners(g, device, prog):
        run.write_tensor("a", A)
        run.write_tensor("x", X)
        run.write_tensor("y", Y)
        run.run()
        np.testing.assert_array_equal(run.read_tensor("y"), Y + 2 * A[:, None] * X)


def test_a_cpp_codelet_per_replica():
    device, g = replicated(2)
    g.add_codelets(TUT3_CODELETS)
    x = g.add_variable(FLOAT, (2, 4), "x")
    g.set_tile_mapping(x[0], 0)
    g.set_tile_mapping(x[1], 3)
    sums = g.add_variable(FLOAT, (2,), "sums")
    cs = g.add_compute_set("sum")
    for row in range(2):
        g.set_tile_mapping(sums[row], 2 * row)
        g.set_tile_mapping(g.add_vertex(cs, "SumVertex", {"in": x[row], "out": sums[row]}), 2 * row)
    g.create_host_write("x", x)
    g.create_host_read("sums", sums)
    engine = popsim.Engine(g, Execute(cs))
    engine.load(device)
    X = np.arange(16, dtype=np.float32).reshape(2, 2, 4) * np.float32([1, -1])[:, None, None]
    engine.write_tensor("x", X)
    engine.run()
    np.testing.assert_array_equal(engine.read_tensor("sums"), X.sum(axis=2))


# -- host I/O -------------------------------------------------------------------------------------
def host_io_graph(r=2):
    device, g = replicated(r)
    x = mapped(g, INT, (2, 3), "x", tile=1)
    g.create_host_write("w", x)
    g.create_host_read("x", x)
    return device, g, x


@pytest.mark.parametrize("kind", RUNNERS)
def test_write_tensor_for_every_replica_each_or_one(kind):
    device, g, x = host_io_graph(r=3)
    run = runner(kind, g, device, Sequence())
    one = np.arange(6, dtype=np.int32).reshape(2, 3)
    run.write_tensor("w", one)  # the tensor's shape: every replica
    np.testing.assert_array_equal(run.read_tensor("x"), [one] * 3)
    run.write_tensor("w", np.arange(6, dtype=np.int32) + 10)  # 1-D with the element count: every replica
    np.testing.assert_array_equal(run.read_tensor("x"), [one + 10] * 3)
    each = np.arange(18, dtype=np.int32).reshape(3, 2, 3) * 2
    run.write_tensor("w", each)
    np.testing.assert_array_equal(run.read_tensor("x"), each)
    run.write_tensor("w", -one, replica=1)
    np.testing.assert_array_equal(run.read_tensor("x"), [each[0], -one, each[2]])
    np.testing.assert_array_equal(run.read_tensor("x", replica=1), -one)
    assert run.read_tensor("x", replica=2).shape == (2, 3)


@pytest.mark.parametrize("kind", RUNNERS)
def test_read_tensor_into_out(kind):
    device, g, x = host_io_graph()
    run = runner(kind, g, device, Sequence())
    each = np.arange(12, dtype=np.int32).reshape(2, 2, 3)
    run.write_tensor("w", each)
    out = np.zeros((2, 2, 3), np.int32)
    assert run.read_tensor("x", out=out) is out
    np.testing.assert_array_equal(out, each)
    one = np.zeros((2, 3), np.int32)
    assert run.read_tensor("x", out=one, replica=1) is one
    np.testing.assert_array_equal(one, each[1])
    with pytest.raises(TensorIOError, match=r"out has shape \[2, 3\]; pass one of shape \[2, 2, 3\]"):
        run.read_tensor("x", out=np.zeros((2, 3), np.int32))  # one replica's shape, no replica
    with pytest.raises(TensorIOError, match=r"shape \[3, 2, 3\]"):
        run.read_tensor("x", out=np.zeros((3, 2, 3), np.int32))


@pytest.mark.parametrize("kind", RUNNERS)
def test_host_io_errors(kind):
    device, g, x = host_io_graph()
    run = runner(kind, g, device, Sequence())
    for call in (lambda: run.write_tensor("w", np.zeros((2, 3), np.int32), replica=2),
                 lambda: run.read_tensor("x", replica=2), lambda: run.read_tensor("x", replica=-1)):
        with pytest.raises(popsim.IndexError, match=r"replica -?\d is out of range: the graph has 2 replica"):
            call()
    with pytest.raises(popsim.TypeError, match="replica must be an integer"):  # a PopsimError, and a TypeError
        run.read_tensor("x", replica=1.0)
    for bad in ((3, 2, 3), (2, 2, 2), (4, 3)):
        with pytest.raises(TensorIOError, match=r"one per replica"):
            run.write_tensor("w", np.zeros(bad, np.int32))
    with pytest.raises(TensorIOError, match=r"shape \[2, 3\]"):  # [R, ...] with a replica: not one value
        run.write_tensor("w", np.zeros((2, 2, 3), np.int32), replica=0)


# -- streams --------------------------------------------------------------------------------------
def stream_graph(r, mode=ReplicatedStreamMode.REPLICATE, n=2, transfers=3):
    """x <- in, then x -> out, ``transfers`` times, with x += 100 in between (so the
    device-to-host data is not just the host-to-device data)."""
    device, g = replicated(r)
    x = mapped(g, INT, (n,), "x", tile=2)
    hundred = mapped_const(g, INT, (n,), 100, "hundred", tile=2)
    s_in = g.add_host_to_device_fifo("in", INT, n, mode)
    s_out = g.add_device_to_host_fifo("out", INT, n)
    body = Sequence(Copy(s_in, x), popops_add_in_place(g, x, hundred), Copy(x, s_out))
    return device, g, Repeat(transfers, body)


def popops_add_in_place(g, x, y):
    prog = Sequence()
    popops.add_in_place(g, x, y, prog)
    return prog


@pytest.mark.parametrize("kind", RUNNERS)
@pytest.mark.parametrize("r", [2, 4])
def test_a_replicate_stream_reads_each_replicas_own_circular_buffer(kind, r):
    device, g, prog = stream_graph(r)
    run = runner(kind, g, device, prog)
    buf = (np.arange(r * 4, dtype=np.int32) * 3).reshape(r, 4)  # two transfers each
    out = np.zeros((r, 6), np.int32)
    run.connect_stream("in", buf)
    run.connect_stream("out", out)
    run.run()
    np.testing.assert_array_equal(out, np.concatenate([buf, buf[:, :2]], axis=1) + 100)


@pytest.mark.parametrize("kind", RUNNERS)
def test_a_broadcast_stream_sends_one_buffer_to_every_replica(kind):
    device, g, prog = stream_graph(4, ReplicatedStreamMode.BROADCAST, transfers=2)
    run = runner(kind, g, device, prog)
    out = np.zeros((4, 4), np.int32)
    run.connect_stream("in", np.array([1, 2, 3, 4], np.int32))
    run.connect_stream("out", out)
    run.run()
    np.testing.assert_array_equal(out, [[101, 102, 103, 104]] * 4)
    calls = []
    run.connect_stream_to_callback("in", lambda b: (calls.append(1), b.__setitem__(slice(None), [7, 8])))
    run.run()
    assert len(calls) == 2  # once per transfer, not per replica
    np.testing.assert_array_equal(out, [[107, 108, 107, 108]] * 4)


@pytest.mark.parametrize("kind", RUNNERS)
def test_stream_callbacks_per_replica_and_for_every_replica(kind):
    r = 3
    device, g, prog = stream_graph(r, transfers=2)
    run = runner(kind, g, device, prog)
    counts = [0] * r

    def filler(k):
        def fill(buffer):
            counts[k] += 1
            buffer[:] = [10 * k + counts[k], -k]
        return fill

    for k in range(r):
        run.connect_stream_to_callback("in", k, filler(k))
    seen = []
    run.connect_stream_to_callback("out", lambda buffer: seen.append(buffer.tolist()))
    run.run()
    assert counts == [2] * r
    # once per replica per transfer, in replica order
    assert seen == [[100 + 10 * k + t, 100 - k] for t in (1, 2) for k in range(r)]
    # one callback for every replica: called once per replica per transfer, in replica order
    order = []
    run.connect_stream_to_callback("in", lambda buffer: (order.append(len(order)), buffer.__setitem__(
        slice(None), [len(order), 0])))
    out = np.zeros((r, 4), np.int32)
    run.connect_stream("out", out)
    run.run()
    np.testing.assert_array_equal(out, [[101 + k, 100, 101 + r + k, 100] for k in range(r)])


@pytest.mark.parametrize("kind", RUNNERS)
def test_stream_connection_errors(kind):
    device, g, prog = stream_graph(2)
    g.add_host_to_device_fifo("bcast", INT, 2, ReplicatedStreamMode.BROADCAST)
    run = runner(kind, g, device, prog)
    with pytest.raises(StreamConnectionError, match=r"leading dimension must be 2.*found shape \[4\]"):
        run.connect_stream("in", np.zeros(4, np.int32))
    with pytest.raises(StreamConnectionError, match=r"leading dimension must be 2.*found shape \[3, 2\]"):
        run.connect_stream("in", np.zeros((3, 2), np.int32))
    with pytest.raises(StreamConnectionError, match=r"device-to-host stream.*leading dimension must be 2"):
        run.connect_stream("out", np.zeros(4, np.int32))
    with pytest.raises(StreamConnectionError, match="multiple of"):
        run.connect_stream("in", np.zeros((2, 3), np.int32))
    with pytest.raises(StreamConnectionError, match="BROADCAST"):
        run.connect_stream_to_callback("bcast", 0, lambda b: None)
    with pytest.raises(popsim.IndexError, match="replica 2 is out of range"):
        run.connect_stream_to_callback("in", 2, lambda b: None)
    run.connect_stream("out", np.zeros((2, 2), np.int32))
    run.connect_stream_to_callback("in", 0, lambda b: None)
    with pytest.raises(StreamConnectionError, match="not connected for replica 1"):
        run.run()
    run.connect_stream_to_callback("in", 1, lambda b: None)
    run.run()


# -- CrossReplicaCopy ------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", RUNNERS)
@pytest.mark.parametrize("ipus", [1, 2])
def test_a_ring_in_place_rotates_exactly(kind, ipus):
    device, g = replicated(4, ipus_per_replica=ipus)
    x = g.add_variable(INT, (2, 3), "x")
    g.set_tile_mapping(x[0], 0)
    g.set_tile_mapping(x[1], g.target.num_tiles - 1)
    g.create_host_write("x", x)
    g.create_host_read("x", x)
    run = runner(kind, g, device, CrossReplicaCopy(x, x, {0: 1, 1: 2, 2: 3, 3: 0}))
    data = np.arange(24, dtype=np.int32).reshape(4, 2, 3)
    run.write_tensor("x", data)
    for turns in (1, 2, 3, 4):
        run.run()
        np.testing.assert_array_equal(run.read_tensor("x"), np.roll(data, turns, axis=0))


@pytest.mark.parametrize("kind", RUNNERS)
def test_cross_replica_copies_between_tensors_and_overlapping_views(kind):
    device, g = replicated(4)
    x = mapped(g, INT, (4,), "x", tile=0)
    y = mapped(g, INT, (4,), "y", tile=3)
    prog = Sequence(CrossReplicaCopy(x, y, {0: 2, 2: 0, 1: 3, 3: 1}),     # swap pairs, x -> y
                    CrossReplicaCopy(x.slice(0, 3), x.slice(1, 4), {0: 1, 1: 0}))  # overlapping views
    g.create_host_write("x", x)
    g.create_host_read("x", x)
    g.create_host_read("y", y)
    run = runner(kind, g, device, prog)
    data = np.arange(16, dtype=np.int32).reshape(4, 4) + 1
    run.write_tensor("x", data)
    run.run()
    np.testing.assert_array_equal(run.read_tensor("y"), data[[2, 3, 0, 1]])
    want = data.copy()
    want[1, 1:] = data[0, :3]  # every source read before any destination written
    want[0, 1:] = data[1, :3]
    np.testing.assert_array_equal(run.read_tensor("x"), want)


@pytest.mark.parametrize("kind", RUNNERS)
def test_replicas_outside_the_map_keep_their_destination(kind):
    device, g = replicated(4)
    x = mapped(g, FLOAT, (3,), "x", tile=1)
    y = mapped(g, FLOAT, (3,), "y", tile=2)
    g.create_host_write("x", x)
    g.create_host_write("y", y)
    g.create_host_read("y", y)
    run = runner(kind, g, device, CrossReplicaCopy(x, y, {3: 1}))
    xs = np.arange(12, dtype=np.float32).reshape(4, 3)
    run.write_tensor("x", xs)
    run.write_tensor("y", -xs)
    run.run()
    np.testing.assert_array_equal(run.read_tensor("y"), [-xs[0], xs[3], -xs[2], -xs[3]])


def test_cross_replica_copy_refused_at_construction():
    _, g = replicated(4)
    x = mapped(g, INT, (2,), "x")
    f = mapped(g, FLOAT, (2,), "f")
    for bad, match in (({0: 0}, "replica 0 is mapped to itself"),
                       ({0: 2, 1: 2}, "replica 2 is the destination of several replicas"),
                       ({-1: 0}, "source replica -1"), ({0: -3}, "destination replica -3"),
                       ({0: 1.0}, "destination replica 1.0"), ([1, 2], "replica_map must be a dict")):
        with pytest.raises(ControlProgramError, match=match):
            CrossReplicaCopy(x, x, bad)
    with pytest.raises(PopsimError):
        CrossReplicaCopy(x, f, {0: 1})  # types differ
    with pytest.raises(PopsimError):
        CrossReplicaCopy(x, x.slice(0, 1), {0: 1})  # sizes differ
    assert CrossReplicaCopy(x, x, {3: 0, 0: 3}).replica_map == {0: 3, 3: 0}


@pytest.mark.parametrize("kind", RUNNERS)
def test_cross_replica_copy_replicas_checked_at_compile(kind):
    device, g = replicated(4)
    x = mapped(g, INT, (2,), "x")
    for bad in ({0: 4}, {4: 0}):
        with pytest.raises(ControlProgramError, match=r"replica 4 .*out of range: the graph has 4 replica"):
            runner(kind, g, device, Sequence(CrossReplicaCopy(x, x, bad)))


# -- control flow ---------------------------------------------------------------------------------
def control_graph(r=4):
    device, g = replicated(r)
    rid = g.add_replication_index_constant()
    g.set_tile_mapping(rid, 0)
    pred = mapped(g, INT, (), "pred", tile=1)
    x = mapped(g, INT, (), "x", tile=2)
    consts = [mapped_const(g, INT, (), k, f"k{k}", tile=3) for k in range(3)]
    g.create_host_write("pred", pred)
    g.create_host_read("x", x)
    return device, g, rid, pred, x, consts


@pytest.mark.parametrize("kind", RUNNERS)
def test_replica_uniform_control_flow(kind):
    device, g, rid, pred, x, k = control_graph()
    # x counts up to pred with a RepeatWhileTrue, then an If and a Switch on the same value on every replica
    more = g.add_variable(INT, (), "more")
    g.set_tile_mapping(more, 1)
    prog = Sequence(Copy(k[0], x),
                    RepeatWhileTrue(Switch(x, {v: Copy(k[1] if v < 2 else k[0], more) for v in range(3)}, Copy(
                        k[0], more)), more, Switch(x, {0: Copy(k[1], x), 1: Copy(k[2], x)})),
                    If(pred, Sequence(), Copy(k[0], x)))
    run = runner(kind, g, device, prog)
    run.write_tensor("pred", np.int32(1))
    run.run()
    np.testing.assert_array_equal(run.read_tensor("x"), [2] * 4)
    run.write_tensor("pred", np.array([1, 2, 3, 4], np.int32))  # different values, the same truth
    run.run()
    np.testing.assert_array_equal(run.read_tensor("x"), [2] * 4)
    run.write_tensor("pred", np.int32(0))
    run.run()
    np.testing.assert_array_equal(run.read_tensor("x"), [0] * 4)


@pytest.mark.parametrize("kind", RUNNERS)
@pytest.mark.parametrize("make", [
    lambda rid, pred, x, k: If(rid, Copy(k[1], x)),
    lambda rid, pred, x, k: Switch(rid, {0: Copy(k[1], x)}, Copy(k[2], x)),
    lambda rid, pred, x, k: RepeatWhileTrue(Sequence(), rid, Copy(k[0], x)),
    lambda rid, pred, x, k: If(pred, Copy(k[1], x)),
])
def test_control_flow_that_differs_between_replicas_stops_the_run(kind, make):
    device, g, rid, pred, x, k = control_graph()
    run = runner(kind, g, device, Sequence(Copy(k[0], x), make(rid, pred, x, k)))
    run.write_tensor("pred", np.array([0, 0, 5, 0], np.int32))
    with pytest.raises(PopsimError) as info:
        run.run()
    assert "replica" in str(info.value)
    assert not isinstance(info.value, (ApplicationRuntimeError, StreamConnectionError))


@pytest.mark.parametrize("kind", RUNNERS)
def test_abort_on_condition_true_on_one_replica_aborts(kind):
    device, g, rid, pred, x, k = control_graph()
    prog = Sequence(AbortOnCondition(pred, "pred set"), Copy(k[2], x))
    run = runner(kind, g, device, prog)
    run.run()
    np.testing.assert_array_equal(run.read_tensor("x"), [2] * 4)
    run.write_tensor("pred", np.int32(7), replica=3)
    with pytest.raises(ApplicationRuntimeError, match="pred set"):
        run.run()


# -- PrintTensor -----------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", RUNNERS)
@pytest.mark.parametrize("r", [1, 2])
def test_print_tensor_prints_every_replica(kind, r, capsys):
    device, g = replicated(r)
    x = mapped(g, INT, (2,), "x", tile=1)
    g.create_host_write("x", x)
    run = runner(kind, g, device, PrintTensor("x", x))
    run.write_tensor("x", np.array([[1, 2], [3, 4]][:r], np.int32).reshape(r, 2) if r > 1 else
                     np.array([1, 2], np.int32))
    capsys.readouterr()
    run.run()
    want = "x: [1 2]\n" if r == 1 else "x (replica 0): [1 2]\nx (replica 1): [3 4]\n"
    assert capsys.readouterr().out == want
