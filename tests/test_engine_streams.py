"""Engine streams: Poplar's StreamCallback protocol (prefetch / fetch / complete) in both
directions, plain callback functions, and host arrays the device only reads; streams
left unconnected and arrays that do not fit a stream are refused with a message naming
the stream, and a callback that raises leaves the engine usable."""
import re

import numpy as np
import pytest

import popsim
from popsim import FLOAT, INT
from popsim.program import Call, Copy, Repeat, Sequence

from graph_helpers import mapped

Result = popsim.StreamCallback.Result


def in_out_engine(device, n=4, repeats=3):
    """Each repeat streams n floats in, into v, and v out again."""
    g = popsim.Graph(device)
    v = g.add_variable(FLOAT, [n], "v")
    g.set_tile_mapping(v, 1)
    g.add_host_to_device_fifo("in", FLOAT, n)
    g.add_device_to_host_fifo("out", FLOAT, n)
    e = popsim.Engine(g, Repeat(repeats, Sequence(Copy(g.get_stream("in"), v), Copy(v, g.get_stream("out")))))
    e.load(device)
    return e


class Fill(popsim.StreamCallback):
    """The prefetch example's FillCallback: prefetch fills when `ready(k)` says so, else
    fetch does; both with the value k of the transfer."""

    def __init__(self, ready):
        self.ready = ready
        self.calls = []
        self.k = 0

    def prefetch(self, buffer):
        self.calls.append("prefetch")
        if not self.ready(self.k):
            return Result.NOT_AVAILABLE
        buffer[:] = self.k
        return Result.SUCCESS

    def fetch(self, buffer):
        self.calls.append("fetch")
        buffer[:] = 100 + self.k

    def complete(self):
        self.calls.append("complete")
        self.k += 1


@pytest.mark.parametrize("ready,expected_calls,expected_values", [
    (lambda k: True, ["prefetch", "complete"] * 3, [0, 1, 2]),
    (lambda k: False, ["prefetch", "fetch", "complete"] * 3, [100, 101, 102]),
    (lambda k: k % 2 == 1, ["prefetch", "fetch", "complete", "prefetch", "complete", "prefetch", "fetch", "complete"],
     [100, 1, 102]),
])
def test_host_to_device_protocol(small_device, ready, expected_calls, expected_values):
    e = in_out_engine(small_device)
    cb = Fill(ready)
    out = np.zeros(12, np.float32)
    e.connect_stream_to_callback("in", cb)
    e.connect_stream("out", out)
    e.run()
    assert cb.calls == expected_calls
    np.testing.assert_array_equal(out, np.repeat(expected_values, 4))


def test_poplar_spellings_of_the_result():
    assert Result.Success is Result.SUCCESS and Result.NotAvailable is Result.NOT_AVAILABLE


def test_device_to_host_protocol_fetches_the_data_then_completes(small_device):
    e = in_out_engine(small_device)
    e.connect_stream("in", np.arange(12, dtype=np.float32))

    class Collect(popsim.StreamCallback):
        def __init__(self):
            self.calls, self.received = [], []

        def prefetch(self, buffer):  # Poplar does not prefetch device-to-host data
            raise AssertionError("prefetch called for a device-to-host stream")

        def fetch(self, buffer):
            self.calls.append("fetch")
            self.received.append(buffer.copy())

        def complete(self):
            self.calls.append("complete")

    cb = Collect()
    e.connect_stream_to_callback("out", cb)
    e.run()
    assert cb.calls == ["fetch", "complete"] * 3
    np.testing.assert_array_equal(np.concatenate(cb.received), np.arange(12))


def test_an_object_with_the_protocol_need_not_subclass(small_device):
    e = in_out_engine(small_device, repeats=2)
    calls = []

    class Duck:
        def prefetch(self, buffer):
            calls.append("prefetch")
            return Result.NotAvailable

        def fetch(self, buffer):
            calls.append("fetch")
            buffer[:] = 7

        def complete(self):
            calls.append("complete")

    out = np.zeros(8, np.float32)
    e.connect_stream_to_callback("in", Duck())
    e.connect_stream("out", out)
    e.run()
    assert calls == ["prefetch", "fetch", "complete"] * 2 and (out == 7).all()


def test_plain_functions_still_work(small_device):
    e = in_out_engine(small_device, repeats=2)
    seen = []
    e.connect_stream_to_callback("in", lambda buf: buf.fill(5))
    e.connect_stream_to_callback("out", lambda buf: seen.append(buf.sum()))
    e.run()
    assert seen == [20, 20]


def test_a_bad_prefetch_result_is_an_error_and_the_engine_stays_usable(small_device):
    e = in_out_engine(small_device, repeats=1)

    class Wrong(popsim.StreamCallback):
        def prefetch(self, buffer):
            buffer[:] = 1
            return True  # a C++ habit: not a Result

        def fetch(self, buffer):
            buffer[:] = 2

    out = np.zeros(4, np.float32)
    e.connect_stream("out", out)
    e.connect_stream_to_callback("in", Wrong())
    with pytest.raises(popsim.StreamConnectionError, match=r"stream 'in': Wrong.prefetch returned True; return "
                                                           r"StreamCallback.Result.SUCCESS"):
        e.run()
    e.connect_stream_to_callback("in", Fill(lambda k: True))
    e.run()
    assert (out == 0).all()


def test_a_stream_callback_without_fetch_is_refused(small_device):
    e = in_out_engine(small_device)

    class NoFetch(popsim.StreamCallback):
        def prefetch(self, buffer):
            return Result.SUCCESS

    with pytest.raises(popsim.StreamConnectionError, match="NoFetch does not define fetch"):
        e.connect_stream_to_callback("in", NoFetch())
    with pytest.raises(popsim.StreamConnectionError, match="must be a callable fn.buffer. or a popsim.StreamCallback, "
                                                           "found int"):
        e.connect_stream_to_callback("in", 3)


def test_a_read_only_array_feeds_a_host_to_device_stream_in_place(small_device):
    g = popsim.Graph(small_device)
    v = g.add_variable(INT, [3], "v")
    g.set_tile_mapping(v, 0)
    g.create_host_read("v", v)
    s = g.add_host_to_device_fifo("in", INT, 3)
    e = popsim.Engine(g, Copy(s, v))
    e.load(small_device)
    base = np.arange(3, dtype=np.int32)
    view = base.view()
    view.flags.writeable = False
    e.connect_stream("in", view)  # before: refused with a raw error
    e.run()
    assert e.read_tensor("v").tolist() == [0, 1, 2]
    base[:] = [7, 8, 9]  # the stream reads the host memory at each transfer, not a copy of it
    e.run()
    assert e.read_tensor("v").tolist() == [7, 8, 9]
    frozen = np.frombuffer(np.array([4, 5, 6], np.int32).tobytes(), np.int32)  # memory nobody can write
    assert not frozen.flags.writeable
    e.connect_stream("in", frozen)
    e.run()
    assert e.read_tensor("v").tolist() == [4, 5, 6]


def test_a_device_to_host_stream_still_needs_a_writable_array(small_device):
    e = in_out_engine(small_device)
    out = np.zeros(4, np.float32)
    out.flags.writeable = False
    with pytest.raises(popsim.StreamConnectionError, match="writes into the array, which is read-only; pass a "
                                                           "writable array"):
        e.connect_stream("out", out)


def _stream_engine(device):
    g = popsim.Graph(device)
    x = mapped(g, INT, (10,), "x")
    ins = g.add_host_to_device_fifo("v4-input-stream", INT, 10)
    out = g.add_device_to_host_fifo("v4-output-stream", INT, 10)
    g.create_host_read("x-read", x)
    e = popsim.Engine(g, [Sequence(Copy(ins, x), Copy(x, out)), Sequence()])
    e.load(device)
    return e


def test_unconnected_stream_then_connect_and_run(small_device):
    e = _stream_engine(small_device)
    e.run(1)  # a program that uses no stream runs without connections
    with pytest.raises(popsim.StreamConnectionError) as info:
        e.run(0)
    msg = str(info.value)
    assert "'v4-input-stream'" in msg
    assert "connect_stream" in msg
    e.connect_stream("v4-input-stream", np.arange(10, dtype=np.int32))
    with pytest.raises(popsim.StreamConnectionError, match="'v4-output-stream'.*connect_stream"):
        e.run(0)
    host_out = np.zeros(10, np.int32)
    e.connect_stream("v4-output-stream", host_out)
    e.run(0)
    np.testing.assert_array_equal(host_out, np.arange(10))
    np.testing.assert_array_equal(e.read_tensor("x-read"), np.arange(10))


def test_disconnected_stream_inside_a_called_function(small_device):
    g = popsim.Graph(small_device)
    x = mapped(g, INT, (4,), "x")
    s = g.add_host_to_device_fifo("deep", INT, 4)
    f = g.add_function(Sequence(Copy(s, x)), "loader")
    e = popsim.Engine(g, Sequence(Call(f)))
    e.load(small_device)
    e.connect_stream("deep", np.ones(4, np.int32))
    e.run(0)
    e.disconnect_stream("deep")
    with pytest.raises(popsim.StreamConnectionError, match="'deep'.*connect_stream"):
        e.run(0)


def test_connect_stream_wrong_dtype(small_device):
    e = _stream_engine(small_device)
    with pytest.raises(popsim.StreamConnectionError) as info:
        e.connect_stream("v4-input-stream", np.arange(10, dtype=np.float32))
    msg = str(info.value)
    assert "'v4-input-stream'" in msg
    assert "INT" in msg and "int32" in msg and "float32" in msg
    assert "astype" in msg


def test_connect_stream_size_not_a_multiple(small_device):
    e = _stream_engine(small_device)
    for n in (15, 7, 0):
        with pytest.raises(popsim.StreamConnectionError) as info:
            e.connect_stream("v4-input-stream", np.zeros(n, np.int32))
        msg = str(info.value)
        assert "'v4-input-stream'" in msg
        assert f"{n} elements" in msg and "10 elements" in msg
        assert "multiple" in msg


def test_connect_stream_non_contiguous(small_device):
    e = _stream_engine(small_device)
    with pytest.raises(popsim.StreamConnectionError) as info:
        e.connect_stream("v4-input-stream", np.arange(40, dtype=np.int32)[::2])
    msg = str(info.value)
    assert "'v4-input-stream'" in msg and "contiguous" in msg and "ascontiguousarray" in msg
    with pytest.raises(popsim.StreamConnectionError, match="'v4-output-stream'.*contiguous"):
        e.connect_stream("v4-output-stream", np.zeros(20, np.int32)[::-2])


def test_connect_device_to_host_stream_needs_writable_array(small_device):
    e = _stream_engine(small_device)
    ro = np.zeros(10, np.int32)
    ro.flags.writeable = False
    with pytest.raises(popsim.StreamConnectionError, match="'v4-output-stream'.*read-only"):
        e.connect_stream("v4-output-stream", ro)
    with pytest.raises(popsim.StreamConnectionError, match="'v4-output-stream'.*numpy array"):
        e.connect_stream("v4-output-stream", [0] * 10)


def test_failed_connect_leaves_the_stream_unconnected_and_usable(small_device):
    e = _stream_engine(small_device)
    with pytest.raises(popsim.StreamConnectionError):
        e.connect_stream("v4-input-stream", np.arange(10, dtype=np.int64))
    with pytest.raises(popsim.StreamConnectionError, match="not connected"):
        e.run(0)
    e.connect_stream("v4-input-stream", np.arange(10, dtype=np.int32) * 3)
    e.connect_stream("v4-output-stream", np.zeros(10, np.int32))
    e.run(0)
    np.testing.assert_array_equal(e.read_tensor("x-read"), np.arange(10) * 3)


def test_connect_unknown_stream_suggests_closest(small_device):
    e = _stream_engine(small_device)
    with pytest.raises(popsim.UnknownHandleError) as info:
        e.connect_stream("v4-input-strem", np.arange(10, dtype=np.int32))
    assert isinstance(info.value, KeyError)
    msg = str(info.value)
    assert "'v4-input-strem'" in msg
    assert "did you mean 'v4-input-stream'" in msg
    with pytest.raises(KeyError, match="did you mean 'v4-output-stream'"):
        e.connect_stream_to_callback("v4-output-strem", lambda buf: None)
    with pytest.raises(popsim.UnknownHandleError, match="'nothing-like-it'"):
        e.disconnect_stream("nothing-like-it")


def test_connect_stream_to_non_callable(small_device):
    e = _stream_engine(small_device)
    with pytest.raises(popsim.StreamConnectionError, match="'v4-input-stream'.*callable"):
        e.connect_stream_to_callback("v4-input-stream", 42)


class _CallbackFailure(Exception):
    pass


def test_host_to_device_callback_exception_propagates_then_reconnect(small_device):
    g = popsim.Graph(small_device)
    x = mapped(g, INT, (4,), "x")
    ins = g.add_host_to_device_fifo("ins", INT, 4)
    g.create_host_read("x-read", x)
    e = popsim.Engine(g, Repeat(3, Copy(ins, x)))
    e.load(small_device)
    calls = []
    failure = _CallbackFailure("the host ran out of data")

    def flaky(buf):
        calls.append(1)
        if len(calls) == 2:
            raise failure
        buf[:] = len(calls)

    e.connect_stream_to_callback("ins", flaky)
    with pytest.raises(_CallbackFailure) as info:
        e.run(0)
    assert info.value is failure
    assert len(calls) == 2
    np.testing.assert_array_equal(e.read_tensor("x-read"), [1, 1, 1, 1])

    count = []

    def good(buf):
        count.append(1)
        buf[:] = np.arange(4) + 10 * len(count)

    e.connect_stream_to_callback("ins", good)
    e.run(0)
    assert len(count) == 3
    np.testing.assert_array_equal(e.read_tensor("x-read"), [30, 31, 32, 33])


def test_device_to_host_callback_exception_propagates_then_reconnect(small_device):
    g = popsim.Graph(small_device)
    x = mapped(g, INT, (2,), "x")
    g.set_initial_value(x, [4, 2])
    outs = g.add_device_to_host_fifo("outs", INT, 2)
    e = popsim.Engine(g, Repeat(2, Copy(x, outs)))
    e.load(small_device)

    def broken(buf):
        raise ValueError(f"cannot take {buf.tolist()}")

    e.connect_stream_to_callback("outs", broken)
    with pytest.raises(ValueError, match=re.escape("cannot take [4, 2]")):
        e.run(0)
    host = np.zeros(4, np.int32)
    e.connect_stream("outs", host)
    e.run(0)
    np.testing.assert_array_equal(host, [4, 2, 4, 2])
