"""A binary op with a number as its second operand runs PopLibs' BroadcastScalar vertices:
the number is each vertex's member B, nothing is exchanged for it."""
import math

import numpy as np
import pytest

from popsim import FLOAT, HALF, INT, UNSIGNED_INT, Target, popops
from popsim.popops.elementwise_vertices import vertex_cycles
from popsim.popops.op_types import BinaryOpType
from popsim.program import Sequence

from popops_harness import mapped, run, vertex_kinds

CASES = [("add", FLOAT, 1.5, np.add), ("sub", FLOAT, 2.25, np.subtract), ("mul", HALF, 0.5, np.multiply),
         ("max", INT, -3, np.maximum), ("div", INT, 4, lambda a, b: np.trunc(a / b)),
         ("rem", UNSIGNED_INT, 5, np.remainder)]


@pytest.mark.parametrize("name, dtype, number, reference", CASES, ids=[c[0] for c in CASES])
def test_against_numpy_on_one_and_several_region_tiles(g, small_device, name, dtype, number, reference):
    a = mapped(g, dtype, "a")
    prog = Sequence()
    out = getattr(popops, name)(g, a, number, prog)
    rng = np.random.default_rng(1)
    values = (rng.integers(1, 50, (4, 6)) if dtype in (INT, UNSIGNED_INT) else rng.normal(size=(4, 6))) \
        .astype(dtype.numpy)
    engine, (got,) = run(g, small_device, prog, [out], {a: values})
    expected = reference(values, np.asarray(number, dtype.numpy)).astype(dtype.numpy)
    np.testing.assert_array_equal(got, expected)
    kinds = vertex_kinds(engine)
    tag = {FLOAT: "float", HALF: "half", INT: "int", UNSIGNED_INT: "unsigned int"}[dtype]
    op = popops.BinaryOpType[{"add": "ADD", "sub": "SUBTRACT", "mul": "MULTIPLY", "max": "MAXIMUM",
                                           "div": "DIVIDE", "rem": "REMAINDER"}[name]].name
    assert set(kinds) == {f"popops::BroadcastScalar1D<{op},{tag}>", f"popops::BroadcastScalar2D<{op},{tag}>"}
    assert engine.get_report().to_dict()["graph"]["num_variables"] == 2  # a and out: no constant for the number


def test_in_place_and_no_constant_for_the_number(g, small_device):
    a = mapped(g, FLOAT, "a")
    prog = Sequence()
    popops.mul_in_place(g, a, 3.0, prog)
    values = np.arange(24, dtype=np.float32).reshape(4, 6)
    engine, (got,) = run(g, small_device, prog, [a], {a: values})
    np.testing.assert_array_equal(got, values * 3)
    assert set(vertex_kinds(engine)) == {"popops::BroadcastScalar1DInPlace<MULTIPLY,float>",
                                         "popops::BroadcastScalar2DInPlace<MULTIPLY,float>"}
    summary = engine.get_report().to_dict()
    assert summary["graph"]["num_variables"] == 1  # a only: the number is no constant tensor


def test_the_1d_estimate_is_poplibs_broadcast_formula():
    # broadcastArithmetic1DCycleEstimate: W * (20 + ceil(ceil(n/W) / elems per loop) * cycles per loop) + 11
    # float ADD: natural {1, T}, an external codelet op: 1 + 1 cycles per loop of 2 elements
    n, width = 100, Target.create_ipu_target().vector_width(FLOAT)  # 2
    assert vertex_cycles(BinaryOpType.ADD, FLOAT, False, False, [n], 6, width, scalar=True) == \
        6 * (20 + math.ceil(math.ceil(n / 6) / 2) * 2) + 11
    # float DIVIDE: {10, F, 2}: 10 cycles per 2 elements
    assert vertex_cycles(BinaryOpType.DIVIDE, FLOAT, False, False, [n], 6, width, scalar=True) == \
        6 * (20 + math.ceil(math.ceil(n / 6) / 2) * 10) + 11


def test_a_number_that_does_not_fit_is_refused(g):
    from popsim.poputil import PoplibsError
    a = mapped(g, INT, "a")
    with pytest.raises(PoplibsError, match="does not fit"):
        popops.add(g, a, 1.5, Sequence())
