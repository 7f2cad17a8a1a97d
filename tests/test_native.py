"""The hand-over to the native core (popsim/native.py): every way building a machine can
fail is a PopsimError that says what to do, never a raw pybind or MemoryError."""
import copy
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import popsim
from popsim import FLOAT
from popsim.contract import COLUMNS, Op
from popsim.program import Copy, Sequence

import executable_sample


def small_graph(device):
    g = popsim.Graph(device)
    a = g.add_variable(FLOAT, [4], "a")
    b = g.add_variable(FLOAT, [4], "b")
    g.set_tile_mapping(a, 0)
    g.set_tile_mapping(b, 1)
    g.create_host_read("b", b)
    g.create_host_write("a", a)
    return g, Copy(a, b)


@pytest.mark.parametrize("key, value", [("popsim.traceLength", "99999999999999999999"),
                                        ("popsim.numThreads", "99999999999")])
def test_out_of_range_options_are_option_errors(device, key, value):
    g, prog = small_graph(device)
    with pytest.raises(popsim.InvalidOptionError) as info:
        popsim.Engine(g, prog, {key: value})
    message = str(info.value)
    assert value in message and "Invoked with" not in message and "arena_bytes" not in message


def test_an_arena_the_host_cannot_allocate_is_an_engine_error(device):
    """debug.allowOutOfMemory lets a graph far larger than the host through: allocating
    it fails with a PopsimError naming the bytes, not a MemoryError."""
    g = popsim.Graph(device)
    huge = g.add_variable(FLOAT, [2 ** 44], "huge")  # 64 TiB on one tile
    g.set_tile_mapping(huge, 0)
    with pytest.raises(popsim.EngineStateError, match=r"cannot allocate the engine's memory: 70,368,744,177,664 "
                                                      r"bytes of tile memory.*make the tensors smaller"):
        popsim.Engine(g, Sequence(), {"debug.allowOutOfMemory": "true"})


def test_a_big_out_of_memory_engine_costs_no_host_memory_until_used(device):
    """A 32 GiB tile (the issue's case) builds and loads without touching its pages."""
    g = popsim.Graph(device)
    big = g.add_variable(FLOAT, [8 * 2 ** 30], "big")
    g.set_tile_mapping(big, 0)
    try:
        engine = popsim.Engine(g, Sequence(), {"debug.allowOutOfMemory": "true"})
    except popsim.EngineStateError as e:  # a host that refuses even lazily zeroed memory
        assert "34,359,738,368 bytes" in str(e)
        return
    engine.load(device)
    assert engine.get_report().memory.tiles_out_of_memory == [0]
    with pytest.raises(popsim.EngineStateError, match="can be inspected"):
        engine.run()
    engine.close()


def test_a_malformed_table_is_refused_before_anything_runs(device):
    g, prog = small_graph(device)
    exe = popsim.compile_graph(g, prog)
    bad = copy.deepcopy(exe)
    lw = bad.lowered
    instrs, col = lw.programs.instrs, COLUMNS["instrs"]
    copy_table = int(instrs[instrs[:, col["op"]] == Op.COPY][0, col["a"]])
    lw.copy_runs[lw.table_begin[copy_table], COLUMNS["copy_runs"]["len"]] = 1 << 30  # a copy far past tile memory
    with pytest.raises(popsim.PopsimError, match="executable is malformed: .*reaches past the memory it copies"):
        popsim.Engine(bad)
    bad = copy.deepcopy(exe)
    bad.lowered.programs.instrs = bad.lowered.programs.instrs.astype(np.float64)
    with pytest.raises(popsim.PopsimError, match="Description.instrs: expected a C-contiguous int64 array"):
        popsim.Engine(bad)
    engine = popsim.Engine(exe)  # the original still works
    engine.load(device)
    engine.write_tensor("a", np.arange(4, dtype=np.float32))
    engine.run()
    np.testing.assert_array_equal(engine.read_tensor("b"), np.arange(4))


def test_vertex_state_memory_is_bounded_by_what_a_run_row_addresses(device):
    """The compute engine addresses vertex state objects in 16-byte units with 32 bits
    (its per-vertex run rows): more than 64 GiB of vertex state is a malformed
    executable, refused before anything is allocated."""
    g, prog = small_graph(device)
    exe = popsim.compile_graph(g, prog)
    bad = copy.deepcopy(exe)
    bad.lowered.vertices.state_bytes = 2 ** 36
    with pytest.raises(popsim.PopsimError, match="executable is malformed: state_bytes out of range"):
        popsim.Engine(bad)


def test_a_host_buffer_too_small_for_its_table_is_refused(device):
    g, prog = small_graph(device)
    engine = popsim.Engine(g, prog)
    engine.load(device)
    with pytest.raises(ValueError, match="does not fit a host buffer of 8 bytes"):
        engine._machine.write(engine.executable.lowered.host_writes["a"].table, np.zeros(2, np.float32))


def test_threads_that_cannot_start_are_an_error_not_a_hang(tmp_path):
    """With the address space capped, thread creation fails part way: Engine() raises
    (before the fix it hung, immune to Ctrl-C)."""
    script = textwrap.dedent("""
        import re, resource
        import popsim
        from popsim.program import Sequence
        device = popsim.IPUModel("ipu2").create_device()
        g = popsim.Graph(device)
        exe = popsim.compile_graph(g, Sequence())
        vm = int(re.search(r"VmSize:\\s+(\\d+)", open("/proc/self/status").read()).group(1)) * 1024
        resource.setrlimit(resource.RLIMIT_AS, (vm + (64 << 20), resource.RLIM_INFINITY))
        try:
            popsim.Engine(exe, {"popsim.numThreads": "256"})
            print("BUILT")
        except popsim.PopsimError as e:
            print("ERROR", e)
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    if "BUILT" in out:
        pytest.skip("this host started 256 threads within the address-space cap")
    assert "cannot start 256 threads" in out and "popsim.numThreads" in out, out


@pytest.mark.compiler
def test_an_executable_read_from_a_file_lends_its_tables_to_the_core(device, tmp_path):
    """The arrays of an executable read from a file are read-only, so the core borrows
    its big tables (copy segments, vertex, field and span rows) instead of copying them,
    and keeps them alive as long as the engine; a fresh compile's writable arrays are
    copied."""
    import gc

    import executable_sample as sample
    from popsim.native import describe
    g, progs = sample.build(device)
    exe = popsim.compile_graph(g, progs)
    assert describe(exe.lowered).num_lent == 0
    expected = sample.drive(popsim.Engine(exe), device)
    exe.serialize(tmp_path / "sample.popsimexe")
    loaded = popsim.Executable.deserialize(tmp_path / "sample.popsimexe")
    assert describe(loaded.lowered).num_lent == 4
    with pytest.raises(ValueError, match="read-only"):
        loaded.lowered.vertices.fields[0, 1] = 1 << 40
    engine = popsim.Engine(loaded)
    del loaded
    gc.collect()
    for _ in range(2):
        got = sample.drive(engine, device)
        for key in ("x", "y"):
            np.testing.assert_array_equal(got[key], expected[key])
        assert got["cycles"] == expected["cycles"]
        engine.reset_execution_profile()


class Add1(popsim.Vertex):
    x: popsim.InOut[popsim.Vector[float]]

    def compute(self):
        for i in range(len(self.x)):
            self.x[i] += 1.0


def state_offsets_case(device, change):
    """An Engine from an executable of three vertices whose state offsets ``change``
    rewrites (given the offsets as lowered); the tiles' results, or the error."""
    g = popsim.Graph(device)
    g.add_codelets(Add1)
    x = g.add_variable(FLOAT, [3, 2], "x")
    cs = g.add_compute_set("cs")
    for r in range(3):
        g.set_tile_mapping(x[r], 0)
        g.set_tile_mapping(g.add_vertex(cs, Add1, {"x": x[r]}), 0)
    g.create_host_read("x", x)
    exe = popsim.compile_graph(g, popsim.program.Execute(cs))
    rows, col = exe.lowered.vertices.vertices, COLUMNS["vertices"]["state_offset"]
    rows[:, col] = change(rows[:, col].copy())
    engine = popsim.Engine(exe)
    engine.load(device)
    engine.run()
    return engine.read_tensor("x")


@pytest.mark.compiler
def test_vertex_state_objects_are_checked_in_any_order(device):
    """State objects laid out in another order than the vertices' are accepted (and
    run); overlapping or misaligned ones are refused, in order or not."""
    np.testing.assert_array_equal(state_offsets_case(device, lambda o: o), np.ones((3, 2)))
    np.testing.assert_array_equal(state_offsets_case(device, lambda o: o[::-1]), np.ones((3, 2)))
    np.testing.assert_array_equal(state_offsets_case(device, lambda o: o[[1, 2, 0]]), np.ones((3, 2)))
    for change in (lambda o: o[[0, 0, 2]], lambda o: o[[2, 1, 2]], lambda o: o[[1, 0, 1]]):
        with pytest.raises(popsim.PopsimError, match="two vertices' state objects overlap"):
            state_offsets_case(device, change)
    with pytest.raises(popsim.PopsimError, match="state object is misaligned"):
        state_offsets_case(device, lambda o: o + 8)


@pytest.mark.compiler
@pytest.mark.parametrize("table, row, column, value, message", [
    ("fields", 1, "offset", 34, r"vertex row 0: field 1 at offset 34 is not aligned to 4 bytes"),
    ("spans", 1, "offset", 22, r"vertex row 0: field 0: sub-edge \(span row 1\) at offset 22 is not aligned to 4 "
                               r"bytes"),
    ("fields", 3, "offset", 1 << 20, r"vertex row 1: field 0 \(3 elements of 4 bytes at offset 1048576\) reaches "
                                     r"past tile memory \(\d+ bytes\)"),
    ("fields", 2, "size", 0, r"vertex row 0: field 2 is a scalar, but its row has 0 elements"),
    ("vertices", 1, "tile", 3, r"vertex row 1: on tile 3, but its tile group \(row 1\) runs on tile 1"),
    ("vertices", 0, "tile", 1472, r"vertex row 0: tile 1472 out of range \(expected 0..1471\)"),
])
def test_vertex_rows_are_checked_against_tile_memory_alignment_and_their_group(device, table, row, column, value,
                                                                               message):
    """A field's elements are aligned to their size (compiled vertices may load them with
    aligned vector loads) and in tile memory; a scalar has one element (its codelet reads
    one, whatever the row says: at the end of tile memory, with none, it would read or
    write past it); a vertex is on its group's tile. Each failure names the vertex row,
    the field and what was found."""
    g, progs = executable_sample.build(device)
    exe = popsim.compile_graph(g, progs)
    bad = copy.deepcopy(exe)
    getattr(bad.lowered.vertices, table)[row, COLUMNS[table][column]] = value
    with pytest.raises(popsim.PopsimError, match="executable is malformed: " + message):
        popsim.Engine(bad)
    executable_sample.drive(popsim.Engine(exe), device)  # the original runs


class _Recorder:
    """Stands in for _core.Description: records the names describe() sets, in order."""

    def __init__(self):
        object.__setattr__(self, "names", [])

    def __setattr__(self, name, value):
        self.names.append(name)


def test_describe_sets_every_field_of_the_description_once(device, monkeypatch):
    """The fields are listed once, in C++ (POPSIM_DESCRIPTION_FIELDS, native/binding/
    binding.hpp), and exported as Description.FIELDS: native.describe() must set exactly
    those, each once, so a field added on one side only fails here, not at first run."""
    from popsim import _core, native
    g, prog = small_graph(device)
    lw = popsim.compile_graph(g, prog).lowered
    monkeypatch.setattr(native, "_core", type("core", (), {"Description": _Recorder}))
    names = native.describe(lw).names
    assert sorted(names) == sorted(_core.Description.FIELDS)
    assert len(names) == len(set(names)), "describe() sets a field twice"
    assert names.index("num_ipus") < min(names.index("step_costs"), names.index("exchange_costs"))


def test_the_descriptions_settable_properties_are_its_fields():
    """Every writable property of Description is one of FIELDS and every field is one: a
    property bound by hand, outside the field table, would never be required."""
    from popsim import _core
    writable = {n for n, v in vars(_core.Description).items() if isinstance(v, property) and v.fset is not None}
    assert writable == set(_core.Description.FIELDS)
    assert len(_core.Description.FIELDS) == len(set(_core.Description.FIELDS))
