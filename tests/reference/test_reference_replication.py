"""The reference executor on replicated graphs: what tests/test_replication.py does not
already check on both runners (the reference's own host interface, error texts shared
with the engine, StreamCallback objects, streams disconnected during a transfer).
Expectations are hand-computed; where the engine defines the same thing it is run too."""
import numpy as np
import pytest

import popsim
from popsim import INT, UNSIGNED_INT, Input, StreamCallback, Vertex
from popsim.errors import ApplicationRuntimeError, ControlProgramError, StreamConnectionError, TensorIOError
from popsim.program import (AbortOnCondition, Copy, CrossReplicaCopy, Execute, If, Repeat, RepeatWhileFalse,
                            Sequence, Switch)
from popsim.reference import ReferenceExecutor

from graph_helpers import mapped, mapped_const, replicated, runner

RUNNERS = ["engine", "reference"]


def failure(kind, graph, device, programs, writes=()):
    """The exception a run of ``programs`` raises on ``kind``."""
    run = runner(kind, graph, device, programs)
    for handle, values, replica in writes:
        run.write_tensor(handle, values, replica=replica)
    with pytest.raises(popsim.PopsimError) as info:
        run.run()
    return info.value


# -- the reference's own host interface ------------------------------------------------------------
def test_read_and_write_any_view_per_replica():
    _, g = replicated(3)
    x = mapped(g, INT, (4,), "x")
    r = ReferenceExecutor(g, Sequence())
    assert r.replication_factor == 3
    r.write(x, np.arange(4))  # every replica
    r.write(x.slice(1, 3), [[10, 11], [20, 21], [30, 31]])  # [R, ...]: each its own
    r.write(x[3], 99, replica=2)
    np.testing.assert_array_equal(r.read(x), [[0, 10, 11, 3], [0, 20, 21, 3], [0, 30, 31, 99]])
    np.testing.assert_array_equal(r.read(x.slice(2, 4), replica=1), [21, 3])
    with pytest.raises(popsim.IndexError, match="replica 3 is out of range"):
        r.read(x, replica=3)
    with pytest.raises(TensorIOError, match=r"one per replica"):
        r.write(x, np.zeros((2, 4)))
    r.load()
    assert not r.read(x).any()


def test_one_replica_reads_and_writes_as_before():
    device, g = replicated(1)
    x = mapped(g, INT, (2, 2), "x")
    g.create_host_write("x", x)
    g.create_host_read("x", x)
    r = ReferenceExecutor(g, Sequence(CrossReplicaCopy(x, x, {})))  # an empty map: nothing to copy
    r.write_tensor("x", [1.0, 2.0, 3.0, 4.0])  # converted to the tensor's type, any shape of its size
    r.run()
    assert r.read_tensor("x").shape == (2, 2) and r.read(x, replica=0).shape == (2, 2)
    np.testing.assert_array_equal(r.read_tensor("x"), [[1, 2], [3, 4]])
    out = np.zeros(4, np.int32)
    r.read_tensor("x", out=out)
    np.testing.assert_array_equal(out, [1, 2, 3, 4])
    with pytest.raises(TensorIOError, match=r"out has shape \[3\]"):
        r.read_tensor("x", out=np.zeros(3, np.int32))


def test_a_replication_index_constant_in_a_virtual_graph():
    device, g = replicated(2, tiles=8)
    v = g.create_virtual_graph(4, 8)
    rid = v.add_replication_index_constant()
    v.set_tile_mapping(rid, 3)  # tile 7 of each replica
    x = mapped(v, UNSIGNED_INT, (2,), "x", tile=0)
    g.create_host_read("x", x)
    for kind in RUNNERS:
        run = runner(kind, g, device, Sequence(Copy(rid, x[0]), Copy(rid, x[1])))
        run.run()
        np.testing.assert_array_equal(run.read_tensor("x"), [[0, 0], [1, 1]])


# -- error texts the engine shares -----------------------------------------------------------------
def divergence_graph():
    device, g = replicated(4)
    rid = g.add_replication_index_constant()
    g.set_tile_mapping(rid, 0)
    pred = mapped(g, INT, (), "pred", tile=1)
    g.create_host_write("pred", pred)
    x = mapped(g, INT, (), "x", tile=2)
    one = mapped_const(g, INT, (), 1, "one", tile=2)
    return device, g, rid, pred, x, one


@pytest.mark.parametrize("make, step, replica", [
    (lambda rid, pred, x, one: If(rid, Copy(one, x)), "If on replicationIndex", 1),
    (lambda rid, pred, x, one: Switch(rid, {1: Copy(one, x)}), "Switch on replicationIndex", 1),
    (lambda rid, pred, x, one: RepeatWhileFalse(Sequence(), pred, Copy(one, x)), "RepeatWhileFalse on pred", 2),
    (lambda rid, pred, x, one: Sequence(Copy(one, x), If(pred, Sequence())), "If on pred", 2),
])
def test_divergent_control_flow_stops_the_run_with_the_engines_message(make, step, replica):
    device, g, rid, pred, x, one = divergence_graph()
    prog = make(rid, pred, x, one)
    writes = [("pred", np.array([0, 0, 3, 0], np.int32), None)]
    errors = [failure(kind, g, device, prog, writes) for kind in RUNNERS]
    for e in errors:
        assert type(e) is ControlProgramError
        assert str(e).startswith(f"program 0 (at {step}): the replicas disagree on a control-flow decision: "
                                 f"replica {replica} holds another")
        assert "4 replicas" in str(e)
    assert str(errors[0]) == str(errors[1])


def test_divergence_inside_a_function_names_the_program_run():
    device, g, rid, pred, x, one = divergence_graph()
    f = g.add_function(If(rid, Copy(one, x)), "f")
    progs = [Sequence(), popsim.program.Call(f)]
    for kind in RUNNERS:
        run = runner(kind, g, device, progs)
        run.run(0)
        with pytest.raises(ControlProgramError, match=r"^program 1 \(at If on replicationIndex\).*replica 1 holds"):
            run.run(1)


class RefuseNonZero(Vertex):
    x: Input[UNSIGNED_INT]

    def compute(self):
        return self.x == 0


@pytest.mark.compiler
def test_a_vertex_failing_on_one_replica_names_it():
    device, g = replicated(4)
    rid = g.add_replication_index_constant()
    g.set_tile_mapping(rid, 0)
    g.add_codelets([RefuseNonZero])
    cs = g.add_compute_set("cs")
    g.set_tile_mapping(g.add_vertex(cs, "RefuseNonZero", {"x": rid}), 1)
    for kind in RUNNERS:  # replicas 1, 2 and 3 fail: the first is named
        e = failure(kind, g, device, Execute(cs))
        assert isinstance(e, ApplicationRuntimeError)
        assert str(e).startswith("vertex 'RefuseNonZero' (#0") and str(e).endswith("returned false on replica 1")


def test_abort_on_condition_names_the_first_replica_it_holds_on():
    device, g, rid, pred, x, one = divergence_graph()
    writes = [("pred", np.int32(1), 3), ("pred", np.int32(1), 2)]
    for kind in RUNNERS:
        e = failure(kind, g, device, AbortOnCondition(pred, "stop"), writes)
        assert isinstance(e, ApplicationRuntimeError)
        assert str(e).startswith("program 0 aborted on replica 2") and str(e).endswith(": stop")


# -- streams ---------------------------------------------------------------------------------------
class Counter(StreamCallback):
    """A host-to-device StreamCallback: prefetch declines, fetch fills ``base + n``."""

    def __init__(self, base):
        self.base, self.fetched, self.completed = base, 0, 0

    def prefetch(self, buffer):
        return StreamCallback.Result.NOT_AVAILABLE

    def fetch(self, buffer):
        self.fetched += 1
        buffer[:] = self.base + self.fetched

    def complete(self):
        self.completed += 1


class Collector(StreamCallback):
    def __init__(self):
        self.seen = []

    def fetch(self, buffer):
        self.seen.append(buffer.tolist())


@pytest.mark.parametrize("kind", RUNNERS)
def test_stream_callback_objects_per_replica(kind):
    device, g = replicated(2)
    x = mapped(g, INT, (2,), "x")
    s_in = g.add_host_to_device_fifo("in", INT, 2)
    s_out = g.add_device_to_host_fifo("out", INT, 2)
    run = runner(kind, g, device, Repeat(2, Sequence(Copy(s_in, x), Copy(x, s_out))))
    counters = [Counter(0), Counter(100)]
    for r, c in enumerate(counters):
        run.connect_stream_to_callback("in", r, c)
    collector = Collector()
    run.connect_stream_to_callback("out", collector)
    run.run()
    assert [(c.fetched, c.completed) for c in counters] == [(2, 2), (2, 2)]
    assert collector.seen == [[1, 1], [101, 101], [2, 2], [102, 102]]


@pytest.mark.parametrize("kind", ["engine", "reference"])
def test_a_callback_disconnecting_its_stream_lets_the_transfer_complete(kind):
    device, g = replicated(2)
    x = mapped(g, INT, (2,), "x")
    s_in = g.add_host_to_device_fifo("in", INT, 2)
    g.create_host_read("x", x)
    run = runner(kind, g, device, Repeat(2, Copy(s_in, x)))
    calls = []

    def fill(buffer):
        calls.append(len(calls))
        buffer[:] = len(calls)
        if len(calls) == 1:
            run.disconnect_stream("in")

    run.connect_stream_to_callback("in", fill)
    with pytest.raises(StreamConnectionError, match="stream 'in' is not connected for replica 0"):
        run.run()
    assert calls == [0, 1]  # the first transfer, for both replicas; none of the second
    np.testing.assert_array_equal(run.read_tensor("x"), [[1, 1], [2, 2]])
