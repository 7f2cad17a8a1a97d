"""Hypothesis properties of the element-wise ops: any binary op of the table, on any type
it takes, over shapes drawn to broadcast (numpy's rules: trailing dimensions equal or 1,
missing leading ones), on operands scattered over tiles so that tiles hold one region or
several; any unary op on any of its types over random shapes and layouts. numpy is the
reference (test_popops_binary's and test_popops_unary's tables)."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import popsim
from popsim import popops
from popsim.popops.elementwise_ops import BINARY_OPS, UNARY_OPS
from popsim.program import Sequence

from popops_harness import run, scattered_mapping
from test_popops_binary import check, operands
from test_popops_unary import EXACT, REFERENCES as UNARY_REFERENCES, data

TILES = 4


@st.composite
def broadcast_shapes(draw):
    """Two shapes that broadcast together, and their result shape."""
    result = draw(st.lists(st.integers(1, 5), min_size=0, max_size=3))
    shapes = []
    for _ in range(2):
        rank = draw(st.integers(0, len(result)))
        kept = result[len(result) - rank:]
        shapes.append(tuple(1 if draw(st.booleans()) else n for n in kept))
    return shapes[0], shapes[1], np.broadcast_shapes(*shapes)


def _part(values, shape):
    """The values of an operand of ``shape`` taken from full-size ``values``: index 0 of the
    missing leading dimensions, the first row of dimensions of size 1."""
    lead = values.ndim - len(shape)
    return values[(0,) * lead + tuple(slice(0, n) for n in shape)]


def _device():
    model = popsim.IPUModel("ipu2")
    model.tiles_per_ipu = TILES
    return model.create_device()


def _scattered(g, dtype, shape, name, rng):
    t = g.add_variable(dtype, shape, name)
    g.set_tile_mapping(t, scattered_mapping(t.num_elements(), TILES, rng))
    return t


@settings(max_examples=25, deadline=None)
@given(op=st.sampled_from(BINARY_OPS), shapes=broadcast_shapes(), data_=st.data(), seed=st.integers(0, 2 ** 31))
def test_binary_op_broadcasts_like_numpy(op, shapes, data_, seed):
    dtype = data_.draw(st.sampled_from(sorted(op.types, key=lambda t: t.name)))
    shape_a, shape_b, result = shapes
    rng = np.random.default_rng(seed)
    device = _device()
    g = popsim.Graph(device)
    a, b = _scattered(g, dtype, shape_a, "a", rng), _scattered(g, dtype, shape_b, "b", rng)
    # operands() draws values the op is defined on (no zero divisors, small shifts) at full size
    va, vb = (v[..., 0] for v in operands(op.name, dtype, rng, result + (1,)))  # arrays even when 0-d
    va, vb = _part(va, shape_a), _part(vb, shape_b)
    prog = Sequence()
    out = getattr(popops, op.name)(g, a, b, prog)
    assert tuple(out.shape) == result and out.dtype == op.result_type(dtype)
    _, (got,) = run(g, device, prog, [out], {a: va, b: vb})
    check(op.name, got, *np.broadcast_arrays(va, vb))


@settings(max_examples=25, deadline=None)
@given(op=st.sampled_from(UNARY_OPS), shape=st.lists(st.integers(1, 6), min_size=0, max_size=3), data_=st.data(),
       seed=st.integers(0, 2 ** 31))
def test_unary_op_on_any_layout_like_numpy(op, shape, data_, seed):
    dtype = data_.draw(st.sampled_from(sorted(op.types, key=lambda t: t.name)))
    rng = np.random.default_rng(seed)
    device = _device()
    g = popsim.Graph(device)
    x = _scattered(g, dtype, tuple(shape), "x", rng)
    vx = data(op.name, dtype, rng, tuple(shape) + (1,))[..., 0]
    prog = Sequence()
    out = getattr(popops, op.name)(g, x, prog)
    _, (got,) = run(g, device, prog, [out], {x: vx})
    assert tuple(out.shape) == tuple(shape) and out.dtype == op.result_type(dtype)
    expected = np.asarray(UNARY_REFERENCES[op.name](vx))
    if op.name in EXACT:
        np.testing.assert_array_equal(got, expected.astype(got.dtype), err_msg=op.name)
    else:
        tolerance = dict(rtol=3e-6, atol=3e-7) if dtype == popsim.FLOAT else dict(rtol=2e-3, atol=1e-3)
        np.testing.assert_allclose(got.astype(np.float64), expected, err_msg=op.name, **tolerance)
