"""Faults in vertex code end the vertex, not the process (native/core/vertex_guard.hpp,
tile_memory.hpp): a C++ codelet that writes before or past tile memory, recurses until
its stack overflows, divides by zero or follows a wild pointer fails the run with an
ApplicationRuntimeError naming the vertex, its tile and compute set, and the engine (and
the process) stays usable; a C++ codelet stuck in a loop is stopped by the run-time limit.
These run in the test process itself: that it survives them is the point."""
import textwrap
import time

import numpy as np
import pytest

import popsim
from popsim import INT
from popsim.program import Execute

pytestmark = pytest.mark.compiler

CODELETS = textwrap.dedent("""
    #include <poplar/Vertex.hpp>
    #include <cstdint>
    using namespace poplar;

    // Writes x[0], x[-1], x[-2], ... until something stops it.
    class RunOffTheStart : public Vertex {
    public:
      InOut<Vector<int>> x;
      bool compute() {
        int *p = &x[0];
        for (long i = 0;; --i) reinterpret_cast<volatile int *>(p)[i] = 7;
        return true;
      }
    };

    // Writes x[0], x[1], ... past its end until something stops it.
    class RunOffTheEnd : public Vertex {
    public:
      InOut<Vector<int>> x;
      bool compute() {
        int *p = &x[0];
        for (long i = 0;; ++i) reinterpret_cast<volatile int *>(p)[i] = 7;
        return true;
      }
    };

    static int deeper(volatile int *depth) {
      volatile char frame[512];
      frame[0] = static_cast<char>(*depth);
      ++*depth;
      return deeper(depth) + frame[0];  // not a tail call: every level keeps its frame
    }

    class Recurse : public Vertex {
    public:
      InOut<int> x;
      bool compute() {
        volatile int depth = 0;
        *x = deeper(&depth);
        return true;
      }
    };

    class Divide : public Vertex {
    public:
      Input<int> num;
      Input<int> den;
      Output<int> out;
      bool compute() {
        *out = *num / *den;
        return true;
      }
    };

    class Wild : public Vertex {
    public:
      InOut<int> x;
      bool compute() {
        *reinterpret_cast<volatile int *>(std::uintptr_t(*x) * 8) = 42;
        return true;
      }
    };

    class Forever : public Vertex {
    public:
      InOut<int> x;
      bool compute() {
        for (volatile int i = 0; *x == 0; i = i + 1) {
        }
        return true;
      }
    };

    class Increment : public Vertex {
    public:
      InOut<int> x;
      bool compute() {
        *x = *x + 1;
        return true;
      }
    };
""")


def build(tmp_path, vertex, fields, tiles=1, options=None):
    """An engine whose program 0 runs ``vertex`` (on each of ``tiles`` tiles) and whose
    program 1 increments ``y``: after program 0 fails, program 1 shows the engine works."""
    source = tmp_path / "faults.cpp"
    source.write_text(CODELETS)
    model = popsim.IPUModel()
    model.tiles_per_ipu = max(tiles, 2)
    device = model.create_device()
    graph = popsim.Graph(device)
    graph.add_codelets(str(source))
    y = graph.add_variable(INT, [], "y")
    graph.set_tile_mapping(y, 0)
    cs = graph.add_compute_set("faulty step")
    for tile in range(tiles):
        tensors = {}
        for name, (shape, value) in fields.items():
            t = graph.add_variable(INT, shape, f"{name}{tile}")
            graph.set_tile_mapping(t, tile)
            graph.set_initial_value(t, np.full(shape, value, np.int32))
            tensors[name] = t
        graph.set_tile_mapping(graph.add_vertex(cs, vertex, tensors), tile)
    ok = graph.add_compute_set("increment")
    graph.set_tile_mapping(graph.add_vertex(ok, "Increment", {"x": y}), 0)
    graph.create_host_read("y", y)
    engine = popsim.Engine(graph, [Execute(cs), Execute(ok)], options or {})
    engine.load(device)
    return engine


def fails_then_works(engine, pattern):
    for attempt in range(2):  # a second fault on the same threads is caught too
        with pytest.raises(popsim.ApplicationRuntimeError, match=pattern):
            engine.run(0)
        before = engine.read_tensor("y")  # (a vertex running off its field may have written it)
        engine.run(1)
        assert engine.read_tensor("y") == before + 1


def test_a_write_before_tile_memory_is_the_vertexs_error(tmp_path):
    engine = build(tmp_path, "RunOffTheStart", {"x": ([4], 0)})
    fails_then_works(engine, r"vertex 'RunOffTheStart'.* on tile 0 in compute set 'faulty step' crashed: an invalid "
                             r"memory access \(SIGSEGV\) \d+ bytes before the start of its replica's tile memory")


def test_a_write_past_tile_memory_is_the_vertexs_error(tmp_path):
    engine = build(tmp_path, "RunOffTheEnd", {"x": ([4], 0)})
    fails_then_works(engine, r"'RunOffTheEnd'.* crashed: an invalid memory access \(SIGSEGV\) \d+ bytes past the "
                             r"end of its replica's tile memory")


def test_a_stack_overflow_is_the_vertexs_error(tmp_path):
    engine = build(tmp_path, "Recurse", {"x": ([], 0)})
    fails_then_works(engine, r"'Recurse'.* crashed: an invalid memory access \(SIGSEGV\) past the end of its stack")


def test_an_integer_division_by_zero_is_the_vertexs_error(tmp_path):
    engine = build(tmp_path, "Divide", {"num": ([], 1), "den": ([], 0), "out": ([], 0)})
    fails_then_works(engine, r"'Divide'.* crashed: an arithmetic fault \(SIGFPE\)")


def test_a_wild_pointer_is_the_vertexs_error(tmp_path):
    engine = build(tmp_path, "Wild", {"x": ([], 1)})
    fails_then_works(engine, r"'Wild'.* crashed: an invalid memory access \(SIGSEGV\) at address 0x8, outside tile "
                             r"memory")


def test_faults_on_every_thread_report_the_first_tile(tmp_path):
    engine = build(tmp_path, "RunOffTheEnd", {"x": ([4], 0)}, tiles=16, options={"popsim.numThreads": "2"})
    fails_then_works(engine, r"'RunOffTheEnd'.* on tile 0 in compute set 'faulty step' crashed")


def test_the_run_time_limit_stops_a_cpp_codelet_stuck_in_a_loop(tmp_path):
    engine = build(tmp_path, "Forever", {"x": ([], 0)}, tiles=4,
                   options={"popsim.runTimeout": "0.3", "popsim.numThreads": "2"})
    for attempt in range(2):
        start = time.monotonic()
        with pytest.raises(popsim.ApplicationRuntimeError, match=r"ran longer than popsim.runTimeout \(0.3 s\)"):
            engine.run(0)
        assert time.monotonic() - start < 10  # (the limit is 0.3 s; this only catches a run that never ended)
        engine.run(1)
        assert engine.read_tensor("y") == attempt + 1
