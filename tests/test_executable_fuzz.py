"""Fuzzing executables (tests/executable_fuzz.py has the harness): tampered copies of real
executables (offsets, lengths, indices, dtypes, shapes, header values, zip structure),
each loaded, built, run and reported on, from a file and from an executable-cache entry
whose digest is rewritten to match. Every one is refused with a PopsimError (a cache
entry may be compiled again instead) or runs; none crashes the process (issue 20).

Each run is its own process, so that a crash fails the test instead of ending the
session. The default run takes seconds per sample and path and sees the same cases every
time; a long run, by hand (cases per sample and path):

    POPSIM_FUZZ_EXAMPLES=5000 python -m pytest tests/test_executable_fuzz.py
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.compiler

SCRIPT = Path(__file__).resolve().parent / "executable_fuzz.py"

# (sample, path): cases in the default run. A cache case costs more than a file case: an
# entry refused when read is compiled again.
CASES = {("one", "file"): 60, ("replicated", "file"): 40, ("one", "cache"): 20, ("replicated", "cache"): 20}


@pytest.mark.parametrize("sample, path", list(CASES))
def test_tampered_executables_run_or_are_refused_with_a_popsim_error(tmp_path, sample, path):
    cases = int(os.environ.get("POPSIM_FUZZ_EXAMPLES") or 0) or CASES[sample, path]
    result = subprocess.run([sys.executable, str(SCRIPT), sample, path, "7", str(cases)], capture_output=True,
                            text=True, cwd=tmp_path, timeout=max(600, cases))
    lines = result.stdout.rstrip().splitlines()
    assert result.returncode == 0 and lines and lines[-1].startswith("DONE"), \
        f"the fuzzing run died (exit {result.returncode}) after:\n" + "\n".join(lines[-3:]) + "\n" + \
        result.stderr[-2000:]
    outcomes = json.loads(lines[-1][len("DONE "):])
    refused = outcomes.get("refused", 0) + outcomes.get("compiled again", 0)
    # Both kinds of case occur: tampering that matters, and tampering the checks let run.
    assert refused >= cases // 4 and outcomes.get("ran", 0) >= cases // 10, outcomes
