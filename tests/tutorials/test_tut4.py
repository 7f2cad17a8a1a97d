"""Tutorial 4 runs and prints what Poplar's tutorial 4 test looks for (Poplar's
tutorial and its test): "Program complete", "Memory Usage:", and a summary whose execution steps show
each matMul's compute sets; with autoReport.all a report a reader can open."""
import json
import os
import pathlib
import re
import subprocess
import sys

import popsim

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _run(env=None, cwd=None):
    result = subprocess.run([sys.executable, str(ROOT / "tutorials" / "tut4_profiling.py")], capture_output=True,
                            text=True, timeout=600, env=env, cwd=cwd)
    assert result.returncode == 0, result.stderr
    return result.stdout + result.stderr


def test_tutorial4_summary(tmp_path):
    env = dict(os.environ, POPLAR_ENGINE_OPTIONS=json.dumps({"autoReport.all": "true",
                                                              "autoReport.directory": str(tmp_path / "report")}))
    out = _run(env, tmp_path)
    assert "Running program" in out and "Program complete" in out and "Memory Usage:" in out
    # each matMul's steps are named after it (debug names "m4" and "m5")
    assert re.search(r"m4/\S+", out) and re.search(r"m5/\S+", out), out[-3000:]
    report = popsim.open_report(str(tmp_path / "report"))
    assert report.target.num_tiles == 1472
