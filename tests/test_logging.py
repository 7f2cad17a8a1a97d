"""POPSIM_LOG_LEVEL / POPSIM_LOG_DEST, and the progress bar."""
import io

import pytest

import popsim
from popsim import FLOAT, log
from popsim.progress import Progress


def build(device):
    g = popsim.Graph(device)
    x = g.add_variable(FLOAT, [4], "x")
    g.set_tile_mapping(x, 0)
    return g, popsim.Sequence(popsim.Copy(x, g.clone(x)))


@pytest.fixture(autouse=True)
def restore_logging(monkeypatch):
    yield
    monkeypatch.delenv("POPSIM_LOG_LEVEL", raising=False)
    monkeypatch.delenv("POPSIM_LOG_DEST", raising=False)
    log.configure()


@pytest.mark.parametrize("level,expect_info,expect_debug", [
    ("INFO", True, False), ("DEBUG", True, True), ("TRACE", True, True), ("WARN", False, False),
    ("OFF", False, False),
])
def test_levels_to_a_file(device, tmp_path, monkeypatch, level, expect_info, expect_debug):
    dest = tmp_path / "popsim.log"
    monkeypatch.setenv("POPSIM_LOG_LEVEL", level)
    monkeypatch.setenv("POPSIM_LOG_DEST", str(dest))
    g, prog = build(device)
    popsim.Engine(g, prog)
    text = dest.read_text() if dest.exists() else ""
    assert ("lower graph: " in text and " s" in text) == expect_info  # compile phases with timings
    assert ("compiling: 2 variables" in text) == expect_debug           # per-graph details


def test_stdout_destination(device, monkeypatch, capsys):
    monkeypatch.setenv("POPSIM_LOG_LEVEL", "INFO")
    monkeypatch.setenv("POPSIM_LOG_DEST", "stdout")
    g, prog = build(device)
    log.configure()
    popsim.Engine(g, prog)
    assert "PS INFO: memory layout:" in capsys.readouterr().out


def test_bad_level(device, monkeypatch):
    monkeypatch.setenv("POPSIM_LOG_LEVEL", "LOUD")
    g, prog = build(device)
    with pytest.raises(popsim.InvalidOptionError, match="POPSIM_LOG_LEVEL must be one of OFF, ERR, WARN"):
        popsim.Engine(g, prog)


def test_unwritable_destination_names_the_variable_path_and_reason(device, tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    bad = blocker / "popsim.log"  # a file's "subdirectory": fails for any user, root included
    monkeypatch.setenv("POPSIM_LOG_LEVEL", "INFO")
    monkeypatch.setenv("POPSIM_LOG_DEST", str(bad))
    g, prog = build(device)
    with pytest.raises(popsim.InvalidOptionError) as info:  # before: a raw NotADirectoryError
        popsim.Engine(g, prog)
    msg = str(info.value)
    assert f"POPSIM_LOG_DEST is '{bad}', which cannot be opened for writing: Not a directory" in msg
    assert "set it to stdout, stderr or a file you can write" in msg
    good = tmp_path / "popsim.log"
    monkeypatch.setenv("POPSIM_LOG_DEST", str(good))
    popsim.Engine(g, prog)  # fixing the variable is enough: nothing was left half-configured
    assert "lower graph: " in good.read_text()


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_progress_bar_only_on_terminals_and_large_work():
    tty = Terminal()
    p = Progress(50_000, "Compiling", stream=tty)
    for _ in range(5):
        p.advance(10_000, "compute set x")
    p.close()
    assert "Compiling [##############################] 100%" in tty.getvalue()
    quiet = io.StringIO()
    p = Progress(50_000, "Compiling", stream=quiet)
    p.advance(50_000)
    p.close()
    assert quiet.getvalue() == ""
    small = Terminal()
    p = Progress(10, "Compiling", stream=small)
    p.advance(10)
    p.close()
    assert small.getvalue() == ""
