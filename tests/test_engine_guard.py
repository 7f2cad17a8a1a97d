"""An engine under misuse (popsim/engine_guard.py, engine.close): one thing at a time,
safe callbacks, streams disconnected mid-run, closing, and collection by the GC."""
import gc
import threading
import weakref

import numpy as np
import pytest

import popsim
from popsim import FLOAT
from popsim.program import Copy, PrintTensor, Sequence


def stream_graph(device, transfers=1):
    """x <- stream "in" (``transfers`` times), then y <- x, y -> stream "out"."""
    g = popsim.Graph(device)
    x = g.add_variable(FLOAT, [4], "x")
    y = g.add_variable(FLOAT, [4], "y")
    g.set_tile_mapping(x, 0)
    g.set_tile_mapping(y, 1)
    into = g.add_host_to_device_fifo("in", FLOAT, 4)
    out = g.add_device_to_host_fifo("out", FLOAT, 4)
    g.create_host_read("y", y)
    g.create_host_write("x", x)
    prog = Sequence(*[Copy(into, x) for _ in range(transfers)], Copy(x, y), Copy(y, out))
    return g, prog


@pytest.fixture
def blocked_run(device):
    """An engine whose run waits inside a stream callback until released."""
    g, prog = stream_graph(device)
    engine = popsim.Engine(g, prog)
    engine.load(device)
    started, release = threading.Event(), threading.Event()

    def fill(buf):
        started.set()
        assert release.wait(30)
        buf[:] = 7

    engine.connect_stream_to_callback("in", fill)
    engine.connect_stream("out", np.zeros(4, np.float32))
    errors = []
    worker = threading.Thread(target=lambda: _run_catching(engine, errors))
    worker.start()
    assert started.wait(30)
    yield engine
    release.set()
    worker.join(30)
    assert not worker.is_alive() and errors == []
    np.testing.assert_array_equal(engine.read_tensor("y"), np.full(4, 7))


def _run_catching(engine, errors):
    try:
        engine.run(0)
    except Exception as e:  # noqa: BLE001 - reported by the fixture
        errors.append(e)


@pytest.mark.parametrize("call", [
    lambda e, d: e.run(0), lambda e, d: e.load(d), lambda e, d: e.get_report(),
    lambda e, d: e.read_tensor("y"), lambda e, d: e.write_tensor("x", np.zeros(4, np.float32)),
    lambda e, d: e.connect_stream("out", np.zeros(4, np.float32)), lambda e, d: e.disconnect_stream("in"),
    lambda e, d: e.reset_execution_profile(), lambda e, d: e.close(),
])
def test_another_thread_is_refused_while_an_engine_runs(blocked_run, device, call):
    with pytest.raises(popsim.EngineStateError, match=r"engine #\d+ is running program 0 in another thread"):
        call(blocked_run, device)


def test_the_core_itself_refuses_another_thread_while_it_runs(blocked_run):
    machine = blocked_run._machine
    table = blocked_run.executable.lowered.host_reads["y"].table
    with pytest.raises(popsim._core.BusyError, match="running program 0 in another thread"):
        machine.read(table, np.zeros(4, np.float32))


def test_what_a_callback_may_and_may_not_do_on_its_own_engine(device):
    g, prog = stream_graph(device)
    engine = popsim.Engine(g, prog)
    engine.load(device)
    engine.write_tensor("x", np.arange(4, dtype=np.float32))
    seen = {}

    def fill(buf):
        for name, call in (("run", lambda: engine.run(0)), ("load", lambda: engine.load(device)),
                           ("close", engine.close), ("reset", engine.reset_execution_profile)):
            with pytest.raises(popsim.EngineStateError, match="from a callback|cannot be closed before"):
                call()
            seen[name] = True
        seen["x"] = engine.read_tensor("y").copy()  # reading is fine
        seen["report"] = engine.get_report().execution.total_cycles
        buf[:] = 5

    engine.connect_stream_to_callback("in", fill)
    engine.connect_stream("out", np.zeros(4, np.float32))
    engine.run(0)
    assert set(seen) == {"run", "load", "close", "reset", "x", "report"}
    np.testing.assert_array_equal(engine.read_tensor("y"), np.full(4, 5))
    engine.run(0)  # still usable


def test_a_callback_may_disconnect_its_own_stream(device):
    """The transfer under way completes; the next one needs a new connection (this
    crashed the process before)."""
    g, prog = stream_graph(device, transfers=2)
    engine = popsim.Engine(g, prog)
    engine.load(device)
    calls = []

    def once(buf):
        calls.append(1)
        buf[:] = 3
        engine.disconnect_stream("in")

    engine.connect_stream_to_callback("in", once)
    engine.connect_stream("out", np.zeros(4, np.float32))
    with pytest.raises(popsim.StreamConnectionError, match="stream 'in' is not connected"):
        engine.run(0)
    assert calls == [1]
    engine.connect_stream("in", np.full(8, 9, np.float32))
    engine.run(0)
    np.testing.assert_array_equal(engine.read_tensor("y"), np.full(4, 9))


def test_a_device_to_host_callback_can_disconnect_itself_and_keep_its_data(device):
    g, prog = stream_graph(device)
    engine = popsim.Engine(g, prog)
    engine.load(device)
    engine.connect_stream("in", np.full(4, 2, np.float32))
    kept = []

    def keep(buf):
        kept.append(buf)  # held past the call, then the stream goes away
        engine.disconnect_stream("out")

    engine.connect_stream_to_callback("out", keep)
    engine.run(0)
    engine.connect_stream("in", np.full(4, 6, np.float32))
    engine.connect_stream_to_callback("out", lambda buf: kept.append(buf.copy()))
    for _ in range(3):  # new staging buffers of the same size come and go
        engine.run(0)
    np.testing.assert_array_equal(kept[0], np.full(4, 2))  # not freed memory, not the later transfers
    np.testing.assert_array_equal(kept[-1], np.full(4, 6))


def test_close_frees_the_engine_and_later_use_is_an_error(device):
    g, prog = stream_graph(device)
    with popsim.Engine(g, prog) as engine:
        engine.load(device)
        assert "program(s)" in repr(engine)
    assert "closed" in repr(engine)
    for call in (lambda: engine.run(0), lambda: engine.read_tensor("y"), engine.get_report,
                 lambda: engine.load(device), lambda: engine.connect_stream("in", np.zeros(4, np.float32))):
        with pytest.raises(popsim.EngineStateError, match=r"engine #\d+ is closed"):
            call()
    engine.close()  # again: nothing happens


def test_an_engine_its_own_callback_refers_to_is_collected(device):
    """The binding holds no Python object that could refer back to an engine: 100 such
    engines grew memory by 400 MB before."""
    g, prog = stream_graph(device)
    refs = []
    for _ in range(3):
        engine = popsim.Engine(g, prog)
        engine.connect_stream_to_callback("in", lambda buf, e=engine: buf.fill(e.num_programs))
        engine.connect_stream_to_callback("out", lambda buf, e=engine: e.list_streams())
        engine.load(device)
        engine.run(0)
        refs.append(weakref.ref(engine))
        del engine
    gc.collect()
    assert [r() for r in refs] == [None, None, None]


def test_print_tensor_during_a_run_reads_through_the_guard(device, capsys):
    g = popsim.Graph(device)
    x = g.add_variable(FLOAT, [2], "x")
    g.set_tile_mapping(x, 0)
    g.set_initial_value(x, [1.5, 2.5])
    engine = popsim.Engine(g, PrintTensor("x", x))
    engine.load(device)
    engine.run(0)
    assert "x: [1.5000000 2.5000000]" in capsys.readouterr().out
