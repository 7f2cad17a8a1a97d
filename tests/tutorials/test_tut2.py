"""Tutorial 2 prints what Poplar's tutorial 2 prints (Poplar's tutorials)."""
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]

EXPECTED = """\
Running program
v3: [
  [5.0000000 4.5000000]
  [4.0000000 3.5000000]
]
v4: [
  [9.0000000 7.5000000]
  [6.0000000 4.5000000]
]
v5: [
  [5.0000000 3.5000000]
  [5.0000000 3.5000000]
]
Program complete
"""


def test_tutorial2_output():
    result = subprocess.run([sys.executable, str(ROOT / "tutorials" / "tut2_operations.py")],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout == EXPECTED
    assert result.stderr == ""
    # Graphcore's own checks of the tutorial (tests/test_tut2.py), on merged output.
    for pattern in ("Program complete", r"v3: \[\W+\[5.0000000 4.5000000\]\W+\[4.0000000 3.5000000]\W+\]",
                    r"v4: \[\W+\[9.0000000 7.5000000\]\W+\[6.0000000 4.5000000]\W+\]",
                    r"v5: \[\W+\[5.0000000 3.5000000\]\W+\[5.0000000 3.5000000]\W+\]"):
        assert re.search(pattern, result.stdout + result.stderr), pattern
