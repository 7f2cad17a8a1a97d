"""Bad inputs raise clear errors.

Every error must be the right PopsimError subclass (re-exported from popsim) and its
message must name the object (tensor, stream handle, option key, tile...), say what was
expected and what was found, and how to fix it. After a failed run the engine must stay
usable.
"""
import builtins
import io
import re

import numpy as np
import pytest

import popsim
from popsim import FLOAT, HALF, INT
from popsim.program import (Abort, AbortOnCondition, Call, Copy, If, Repeat, RepeatWhileFalse, RepeatWhileTrue,
                            Sequence, Switch)
from popsim.lower import cost_model as _cm

# Every tile also holds the control program (one instruction for an empty program) and the stacks.
FIXED_TILE_BYTES = _cm.CONTROL_CODE_BYTES + 6 * _cm.WORKER_STACK_BYTES + _cm.SUPERVISOR_STACK_BYTES


def mapped(graph, dtype, shape, name, tile=0):
    t = graph.add_variable(dtype, shape, name)
    graph.set_tile_mapping(t, tile)
    return t


def mapped_const(graph, dtype, shape, values, name, tile=0):
    c = graph.add_constant(dtype, shape, values, name)
    graph.set_tile_mapping(c, tile)
    return c


def small_model(tiles=4, version="ipu2", **fields):
    model = popsim.IPUModel(version)
    model.tiles_per_ipu = tiles
    for k, v in fields.items():
        setattr(model, k, v)
    return model


def test_error_classes_are_exported_and_rooted():
    names = ["GraphConnectionError", "GraphCycleError", "InvalidTileMappingError", "GraphMemoryAllocationError",
             "UnknownVertexTypeError", "UnknownFieldError", "StreamConnectionError", "InvalidOptionError",
             "ControlProgramError", "TensorCreationError", "IndexError", "ApplicationRuntimeError",
             "CodeletSyntaxError", "CodeletCompileError", "UnknownHandleError", "EngineStateError",
             "TensorIOError"]
    for name in names:
        cls = getattr(popsim, name)
        assert cls is getattr(popsim.errors, name)
        assert issubclass(cls, popsim.PopsimError), name
    assert issubclass(popsim.IndexError, builtins.IndexError)
    assert issubclass(popsim.UnknownHandleError, KeyError)
    assert issubclass(popsim.TensorIOError, ValueError)
    assert popsim.IndexError is not builtins.IndexError


# ---------------------------------------------------------------------------------------------
# 1. Unmapped elements at Engine construction
# ---------------------------------------------------------------------------------------------
def test_partly_unmapped_variable_names_tensor_and_first_gap(small_device):
    g = popsim.Graph(small_device)
    v = g.add_variable(FLOAT, (4,), "v")
    g.set_tile_mapping(v[0:2], 1)
    with pytest.raises(popsim.InvalidTileMappingError) as info:
        popsim.Engine(g, Sequence())
    msg = str(info.value)
    assert "variable 'v'" in msg
    assert "[2, 4)" in msg
    assert "unmapped" in msg
    assert "set_tile_mapping" in msg  # how to fix it


def test_unmapped_gap_in_the_middle_is_the_first_gap(small_device):
    g = popsim.Graph(small_device)
    v = g.add_variable(FLOAT, (2, 4), "mid")
    g.set_tile_mapping(v[0], 0)
    g.set_tile_mapping(v[1, 2:], 3)
    with pytest.raises(popsim.InvalidTileMappingError, match=re.escape("[4, 6)")) as info:
        popsim.Engine(g, Sequence())
    assert "'mid'" in str(info.value)


def test_fully_unmapped_variable(small_device):
    g = popsim.Graph(small_device)
    mapped(g, FLOAT, (3,), "fine")
    g.add_variable(INT, (5,), "lonely")
    with pytest.raises(popsim.InvalidTileMappingError) as info:
        popsim.Engine(g, Sequence())
    msg = str(info.value)
    assert "'lonely'" in msg and "[0, 5)" in msg
    assert "'fine'" not in msg


def test_unmapped_constant(small_device):
    g = popsim.Graph(small_device)
    g.add_constant(INT, (3,), [1, 2, 3], "c1")
    with pytest.raises(popsim.InvalidTileMappingError) as info:
        popsim.Engine(g, Sequence())
    msg = str(info.value)
    assert "constant 'c1'" in msg and "[0, 3)" in msg


def test_partly_mapped_constant(small_device):
    g = popsim.Graph(small_device)
    c = g.add_constant(INT, (3,), [1, 2, 3], "c2")
    g.set_tile_mapping(c[1:], 2)
    with pytest.raises(popsim.InvalidTileMappingError, match=re.escape("[0, 1)")) as info:
        popsim.Engine(g, Sequence())
    assert "'c2'" in str(info.value)


# ---------------------------------------------------------------------------------------------
# 2. Tile out of range in set_tile_mapping
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("tile", [4, 100, -1, np.int64(7)])
def test_tile_out_of_range_single_tile(small_device, tile):
    g = popsim.Graph(small_device)
    v = g.add_variable(FLOAT, (4,), "v")
    with pytest.raises(popsim.InvalidTileMappingError) as info:
        g.set_tile_mapping(v, tile)
    msg = str(info.value)
    assert f"tile {int(tile)}" in msg
    assert "'v'" in msg
    assert "4 tiles (0..3)" in msg


def test_tile_out_of_range_on_a_slice(device):
    g = popsim.Graph(device)
    v = g.add_variable(FLOAT, (4,), "sl")
    with pytest.raises(popsim.InvalidTileMappingError, match=re.escape("tile 1472 is out of range")) as info:
        g.set_tile_mapping(v[1], 1472)
    assert "(0..1471)" in str(info.value)
    assert "'sl'" in str(info.value)


def test_tile_out_of_range_interval_list(small_device):
    g = popsim.Graph(small_device)
    v = g.add_variable(FLOAT, (4,), "v")
    with pytest.raises(popsim.InvalidTileMappingError) as info:
        g.set_tile_mapping(v, [[], [], [], [], [(0, 4)]])
    msg = str(info.value)
    assert "'v'" in msg
    assert "5 tiles" in msg and "has 4" in msg


def test_tile_out_of_range_interval_list_names_tile_and_range(small_device):
    g = popsim.Graph(small_device)
    v = g.add_variable(FLOAT, (4,), "v")
    with pytest.raises(popsim.InvalidTileMappingError) as info:
        g.set_tile_mapping(v, [[], [], [], [], [(0, 4)]])
    msg = str(info.value)
    assert "tile 4" in msg
    assert "0..3" in msg


def test_interval_outside_the_tensor(small_device):
    g = popsim.Graph(small_device)
    v = g.add_variable(FLOAT, (4,), "v")
    with pytest.raises(popsim.InvalidTileMappingError) as info:
        g.set_tile_mapping(v, [[(0, 9)]])
    msg = str(info.value)
    assert "'v'" in msg and "[0, 9)" in msg and "4 elements" in msg


def test_tile_out_of_range_in_virtual_graph(small_device):
    g = popsim.Graph(small_device)
    sub = g.create_virtual_graph(1, 3)
    v = sub.add_variable(FLOAT, (4,), "vv")
    # Tile 2 exists on the device but not in the 2-tile virtual graph.
    with pytest.raises(popsim.InvalidTileMappingError) as info:
        sub.set_tile_mapping(v, 2)
    msg = str(info.value)
    assert "tile 2" in msg and "'vv'" in msg
    assert "virtual graph has 2 tiles (0..1)" in msg
    with pytest.raises(popsim.InvalidTileMappingError, match=re.escape("tile -1")):
        sub.set_tile_mapping(v[0], -1)
    with pytest.raises(popsim.InvalidTileMappingError, match="'vv'") as info:
        sub.set_tile_mapping(v, [[], [], [(0, 4)]])
    assert "has 2" in str(info.value)
    sub.set_tile_mapping(v, 1)  # a valid local tile still works


def test_virtual_graph_out_of_range(small_device):
    g = popsim.Graph(small_device)
    with pytest.raises(popsim.InvalidTileMappingError, match=re.escape("[2, 9)")) as info:
        g.create_virtual_graph(2, 9)
    assert "4 tiles" in str(info.value)


# ---------------------------------------------------------------------------------------------
# 3. Copy between tensors of different sizes or types
# ---------------------------------------------------------------------------------------------
def test_copy_element_count_mismatch(small_device):
    g = popsim.Graph(small_device)
    a = mapped(g, FLOAT, (4,), "src4")
    b = mapped(g, FLOAT, (4, 4), "dst16")
    with pytest.raises(popsim.ControlProgramError) as info:
        Copy(a, b)
    msg = str(info.value)
    assert "'src4'" in msg and "'dst16'" in msg
    assert "4 elements" in msg and "16 elements" in msg
    assert "must be equal" in msg


def test_copy_type_mismatch(small_device):
    g = popsim.Graph(small_device)
    a = mapped(g, FLOAT, (4,), "f")
    b = mapped(g, INT, (4,), "i")
    with pytest.raises(popsim.ControlProgramError) as info:
        Copy(a, b)
    msg = str(info.value)
    assert "'f'" in msg and "'i'" in msg
    assert "FLOAT" in msg and "INT" in msg
    assert "cast" in msg


def test_copy_shapes_may_differ(small_device):
    g = popsim.Graph(small_device)
    Copy(mapped(g, FLOAT, (2, 3), "a"), mapped(g, FLOAT, (6,), "b"))  # no error


def test_copy_into_constant(small_device):
    g = popsim.Graph(small_device)
    v = mapped(g, FLOAT, (4,), "v")
    c = mapped_const(g, FLOAT, (4,), 1.0, "cst")
    with pytest.raises(popsim.ControlProgramError, match="'cst'.*constant"):
        Copy(v, c)


# ---------------------------------------------------------------------------------------------
# 4. Copy in the wrong direction of a stream
# ---------------------------------------------------------------------------------------------
def test_copy_from_device_to_host_stream_into_tensor(small_device):
    g = popsim.Graph(small_device)
    x = mapped(g, INT, (10,), "x")
    out = g.add_device_to_host_fifo("results", INT, 10)
    with pytest.raises(popsim.StreamConnectionError) as info:
        Copy(out, x)
    msg = str(info.value)
    assert "'results'" in msg and "'x'" in msg
    assert "device-to-host" in msg
    assert "add_host_to_device_fifo" in msg


def test_copy_tensor_into_host_to_device_stream(small_device):
    g = popsim.Graph(small_device)
    x = mapped(g, INT, (10,), "x")
    inp = g.add_host_to_device_fifo("inputs", INT, 10)
    with pytest.raises(popsim.StreamConnectionError) as info:
        Copy(x, inp)
    msg = str(info.value)
    assert "'inputs'" in msg and "'x'" in msg
    assert "host-to-device" in msg
    assert "add_device_to_host_fifo" in msg


def test_copy_stream_type_and_size_mismatch(small_device):
    g = popsim.Graph(small_device)
    x = mapped(g, INT, (10,), "x")
    fs = g.add_host_to_device_fifo("floats", FLOAT, 10)
    short = g.add_host_to_device_fifo("short", INT, 8)
    with pytest.raises(popsim.StreamConnectionError) as info:
        Copy(fs, x)
    assert "'floats'" in str(info.value) and "FLOAT" in str(info.value) and "INT" in str(info.value)
    with pytest.raises(popsim.StreamConnectionError) as info:
        Copy(short, x)
    msg = str(info.value)
    assert "'short'" in msg and "8 elements" in msg and "10 elements" in msg


# ---------------------------------------------------------------------------------------------
# Streams at run time, 5 and 6
# ---------------------------------------------------------------------------------------------
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


def test_duplicate_stream_handle(small_device):
    g = popsim.Graph(small_device)
    g.add_host_to_device_fifo("dup", INT, 1)
    with pytest.raises(popsim.StreamConnectionError, match="'dup' already exists.*unique"):
        g.add_host_to_device_fifo("dup", INT, 1)
    with pytest.raises(popsim.StreamConnectionError, match="'dup' already exists"):
        g.add_device_to_host_fifo("dup", FLOAT, 4)


# ---------------------------------------------------------------------------------------------
# 7, 8. Host reads and writes
# ---------------------------------------------------------------------------------------------
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


def test_duplicate_host_handle(small_device):
    g = popsim.Graph(small_device)
    a = mapped(g, FLOAT, (2,), "a")
    b = mapped(g, FLOAT, (2,), "b")
    g.create_host_write("h", a)
    with pytest.raises(popsim.DuplicateHandleError, match="'h' is already used for tensor 'a'.*unique"):
        g.create_host_write("h", b)


def test_host_write_to_constant(small_device):
    g = popsim.Graph(small_device)
    c = mapped_const(g, FLOAT, (2,), 1.0, "k")
    with pytest.raises(popsim.TensorCreationError, match="'kw'.*'k'.*constant"):
        g.create_host_write("kw", c)


# ---------------------------------------------------------------------------------------------
# 9. Program index out of range
# ---------------------------------------------------------------------------------------------
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


# ---------------------------------------------------------------------------------------------
# 10. Engine options
# ---------------------------------------------------------------------------------------------
@pytest.fixture
def tiny_graph(small_device):
    g = popsim.Graph(small_device)
    mapped(g, FLOAT, (2,), "w")
    return g


@pytest.fixture
def no_env_options(monkeypatch):
    monkeypatch.delenv("POPSIM_ENGINE_OPTIONS", raising=False)


def test_unknown_option_suggests_closest(tiny_graph, no_env_options):
    with pytest.raises(popsim.InvalidOptionError) as info:
        popsim.Engine(tiny_graph, Sequence(), {"debug.allowOutOfMemroy": "true"})
    msg = str(info.value)
    assert "'debug.allowOutOfMemroy'" in msg
    assert "did you mean 'debug.allowOutOfMemory'" in msg


def test_unknown_option_without_close_match_lists_known(tiny_graph, no_env_options):
    with pytest.raises(popsim.InvalidOptionError, match=r"'xyz'.*known: 'autoReport\.all'"):
        popsim.Engine(tiny_graph, Sequence(), {"xyz": "1"})


@pytest.mark.parametrize("key,value,choices", [
    ("debug.allowOutOfMemory", "yes", "true, false"),
    ("target.deterministicWorkers", "sometimes", "true, false, portable"),
    ("popsim.codeletMode", "jit", "compiled, interpreted"),
])
def test_bad_value_for_enumerated_option(tiny_graph, no_env_options, key, value, choices):
    with pytest.raises(popsim.InvalidOptionError) as info:
        popsim.Engine(tiny_graph, Sequence(), {key: value})
    msg = str(info.value)
    assert f"'{key}'" in msg
    assert choices in msg
    assert repr(value) in msg


def test_option_value_of_wrong_python_type(tiny_graph, no_env_options):
    with pytest.raises(popsim.InvalidOptionError, match=r"'debug.allowOutOfMemory'.*strings.*list"):
        popsim.Engine(tiny_graph, Sequence(), {"debug.allowOutOfMemory": [1]})


def test_bad_value_for_numeric_option_says_what_is_expected(tiny_graph, no_env_options):
    with pytest.raises(popsim.InvalidOptionError) as info:
        popsim.Engine(tiny_graph, Sequence(), {"opt.maxCompilationThreads": "-1"})
    msg = str(info.value)
    assert "'opt.maxCompilationThreads'" in msg and "'-1'" in msg
    assert "integer" in msg


def test_options_not_a_mapping(tiny_graph, no_env_options):
    with pytest.raises((popsim.InvalidOptionError, TypeError), match="dict|mapping"):
        popsim.Engine(tiny_graph, Sequence(), ["debug.allowOutOfMemory"])


def test_unknown_option_from_environment(tiny_graph, monkeypatch):
    monkeypatch.setenv("POPSIM_ENGINE_OPTIONS", '{"debug.allowOutOfMemroy": "true"}')
    with pytest.raises(popsim.InvalidOptionError) as info:
        popsim.Engine(tiny_graph, Sequence())
    msg = str(info.value)
    assert "'debug.allowOutOfMemroy'" in msg
    assert "did you mean 'debug.allowOutOfMemory'" in msg


def test_unknown_option_from_environment_names_the_variable(tiny_graph, monkeypatch):
    monkeypatch.setenv("POPSIM_ENGINE_OPTIONS", '{"debug.allowOutOfMemroy": "true"}')
    with pytest.raises(popsim.InvalidOptionError, match="POPSIM_ENGINE_OPTIONS"):
        popsim.Engine(tiny_graph, Sequence())


def test_bad_option_value_from_environment(tiny_graph, monkeypatch):
    monkeypatch.setenv("POPSIM_ENGINE_OPTIONS", '{"debug.allowOutOfMemory": "maybe"}')
    with pytest.raises(popsim.InvalidOptionError, match=r"'debug.allowOutOfMemory'.*true, false.*'maybe'"):
        popsim.Engine(tiny_graph, Sequence(), {"debug.allowOutOfMemory": "false"})


@pytest.mark.parametrize("text", ["{bad json", '{"a": 1,}', "true"])
def test_invalid_json_in_environment(tiny_graph, monkeypatch, text):
    monkeypatch.setenv("POPSIM_ENGINE_OPTIONS", text)
    with pytest.raises(popsim.InvalidOptionError) as info:
        popsim.Engine(tiny_graph, Sequence())
    msg = str(info.value)
    assert "POPSIM_ENGINE_OPTIONS" in msg
    assert "JSON" in msg


def test_json_array_in_environment(tiny_graph, monkeypatch):
    monkeypatch.setenv("POPSIM_ENGINE_OPTIONS", "[1, 2]")
    with pytest.raises(popsim.InvalidOptionError, match="POPSIM_ENGINE_OPTIONS must be a JSON object.*list"):
        popsim.Engine(tiny_graph, Sequence())


# ---------------------------------------------------------------------------------------------
# 11, 12. Control program arguments
# ---------------------------------------------------------------------------------------------
def test_negative_repeat_count():
    with pytest.raises(popsim.ControlProgramError, match=r"Repeat count must be >= 0, found -1"):
        Repeat(-1, Sequence())


@pytest.mark.parametrize("count,found", [(2.5, "float 2.5"), ("3", "str '3'"), (True, "bool True"),
                                         (None, "NoneType None")])
def test_non_integer_repeat_count(count, found):
    with pytest.raises(popsim.ControlProgramError) as info:
        Repeat(count, Sequence())
    msg = str(info.value)
    assert "Repeat count must be an integer" in msg
    assert found in msg


def test_repeat_body_must_be_a_program():
    with pytest.raises(popsim.ControlProgramError, match="Repeat body must be a Program, found int"):
        Repeat(2, 5)


_PREDICATE_USERS = {
    "If predicate": lambda p: If(p, Sequence()),
    "RepeatWhileTrue predicate": lambda p: RepeatWhileTrue(Sequence(), p, Sequence()),
    "RepeatWhileFalse predicate": lambda p: RepeatWhileFalse(Sequence(), p, Sequence()),
    "Switch control": lambda p: Switch(p, {0: Sequence()}),
    "AbortOnCondition predicate": lambda p: AbortOnCondition(p, "m"),
}


@pytest.mark.parametrize("what", sorted(_PREDICATE_USERS))
def test_non_scalar_predicate(small_device, what):
    g = popsim.Graph(small_device)
    p = mapped(g, INT, (2, 3), "pred")
    with pytest.raises(popsim.ControlProgramError) as info:
        _PREDICATE_USERS[what](p)
    msg = str(info.value)
    assert msg.startswith(what)
    assert "'pred'" in msg
    assert "[2, 3]" in msg
    assert "one element" in msg


@pytest.mark.parametrize("what", sorted(_PREDICATE_USERS))
@pytest.mark.parametrize("dtype", [FLOAT, HALF])
def test_floating_point_predicate(small_device, what, dtype):
    g = popsim.Graph(small_device)
    p = mapped(g, dtype, (), "fpred")
    with pytest.raises(popsim.ControlProgramError) as info:
        _PREDICATE_USERS[what](p)
    msg = str(info.value)
    assert msg.startswith(what)
    assert "'fpred'" in msg and dtype.name in msg
    assert "integral" in msg


def test_predicate_that_is_not_a_tensor():
    with pytest.raises(popsim.ControlProgramError, match="If predicate must be a scalar Tensor, found int"):
        If(1, Sequence())


def test_single_element_predicates_are_fine(small_device):
    g = popsim.Graph(small_device)
    If(mapped(g, popsim.BOOL, (1, 1), "b"), Sequence())
    Switch(mapped(g, INT, (4,), "c")[2], {1: Sequence()})


def test_switch_duplicate_and_bad_case(small_device):
    g = popsim.Graph(small_device)
    c = mapped(g, INT, (), "c")
    sw = Switch(c, {1: Sequence()})
    with pytest.raises(popsim.ControlProgramError, match="two cases for the value 1"):
        sw.add(1, Sequence())
    with pytest.raises(popsim.ControlProgramError, match="integers, found str 'x'"):
        sw.add("x", Sequence())


# ---------------------------------------------------------------------------------------------
# 13. View indices out of range
# ---------------------------------------------------------------------------------------------
@pytest.fixture
def views_graph(small_device):
    g = popsim.Graph(small_device)
    t = mapped(g, FLOAT, (4,), "t")
    m = mapped(g, FLOAT, (4, 4), "m")
    return g, t, m


def _index_error(fn):
    with pytest.raises(popsim.IndexError) as info:
        fn()
    assert isinstance(info.value, builtins.IndexError)
    return str(info.value)


def test_index_out_of_range(views_graph):
    _, t, m = views_graph
    msg = _index_error(lambda: t[5])
    assert "index 5" in msg and "'t'" in msg and "-4..3" in msg
    msg = _index_error(lambda: t[-5])
    assert "index -5" in msg and "-4..3" in msg
    msg = _index_error(lambda: m[:, 9])
    assert "index 9" in msg and "dimension 1" in msg and "'m'" in msg and "-4..3" in msg
    msg = _index_error(lambda: m[1][4])
    assert "index 4" in msg and "'m'" in msg
    msg = _index_error(lambda: m.index([1, 7]))
    assert "index 7" in msg and "'m'" in msg


def test_builtin_except_clause_catches_index_errors(views_graph):
    _, t, _ = views_graph
    try:
        t[5]
    except IndexError as e:  # the builtin
        assert "'t'" in str(e)
    else:
        pytest.fail("t[5] did not raise")


def test_too_many_indices(views_graph):
    _, t, m = views_graph
    msg = _index_error(lambda: t[1, 2])
    assert "too many indices" in msg and "'t'" in msg and "rank 1" in msg
    msg = _index_error(lambda: m[0, 1, 2])
    assert "3 given for rank 2" in msg and "'m'" in msg


def test_index_of_wrong_kind(views_graph):
    _, t, _ = views_graph
    msg = _index_error(lambda: t[1.5])
    assert "'t'" in msg and "float" in msg


@pytest.mark.parametrize("begin,end", [(3, 9), (3, 1), (-1, 2), (5, 5)])
def test_slice_out_of_range(views_graph, begin, end):
    _, t, _ = views_graph
    msg = _index_error(lambda: t.slice(begin, end))
    assert f"slice [{begin}, {end})" in msg
    assert "'t'" in msg
    assert "0 <= begin <= end <= 4" in msg


def test_multi_dim_slice_out_of_range(views_graph):
    _, _, m = views_graph
    msg = _index_error(lambda: m.slice([0, 0], [2, 9]))
    assert "[0, 9)" in msg and "dimension 1" in msg and "'m'" in msg and "<= 4" in msg
    msg = _index_error(lambda: m.slice([0], [2]))
    assert "one entry per dimension" in msg and "'m'" in msg


def test_slice_of_an_indexed_view_out_of_range(views_graph):
    g, t, _ = views_graph
    u = mapped(g, FLOAT, (4,), "u")
    joined = popsim.concat([t, u[::-1]])
    msg = _index_error(lambda: joined.slice(2, 10))
    assert "[2, 10)" in msg and "'t+u'" in msg and "<= 8" in msg
    msg = _index_error(lambda: joined[8])
    assert "-8..7" in msg


@pytest.mark.parametrize("op,call", [
    ("slice", lambda m: m.slice(0, 1, 2)),
    ("reverse", lambda m: m.reverse(2)),
    ("subsample", lambda m: m.subsample(2, 2)),
    ("broadcast", lambda m: m.broadcast(2, 3)),
    ("upsample", lambda m: m.upsample(2, 5)),
    ("dim_roll", lambda m: m.dim_roll(2)),
    ("squeeze", lambda m: m.squeeze([2])),
    ("dim", lambda m: m.dim(2)),
])
def test_dimension_out_of_range(views_graph, op, call):
    _, _, m = views_graph
    msg = _index_error(lambda: call(m))
    assert msg.startswith(f"{op}: dimension")
    assert "out of range" in msg
    assert "'m'" in msg and "valid dimensions are 0..1" in msg


def test_other_dimension_errors(views_graph):
    _, _, m = views_graph
    msg = _index_error(lambda: m.flatten(1, 3))
    assert "flatten" in msg and "[1, 3)" in msg and "'m'" in msg
    msg = _index_error(lambda: m.expand([3]))
    assert "position 3" in msg and "'m'" in msg and "0..2" in msg
    msg = _index_error(lambda: m.dim_shuffle([0, 0]))
    assert "[0, 0]" in msg and "permutation" in msg and "'m'" in msg
    msg = _index_error(lambda: popsim.concat([m, m], 2))
    assert "concat" in msg and "dimension 2" in msg


def test_squeeze_of_non_singleton(views_graph):
    _, _, m = views_graph
    with pytest.raises(popsim.TensorCreationError, match=r"squeeze: dimension 1 of tensor 'm'.*size 4, not 1"):
        m.squeeze([1])


# ---------------------------------------------------------------------------------------------
# 14. Tile memory overflow
# ---------------------------------------------------------------------------------------------
def _oom_graph(device):
    g = popsim.Graph(device)
    big = mapped(g, FLOAT, (200_000,), "big", tile=3)      # 800,000 bytes > 638,976
    mapped(g, FLOAT, (100,), "small_one", tile=3)
    mapped(g, FLOAT, (180_000,), "big2", tile=1)           # 720,000 bytes
    mapped(g, FLOAT, (1000,), "fits", tile=0)
    g.create_host_read("big-read", big)
    return g


def test_out_of_memory_names_worst_tile_and_its_tensors(device, no_env_options):
    g = _oom_graph(device)
    with pytest.raises(popsim.GraphMemoryAllocationError) as info:
        popsim.Engine(g, Sequence())
    msg = str(info.value)
    assert "2 tile(s)" in msg
    assert "tile 3" in msg
    assert f"{800_400 + FIXED_TILE_BYTES:,} bytes" in msg       # 'big', 'small_one', code and stacks
    assert "638,976" in msg
    assert "'big' (800,000 bytes)" in msg and "'small_one'" in msg
    assert msg.index("'big'") < msg.index("'small_one'")  # largest first
    assert f"tile 1 ({720_000 + FIXED_TILE_BYTES:,} bytes)" in msg
    assert "'fits'" not in msg
    assert "debug.allowOutOfMemory" in msg  # how to get past it


def test_out_of_memory_single_tile(device, no_env_options):
    g = popsim.Graph(device)
    mapped(g, FLOAT, (200_000,), "big", tile=3)
    with pytest.raises(popsim.GraphMemoryAllocationError) as info:
        popsim.Engine(g, Sequence())
    msg = str(info.value)
    assert "1 tile(s)" in msg and "tile 3" in msg and "'big'" in msg and "638,976" in msg


def test_linear_mapping_of_the_same_data_fits(device, no_env_options):
    g = popsim.Graph(device)
    g.add_variable(FLOAT, (200_000,), "big", mapping=popsim.VariableMappingMethod.LINEAR)
    popsim.Engine(g, Sequence())


def test_allow_out_of_memory_builds_reports_but_does_not_run(device, no_env_options):
    g = _oom_graph(device)
    e = popsim.Engine(g, Sequence(), {"debug.allowOutOfMemory": "true"})
    report = e.get_report()
    assert report.memory.max_tile == 3
    assert report.memory.max_bytes == 800_400 + FIXED_TILE_BYTES
    assert report.memory.tiles_out_of_memory == [1, 3]
    out = io.StringIO()
    e.print_profile_summary(out)
    assert "out of memory" in out.getvalue()
    e.load(device)
    with pytest.raises(popsim.EngineStateError) as info:
        e.run(0)
    msg = str(info.value)
    assert "debug.allowOutOfMemory" in msg
    assert "2 tile(s)" in msg and "out of memory" in msg
    assert "get_report" in msg  # what can still be done
    with pytest.raises(popsim.EngineStateError, match="debug.allowOutOfMemory"):
        e.read_tensor("big-read")


def test_allow_out_of_memory_run_error_names_the_worst_tile(device, no_env_options):
    g = _oom_graph(device)   # tile 3 needs 800,400 bytes, tile 1 720,000
    e = popsim.Engine(g, Sequence(), {"debug.allowOutOfMemory": "true"})
    e.load(device)
    with pytest.raises(popsim.EngineStateError, match=re.escape("worst: tile 3")):
        e.run(0)


def test_allow_out_of_memory_from_environment(device, monkeypatch):
    monkeypatch.setenv("POPSIM_ENGINE_OPTIONS", '{"debug.allowOutOfMemory": "true"}')
    g = _oom_graph(device)
    e = popsim.Engine(g, Sequence(), {"debug.allowOutOfMemory": "false"})  # the environment wins
    assert e.get_report().memory.tiles_out_of_memory == [1, 3]


# ---------------------------------------------------------------------------------------------
# 15. The engine stays usable after a failed run
# ---------------------------------------------------------------------------------------------
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


# ---------------------------------------------------------------------------------------------
# 16. Other bad inputs
# ---------------------------------------------------------------------------------------------
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


def test_function_calling_itself(small_device):
    g = popsim.Graph(small_device)
    body = Sequence()
    f = g.add_function(body, "selfish")
    body.add(Call(f))
    with pytest.raises(popsim.ControlProgramError) as info:
        popsim.Engine(g, Sequence(Call(f)))
    msg = str(info.value)
    assert "'selfish' calls itself" in msg
    assert "recurse" in msg
    assert "Repeat" in msg  # how to fix it


def test_mutually_recursive_functions(small_device):
    g = popsim.Graph(small_device)
    a, b = Sequence(), Sequence()
    fa = g.add_function(a, "ping")
    fb = g.add_function(b, "pong")
    a.add(Call(fb))
    b.add(Call(fa))
    with pytest.raises(popsim.ControlProgramError, match=re.escape("(ping -> pong -> ping)")):
        popsim.Engine(g, Call(fa))


def test_call_needs_a_function():
    with pytest.raises(popsim.ControlProgramError, match="Call takes a Function.*found Sequence"):
        Call(Sequence())


def test_concat_type_mismatch(views_graph):
    g, t, _ = views_graph
    i = mapped(g, INT, (4,), "ints")
    with pytest.raises(popsim.TensorCreationError) as info:
        popsim.concat([t, i])
    msg = str(info.value)
    assert "'ints'" in msg and "'t'" in msg and "INT" in msg and "FLOAT" in msg


def test_concat_shape_mismatch(views_graph):
    g, t, m = views_graph
    w = mapped(g, FLOAT, (4, 3), "w")
    with pytest.raises(popsim.TensorCreationError) as info:
        popsim.concat([m, w], 0)
    msg = str(info.value)
    assert "'w'" in msg and "[4, 3]" in msg and "'m'" in msg and "[4, 4]" in msg
    popsim.concat([m, w], 1)  # fine along the differing dimension
    with pytest.raises(popsim.TensorCreationError, match=r"'t' of shape \[4\].*'m' of shape \[4, 4\]"):
        popsim.concat([m, t])
    with pytest.raises(popsim.TensorCreationError, match="at least one tensor"):
        popsim.concat([])


def test_concat_across_graphs(small_device):
    a = mapped(popsim.Graph(small_device), FLOAT, (2,), "a")
    b = mapped(popsim.Graph(small_device), FLOAT, (2,), "b")
    with pytest.raises(popsim.TensorCreationError, match="different graph"):
        popsim.concat([a, b])


def test_append_rank_mismatch(views_graph):
    _, t, m = views_graph
    with pytest.raises(popsim.TensorCreationError, match=r"append:.*'m'.*rank 0"):
        popsim.append(t, m)


def test_reshape_wrong_element_count(views_graph):
    _, t, m = views_graph
    with pytest.raises(popsim.TensorCreationError) as info:
        t.reshape((3,))
    msg = str(info.value)
    assert "'t'" in msg and "4 elements" in msg and "3 elements" in msg
    with pytest.raises(popsim.TensorCreationError, match=r"'m'.*\[3, -1\].*16 elements"):
        m.reshape((3, -1))
    with pytest.raises(popsim.TensorCreationError, match="only one dimension may be -1"):
        m.reshape((-1, -1))


def test_reinterpret_to_a_different_size(views_graph):
    _, t, _ = views_graph
    with pytest.raises(popsim.TensorCreationError) as info:
        t.reinterpret(HALF)
    msg = str(info.value)
    assert "'t'" in msg and "FLOAT (4 bytes)" in msg and "HALF (2 bytes)" in msg
    assert t.reinterpret(INT).dtype is INT


def test_transpose_needs_rank_2(views_graph):
    _, t, _ = views_graph
    with pytest.raises(popsim.TensorCreationError, match="'t'.*rank 1.*dim_shuffle"):
        t.transpose()


def test_add_constant_wrong_number_of_values(small_device):
    g = popsim.Graph(small_device)
    with pytest.raises(popsim.TensorCreationError) as info:
        g.add_constant(FLOAT, (4,), [1.0, 2.0, 3.0], "c1")
    msg = str(info.value)
    assert "3 values" in msg and "[4]" in msg and "4 elements" in msg
    g.add_constant(FLOAT, (4,), 2.0, "scalar_fills")  # a scalar is fine


def test_add_constant_wrong_number_of_values_names_the_constant(small_device):
    g = popsim.Graph(small_device)
    with pytest.raises(popsim.TensorCreationError, match="'c1'"):
        g.add_constant(FLOAT, (4,), [1.0, 2.0, 3.0], "c1")


def test_add_constant_values_that_do_not_fit(small_device):
    g = popsim.Graph(small_device)
    with pytest.raises(popsim.TensorCreationError, match="do not fit INT"):
        g.add_constant(INT, (2,), [2 ** 40, 1], "huge")
    with pytest.raises(popsim.TensorCreationError, match="do not fit INT"):
        g.add_constant(INT, (1,), [1e20], "huger")


def test_add_constant_non_numeric_values(small_device):
    g = popsim.Graph(small_device)
    with pytest.raises(popsim.TensorCreationError, match="add_constant.*values must be numbers"):
        g.add_constant(FLOAT, (2,), [1.0, None], "c")


def test_set_initial_value_errors(small_device):
    g = popsim.Graph(small_device)
    c = mapped_const(g, FLOAT, (4,), 1.0, "cst")
    v = mapped(g, FLOAT, (4,), "v")
    with pytest.raises(popsim.TensorCreationError) as info:
        g.set_initial_value(c, [1, 2, 3, 4])
    msg = str(info.value)
    assert "'cst'" in msg and "constant" in msg and "add_constant" in msg
    with pytest.raises(popsim.TensorCreationError, match=r"'v'.*3 values.*\[4\]"):
        g.set_initial_value(v, [1, 2, 3])
    with pytest.raises(popsim.TensorCreationError, match="'v'.*more than once"):
        g.set_initial_value(v[0:1].broadcast(2, 0), [1, 2])


def test_unknown_ipu_version():
    with pytest.raises(popsim.PopsimError) as info:
        popsim.IPUModel("ipu9")
    msg = str(info.value)
    assert "'ipu9'" in msg and "ipu1, ipu2, ipu21" in msg
    with pytest.raises(popsim.PopsimError, match="'ipu9'"):
        popsim.Target.create_ipu_target(version="ipu9")


def test_bad_model_fields():
    model = popsim.IPUModel("ipu2")
    with pytest.raises(popsim.PopsimError, match="tiles_per_ipu must be an integer >= 1, found 0"):
        model.tiles_per_ipu = 0  # checked when set (tests/test_ipu_model.py has the rest)


@pytest.mark.parametrize("factor", [0, -2, 1.5])
def test_bad_replication_factor(small_device, factor):
    with pytest.raises(popsim.PopsimError) as info:
        popsim.Graph(small_device, replication_factor=factor)
    msg = str(info.value)
    assert "replication_factor must be a positive integer" in msg
    assert f"found {factor!r}" in msg


def test_graph_needs_a_target():
    with pytest.raises(TypeError, match="Graph needs a Target or a Device, found str"):
        popsim.Graph("ipu2")


def test_bogus_element_type(small_device):
    with pytest.raises(TypeError) as info:
        popsim.types.as_type("bogus")
    msg = str(info.value)
    assert "'bogus' is not an element type" in msg
    assert "FLOAT" in msg and "np.float32" in msg
    g = popsim.Graph(small_device)
    with pytest.raises(TypeError, match="'bogus' is not an element type"):
        g.add_variable("bogus", (2,), "v")
    with pytest.raises(TypeError, match="is not an element type"):
        g.add_variable(np.complex64, (2,), "v")
    with pytest.raises(TypeError, match="is not an element type"):
        mapped(g, FLOAT, (4,), "f").reinterpret("nope")


def test_negative_shape(small_device):
    g = popsim.Graph(small_device)
    with pytest.raises(popsim.TensorCreationError, match=re.escape("shape [-1, 2] has a negative size")):
        g.add_variable(FLOAT, (-1, 2), "neg")


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


def test_dimension_out_of_range_names_valid_dimensions(small_device):
    g = popsim.Graph(small_device)
    v = g.add_variable(FLOAT, (2, 3), "v")
    with pytest.raises(popsim.IndexError, match=r"reverse: dimension 2 .*'v'.*valid dimensions are 0\.\.1"):
        v.reverse(2)
