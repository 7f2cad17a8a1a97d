"""Tutorial 1 prints exactly what Poplar's tutorial 1 prints, byte for byte."""
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]

# Poplar's tutorial prints each h3 value followed by a space, so every h3 row ends with
# one (written out here so that no editor strips it).
H3_ROWS = ["  0 0 0 0 ", "  0 1 1.5 2 ", "  0 0 0 0 ", "  0 0 0 0 "]

EXPECTED = """\
Running program
v1-debug: [1.0000000 1.5000000 2.0000000 2.5000000]
v2-debug: [1.0000000 1.5000000 2.0000000 2.5000000]
v4-0: [0 1 2 3 4 5 6 7 8 9]
v4-1: [10 11 12 13 14 15 16 17 18 19]
Program complete

h3 data:
""" + "".join(row + "\n" for row in H3_ROWS)


def test_tutorial1_output():
    result = subprocess.run([sys.executable, str(ROOT / "tutorials" / "tut1_variables.py")],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout == EXPECTED
    assert result.stderr == ""
