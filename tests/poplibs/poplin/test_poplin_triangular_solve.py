"""poplin.triangular_solve and triangular_mask against numpy.linalg.solve on the engine
(hypothesis over N, K, batch dimensions, side, triangle, unit diagonal and block size),
the block vertex on its own, its estimator, and bad input."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import popsim
from popsim import FLOAT, HALF, INT, poplin
from popsim.poplin import linalg_vertices
from popsim.poputil import PoplibsError, map_tensor_linearly
from popsim.program import Execute, Sequence

from poplin_harness import run_program, small_device




def _var(g, dtype, shape, name):
    t = g.add_variable(dtype, shape, name)
    map_tensor_linearly(g, t)
    return t




def _triangle(a, lower, unit):
    t = np.tril(a) if lower else np.triu(a)
    if unit:
        idx = np.arange(a.shape[-1])
        t[..., idx, idx] = 1.0
    return t


def _reference(a, b, left, lower, unit):
    t, b = _triangle(a.astype(np.float64), lower, unit), b.astype(np.float64)
    if left:
        return np.linalg.solve(t, b)
    return np.swapaxes(np.linalg.solve(np.swapaxes(t, -1, -2), np.swapaxes(b, -1, -2)), -1, -2)


def _problem(rng, batch, n, k, left):
    """A well-conditioned A (dominant diagonal; NaN outside the triangle is set by callers)."""
    a = rng.uniform(-1, 1, batch + (n, n)) / max(n, 1) + np.eye(n) * rng.uniform(1, 2, batch + (n,))[..., None]
    b = rng.standard_normal(batch + ((n, k) if left else (k, n)))
    return a, b


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(1, 11), k=st.integers(1, 5), left=st.booleans(), lower=st.booleans(), unit=st.booleans(),
       batch=st.sampled_from([(), (2,), (2, 1)]), block=st.sampled_from([1, 2, 3, 4, 64]))
def test_triangular_solve_matches_numpy(n, k, left, lower, unit, batch, block):
    device = small_device()
    g = popsim.Graph(device)
    rng = np.random.default_rng(n * 100 + k)
    ha, hb = _problem(rng, batch, n, k, left)
    # the other triangle (and a unit diagonal) are never read: NaN there must not leak
    unread = np.triu(np.ones((n, n)), 1) if lower else np.tril(np.ones((n, n)), -1)
    if unit:
        unread = unread + np.eye(n)
    ha_nan = np.where(unread > 0, np.nan, ha)
    a, b = _var(g, FLOAT, ha.shape, "a"), _var(g, FLOAT, hb.shape, "b")
    prog = Sequence()
    x = poplin.triangular_solve(g, a, b, left, lower, unit, prog, options={"blockSize": block})
    assert x.shape == b.shape and x.dtype == FLOAT
    got, = run_program(g, device, prog, {a: ha_nan, b: hb}, [x])
    np.testing.assert_allclose(got, _reference(ha, hb, left, lower, unit), rtol=1e-4, atol=1e-4)


def test_triangular_solve_across_many_blocks_with_matmul_options():
    device = small_device()
    g = popsim.Graph(device)
    rng = np.random.default_rng(5)
    ha, hb = _problem(rng, (), 40, 7, True)
    a, b = _var(g, FLOAT, ha.shape, "a"), _var(g, FLOAT, hb.shape, "b")
    prog = Sequence()
    cache = poplin.PlanningCache()
    x = poplin.triangular_solve(g, a, b, True, True, False, prog, "ts",
                                options={"blockSize": "8", "availableMemoryProportion": 0.3}, cache=cache)
    got, = run_program(g, device, prog, {a: ha, b: hb}, [x])
    np.testing.assert_allclose(got, _reference(ha, hb, True, True, False), rtol=1e-4, atol=1e-4)


def test_triangular_solve_half():
    device = small_device()
    g = popsim.Graph(device)
    rng = np.random.default_rng(3)
    ha, hb = _problem(rng, (), 12, 4, False)
    a, b = _var(g, HALF, ha.shape, "a"), _var(g, HALF, hb.shape, "b")
    prog = Sequence()
    x = poplin.triangular_solve(g, a, b, False, False, False, prog, options={"blockSize": 4})
    assert x.dtype == HALF
    got, = run_program(g, device, prog, {a: ha, b: hb}, [x])
    ref = _reference(ha.astype(np.float16).astype(np.float64), hb.astype(np.float16), False, False, False)
    np.testing.assert_allclose(got.astype(np.float64), ref, rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("lower,unit", [(True, False), (False, False), (True, True), (False, True)])
def test_triangular_mask(lower, unit):
    device = small_device()
    g = popsim.Graph(device)
    ha = np.random.default_rng(1).standard_normal((2, 5, 5))
    a = _var(g, FLOAT, ha.shape, "a")
    prog = Sequence()
    m = poplin.triangular_mask(g, a, lower, unit, prog)
    got, = run_program(g, device, prog, {a: ha}, [m])
    np.testing.assert_allclose(got, _triangle(ha.astype(np.float32), lower, unit))


@pytest.mark.parametrize("dtype", [FLOAT, HALF])
@pytest.mark.parametrize("lower,unit", [(True, False), (False, True)])
def test_block_vertex_alone(dtype, lower, unit):
    """The vertex on one tile: a 4x4 block, 3 columns."""
    device = small_device()
    g = popsim.Graph(device)
    rng = np.random.default_rng(2)
    ha, hb = _problem(rng, (), 4, 3, True)
    a, x = g.add_variable(dtype, (4, 4), "a"), g.add_variable(dtype, (4, 3), "x")
    g.set_tile_mapping(a, 0)
    g.set_tile_mapping(x, 0)
    name = linalg_vertices.ensure_triangular_solve_vertex(g, dtype, lower, unit)
    assert name == f"poplin::TriangularSolveBlock<{dtype.name.lower()},{str(lower).lower()},{str(unit).lower()}>"
    cs = g.add_compute_set("solve")
    v = g.add_vertex(cs, name, {"a": a.flatten(), "x": [x[i] for i in range(4)]})
    g.set_tile_mapping(v, 0)
    g.create_host_write("a", a)
    g.create_host_write("x", x)
    g.create_host_read("x_out", x)
    engine = popsim.Engine(g, Sequence([Execute(cs)]))
    engine.load(device)
    engine.write_tensor("a", ha.astype(dtype.numpy))
    engine.write_tensor("x", hb.astype(dtype.numpy))
    engine.run(0)
    ref = _reference(ha.astype(dtype.numpy).astype(np.float64), hb.astype(dtype.numpy), True, lower, unit)
    tol = 1e-5 if dtype == FLOAT else 1e-2
    np.testing.assert_allclose(engine.read_tensor("x_out").astype(np.float64), ref, rtol=tol, atol=tol)


def test_block_estimator_by_hand():
    vw = popsim.Target.create_ipu_target().vector_width  # FLOAT 2, HALF 4
    # n=3, kc=5 FLOAT: 3 column vectors; rows 15 + 3*(5+6) = 48; vectors 3 * (3 + 3*3) = 36
    assert linalg_vertices.triangular_solve_block_cycles(vw(FLOAT), 3, 5, False) == 15 + 33 + 36
    # unit diagonal, HALF: 2 column vectors of 4: 15 + 3*5 + 2 * (3 + 6) = 48
    assert linalg_vertices.triangular_solve_block_cycles(vw(HALF), 3, 5, True) == 48
    # cholesky n=3 FLOAT: j=0: 20+0+2*3=26; j=1: 20+1+1*(1+3)=25; j=2: 20+1+0=21; +15
    assert linalg_vertices.cholesky_block_cycles(vw(FLOAT), 3) == 15 + 26 + 25 + 21


def test_zero_sized():
    device = small_device()
    g = popsim.Graph(device)
    a, b = _var(g, FLOAT, (3, 3), "a"), _var(g, FLOAT, (3, 0), "b")
    prog = Sequence()
    assert poplin.triangular_solve(g, a, b, True, True, False, prog).shape == (3, 0)


# -- bad input ------------------------------------------------------------------------------------

def _bad(g, a, b, left=True, options=None, prog=None):
    return poplin.triangular_solve(g, a, b, left, True, False, Sequence() if prog is None else prog,
                                   options=options)


def test_errors():
    g = popsim.Graph(small_device())
    sq, rect, b = _var(g, FLOAT, (4, 4), "sq"), _var(g, FLOAT, (4, 3), "rect"), _var(g, FLOAT, (4, 2), "b")
    with pytest.raises(PoplibsError, match=r"A 'rect' must be square .*\(4, 3\)"):
        _bad(g, rect, b)
    with pytest.raises(PoplibsError, match=r"A 'v' must have rank 2 or more"):
        _bad(g, _var(g, FLOAT, (4,), "v"), b)
    with pytest.raises(PoplibsError, match=r"right-side B must have shape \[\.\.\., K, N\].*'b' of shape \(4, 2\)"):
        _bad(g, sq, b, left=False)
    with pytest.raises(PoplibsError, match=r"left-side B must have shape \[\.\.\., N, K\]"):
        _bad(g, sq, _var(g, FLOAT, (3, 2), "b3"))
    with pytest.raises(PoplibsError, match=r"leading dimensions"):
        _bad(g, _var(g, FLOAT, (2, 4, 4), "a2"), _var(g, FLOAT, (3, 4, 2), "b32"))
    with pytest.raises(PoplibsError, match=r"same rank"):
        _bad(g, _var(g, FLOAT, (2, 4, 4), "a24"), b)
    with pytest.raises(PoplibsError, match=r"same type, found FLOAT and HALF"):
        _bad(g, sq, _var(g, HALF, (4, 2), "bh"))
    with pytest.raises(PoplibsError, match=r"A 'ai' must be FLOAT or HALF"):
        _bad(g, _var(g, INT, (4, 4), "ai"), b)
    with pytest.raises(PoplibsError, match=r"'blockSize': invalid value 0"):
        _bad(g, sq, b, options={"blockSize": 0})
    with pytest.raises(PoplibsError, match=r"unknown option 'blocksize'"):
        _bad(g, sq, b, options={"blocksize": 8})
    with pytest.raises(PoplibsError, match=r"availableMemoryProportion"):
        _bad(g, sq, b, options={"availableMemoryProportion": -1})
    with pytest.raises(PoplibsError, match=r"prog must be a popsim.Sequence"):
        poplin.triangular_solve(g, sq, b, True, True, False, None)
    with pytest.raises(PoplibsError, match=r"poplin.triangular_mask: A 'rect' must be square"):
        poplin.triangular_mask(g, rect, True, False, Sequence())


@pytest.mark.parametrize("flag", ["left_side", "lower", "unit_diagonal"])
def test_flags_must_be_true_or_false(flag):
    """An array was a ValueError (its truth value is ambiguous)."""
    g = popsim.Graph(small_device())
    a, b = _var(g, FLOAT, (3, 3), "a"), _var(g, FLOAT, (3, 2), "b")
    flags = {"left_side": True, "lower": True, "unit_diagonal": False, flag: np.zeros((2, 2))}
    with pytest.raises(PoplibsError, match=f"{flag} must be True or False, found ndarray"):
        poplin.triangular_solve(g, a, b, flags["left_side"], flags["lower"], flags["unit_diagonal"], Sequence())
