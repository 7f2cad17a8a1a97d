"""The C that popsim.codelet.emit_c writes for Python vertices: loops poll the run's
interrupt flag (popsim_exec.interrupt), so Ctrl-C stops a vertex stuck in a loop."""
import numpy as np
import pytest

from popsim import InOut, Input, Output, Vector, Vertex
from popsim.codelet import abi
from popsim.codelet.python_vertex import vertex_types_from_classes

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
    assert "stop" not in straight.extra["c_source"]
    ret, ctx = abi.run_compiled(straight, [np.array([1.5], np.float32), np.zeros(1, np.float32)], interrupted=True)
    assert (ret, ctx.error) == (1, abi.OK)               # nothing long-running to stop
