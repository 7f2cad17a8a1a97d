"""Signals during engine.run (native/core/run_signals.cpp): Ctrl-C stops a vertex stuck
in a loop (compiled, interpreted, or a C++ codelet) with KeyboardInterrupt and leaves the
engine usable; a C++ vertex that aborts ends the process after naming the vertex type,
tile and compute set (faults it survives: tests/test_vertex_faults.py). Each case runs
in its own Python process."""
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.compiler


def _sigint_as_in_a_terminal():
    """A child's SIGINT back to its default before it runs Python: a shell's background job
    (nohup ... &) starts with SIGINT ignored, and a Python started so would never see Ctrl-C."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)

SPIN = textwrap.dedent("""
    import sys
    sys.path.insert(0, sys.argv[2])
    import popsim
    from popsim import InOut, Vertex
    from popsim.program import Execute
    from graph_helpers import Stuck as Spin   # x stays 0: never ends

    class Increment(Vertex):
        x: InOut[int]

        def compute(self):
            self.x = self.x + 1

    device = popsim.IPUModel().create_device()
    graph = popsim.Graph(device)
    x = graph.add_variable(popsim.INT, [2], "x")
    graph.set_tile_mapping(x, 0)
    spin = graph.add_compute_set("spin")
    graph.set_tile_mapping(graph.add_vertex(spin, Spin, {"x": x[0]}), 0)
    step = graph.add_compute_set("step")
    graph.set_tile_mapping(graph.add_vertex(step, Increment, {"x": x[1]}), 0)
    graph.create_host_read("x", x)
    engine = popsim.Engine(graph, [Execute(spin), Execute(step)], {"popsim.codeletMode": sys.argv[1]})
    engine.load(device)
    print("running", flush=True)
    try:
        engine.run(0)
    except KeyboardInterrupt:
        engine.run(1)
        print("usable after KeyboardInterrupt:", engine.read_tensor("x")[1], flush=True)
        raise
""")

CRASH_CODELET = textwrap.dedent("""
    #include <poplar/Vertex.hpp>
    #include <cstdint>
    #include <cstdlib>
    using namespace poplar;

    class Crash : public Vertex {
    public:
      Input<int> how;
      Output<int> out;
      bool compute() {
        if (*how == 1)  // a write through a wild pointer: the vertex's error, the process lives on
          *reinterpret_cast<volatile int *>(std::uintptr_t(*how) * 8) = 42;
        if (*how == 2)  // abort() (a failed assert): the process ends
          std::abort();
        for (volatile int i = 0; *how == 3; i = i + 1) {  // stuck in a loop
        }
        *out = 1;
        return true;
      }
    };
""")

CRASH = textwrap.dedent("""
    import sys
    import popsim
    from popsim.program import Execute

    device = popsim.IPUModel().create_device()
    graph = popsim.Graph(device)
    graph.add_codelets(sys.argv[1])
    how = graph.add_variable(popsim.INT, [3], "how")
    out = graph.add_variable(popsim.INT, [3], "out")
    graph.set_tile_mapping(how, 5)
    graph.set_tile_mapping(out, 5)
    graph.set_initial_value(how, [0, int(sys.argv[2]), 0])
    cs = graph.add_compute_set("update weights")
    for i in range(3):
        graph.set_tile_mapping(graph.add_vertex(cs, "Crash", {"how": how[i], "out": out[i]}), 5)
    ok = graph.add_compute_set("ok")
    graph.set_tile_mapping(graph.add_vertex(ok, "Crash", {"how": how[0], "out": out[0]}), 5)
    graph.create_host_read("out", out)
    engine = popsim.Engine(graph, [Execute(cs), Execute(ok)])
    engine.load(device)
    print("running", flush=True)
    try:
        engine.run(0)
    except (KeyboardInterrupt, popsim.ApplicationRuntimeError) as e:
        engine.run(1)
        print(f"usable after {type(e).__name__}:", engine.read_tensor("out")[0], flush=True)
        raise
    print("not reached", flush=True)
""")


@pytest.mark.parametrize("mode", ["compiled", "interpreted"])
def test_ctrl_c_stops_a_vertex_stuck_in_a_loop(tmp_path, mode):
    script = tmp_path / "spin.py"
    script.write_text(SPIN)
    child = subprocess.Popen([sys.executable, str(script), mode, str(Path(__file__).parent)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, preexec_fn=_sigint_as_in_a_terminal)
    try:
        assert child.stdout.readline().strip() == "running"
        time.sleep(1.0)  # well inside engine.run, in the vertex's loop
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=60)   # before the fix: the compiled loop never returns
    finally:
        child.kill()
    assert "usable after KeyboardInterrupt: 1" in out
    assert err.rstrip().endswith("KeyboardInterrupt"), err[-2000:]


def crash_script(tmp_path, how):
    codelet = tmp_path / "crash.cpp"
    codelet.write_text(CRASH_CODELET)
    script = tmp_path / "crash.py"
    script.write_text(CRASH)
    return [sys.executable, str(script), str(codelet), str(how)]


def test_an_aborting_vertex_is_named_before_the_process_ends(tmp_path):
    result = subprocess.run(crash_script(tmp_path, 2), capture_output=True, text=True, timeout=120)
    assert result.returncode == -signal.SIGABRT
    assert "not reached" not in result.stdout
    assert "popsim: SIGABRT" in result.stderr
    assert "in vertex 'Crash' on tile 5 in compute set 'update weights'" in result.stderr


def test_a_vertex_that_faults_fails_the_run_and_the_process_lives_on(tmp_path):
    result = subprocess.run(crash_script(tmp_path, 1), capture_output=True, text=True, timeout=120)
    assert "usable after ApplicationRuntimeError: 1" in result.stdout, result.stderr[-2000:]
    assert "vertex 'Crash' (#1) on tile 5 in compute set 'update weights' crashed: an invalid memory access " \
           "(SIGSEGV) at address 0x8" in result.stderr


def test_ctrl_c_stops_a_cpp_codelet_stuck_in_a_loop(tmp_path):
    child = subprocess.Popen(crash_script(tmp_path, 3), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             preexec_fn=_sigint_as_in_a_terminal)
    try:
        assert child.stdout.readline().strip() == "running"
        time.sleep(1.0)  # well inside engine.run, in the vertex's loop
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=60)  # before vertex_guard: the loop never returns
    finally:
        child.kill()
    assert "usable after KeyboardInterrupt: 1" in out, err[-2000:]
    assert err.rstrip().endswith("KeyboardInterrupt"), err[-2000:]


LOOP_IN_A_THREAD = textwrap.dedent("""
    import threading, time
    import popsim
    from popsim.program import Copy, RepeatWhileTrue, Sequence

    device = popsim.IPUModel().create_device()
    graph = popsim.Graph(device)
    flag = graph.add_constant(popsim.INT, [], 1, "flag")
    x = graph.add_variable(popsim.INT, [], "x")
    graph.set_tile_mapping(flag, 0)
    graph.set_tile_mapping(x, 0)
    engine = popsim.Engine(graph, RepeatWhileTrue(Sequence(), flag, Copy(flag, x)))   # never ends
    engine.load(device)
    ended, done = [], threading.Event()

    def run():
        try:
            engine.run(0)
        except KeyboardInterrupt:
            ended.append("KeyboardInterrupt")
        done.set()
    worker = threading.Thread(target=run)
    worker.start()
    print("running", flush=True)
    try:
        while not done.wait(0.1):   # (Ctrl-C during Thread.join can leave the Thread's state wrong)
            pass
    except KeyboardInterrupt:
        done.wait(10)
    print("worker ended:", ended, "done:", done.is_set(), flush=True)
    worker.join()
""")


def test_ctrl_c_stops_an_endless_control_loop_run_on_another_thread(tmp_path):
    script = tmp_path / "loop.py"
    script.write_text(LOOP_IN_A_THREAD)
    child = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             preexec_fn=_sigint_as_in_a_terminal)
    try:
        assert child.stdout.readline().strip() == "running"
        time.sleep(1.0)
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=60)
    finally:
        child.kill()
    assert "worker ended: ['KeyboardInterrupt'] done: True" in out, out + err[-2000:]


def test_the_run_time_limit_stops_control_loops_and_vertex_loops_and_the_engine_stays_usable():
    import popsim
    from popsim import INT
    from popsim.program import Copy, Execute, RepeatWhileTrue, Sequence
    from graph_helpers import Stuck

    device = popsim.IPUModel().create_device()
    graph = popsim.Graph(device)
    flag = graph.add_constant(INT, [], 1, "flag")
    x, y = graph.add_variable(INT, [], "x"), graph.add_variable(INT, [], "y")
    for t in (flag, x, y):
        graph.set_tile_mapping(t, 0)
    spin = graph.add_compute_set("spin")
    graph.set_tile_mapping(graph.add_vertex(spin, Stuck, {"x": x}), 0)
    graph.create_host_read("y", y)
    programs = [RepeatWhileTrue(Sequence(), flag, Copy(flag, y)), Execute(spin), Copy(flag, y)]
    with popsim.Engine(graph, programs, {"popsim.runTimeout": "0.5"}) as engine:
        engine.load(device)
        for program, where in ((0, "RepeatWhileTrue"), (1, "spin")):
            start = time.monotonic()
            with pytest.raises(popsim.ApplicationRuntimeError,
                               match=rf"program {program} ran longer than popsim.runTimeout \(0.5 s\)"):
                engine.run(program)
            assert time.monotonic() - start < 5
        engine.run(2)
        assert engine.read_tensor("y") == 1


def test_poplars_host_sync_timeout_is_refused_with_popsims_own_named():
    import popsim
    with pytest.raises(popsim.InvalidOptionError, match="set popsim.runTimeout"):
        popsim.Engine(popsim.Graph(popsim.IPUModel().create_device()), popsim.Sequence(),
                      {"target.hostSyncTimeout": "30"})
    with pytest.raises(popsim.InvalidOptionError, match="must be a non-negative number of seconds"):
        popsim.Engine(popsim.Graph(popsim.IPUModel().create_device()), popsim.Sequence(), {"popsim.runTimeout": "-1"})
