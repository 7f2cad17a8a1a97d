"""The reference executor's semantics, checked against numpy and Poplar's documented
behaviour (and, where the engine defines the same thing, against the engine)."""
import numpy as np
import pytest

import popsim
from popsim import FLOAT, INT, InOut, Input, MultiVertex, Output, Vector, Vertex
from popsim.errors import ApplicationRuntimeError, StreamConnectionError, UnknownHandleError
from popsim.program import (Abort, AbortOnCondition, Copy, Execute, If, PrintTensor, Repeat, RepeatWhileFalse,
                            Sequence, Switch)
from popsim.reference import ReferenceExecutor


def variable(g, dtype, shape, name, tile=0, value=None):
    t = g.add_variable(dtype, shape, name)
    g.set_tile_mapping(t, tile)
    if value is not None:
        g.set_initial_value(t, value)
    return t


def test_copies_read_all_of_the_source_before_writing(device):
    g = popsim.Graph(device)
    x = variable(g, INT, [8], "x", value=np.arange(8))
    prog = Copy(x.slice(0, 6), x.slice(2, 8))
    r = ReferenceExecutor(g, prog)
    r.run()
    np.testing.assert_array_equal(r.read(x), [0, 1, 0, 1, 2, 3, 4, 5])
    g.create_host_read("x", x)
    engine = popsim.Engine(g, prog)
    engine.load(device)
    engine.run()
    np.testing.assert_array_equal(engine.read_tensor("x"), r.read(x))


def test_views_across_variables_reversed_broadcast_and_reinterpreted(device):
    g = popsim.Graph(device)
    a = variable(g, INT, [4], "a", value=[1, 2, 3, 4])
    b = variable(g, INT, [4], "b", value=[5, 6, 7, 8])
    f = variable(g, FLOAT, [2], "f", value=[1.5, -2.0])
    c = g.add_constant(INT, [2], [9, 10], "c")
    g.set_tile_mapping(c, 1)
    both = popsim.concat([a.slice(2, 4), b.slice(0, 2)])
    r = ReferenceExecutor(g, Sequence(Copy(both.reverse(0), b), Copy(c[1].reshape([1]).broadcast(2, 0), a[:2])))
    np.testing.assert_array_equal(r.read(both), [3, 4, 5, 6])
    np.testing.assert_array_equal(r.read(f.reinterpret(INT)), np.array([1.5, -2.0], np.float32).view(np.int32))
    r.run()
    np.testing.assert_array_equal(r.read(a), [10, 10, 3, 4])
    np.testing.assert_array_equal(r.read(b), [6, 5, 4, 3])


def test_control_flow(device):
    g = popsim.Graph(device)
    n = variable(g, INT, [], "n", value=0)
    log = variable(g, INT, [6], "log", value=0)
    done = variable(g, INT, [], "done", value=0)
    ks = [g.add_constant(INT, [], k, f"k{k}") for k in range(7)]
    for k in ks:
        g.set_tile_mapping(k, 0)
    advance = Switch(n, {k: Sequence(Copy(ks[k + 1], n), Copy(ks[k + 1], log[k])) for k in range(6)})
    set_done = Switch(n, {3: Copy(ks[1], done)})
    prog = Sequence(RepeatWhileFalse(set_done, done, advance),           # n: 0 -> 3
                    Repeat(2, advance),                                     # n: 3 -> 5
                    If(n, Copy(ks[6], log[5]), Copy(ks[0], log[5])))
    r = ReferenceExecutor(g, prog)
    r.run()
    np.testing.assert_array_equal(r.read(log), [1, 2, 3, 4, 5, 6])
    assert int(r.read(n)) == 5
    r.load()
    assert int(r.read(n)) == 0 and not r.read(log).any()


def test_streams_are_circular_buffers_of_whole_transfers(device):
    g = popsim.Graph(device)
    x = variable(g, INT, [2], "x")
    h2d = g.add_host_to_device_fifo("in", INT, 2)
    d2h = g.add_device_to_host_fifo("out", INT, 2)
    prog = Repeat(3, Sequence(Copy(h2d, x), Copy(x, d2h)))
    r = ReferenceExecutor(g, prog)
    with pytest.raises(StreamConnectionError, match="stream 'in', which is not connected"):
        r.run()
    out = np.zeros(4, np.int32)
    r.connect_stream("in", np.array([1, 2, 3, 4], np.int32))
    r.connect_stream("out", out)
    r.run()
    np.testing.assert_array_equal(out, [1, 2, 3, 4])  # 1 2 / 3 4 / then 1 2 again over the first slot
    np.testing.assert_array_equal(r.read(x), [1, 2])
    seen = []
    r.connect_stream_to_callback("in", lambda buf: buf.__setitem__(slice(None), [7, 8]))
    r.connect_stream_to_callback("out", seen.append)
    r.run()
    assert [list(s) for s in seen] == [[7, 8]] * 3
    with pytest.raises(UnknownHandleError, match="no stream named 'inn'.*'in'"):
        r.connect_stream("inn", out)


def test_host_handles_print_and_abort(device, capsys):
    g = popsim.Graph(device)
    x = variable(g, FLOAT, [2, 2], "x")
    flag = variable(g, INT, [], "flag")
    g.create_host_write("w", x)
    g.create_host_read("r", x)
    g.create_host_write("flag", flag)
    prog = Sequence(PrintTensor("x", x), AbortOnCondition(flag, "flag set"), PrintTensor(x[0]), Abort())
    r = ReferenceExecutor(g, prog)
    r.write_tensor("w", [[1, 2], [3, 4.5]])
    with pytest.raises(ApplicationRuntimeError, match="program 0 aborted: [(]no message[)]"):
        r.run()
    printed = capsys.readouterr().out
    g2 = popsim.Engine(g, prog)
    g2.load(device)
    g2.write_tensor("w", np.array([[1, 2], [3, 4.5]], np.float32))
    with pytest.raises(ApplicationRuntimeError, match="no message"):
        g2.run()
    assert printed == capsys.readouterr().out
    assert printed == "x: [\n  [1.0000000 2.0000000]\n  [3.0000000 4.5000000]\n]\nx: [1.0000000 2.0000000]\n"
    r.write_tensor("flag", 1)
    with pytest.raises(ApplicationRuntimeError, match="program 0 aborted: flag set"):
        r.run()
    np.testing.assert_array_equal(r.read_tensor("r"), [[1, 2], [3, 4.5]])


# -- compute sets: one BSP superstep -------------------------------------------------------------
class CopyIn(Vertex):
    src: Input[Vector[int]]
    dst: Output[Vector[int]]

    def compute(self):
        for i in range(len(self.dst)):
            self.dst[i] = self.src[i]


class Count(Vertex):
    step: int
    calls: InOut[int]

    def compute(self):
        self.calls += self.step


class Stamp(MultiVertex):
    data: InOut[Vector[int]]

    def compute(self, worker_id):
        self.data[worker_id] += worker_id + 1


class Refuse(Vertex):
    x: Input[int]

    def compute(self):
        return self.x == 0


@pytest.mark.compiler
def test_a_superstep_reads_everything_before_any_vertex_writes(device):
    g = popsim.Graph(device)
    x = variable(g, INT, [3], "x", tile=0, value=[1, 2, 3])
    y = variable(g, INT, [3], "y", tile=1, value=[4, 5, 6])
    g.add_codelets([CopyIn])
    cs = g.add_compute_set("swap")
    for src, dst, tile in ((x, y, 0), (y, x, 1)):  # each reads what the other writes
        g.set_tile_mapping(g.add_vertex(cs, "CopyIn", {"src": src, "dst": dst}), tile)
    r = ReferenceExecutor(g, Execute(cs))
    r.run()
    np.testing.assert_array_equal(r.read(x), [4, 5, 6])
    np.testing.assert_array_equal(r.read(y), [1, 2, 3])


@pytest.mark.compiler
def test_state_fields_and_multivertices_on_every_worker(device):
    g = popsim.Graph(device)
    out = variable(g, INT, [], "out", value=10)
    data = variable(g, INT, [6], "data", value=0)
    g.add_codelets([Count, Stamp])
    cs = g.add_compute_set("cs")
    v = g.add_vertex(cs, "Count", {"calls": out})
    g.set_initial_value(v["step"], 1)
    g.set_tile_mapping(v, 0)
    g.set_tile_mapping(g.add_vertex(cs, "Stamp", {"data": data}), 0)
    prog = Repeat(2, Execute(cs))
    g.create_host_read("out", out)
    g.create_host_read("data", data)
    r = ReferenceExecutor(g, prog)
    engine = popsim.Engine(g, prog)
    engine.load(device)
    for runs in (1, 2):
        r.run()
        engine.run()
        assert int(r.read(out)) == 10 + 2 * runs == int(engine.read_tensor("out"))
        np.testing.assert_array_equal(r.read(data), 2 * runs * np.arange(1, 7))
        np.testing.assert_array_equal(engine.read_tensor("data"), r.read(data))
    r.load()
    r.run()
    assert int(r.read(out)) == 12 and int(engine.read_tensor("out")) == 14


@pytest.mark.compiler
def test_a_vertex_returning_false_stops_the_run(device):
    g = popsim.Graph(device)
    x = variable(g, INT, [], "x", value=3)
    g.add_codelets([Refuse])
    cs = g.add_compute_set("cs")
    g.set_tile_mapping(g.add_vertex(cs, "Refuse", {"x": x}), 2)
    with pytest.raises(ApplicationRuntimeError, match="vertex 'Refuse'.*returned false"):
        ReferenceExecutor(g, Execute(cs)).run()


def test_empty_transfers_do_not_call_the_host(device):
    g = popsim.Graph(device)
    x = variable(g, INT, [0], "x")
    g.add_host_to_device_fifo("in", INT, 0)
    prog = Copy(g.get_stream("in"), x)
    calls = []
    for runner in (ReferenceExecutor(g, prog), popsim.Engine(g, prog)):
        if isinstance(runner, popsim.Engine):
            runner.load(device)
        runner.connect_stream_to_callback("in", calls.append)
        runner.run()
    assert calls == []
