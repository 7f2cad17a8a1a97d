"""poplin.flops: FLOP counts, the ipu2 peak rates (reference 4) and the achieved rate of a
modelled run, checked on a small matmul whose cycles cannot beat the peak."""
import numpy as np
import pytest

import popsim
from popsim import FLOAT, HALF, INT, poplin
from popsim.poputil import PoplibsError
from popsim.program import Sequence


def test_flops_and_peaks_by_hand():
    assert poplin.mat_mul_flops(2, 3, 4, 5) == 240
    target = popsim.IPUModel("ipu2").create_device().target
    assert poplin.peak_flops(target, FLOAT) == pytest.approx(2 * 1472 * 16 * 1.33e9)
    assert poplin.peak_flops(target, HALF) == pytest.approx(2 * 1472 * 64 * 1.33e9)
    assert 62e12 < poplin.peak_flops(target, FLOAT) < 63e12 and 250e12 < poplin.peak_flops(target, HALF) < 251e12
    # 1.33e9 FLOPs in 1.33e9 cycles (one second) is 1.33e9 FLOP/s
    assert poplin.achieved_flops(1330000000, 1.33e9, target) == pytest.approx(1.33e9)


def test_modelled_small_matmul_stays_under_peak():
    model = popsim.IPUModel("ipu2")
    model.tiles_per_ipu = 16
    device = model.create_device()
    g = popsim.Graph(device)
    a = poplin.create_mat_mul_input_lhs(g, FLOAT, (64, 64), (64, 64), "a")
    b = poplin.create_mat_mul_input_rhs(g, FLOAT, (64, 64), (64, 64), "b")
    prog = Sequence()
    poplin.mat_mul(g, a, b, prog)
    engine = popsim.Engine(g, prog)
    engine.load(device)
    engine.run(0)
    cycles = engine.get_report().execution.total_cycles
    perfect = 64 ** 3 / (16 * device.target.amp_fp32_macs_per_cycle)  # every tile's AMP busy every cycle
    assert cycles > perfect
    achieved = poplin.achieved_flops(poplin.mat_mul_flops(1, 64, 64, 64), cycles, device.target)
    assert 0 < achieved < poplin.peak_flops(device.target, FLOAT)
    assert achieved == pytest.approx(poplin.peak_flops(device.target, FLOAT) * perfect / cycles)


def test_errors():
    target = popsim.IPUModel("ipu2").create_device().target
    with pytest.raises(PoplibsError, match="m must be a whole number >= 0, found -1"):
        poplin.mat_mul_flops(1, -1, 2, 2)
    with pytest.raises(PoplibsError, match="FLOAT or HALF"):
        poplin.peak_flops(target, INT)
    with pytest.raises(PoplibsError, match="cycles must be > 0, found 0"):
        poplin.achieved_flops(10, 0, target)


def test_peak_flops_checks_its_arguments():
    """A number for the target was an AttributeError; an array for the type a ValueError."""
    with pytest.raises(popsim.TypeError, match=r"poplin.peak_flops: expected a popsim.Target \(graph.target\), "
                                               "found int"):
        poplin.peak_flops(6, FLOAT)
    with pytest.raises(PoplibsError, match="the type must be FLOAT or HALF, found array"):
        poplin.peak_flops(popsim.Target.create_ipu_target(), np.zeros(2))
