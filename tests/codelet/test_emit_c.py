"""The C that popsim.codelet.emit_c writes for Python vertices: loops poll the run's
interrupt flag (popsim_exec.interrupt), so Ctrl-C stops a vertex stuck in a loop."""
import numpy as np
import pytest

from popsim import InOut, Input, Output, Vector, Vertex
from popsim.codelet import abi, emit_c
from popsim.codelet.python_compile import vertex_types_from_classes

pytestmark = pytest.mark.compiler


class Loops(Vertex):
    a: Input[Vector[float]]
    n: InOut[int]
    out: Output[float]

    def compute(self):
        s = 0.0
        for x in self.a:
            s += x
        for i in range(self.n):
            s += i
        while self.n > 0:
            self.n -= 1
        self.out = s


class Straight(Vertex):
    a: Input[float]
    out: Output[float]

    def compute(self):
        self.out = self.a * 2.0


def test_loops_stop_when_the_run_is_interrupted():
    (vt,) = vertex_types_from_classes([Loops])
    values = [np.arange(4, dtype=np.float32), np.array([3], np.int32), np.zeros(1, np.float32)]
    ret, ctx = abi.run_compiled(vt, values, interrupted=True)
    assert (ret, ctx.error) == (-1, abi.INTERRUPTED)
    assert values[2][0] == 0 and values[1][0] == 3      # stopped before storing anything
    ret, ctx = abi.run_compiled(vt, values)
    assert (ret, ctx.error) == (1, abi.OK)
    assert values[2][0] == 0 + 1 + 2 + 3 + (0 + 1 + 2) and values[1][0] == 0


def test_every_kind_of_loop_polls_and_straight_code_does_not():
    (loops,) = vertex_types_from_classes([Loops])
    (straight,) = vertex_types_from_classes([Straight])
    assert loops.extra["c_source"].count("if (*stop) goto popsim_interrupted;") == 3
    assert loops.extra["c_source"].count(f"{emit_c.POLL_EVERY}u") == 4   # the for loops poll per chunk
    assert "stop" not in straight.extra["c_source"]
    ret, ctx = abi.run_compiled(straight, [np.array([1.5], np.float32), np.zeros(1, np.float32)], interrupted=True)
    assert (ret, ctx.error) == (1, abi.OK)               # nothing long-running to stop


class Chunks(Vertex):
    """Loops longer than one polling chunk, with break and continue in them."""

    n: Input[int]
    out: Output[Vector[int]]

    def compute(self):
        total = 0
        found = -1
        for i in range(self.n):
            if i % 3 == 0:
                continue
            total += i
            if i == 40000:
                found = i
                break
        count = 0
        for j in range(self.n):
            count += 1
        self.out[0] = total
        self.out[1] = found
        self.out[2] = count


@pytest.mark.parametrize("n", [5, emit_c.POLL_EVERY, emit_c.POLL_EVERY + 1, 100000])
def test_chunked_loops_keep_break_and_continue(n):
    (vt,) = vertex_types_from_classes([Chunks])
    out = np.zeros(3, np.int32)
    assert abi.run_compiled(vt, [np.array([n], np.int32), out])[0] == 1
    stop = min(n, 40001)
    assert out.tolist() == [sum(i for i in range(stop) if i % 3), 40000 if n > 40000 else -1, n]
