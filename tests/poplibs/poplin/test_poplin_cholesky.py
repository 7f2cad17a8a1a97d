"""poplin.cholesky and cholesky_in_place against numpy.linalg.cholesky on the engine
(hypothesis over N, batch dimensions, triangle and block size), half data, the unread
triangle, a matrix that is not positive definite, and bad input."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import popsim
from popsim import FLOAT, HALF, INT, poplin
from popsim.poputil import PoplibsError, map_tensor_linearly
from popsim.program import Sequence

from poplin_harness import run_program, small_device




def _spd(rng, batch, n):
    m = rng.standard_normal(batch + (n, n))
    return m @ np.swapaxes(m, -1, -2) / max(n, 1) + np.eye(n)


def _reference(a, lower):
    low = np.linalg.cholesky(a.astype(np.float64))
    return low if lower else np.swapaxes(low, -1, -2)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(1, 13), lower=st.booleans(), batch=st.sampled_from([(), (3,), (2, 1)]),
       block=st.sampled_from([1, 2, 3, 4, 64]))
def test_cholesky_matches_numpy(n, lower, batch, block):
    device = small_device()
    g = popsim.Graph(device)
    ha = _spd(np.random.default_rng(n), batch, n)
    # only the triangle asked for is read: NaN in the other one must not leak
    other = np.triu(np.ones((n, n)), 1) if lower else np.tril(np.ones((n, n)), -1)
    a = g.add_variable(FLOAT, ha.shape, "a")
    map_tensor_linearly(g, a)
    prog = Sequence()
    factor = poplin.cholesky(g, a, lower, prog, options={"blockSize": block})
    assert factor.shape == a.shape and factor.dtype == FLOAT
    got, = run_program(g, device, prog, {a: np.where(other > 0, np.nan, ha)}, [factor])
    np.testing.assert_allclose(got, _reference(ha, lower), rtol=1e-4, atol=1e-5)


def test_cholesky_in_place_across_blocks():
    device = small_device()
    g = popsim.Graph(device)
    ha = _spd(np.random.default_rng(7), (2,), 30)
    a = g.add_variable(FLOAT, ha.shape, "a")
    map_tensor_linearly(g, a)
    prog = Sequence()
    assert poplin.cholesky_in_place(g, a, False, prog, "chol", options={"blockSize": 8},
                                    cache=poplin.PlanningCache()) is None
    got, = run_program(g, device, prog, {a: ha}, [a])
    np.testing.assert_allclose(got, _reference(ha, False), rtol=1e-4, atol=1e-5)


def test_cholesky_half():
    device = small_device()
    g = popsim.Graph(device)
    ha = _spd(np.random.default_rng(4), (), 9).astype(np.float16)
    a = g.add_variable(HALF, ha.shape, "a")
    map_tensor_linearly(g, a)
    prog = Sequence()
    factor = poplin.cholesky(g, a, True, prog, options={"blockSize": 4})
    got, = run_program(g, device, prog, {a: ha}, [factor])
    np.testing.assert_allclose(got.astype(np.float64), _reference(ha, True), rtol=2e-2, atol=2e-2)


def test_not_positive_definite_gives_nan():
    device = small_device()
    g = popsim.Graph(device)
    ha = np.array([[1.0, 2.0], [2.0, 1.0]])  # eigenvalues 3 and -1
    a = g.add_variable(FLOAT, ha.shape, "a")
    g.set_tile_mapping(a, 0)
    prog = Sequence()
    factor = poplin.cholesky(g, a, True, prog)
    got, = run_program(g, device, prog, {a: ha}, [factor])
    assert got[0, 0] == 1.0 and got[1, 0] == 2.0 and np.isnan(got[1, 1]) and got[0, 1] == 0.0


def test_errors():
    g = popsim.Graph(small_device())
    rect = g.add_variable(FLOAT, (3, 4), "rect")
    with pytest.raises(PoplibsError, match=r"poplin.cholesky: A 'rect' must be square .*\(3, 4\)"):
        poplin.cholesky(g, rect, True, Sequence())
    with pytest.raises(PoplibsError, match=r"poplin.cholesky_in_place: A 'rect' must be square"):
        poplin.cholesky_in_place(g, rect, True, Sequence())
    with pytest.raises(PoplibsError, match=r"rank 2 or more"):
        poplin.cholesky(g, g.add_variable(FLOAT, (3,), "v"), True, Sequence())
    with pytest.raises(PoplibsError, match=r"'ai' must be FLOAT or HALF"):
        poplin.cholesky(g, g.add_variable(INT, (3, 3), "ai"), True, Sequence())
    sq = g.add_variable(FLOAT, (3, 3), "sq")
    with pytest.raises(PoplibsError, match=r"'blockSize': invalid value 'x'"):
        poplin.cholesky(g, sq, True, Sequence(), options={"blockSize": "x"})
    with pytest.raises(PoplibsError, match=r"cache must be a poplin.PlanningCache"):
        poplin.cholesky(g, sq, True, Sequence(), cache={})


@pytest.mark.parametrize("lower", [np.zeros((2, 2)), 1, "yes", None])
def test_lower_must_be_true_or_false(lower):
    """An array was a ValueError (its truth value is ambiguous); 1 or "yes" were guessed."""
    g = popsim.Graph(small_device())
    a = g.add_variable(FLOAT, (3, 3), "a")
    map_tensor_linearly(g, a)
    for call in (poplin.cholesky, poplin.cholesky_in_place):
        with pytest.raises(PoplibsError, match="lower must be True or False, found"):
            call(g, a, lower, Sequence())
