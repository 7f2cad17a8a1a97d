"""Cache directories and verified entries (popsim/cachedir.py): a damaged entry is
rebuilt, with a WARN; an unusable directory falls back to a private one, warned once."""
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

import popsim
from popsim import cachedir
from popsim.codelet import compiler

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))


@pytest.fixture
def popsim_warnings(caplog):
    caplog.set_level(logging.WARNING, logger="popsim")
    return caplog


def test_a_damaged_entry_is_detected_and_removed(tmp_path, popsim_warnings):
    entry = tmp_path / "lib.so"
    cachedir.store_verified(entry, b"library bytes")
    assert cachedir.is_verified(entry, "codelet library")
    entry.write_bytes(b"library")  # truncated behind popsim's back
    assert not cachedir.is_verified(entry, "codelet library")
    assert not entry.exists() and "does not match its digest" in popsim_warnings.text
    cachedir.store_verified(entry, b"other")
    assert not cachedir.is_verified(entry, "library", expected="0" * 64)  # not the content its name promises


@pytest.mark.parametrize("make", ["file", "dangling link", "under a file", "proc"])
def test_an_unusable_directory_falls_back_with_one_warning(tmp_path, popsim_warnings, make):
    if make == "file":
        bad = tmp_path / "cache"
        bad.write_text("not a directory")
    elif make == "dangling link":
        bad = tmp_path / "link"
        bad.symlink_to(tmp_path / "a-file" / "below")
        (tmp_path / "a-file").write_text("x")
    elif make == "under a file":
        (tmp_path / "plain").write_text("x")
        bad = tmp_path / "plain" / "cache"
    else:
        bad = Path("/proc/popsim-cache")  # a read-only file system
    first = cachedir.usable_dir(bad)
    second = cachedir.usable_dir(bad)
    assert first == second and first != bad and first.is_dir()
    assert popsim_warnings.text.count("cannot be used") == 1
    (first / "probe").write_text("writable")


@pytest.mark.compiler
def test_a_codelet_library_that_matches_its_digest_but_does_not_load_is_rebuilt(tmp_path, monkeypatch,
                                                                               popsim_warnings):
    """Damaged with its digest rewritten (or built for another machine): evicted and built
    again, not used (nor embedded in executables) for ever."""
    monkeypatch.setenv("POPSIM_CACHE_DIR", str(tmp_path))
    sources = {"v.c": "int popsim_test_unloadable(void) { return 7; }\n"}
    lib = compiler.compile_library(sources, "c", "unloadable")
    good = lib.read_bytes()
    cachedir.store_verified(lib, b"\x7fELF not really a library")   # the digest matches what is there
    monkeypatch.setattr(compiler, "_loaded", set())                 # as a new process finds it
    before = compiler.stats["compiled"]
    again = compiler.compile_library(sources, "c", "unloadable")
    assert again == lib and compiler.stats["compiled"] == before + 1 and again.read_bytes() == good
    assert "does not load" in popsim_warnings.text
    assert cachedir.is_verified(again, "codelet library")


@pytest.mark.compiler
def test_a_truncated_codelet_library_is_rebuilt(tmp_path, monkeypatch, popsim_warnings):
    monkeypatch.setenv("POPSIM_CACHE_DIR", str(tmp_path))
    sources = {"v.c": "int popsim_test_value(void) { return 42; }\n"}
    lib = compiler.compile_library(sources, "c", "trunc")
    good = lib.read_bytes()
    lib.write_bytes(good[: len(good) // 2])
    before = compiler.stats["compiled"]
    again = compiler.compile_library(sources, "c", "trunc")
    assert again == lib and compiler.stats["compiled"] == before + 1 and again.read_bytes() == good
    assert "does not match its digest" in popsim_warnings.text


@pytest.mark.compiler
def test_a_swapped_executable_library_is_rewritten(device, tmp_path, monkeypatch, popsim_warnings):
    from executable_sample import build, drive
    g, progs = build(device)
    path = tmp_path / "p.popsimexe"
    popsim.compile_graph(g, progs).serialize(path)
    monkeypatch.setenv("POPSIM_CACHE_DIR", str(tmp_path / "cache"))
    first = popsim.Executable.deserialize(path)
    libraries = [lib for lib, _ in first.lowered.vertices.codelets]
    for lib in libraries:
        Path(lib).write_bytes(b"\x7fELF not the library")
    second = popsim.Executable.deserialize(path)
    assert [lib for lib, _ in second.lowered.vertices.codelets] == libraries
    assert "does not match its digest" in popsim_warnings.text
    assert drive(popsim.Engine(second), device)["y"].tolist() == [0.0, 1.0, 4.0]


@pytest.mark.compiler
def test_an_unusable_cache_directory_still_compiles_and_runs(device, tmp_path, monkeypatch, popsim_warnings):
    (tmp_path / "file").write_text("x")
    monkeypatch.setenv("POPSIM_CACHE_DIR", str(tmp_path / "file"))
    from executable_sample import build, drive
    g, progs = build(device)
    result = drive(popsim.Engine(g, progs), device)
    assert result["y"].tolist() == [0.0, 1.0, 4.0]
    assert popsim.Engine(g, progs).get_report().compilation.from_cache  # the private cache works too
    assert popsim_warnings.text.count("cannot be used") == 2  # one per directory (codelets, executables)


@pytest.mark.slow  # a whole pytest session in a new process
def test_the_hermetic_fixture_takes_a_cache_dir_not_made_yet(tmp_path):
    """tests/conftest.py links the caller's POPSIM_CACHE_DIR; it must work before that
    directory exists (it once failed on the second test: exists() of a dangling link)."""
    env = dict(os.environ, POPSIM_CACHE_DIR=str(tmp_path / "not" / "yet"))
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k",
                             "test_type_table or test_as_type", str(ROOT / "tests" / "test_types.py")],
                            capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    assert result.returncode == 0, result.stdout[-2000:]
    assert " passed" in result.stdout and "error" not in result.stdout.lower()


_COMPILE_WHEN_TOLD = """
import sys, time
from pathlib import Path
from popsim.codelet import compiler
go = Path(sys.argv[1])
while not go.exists():
    time.sleep(0.005)
# enough code that one compile takes a while: the two processes' compiles would overlap
body = "".join(f"static double f{i}(double x) {{ return x * {i} + 1.0 / (x + {i}); }}\\n" for i in range(1000))
calls = " + ".join(f"f{i}(x)" for i in range(1000))
lib = compiler.compile_library({"v.c": body + f"double popsim_test_sum(double x) {{ return {calls}; }}\\n"}, "c",
                               "shared")
print(compiler.stats["compiled"], lib)
"""


@pytest.mark.compiler
def test_processes_sharing_a_cache_compile_an_entry_once(tmp_path):
    """Two processes asking for the same library at once (test workers, MPI ranks): one
    compiles it, the other waits for that and takes it from the cache, verified."""
    go = tmp_path / "go"
    env = dict(os.environ, POPSIM_CACHE_DIR=str(tmp_path / "cache"))
    procs = [subprocess.Popen([sys.executable, "-c", _COMPILE_WHEN_TOLD, str(go)], stdout=subprocess.PIPE, text=True,
                              env=env) for _ in range(2)]
    go.touch()
    outs = [p.communicate(timeout=300)[0].split() for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert sorted(int(compiled) for compiled, _ in outs) == [0, 1]
    assert outs[0][1] == outs[1][1] and cachedir.is_verified(Path(outs[0][1]), "codelet library")
