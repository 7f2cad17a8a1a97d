"""Signals during engine.run (native/core/run_signals.cpp): Ctrl-C stops a vertex stuck
in a loop with KeyboardInterrupt and leaves the engine usable; a C++ vertex that crashes
ends the process after naming the vertex type, tile and compute set. Each case runs in
its own Python process."""
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.compiler

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
        if (*how == 1)  // a write through a wild pointer
          *reinterpret_cast<volatile int *>(std::uintptr_t(*how) * 8) = 42;
        if (*how == 2)
          std::abort();
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
    engine = popsim.Engine(graph, Execute(cs))
    engine.load(device)
    engine.run(0)
    print("not reached", flush=True)
""")


@pytest.mark.parametrize("mode", ["compiled", "interpreted"])
def test_ctrl_c_stops_a_vertex_stuck_in_a_loop(tmp_path, mode):
    script = tmp_path / "spin.py"
    script.write_text(SPIN)
    child = subprocess.Popen([sys.executable, str(script), mode, str(Path(__file__).parent)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "running"
        time.sleep(1.0)  # well inside engine.run, in the vertex's loop
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=60)   # before the fix: the compiled loop never returns
    finally:
        child.kill()
    assert "usable after KeyboardInterrupt: 1" in out
    assert err.rstrip().endswith("KeyboardInterrupt"), err[-2000:]


@pytest.mark.parametrize("how,signum", [(1, signal.SIGSEGV), (2, signal.SIGABRT)])
def test_a_crashing_vertex_is_named_before_the_process_ends(tmp_path, how, signum):
    codelet = tmp_path / "crash.cpp"
    codelet.write_text(CRASH_CODELET)
    script = tmp_path / "crash.py"
    script.write_text(CRASH)
    result = subprocess.run([sys.executable, str(script), str(codelet), str(how)], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == -signum
    assert "not reached" not in result.stdout
    assert f"popsim: {signal.Signals(signum).name}" in result.stderr
    assert "in vertex 'Crash' on tile 5 in compute set 'update weights'" in result.stderr


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
    child = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
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
    flag, x, y = graph.add_constant(INT, [], 1, "flag"), graph.add_variable(INT, [], "x"), graph.add_variable(INT, [], "y")
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
