"""Engine: loading, host reads and writes, FIFO streams, callbacks, threads, interrupts;
program indices, loading onto another device, and aborts (the engine stays usable after
a failed run)."""
import os
import re
import signal
import threading
import time

import numpy as np
import pytest

import popsim
from popsim import FLOAT, HALF, INT
from popsim.program import Abort, AbortOnCondition, Call, Copy, PrintTensor, Repeat, RepeatWhileTrue, Sequence

from graph_helpers import mapped, mapped_const, small_model


def test_never_written_variables_read_as_zeros(device):
    g = popsim.Graph(device)
    for dtype in (FLOAT, INT, HALF, popsim.BOOL, popsim.UNSIGNED_LONGLONG):
        t = mapped(g, dtype, [3, 2], f"v_{dtype.name}")
        g.create_host_read(dtype.name, t)
    e = popsim.Engine(g, Sequence())
    e.load(device)
    for dtype in (FLOAT, INT, HALF, popsim.BOOL, popsim.UNSIGNED_LONGLONG):
        out = e.read_tensor(dtype.name)
        assert out.dtype == dtype.numpy and out.shape == (3, 2)
        assert not out.any()


def test_write_then_read_views(device):
    g = popsim.Graph(device)
    m = g.add_variable(FLOAT, [4, 6], "m", mapping=popsim.VariableMappingMethod.LINEAR)
    g.create_host_write("cols", m[:, 1::2])
    g.create_host_read("all", m)
    g.create_host_read("t", m.transpose())
    e = popsim.Engine(g, Sequence())
    e.load(device)
    cols = np.arange(12, dtype=np.float32).reshape(4, 3) + 1
    e.write_tensor("cols", cols)
    expected = np.zeros((4, 6), np.float32)
    expected[:, 1::2] = cols
    np.testing.assert_array_equal(e.read_tensor("all"), expected)
    np.testing.assert_array_equal(e.read_tensor("t"), expected.T)
    out = np.empty(24, np.float32)
    assert e.read_tensor("all", out=out) is out  # a flat array of the right size is accepted
    np.testing.assert_array_equal(out, expected.reshape(-1))


def test_write_tensor_accepts_lists(device):
    g = popsim.Graph(device)
    v = mapped(g, INT, [3], "v")
    g.create_host_write("w", v)
    g.create_host_read("r", v)
    e = popsim.Engine(g, Sequence())
    e.load(device)
    e.write_tensor("w", [4, 5, 6])
    np.testing.assert_array_equal(e.read_tensor("r"), [4, 5, 6])


def test_constants_and_initial_values_are_loaded(device):
    g = popsim.Graph(device)
    c = g.add_constant(HALF, [2, 2], [[1, 2], [3, 4]], "c")
    g.set_tile_mapping(c, 7)
    v = mapped(g, INT, [5], "v", tile=3)
    g.set_initial_value(v, 9)
    g.set_initial_value(v[1:3], [1, 2])  # later values win where they overlap
    g.create_host_read("c", c)
    g.create_host_read("v", v)
    e = popsim.Engine(g, Sequence())
    e.load(device)
    np.testing.assert_array_equal(e.read_tensor("c"), np.array([[1, 2], [3, 4]], np.float16))
    np.testing.assert_array_equal(e.read_tensor("v"), [9, 1, 2, 9, 9])


def test_stream_circular_buffer_wraps_and_persists_across_runs(device):
    """Each Copy takes the next transfer of the connected array, wrapping at its end."""
    g = popsim.Graph(device)
    v = mapped(g, INT, [4], "v")
    s = g.add_host_to_device_fifo("in", INT, 4)
    out = g.add_device_to_host_fifo("out", INT, 4)
    e = popsim.Engine(g, Sequence(Copy(s, v), Copy(v, out)))
    e.load(device)
    data = np.arange(12, dtype=np.int32)
    sink = np.full(8, -1, np.int32)
    e.connect_stream("in", data)
    e.connect_stream("out", sink)
    seen = []
    for _ in range(5):
        e.run()
        seen.append(sink.copy())
    transfers = [data[4 * (k % 3): 4 * (k % 3) + 4] for k in range(5)]
    np.testing.assert_array_equal(seen[0][:4], transfers[0])
    np.testing.assert_array_equal(seen[1][4:], transfers[1])  # second slot of the sink
    np.testing.assert_array_equal(seen[2][:4], transfers[2])
    np.testing.assert_array_equal(seen[3][4:], transfers[3])  # input wrapped around
    np.testing.assert_array_equal(seen[4][:4], transfers[4])


def test_stream_reads_the_array_in_place(device):
    """The host buffer is used in place: changes between runs are seen."""
    g = popsim.Graph(device)
    v = mapped(g, FLOAT, [3], "v")
    g.create_host_read("v", v)
    s = g.add_host_to_device_fifo("in", FLOAT, 3)
    e = popsim.Engine(g, Copy(s, v))
    e.load(device)
    buf = np.array([1, 2, 3], np.float32)
    e.connect_stream("in", buf)
    e.run()
    buf[:] = [7, 8, 9]
    e.run()
    np.testing.assert_array_equal(e.read_tensor("v"), [7, 8, 9])


def test_stream_into_a_scattered_view(device):
    g = popsim.Graph(device)
    m = g.add_variable(INT, [3, 4], "m", mapping=popsim.VariableMappingMethod.LINEAR)
    g.create_host_read("m", m)
    s = g.add_host_to_device_fifo("in", INT, 6)
    e = popsim.Engine(g, Copy(s, m[:, ::2].transpose()))
    e.load(device)
    e.connect_stream("in", np.arange(1, 7, dtype=np.int32))
    e.run()
    expected = np.zeros((3, 4), np.int32)
    expected[:, ::2] = np.arange(1, 7).reshape(2, 3).T
    np.testing.assert_array_equal(e.read_tensor("m"), expected)


def test_stream_callbacks_both_directions(device):
    g = popsim.Graph(device)
    v = mapped(g, FLOAT, [4], "v", tile=2)
    s_in = g.add_host_to_device_fifo("in", FLOAT, 4)
    s_out = g.add_device_to_host_fifo("out", FLOAT, 4)
    e = popsim.Engine(g, Repeat(3, Sequence(Copy(s_in, v), Copy(v, s_out))))
    e.load(device)
    produced, received = [], []

    def fill(buf):
        assert buf.dtype == np.float32 and buf.shape == (4,)
        k = len(produced)
        buf[:] = np.arange(4) + 10 * k
        produced.append(buf.copy())

    e.connect_stream_to_callback("in", fill)
    e.connect_stream_to_callback("out", lambda buf: received.append(buf.copy()))
    e.run()
    assert len(received) == 3
    for p, r in zip(produced, received):
        np.testing.assert_array_equal(p, r)


def test_reconnecting_a_stream_restarts_its_buffer(device):
    g = popsim.Graph(device)
    v = mapped(g, INT, [2], "v")
    g.create_host_read("v", v)
    s = g.add_host_to_device_fifo("in", INT, 2)
    e = popsim.Engine(g, Copy(s, v))
    e.load(device)
    data = np.arange(6, dtype=np.int32)
    e.connect_stream("in", data)
    e.run()
    e.run()
    e.connect_stream("in", data)
    e.run()
    np.testing.assert_array_equal(e.read_tensor("v"), [0, 1])


def test_list_and_disconnect_streams(device):
    g = popsim.Graph(device)
    v = mapped(g, INT, [2], "v")
    s = g.add_host_to_device_fifo("in", INT, 2)
    g.add_device_to_host_fifo("unused", INT, 2)
    e = popsim.Engine(g, Copy(s, v))
    e.load(device)
    assert e.list_streams() == ["in", "unused"]
    e.connect_stream("in", np.zeros(2, np.int32))
    e.run()
    e.disconnect_stream("in")
    with pytest.raises(popsim.StreamConnectionError, match="'in'"):
        e.run()


def test_unused_unconnected_stream_does_not_block_other_programs(device):
    g = popsim.Graph(device)
    v = mapped(g, INT, [2], "v")
    s = g.add_host_to_device_fifo("in", INT, 2)
    e = popsim.Engine(g, [Copy(s, v), PrintTensor(v)])
    e.load(device)
    e.run(1)  # program 1 never touches the stream


def test_run_releases_the_gil(device):
    """A Python thread keeps running while the core executes a long program."""
    g = popsim.Graph(device)
    x, y = mapped(g, FLOAT, [1], "x"), mapped(g, FLOAT, [1], "y")
    e = popsim.Engine(g, Repeat(20_000_000, Copy(x, y)))
    e.load(device)
    ticks = []
    stop = threading.Event()

    def tick():
        while not stop.is_set():
            ticks.append(1)
            time.sleep(0.001)

    t = threading.Thread(target=tick)
    start = time.perf_counter()
    t.start()
    e.run()
    elapsed = time.perf_counter() - start
    stop.set()
    t.join()
    assert elapsed > 0.02  # long enough for the thread to have had a chance
    assert len(ticks) >= 5


def test_ctrl_c_stops_a_run_and_engine_stays_usable(device):
    g = popsim.Graph(device)
    forever = g.add_constant(INT, [], 1, "forever")
    g.set_tile_mapping(forever, 0)
    x, y = mapped(g, FLOAT, [1], "x"), mapped(g, FLOAT, [1], "y")
    e = popsim.Engine(g, [RepeatWhileTrue(Sequence(), forever, Copy(x, y)), Copy(x, y)])
    e.load(device)
    # A real SIGINT, as Ctrl-C sends: _thread.interrupt_main only sets Python's own flag,
    # which an earlier test's leftovers can leave unhandled (a full fresh-venv run once hung here).
    # Python's own handler, as in a terminal: a shell's background job (nohup ... &) starts
    # with SIGINT ignored, and Python then installs none, so the signal would never arrive.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        timer = threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT))
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            e.run(0)
        timer.join()
    finally:
        signal.signal(signal.SIGINT, previous)
    e.run(1)


def test_engine_options_from_environment(device, monkeypatch):
    g = popsim.Graph(device)
    big = g.add_variable(FLOAT, [200_000], "big")
    g.set_tile_mapping(big, 0)
    with pytest.raises(popsim.GraphMemoryAllocationError):
        popsim.Engine(g, Sequence())
    monkeypatch.setenv("POPSIM_ENGINE_OPTIONS", '{"debug.allowOutOfMemory": "true"}')
    e = popsim.Engine(g, Sequence(), {"debug.allowOutOfMemory": "false"})  # the environment wins
    assert e.options["debug.allowOutOfMemory"] == "true"
    assert e.get_report().memory.tiles_out_of_memory == [0]


def test_options_accept_python_values(device):
    g = popsim.Graph(device)
    e = popsim.Engine(g, Sequence(), {"debug.allowOutOfMemory": True, "autoReport.executionProfileProgramRunCount": 3})
    assert e.options["debug.allowOutOfMemory"] == "true"
    assert e.options["autoReport.executionProfileProgramRunCount"] == "3"
    assert e.options["autoReport.all"] == "false"  # defaults read through


def test_cpu_device_needs_no_mapping_and_counts_no_cycles(cpu_device):
    g = popsim.Graph(cpu_device)
    a = g.add_variable(FLOAT, [3], "a")
    c = g.add_constant(FLOAT, [3], [1, 2, 3], "c")
    g.create_host_read("a", a)
    e = popsim.Engine(g, Copy(c, a))
    e.load(cpu_device)
    e.run()
    np.testing.assert_array_equal(e.read_tensor("a"), [1, 2, 3])
    assert e.get_report().execution.total_cycles == 0


def test_graph_on_ipu_target_loads_on_matching_model():
    target = popsim.Target.create_ipu_target(1, version="ipu2")
    g = popsim.Graph(target)
    v = g.add_variable(INT, [1], "v")
    g.set_tile_mapping(v, 0)
    e = popsim.Engine(g, Sequence())
    e.load(popsim.IPUModel("ipu2").create_device())
    with pytest.raises(popsim.EngineStateError, match="ipu1"):
        e.load(popsim.IPUModel("ipu1").create_device())


def test_program_index_out_of_range(small_device):
    g = popsim.Graph(small_device)
    e = popsim.Engine(g, [Sequence(), Sequence(), Sequence()])
    e.load(small_device)
    for bad in (3, -1, 99):
        with pytest.raises(popsim.PopsimError) as info:
            e.run(bad)
        msg = str(info.value)
        assert f"program index {bad}" in msg
        assert "0..2" in msg
    with pytest.raises(TypeError, match="integer"):
        e.run("0")
    e.run(2)


def test_engine_needs_programs(small_device):
    g = popsim.Graph(small_device)
    with pytest.raises(popsim.PopsimError, match="at least one program"):
        popsim.Engine(g, [])
    with pytest.raises(TypeError, match="program 1.*not a Program"):
        popsim.Engine(g, [Sequence(), "oops"])


def test_abort_on_condition_then_fix_predicate_and_rerun(small_device):
    g = popsim.Graph(small_device)
    p = mapped(g, INT, (), "p", tile=1)
    g.set_initial_value(p, 1)
    x = mapped(g, FLOAT, (4,), "x", tile=2)
    y = mapped(g, FLOAT, (4,), "y", tile=3)
    c1 = mapped_const(g, FLOAT, (4,), [1.0, 1.5, 2.0, 2.5], "c1")
    c2 = mapped_const(g, FLOAT, (4,), [9.0, 8.0, 7.0, 6.0], "c2")
    g.create_host_write("p-write", p)
    g.create_host_read("x-read", x)
    g.create_host_read("y-read", y)
    prog = Sequence(Copy(c1, x), AbortOnCondition(p, "p was set"), Copy(c2, y))
    e = popsim.Engine(g, prog)
    e.load(small_device)
    with pytest.raises(popsim.ApplicationRuntimeError, match="p was set"):
        e.run(0)
    # What ran before the abort happened; what comes after did not.
    np.testing.assert_array_equal(e.read_tensor("x-read"), [1.0, 1.5, 2.0, 2.5])
    np.testing.assert_array_equal(e.read_tensor("y-read"), np.zeros(4))
    with pytest.raises(popsim.ApplicationRuntimeError, match="p was set"):
        e.run(0)  # same state, same failure
    e.write_tensor("p-write", np.array(0, np.int32))
    e.run(0)
    np.testing.assert_array_equal(e.read_tensor("y-read"), [9.0, 8.0, 7.0, 6.0])
    e.write_tensor("p-write", np.array(5, np.int32))
    with pytest.raises(popsim.ApplicationRuntimeError, match="p was set"):
        e.run(0)


def test_abort_inside_loops_and_calls_then_full_rerun(small_device):
    """An abort half-way through a Repeat inside a function does not leave loop or call
    state behind: the next run does every iteration."""
    g = popsim.Graph(small_device)
    x = mapped(g, INT, (3,), "x")
    p = mapped(g, INT, (), "p", tile=1)
    ins = g.add_host_to_device_fifo("ins", INT, 3)
    flags = g.add_host_to_device_fifo("flags", INT, 1)
    outs = g.add_device_to_host_fifo("outs", INT, 3)
    body = Sequence(Copy(ins, x), Copy(flags, p), AbortOnCondition(p, "flag raised"), Copy(x, outs))
    f = g.add_function(Repeat(4, body), "four")
    e = popsim.Engine(g, Sequence(Call(f)))
    e.load(small_device)
    seen = []
    e.connect_stream_to_callback("outs", lambda buf: seen.append(buf.copy()))
    e.connect_stream("ins", np.arange(12, dtype=np.int32))
    e.connect_stream("flags", np.array([0, 0, 1, 0], np.int32))
    with pytest.raises(popsim.ApplicationRuntimeError, match="flag raised"):
        e.run(0)
    assert len(seen) == 2
    seen.clear()
    e.connect_stream("ins", np.arange(12, dtype=np.int32))
    e.connect_stream("flags", np.zeros(4, np.int32))
    e.run(0)
    assert len(seen) == 4
    np.testing.assert_array_equal(np.concatenate(seen), np.arange(12))


def test_abort_message(small_device):
    g = popsim.Graph(small_device)
    e = popsim.Engine(g, [Abort("msg: something went wrong"), Sequence(), Abort()])
    e.load(small_device)
    with pytest.raises(popsim.ApplicationRuntimeError) as info:
        e.run(0)
    assert "msg: something went wrong" in str(info.value)
    assert "program 0" in str(info.value)
    e.run(1)  # still usable
    with pytest.raises(popsim.ApplicationRuntimeError, match="program 2 aborted"):
        e.run(2)


def test_run_and_host_io_before_load(small_device):
    g = popsim.Graph(small_device)
    v = mapped(g, FLOAT, (2,), "v")
    g.create_host_write("w", v)
    g.create_host_read("r", v)
    e = popsim.Engine(g, Sequence())
    with pytest.raises(popsim.EngineStateError, match=re.escape("not loaded: call engine.load(device)")):
        e.run(0)
    with pytest.raises(popsim.EngineStateError, match="not loaded"):
        e.write_tensor("w", np.zeros(2, np.float32))
    with pytest.raises(popsim.EngineStateError, match="not loaded"):
        e.read_tensor("r")
    e.load(small_device)
    e.run(0)


@pytest.mark.parametrize("other", ["more_tiles", "other_arch", "cpu"])
def test_load_onto_a_device_of_another_target(small_device, other):
    g = popsim.Graph(small_device)
    mapped(g, FLOAT, (2,), "v")
    e = popsim.Engine(g, Sequence())
    device = {
        "more_tiles": lambda: popsim.IPUModel("ipu2").create_device(),
        "other_arch": lambda: small_model(4, "ipu21").create_device(),
        "cpu": popsim.Device.create_cpu_device,
    }[other]()
    with pytest.raises(popsim.EngineStateError) as info:
        e.load(device)
    msg = str(info.value)
    assert f"cannot load onto {device.target}" in msg
    assert f"built for {small_device.target}" in msg
    assert "Graph(device)" in msg
    e.load(small_device)
    e.run(0)


def test_load_onto_a_device_with_less_tile_memory(no_env_options):
    built_for = small_model(4).create_device()
    g = popsim.Graph(built_for)
    mapped(g, FLOAT, (100_000,), "v")   # 400,000 bytes on tile 0: fits 638,976, not 262,144
    e = popsim.Engine(g, Sequence())
    smaller = small_model(4, memory_bytes_per_tile=262_144).create_device()
    with pytest.raises(popsim.EngineStateError, match="cannot load onto"):
        e.load(smaller)


def test_load_needs_a_device(small_device):
    g = popsim.Graph(small_device)
    e = popsim.Engine(g, Sequence())
    with pytest.raises(TypeError, match="load needs a Device, found Target"):
        e.load(small_device.target)


def test_arguments_of_the_wrong_kind_are_popsims_type_errors(device):
    """Engine, compile_graph, load, run and the host-transfer calls raise popsim.TypeError
    (a PopsimError) for an argument of the wrong kind, never Python's own errors."""
    g = popsim.Graph(device)
    x = mapped(g, FLOAT, [2], "x")
    g.create_host_write("x", x)
    checks = [
        (lambda: popsim.Engine(3), "Engine needs a Graph"),
        (lambda: popsim.compile_graph(3, Sequence()), "compile needs a Graph, found int"),
        (lambda: popsim.compile_graph(g, 3), "programs must be a Program or a list of them, found int"),
        (lambda: popsim.compile_graph(g, [Sequence(), "x"]), "program 1 is a str, not a Program"),
    ]
    for call, message in checks:
        with pytest.raises(popsim.TypeError, match=message):
            call()
    engine = popsim.Engine(g, Sequence())
    with pytest.raises(popsim.TypeError, match="load needs a Device"):
        engine.load(3)
    engine.load(device)
    for call, message in [(lambda: engine.run("0"), "program_index must be an integer"),
                          (lambda: engine.write_tensor(["x"], [1, 2]),
                           "write_tensor: a handle is a string, found list"),
                          (lambda: engine.read_tensor(["x"]), "read_tensor: a handle is a string, found list"),
                          (lambda: engine.connect_stream(["s"], np.zeros(2)), "a stream handle is a string")]:
        with pytest.raises(popsim.TypeError, match=message):
            call()
