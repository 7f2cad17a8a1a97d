"""Replicas spread over processes (popsim.dist): scale_out_program.py under 1, 2 and 4
processes gives every replica the same bits and every cycle figure the same; a failure on
one process ends the run on all, quickly, with its message; processes that cannot share
the replicas evenly are refused before they communicate. Each test launches mpiexec."""
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("mpi4py", reason="the MPI tests need mpi4py and an MPI runtime: pip install \"popsim[mpi]\"")
MPIEXEC = shutil.which("mpiexec")
pytestmark = [pytest.mark.compiler,
              pytest.mark.skipif(MPIEXEC is None, reason="no mpiexec on PATH: pip install \"popsim[mpi]\"")]

HERE = Path(__file__).resolve().parent
# Lines of the profile summary that time the compilation on the host (wall clock).
_HOST_TIMES = re.compile(r"^.*\d+\.\d+ s$", re.MULTILINE)


def _launch(processes: int, script: str, *args, timeout: float = 240) -> subprocess.CompletedProcess:
    # -n 4 on a 2-core machine oversubscribes: MPICH's hydra allows it.
    command = [MPIEXEC, "-n", str(processes), sys.executable, str(HERE / script), *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout)


def _scale_out(tmp_path: Path, processes: int, replicas: int) -> dict:
    """Every replica's results and process 0's profile, with each process's profile
    checked equal to process 0's."""
    out = tmp_path / f"n{processes}"
    out.mkdir()
    done = _launch(processes, "scale_out_program.py", out, replicas)
    assert done.returncode == 0, done.stderr[-3000:]
    merged, profiles = {}, []
    for k in range(processes):
        with np.load(out / f"process{k}.npz") as z:
            profile = {}
            for name in z.files:
                value = z[name]
                if name == "profile/summary":
                    value = _HOST_TIMES.sub("", str(value))
                (profile if name.startswith("profile/") else merged)[name] = value
            profiles.append(profile)
    for k, profile in enumerate(profiles[1:], 1):
        _assert_same(profiles[0], profile, f"process {k}'s profile against process 0's")
    merged.update(profiles[0])
    return merged


def _assert_same(want: dict, got: dict, what: str) -> None:
    assert want.keys() == got.keys(), f"{what}: {sorted(set(want) ^ set(got))}"
    for name in want:
        a, b = np.asarray(want[name]), np.asarray(got[name])
        assert a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes(), f"{what}: {name} differs"


def test_two_processes_give_the_bits_and_cycles_of_one(tmp_path):
    one = _scale_out(tmp_path, 1, 4)
    assert sum(name.startswith("acc/") for name in one) == 2 * 4   # two runs x four replicas
    _assert_same(one, _scale_out(tmp_path, 2, 4), "2 processes against 1")


@pytest.mark.mpi
def test_one_two_and_four_processes_agree_bit_for_bit(tmp_path):
    one = _scale_out(tmp_path, 1, 8)
    for n in (2, 4):
        _assert_same(one, _scale_out(tmp_path, n, 8), f"{n} processes against 1")


def _failure(tmp_path: Path, mode: str, processes: int = 2, replicas: int = 4):
    """What each process wrote, and how long the job took."""
    out = tmp_path / mode
    out.mkdir()
    start = time.monotonic()
    done = _launch(processes, "failure_program.py", mode, out, replicas, timeout=120)
    took = time.monotonic() - start
    lines = [(out / f"process{k}.txt").read_text().splitlines() if (out / f"process{k}.txt").exists() else []
             for k in range(processes)]
    return done, lines, took


@pytest.mark.mpi
@pytest.mark.parametrize("mode, failing", [("callback", "ValueError: no data for replica 3"),
                                           ("vertex", "'Check' (#0) on tile 0 in compute set 'check' returned false "
                                                      "on replica 3")])
def test_a_failure_on_one_process_stops_the_run_on_all_and_the_next_run_works(tmp_path, mode, failing):
    done, (first, last), _ = _failure(tmp_path, mode)
    assert done.returncode == 0, done.stderr[-3000:]
    assert failing in last[0]                       # the failing process: its own error
    assert first[0].startswith("0 PeerProcessError: engine #1: process 1 failed, so this run stops too:")
    assert failing in first[0]                      # the other: names process 1 and shows its message
    for lines in (first, last):
        assert lines[1].startswith("1 ok") and lines[2] == "done"


@pytest.mark.mpi
@pytest.mark.parametrize("mode, message", [("abort", "ApplicationRuntimeError: program 0 aborted on replica 3"),
                                           ("diverge", "ControlProgramError: program 0 (at If on ")])
def test_decisions_across_processes_fail_alike_everywhere(tmp_path, mode, message):
    done, per_process, _ = _failure(tmp_path, mode)
    assert done.returncode == 0, done.stderr[-3000:]
    assert per_process[0] == per_process[1]
    assert per_process[0][0].startswith(f"0 {message}") and per_process[0][1].startswith(f"1 {message}")
    if mode == "diverge":
        assert "replica 3 holds another predicate or Switch value than replica 0" in per_process[0][0]


@pytest.mark.mpi
def test_replicas_that_processes_cannot_share_are_refused_everywhere(tmp_path):
    done, per_process, _ = _failure(tmp_path, "indivisible", replicas=3)
    assert done.returncode == 0, done.stderr[-3000:]
    for lines in per_process:
        assert lines[0].startswith("build PopsimError: Graph: the graph is replicated 3 time(s), which 2 processes "
                                   "cannot share evenly")


@pytest.mark.mpi
def test_an_uncaught_exception_on_one_process_ends_them_all_quickly(tmp_path):
    done, per_process, took = _failure(tmp_path, "uncaught", processes=4)
    assert done.returncode != 0
    assert "RuntimeError: process gives up before it runs" in done.stderr
    assert "popsim: ending all 4 processes (MPI_Abort)" in done.stderr
    assert "done" not in sum(per_process, [])
    assert took < 60, f"the job took {took:.0f} s to end"
