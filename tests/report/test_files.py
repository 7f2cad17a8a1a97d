"""autoReport files: written where autoReport.directory says, or a clear error."""
import json

import pytest

import popsim
from popsim import FLOAT


def build(device):
    g = popsim.Graph(device)
    x = g.add_variable(FLOAT, [4], "x")
    g.set_tile_mapping(x, 0)
    return g, popsim.Sequence(popsim.Copy(x, g.clone(x)))


def test_report_files_go_to_the_directory(small_device, tmp_path):
    g, prog = build(small_device)
    directory = tmp_path / "report"
    e = popsim.Engine(g, prog, {"autoReport.all": "true", "autoReport.directory": str(directory)})
    assert str(directory / "profile.json") in e.report_files
    assert json.loads((directory / "profile.json").read_text())


def test_unwritable_directory_names_the_option_path_and_reason(small_device, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    bad = blocker / "report"  # under a regular file: fails for any user, root included
    g, prog = build(small_device)
    with pytest.raises(popsim.InvalidOptionError) as info:  # before: a raw FileExistsError/NotADirectoryError
        popsim.Engine(g, prog, {"autoReport.all": "true", "autoReport.directory": str(bad)})
    msg = str(info.value)
    assert f"option 'autoReport.directory' is '{bad}', where the report cannot be written" in msg
    assert "Not a directory" in msg or "File exists" in msg
    assert "set it to a directory you can write to" in msg


def test_unwritable_directory_from_the_environment(small_device, tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("POPLAR_ENGINE_OPTIONS", json.dumps({"autoReport.all": "true",
                                                             "autoReport.directory": str(blocker)}))
    g, prog = build(small_device)
    with pytest.raises(popsim.InvalidOptionError, match="option 'autoReport.directory' is .*a-file'"):
        popsim.Engine(g, prog)
