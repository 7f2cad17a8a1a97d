"""Executables: compile_graph, serialize / deserialize, and the executable cache."""
import numpy as np
import pytest

import popsim
from popsim import FLOAT, INT
from popsim.program import Copy, Execute, PrintTensor, Sequence

from graph_helpers import Total

pytestmark = pytest.mark.compiler


def program(device, scale=1.0, sums_tile=3):
    """A graph with constants, initial values, a stream, a compute set and host handles."""
    g = popsim.Graph(device)
    g.add_codelets(Total)
    x = g.add_variable(FLOAT, [8, 4], "x", mapping=popsim.VariableMappingMethod.LINEAR)
    g.set_initial_value(x, np.arange(32).reshape(8, 4) * scale)
    sums = g.add_variable(FLOAT, [8], "sums")
    g.set_tile_mapping(sums, sums_tile)
    cs = g.add_compute_set("totals")
    for r in range(8):
        v = g.add_vertex(cs, Total, {"x": x[r], "out": sums[r]})
        g.set_tile_mapping(v, r)
    k = g.add_variable(INT, [2], "k")
    g.set_tile_mapping(k, 0)
    s = g.add_host_to_device_fifo("k-in", INT, 2)
    g.create_host_read("sums", sums)
    g.create_host_read("k", k)
    return g, [Sequence(Copy(s, k), Execute(cs)), PrintTensor("sums", sums)]


def run(engine, device):
    engine.load(device)
    engine.connect_stream("k-in", np.array([4, 5], np.int32))
    engine.run(0)
    return engine.read_tensor("sums"), engine.read_tensor("k"), engine.get_report()


def test_serialize_deserialize_runs_the_same(device, tmp_path, capsys):
    g, progs = program(device)
    exe = popsim.compile_graph(g, progs)
    path = tmp_path / "prog.popsimexe"
    exe.serialize(path)
    sums_a, k_a, report_a = run(popsim.Engine(g, progs), device)
    loaded = popsim.Executable.deserialize(path)
    assert loaded.num_programs == 2 and loaded.target == device.target
    engine = popsim.Engine(loaded)
    sums_b, k_b, report_b = run(engine, device)
    np.testing.assert_array_equal(sums_a, np.arange(32).reshape(8, 4).sum(axis=1))
    np.testing.assert_array_equal(sums_a, sums_b)
    np.testing.assert_array_equal(k_a, k_b)
    assert report_a.execution.total_cycles == report_b.execution.total_cycles
    assert report_a.memory.by_category == report_b.memory.by_category
    assert [t.name for t in report_b.execution.vertex_types] == ["Total"]
    engine.run(1)
    assert "sums: [6.0000000 22.0000000" in capsys.readouterr().out
    assert report_b.compilation.cache_reason == "deserialized from a file"


def test_bad_files_give_clear_errors(device, tmp_path):
    g, progs = program(device)
    path = tmp_path / "prog.popsimexe"
    popsim.compile_graph(g, progs).serialize(path)
    data = bytearray(path.read_bytes())

    not_exe = tmp_path / "text.popsimexe"
    not_exe.write_text("hello")
    with pytest.raises(popsim.PopsimError, match="not a popsim executable or it is corrupted"):
        popsim.Executable.deserialize(not_exe)
    with pytest.raises(popsim.PopsimError, match="cannot read executable"):
        popsim.Executable.deserialize(tmp_path / "missing.popsimexe")

    # flip bytes inside the largest array: the checksum notices
    corrupt = tmp_path / "corrupt.popsimexe"
    middle = len(data) // 2
    corrupt.write_bytes(bytes(data[:middle]) + bytes(b ^ 0xFF for b in data[middle:middle + 64]) +
                        bytes(data[middle + 64:]))
    with pytest.raises(popsim.PopsimError, match="corrupted|cannot read"):
        popsim.Executable.deserialize(corrupt)

    truncated = tmp_path / "truncated.popsimexe"
    truncated.write_bytes(bytes(data[: len(data) // 3]))
    with pytest.raises(popsim.PopsimError, match="cannot read executable"):
        popsim.Executable.deserialize(truncated)


def test_other_format_version_is_refused(device, tmp_path, monkeypatch):
    import popsim.executable_file as ex
    g, progs = program(device)
    path = tmp_path / "future.popsimexe"
    current = ex.FORMAT_VERSION
    monkeypatch.setattr(ex, "FORMAT_VERSION", 99)
    popsim.compile_graph(g, progs).serialize(path)
    monkeypatch.setattr(ex, "FORMAT_VERSION", current)
    with pytest.raises(popsim.PopsimError, match=f"format version 99.*reads version {current}.*compile it again"):
        popsim.Executable.deserialize(path)


def test_interpreted_executables_are_not_saved(device, tmp_path):
    g, progs = program(device)
    exe = popsim.compile_graph(g, progs, {"popsim.codeletMode": "interpreted"})
    with pytest.raises(popsim.PopsimError, match="interpreted.*cannot be saved"):
        exe.serialize(tmp_path / "x.popsimexe")
    assert "not cached: interpreted" in exe.compilation.cache_reason


def test_executable_cache(device, tmp_path, monkeypatch):
    monkeypatch.setenv("POPSIM_CACHE_DIR", str(tmp_path))
    g, progs = program(device)
    first = popsim.Engine(g, progs)
    c = first.get_report().compilation
    assert not c.from_cache and "no cached executable for this graph" in c.cache_reason and c.cache_key
    assert (tmp_path / "executables" / f"{c.cache_key}.popsimexe").exists()

    g2, progs2 = program(device)  # the same program, built again
    second = popsim.Engine(g2, progs2)
    c2 = second.get_report().compilation
    assert c2.from_cache and c2.cache_key == c.cache_key and "loaded from" in c2.cache_reason
    assert "lower graph" not in c2.phases  # lowering was skipped
    np.testing.assert_array_equal(run(first, device)[0], run(second, device)[0])

    g3, progs3 = program(device, scale=2.0)  # other initial values only: the same executable, the new values
    third = popsim.Engine(g3, progs3)
    assert third.get_report().compilation.from_cache
    assert third.get_report().compilation.cache_key == c.cache_key
    np.testing.assert_array_equal(run(third, device)[0], 2 * run(first, device)[0])

    g4, progs4 = program(device, sums_tile=5)  # 'sums' elsewhere: another key
    assert not popsim.Engine(g4, progs4).get_report().compilation.from_cache


def test_cache_off_by_default_and_option(device, tmp_path, monkeypatch):
    monkeypatch.delenv("POPSIM_CACHE_DIR", raising=False)
    g, progs = program(device)
    assert "cache off" in popsim.Engine(g, progs).get_report().compilation.cache_reason
    e = popsim.Engine(g, progs, {"popsim.cacheDir": str(tmp_path)})
    assert "compiled and saved" in e.get_report().compilation.cache_reason
    assert popsim.Engine(g, progs, {"popsim.cacheDir": str(tmp_path)}).get_report().compilation.from_cache


def test_unreadable_cache_entry_is_recompiled(device, tmp_path, monkeypatch):
    monkeypatch.setenv("POPSIM_CACHE_DIR", str(tmp_path))
    g, progs = program(device)
    key = popsim.Engine(g, progs).get_report().compilation.cache_key
    (tmp_path / "executables" / f"{key}.popsimexe").write_bytes(b"garbage")
    c = popsim.Engine(g, progs).get_report().compilation
    assert not c.from_cache and "cache entry unusable" in c.cache_reason


def test_out_of_memory_writes_the_report_it_names(device, tmp_path):
    g = popsim.Graph(device)
    big = g.add_variable(FLOAT, [200_000], "big")
    g.set_tile_mapping(big, 7)
    with pytest.raises(popsim.GraphMemoryAllocationError) as info:
        popsim.Engine(g, Sequence(), {"autoReport.all": "true", "autoReport.directory": str(tmp_path / "oom")})
    msg = str(info.value)
    saved = tmp_path / "oom" / "profile.json"
    assert f"Report saved to: {saved}" in msg
    report = popsim.open_report(saved)
    assert report.memory.tiles_out_of_memory == [7] and report.memory.largest[0]["tensors"][0][0] == "big"
    assert info.value.profile_path == str(saved) and info.value.report.memory.tiles_out_of_memory == [7]
    with pytest.raises(popsim.GraphMemoryAllocationError, match="No report was written.*autoReport.all") as info:
        popsim.Engine(g, Sequence())
    assert info.value.profile_path == "" and info.value.report.memory.max_tile == report.memory.max_tile


def test_auto_report_files(device, tmp_path):
    g, progs = program(device)
    options = {"autoReport.all": "true", "autoReport.directory": str(tmp_path / "r"),
               "autoReport.executionProfileProgramRunCount": "1"}
    e = popsim.Engine(g, progs, options)
    assert str(tmp_path / "r" / "profile.json") in e.report_files
    assert popsim.open_report(tmp_path / "r").execution.programs_executed == []
    run(e, device)
    after_one = popsim.open_report(tmp_path / "r")
    assert after_one.execution.programs_executed[0]["runs"] == 1
    e.run(0)  # beyond executionProfileProgramRunCount: the files keep the first run
    assert popsim.open_report(tmp_path / "r").execution.programs_executed[0]["runs"] == 1


@pytest.mark.parametrize("damage", ["flip a byte", "truncate", "swap"])
def test_a_cache_entry_damaged_after_this_process_loaded_it_is_recompiled(device, tmp_path, monkeypatch, caplog,
                                                                          damage):
    """The cache reads a verified entry without checking its members' CRC-32s again, and
    remembers entries it verified by size, time and inode: damage done since is still
    caught (the entry is hashed again), logged, and the program compiled again."""
    import logging
    import os
    monkeypatch.setenv("POPSIM_CACHE_DIR", str(tmp_path))
    g, progs = program(device)
    expected = run(popsim.Engine(g, progs), device)[0]
    key = popsim.Engine(g, progs).get_report().compilation.cache_key
    assert popsim.Engine(g, progs).get_report().compilation.from_cache  # verified and remembered
    entry = tmp_path / "executables" / f"{key}.popsimexe"
    data = bytearray(entry.read_bytes())
    if damage == "flip a byte":
        data[len(data) // 2] ^= 0x01
        with open(entry, "r+b") as f:  # in place: same inode, same size
            f.write(data)
    elif damage == "truncate":
        with open(entry, "r+b") as f:
            f.truncate(len(data) - 100)
    else:  # another program's executable put in its place
        g3, progs3 = program(device, sums_tile=6)
        other = popsim.Engine(g3, progs3).get_report().compilation.cache_key
        os.replace(tmp_path / "executables" / f"{other}.popsimexe", entry)
    caplog.set_level(logging.WARNING, logger="popsim")
    again = popsim.Engine(g, progs)
    c = again.get_report().compilation
    assert not c.from_cache
    np.testing.assert_array_equal(run(again, device)[0], expected)
    assert "does not match its digest" in caplog.text
    assert popsim.Engine(g, progs).get_report().compilation.from_cache  # rebuilt and saved again
