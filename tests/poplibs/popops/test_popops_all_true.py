"""popops all_true and has_nan on the engine against numpy; vertex names and PopLibs'
estimators."""
import numpy as np
import pytest

from popsim import BOOL, FLOAT, HALF, INT, popops, poputil
from popsim.popops.all_true import all_true_cycles, has_nan_cycles
from popsim.program import Sequence

from popops_harness import mapped, run


@pytest.mark.parametrize("falses", [[], [0], [13], [23, 5]])
def test_all_true(g, small_device, falses):
    t = mapped(g, BOOL, "t")
    prog = Sequence()
    result = popops.all_true(g, t, prog)
    assert result.dtype == BOOL and tuple(result.shape) == ()
    values = np.ones(24, bool)
    values[falses] = False
    engine, (got,) = run(g, small_device, prog, [result], {t: values.reshape(4, 6)})
    assert bool(got) == (not falses)
    kinds = {v["name"] for v in engine.get_report().to_dict()["execution"]["vertex_types"]}
    assert "popops::AllTrue" in kinds


@pytest.mark.parametrize("dtype", [FLOAT, HALF], ids=lambda t: t.name)
@pytest.mark.parametrize("nans", [[], [3], [22, 9]])
def test_has_nan(g, small_device, dtype, nans):
    t = mapped(g, dtype, "t")
    prog = Sequence()
    result = popops.has_nan(g, t, prog)
    values = np.arange(24, dtype=dtype.numpy)
    values[-1] = np.inf  # infinities are not NaN
    values[nans] = np.nan
    engine, (got,) = run(g, small_device, prog, [result], {t: values.reshape(4, 6)})
    assert bool(got) == bool(nans)
    kinds = {v["name"] for v in engine.get_report().to_dict()["execution"]["vertex_types"]}
    assert f"popops::HasNaN<{dtype.cpp}>" in kinds


def test_estimators():
    assert all_true_cycles([8, 9]) == 6 + (11 + 1) + (11 + 2)
    assert has_nan_cycles(FLOAT, [2, 0]) == 6 + (3 + 18 + 3) + 3
    assert has_nan_cycles(HALF, [3]) == 6 + 3 + 30 + 3


def test_errors(g):
    prog = Sequence()
    with pytest.raises(poputil.PoplibsError, match="popops.all_true: tensor 'f'.*must be BOOL"):
        popops.all_true(g, mapped(g, FLOAT, "f"), prog)
    with pytest.raises(poputil.PoplibsError, match="popops.has_nan: tensor 'i'.*must be FLOAT or HALF"):
        popops.has_nan(g, mapped(g, INT, "i"), prog)
    assert g.num_vertices == 0
