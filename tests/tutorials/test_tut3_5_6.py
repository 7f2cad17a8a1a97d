"""Tutorials 3, 5 and 6 print what Poplar's print (tests/tutorials mirror tutorials/)."""
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.compiler


def run(script, *args, cwd=None):
    result = subprocess.run([sys.executable, str(ROOT / "tutorials" / script), *args], capture_output=True,
                            text=True, timeout=600, cwd=cwd)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_tut3_cpp_codelets():
    out = run("tut3_vertices.py")
    assert "v2: [7.0000000 6.0000000 4.5000000 2.5000000]" in out
    assert out.rstrip().endswith("Program complete")


def test_tut5_matrix_vector():
    out = run("tut5_matrix_vector.py", "40", "50")
    assert "Multiplying matrix of size 40x50 by vector of size 50" in out
    assert "Multiplication result OK" in out


def test_tut5_usage():
    result = subprocess.run([sys.executable, str(ROOT / "tutorials" / "tut5_matrix_vector.py")], capture_output=True,
                            text=True)
    assert result.returncode == 1 and "usage:" in result.stderr


@pytest.mark.parametrize("device,worst,best", [
    ("model-ipu2", 53807, "colsAxisSplit=7, total cost=3996 (compute cost=3696, exchange cost=143, reduce exchange "
                          "cost=49, reduce compute cost=108)"),
    pytest.param("model-ipu1", 64373, "colsAxisSplit=5, total cost=4751 (compute cost=4410, exchange cost=200, "
                                      "reduce exchange cost=45, reduce compute cost=96)",
                 marks=pytest.mark.slow),  # the same script on the other target: in the slow run
])
def test_tut6_matrix_vector_opt(device, worst, best, tmp_path):
    out = run("tut6_matrix_vector_opt.py", "10000", "1000", "--device", device, cwd=tmp_path)
    assert "Multiplying matrix of size 10000x1000 by vector of size 1000" in out
    assert f"Best split chosen:\n{best}\nWorst cost seen: {worst}\n" in out
    assert "Multiplication result OK" in out
    # the profile summary follows, with the vertex counts the split implies
    split = 7 if device == "model-ipu2" else 5
    assert re.search(rf"DotProductVertex \({10000 * split:,} instances\)", out)
    assert "ReduceVertex (10,000 instances)" in out
    assert "Total cycles:" in out and "Memory Usage:" in out
    assert (tmp_path / "profile.json").exists()  # the tutorial asks for autoReport.all, as Poplar's does
