"""Engine streams: Poplar's StreamCallback protocol (prefetch / fetch / complete) in both
directions, plain callback functions, and host arrays the device only reads."""
import numpy as np
import pytest

import popsim
from popsim import FLOAT, INT
from popsim.program import Copy, Repeat, Sequence

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
