"""popops fill and zero on the engine against numpy, on tensors over tiles with one
region (Fill) and several (Fill2d), the Copy for tiny tensors, with PopLibs' estimators."""
import numpy as np
import pytest

import popsim
from popsim import BOOL, FLOAT, HALF, INT, SHORT, UNSIGNED_INT, popops, poputil
from popsim.popops.fill import fill2d_cycles, fill_cycles
from popsim.program import Sequence

from popops_harness import mapped, run, vertex_kinds


@pytest.mark.parametrize("dtype,value", [(FLOAT, 2.5), (HALF, 1.1), (INT, -7), (UNSIGNED_INT, 4000000000),
                                         (BOOL, True), (SHORT, -3)], ids=lambda x: getattr(x, "name", str(x)))
def test_fill_and_zero(g, small_device, dtype, value):
    t, z = mapped(g, dtype, "t"), mapped(g, dtype, "z")
    prog = Sequence()
    popops.fill(g, t, value, prog)
    popops.zero(g, z, prog)
    engine, (got, got_z) = run(g, small_device, prog, [t, z], {z: np.ones((4, 6), dtype.numpy)})
    np.testing.assert_array_equal(got, np.full((4, 6), value, dtype.numpy))
    np.testing.assert_array_equal(got_z, np.zeros((4, 6), dtype.numpy))
    kinds = vertex_kinds(engine)
    assert kinds[f"popops::Fill<{dtype.cpp}>"]["instances"] >= 2
    assert f"popops::Fill2d<{dtype.cpp}>" in kinds


def test_fill_of_four_bytes_or_fewer_is_a_copy(g, small_device):
    t = g.add_variable(HALF, (2,), "t")
    g.set_tile_mapping(t, 1)
    prog = Sequence()
    popops.fill(g, t, -0.25, prog)
    assert g.num_vertices == 0
    _, (got,) = run(g, small_device, prog, [t], {})
    np.testing.assert_array_equal(got, [-0.25, -0.25])


def test_fill_estimators_match_the_reference_formulas():
    # PopLibs' cycle estimators, evaluated by hand
    assert fill_cycles(FLOAT, 7) == 16 + 3 + 6 + 1 + 1
    assert fill_cycles(HALF, 1) == 15 and fill_cycles(HALF, 9) == 26 + 2
    assert fill2d_cycles(FLOAT, [4, 5]) == 5 + (16 + 2 + 6 + 0 + 1) + (16 + 2 + 6 + 1 + 1) + 1 - 3 * 2
    assert fill2d_cycles(HALF, [8]) == 5 + 26 + 2 - 2


def test_errors(g):
    a = mapped(g, FLOAT, "a")
    prog = Sequence()
    with pytest.raises(poputil.PoplibsError, match="popops.fill: the value 1.5 does not fit tensor 'i'"):
        popops.fill(g, mapped(g, INT, "i"), 1.5, prog)
    with pytest.raises(poputil.PoplibsError, match="popops.fill: the value -1 is out of range for tensor 'u'"):
        popops.fill(g, mapped(g, UNSIGNED_INT, "u"), -1, prog)
    with pytest.raises(poputil.PoplibsError, match="popops.zero: the tensor tensor 'c'.*contains constants"):
        popops.zero(g, g.add_constant(FLOAT, (4,), 1.0, "c"), prog)
    with pytest.raises(popsim.TypeError, match="popops.fill: the fill value must be a number"):
        popops.fill(g, a, a, prog)
    with pytest.raises(popsim.TypeError, match="found complex .no device type holds a complex number"):
        popops.fill(g, a, 1 + 1j, prog)  # was float()'s TypeError
    assert g.num_vertices == 0
