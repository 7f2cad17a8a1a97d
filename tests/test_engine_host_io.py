"""Engine host reads and writes (engine.write_tensor / read_tensor): arrays of the wrong
shape or type, bad ``out`` arrays, unknown or misused handles, and values that do not
fit the element type are refused with a message naming the handle and the fix."""
import re

import numpy as np
import pytest

import popsim
from popsim import FLOAT, INT
from popsim.program import Copy, Sequence

from graph_helpers import mapped


def _io_engine(device):
    g = popsim.Graph(device)
    m = mapped(g, FLOAT, (4, 4), "v3")
    g.create_host_write("v3-write", m)
    g.create_host_read("v3-read", m)
    e = popsim.Engine(g, Sequence())
    e.load(device)
    return e


def test_write_tensor_wrong_shape(small_device):
    e = _io_engine(small_device)
    with pytest.raises(popsim.TensorIOError) as info:
        e.write_tensor("v3-write", np.zeros((3, 4), np.float32))
    assert isinstance(info.value, ValueError)
    msg = str(info.value)
    assert "'v3-write'" in msg
    assert "[4, 4]" in msg and "[3, 4]" in msg
    with pytest.raises(popsim.TensorIOError, match=re.escape("[15]")):
        e.write_tensor("v3-write", np.zeros(15, np.float32))


def test_write_tensor_wrong_dtype(small_device):
    e = _io_engine(small_device)
    with pytest.raises(popsim.TensorIOError) as info:
        e.write_tensor("v3-write", np.zeros((4, 4), np.float64))
    assert isinstance(info.value, ValueError)
    msg = str(info.value)
    assert "'v3-write'" in msg
    assert "FLOAT" in msg and "float32" in msg and "float64" in msg
    assert "astype" in msg


def test_write_tensor_numpy_scalar_of_wrong_dtype(small_device):
    g = popsim.Graph(small_device)
    p = mapped(g, INT, (), "p")
    g.create_host_write("p-write", p)
    e = popsim.Engine(g, Sequence())
    e.load(small_device)
    with pytest.raises(popsim.TensorIOError, match="'p-write'.*INT.*float64"):
        e.write_tensor("p-write", np.array(1.7))  # a 0-d array: raises today
    with pytest.raises(popsim.TensorIOError, match="'p-write'.*INT.*float64"):
        e.write_tensor("p-write", np.float64(1.7))


def test_read_tensor_bad_out(small_device):
    e = _io_engine(small_device)
    with pytest.raises(popsim.TensorIOError) as info:
        e.read_tensor("v3-read", out=np.zeros((2, 8), np.float32))
    msg = str(info.value)
    assert "'v3-read'" in msg and "[4, 4]" in msg and "[2, 8]" in msg
    with pytest.raises(popsim.TensorIOError) as info:
        e.read_tensor("v3-read", out=np.zeros((4, 4), np.int32))
    msg = str(info.value)
    assert "'v3-read'" in msg and "float32" in msg and "int32" in msg
    with pytest.raises(popsim.TensorIOError, match="'v3-read'.*C-contiguous"):
        e.read_tensor("v3-read", out=np.zeros((4, 8), np.float32)[:, ::2])
    ro = np.zeros((4, 4), np.float32)
    ro.flags.writeable = False
    with pytest.raises(popsim.TensorIOError, match="'v3-read'.*writable"):
        e.read_tensor("v3-read", out=ro)
    with pytest.raises(popsim.TensorIOError, match="'v3-read'.*numpy array.*list"):
        e.read_tensor("v3-read", out=[[0.0] * 4] * 4)
    out = np.zeros((4, 4), np.float32)
    assert e.read_tensor("v3-read", out=out) is out  # still fine afterwards


def test_unknown_host_handles_suggest_closest(small_device):
    e = _io_engine(small_device)
    with pytest.raises(popsim.UnknownHandleError) as info:
        e.write_tensor("v3-wrte", np.zeros((4, 4), np.float32))
    assert isinstance(info.value, KeyError)
    msg = str(info.value)
    assert "'v3-wrte'" in msg and "did you mean 'v3-write'" in msg and "create_host_write" in msg
    with pytest.raises(popsim.UnknownHandleError) as info:
        e.read_tensor("v3-reed")
    msg = str(info.value)
    assert "'v3-reed'" in msg and "did you mean 'v3-read'" in msg and "create_host_read" in msg


def test_read_handle_used_for_writing_and_vice_versa(small_device):
    e = _io_engine(small_device)
    with pytest.raises(popsim.UnknownHandleError) as info:
        e.write_tensor("v3-read", np.zeros((4, 4), np.float32))
    msg = str(info.value)
    assert "'v3-read'" in msg and "read handle" in msg and "create_host_write" in msg
    with pytest.raises(popsim.UnknownHandleError) as info:
        e.read_tensor("v3-write")
    msg = str(info.value)
    assert "'v3-write'" in msg and "write handle" in msg and "create_host_read" in msg


def test_lists_that_do_not_fit_the_type_are_refused(small_device):
    """Python lists are converted, but never with silent loss."""
    g = popsim.Graph(small_device)
    v = mapped(g, INT, (2,), "v")
    g.create_host_write("v-write", v)
    s = g.add_host_to_device_fifo("s", INT, 2)
    e = popsim.Engine(g, Copy(s, v))
    e.load(small_device)
    with pytest.raises(popsim.TensorIOError, match="'v-write'.*do not fit INT.*round"):
        e.write_tensor("v-write", [1.5, 2])
    with pytest.raises(popsim.StreamConnectionError, match="'s'.*do not fit INT.*-2147483648..2147483647"):
        e.connect_stream("s", [2 ** 40, 1])
    e.write_tensor("v-write", [1.0, 2.0])  # integral floats are exact: accepted
