"""popnn.gru on the engine against a float64 numpy GRU (rnn_reference.py, the equations of
PopLibs' Gru.hpp, reset applied before or after the candidate's recurrent matmul): the
forward pass, and the backward pass and weight update against central finite differences
of the numpy forward; FLOAT and HALF, both output modes, a permuted cell order, several
tile counts; bad input."""
import numpy as np
import pytest

import popsim
from popsim import FLOAT, HALF, popnn
from popsim.poputil import PoplibsError, map_tensor_linearly
from popsim.program import Sequence

import rnn_reference as ref
from rnn_reference import run, small_device

gru = popnn.gru


def _params(dtype, T, B, n_in, n_out, reset_after=False, full=True, order=None):
    p = gru.GruParams(dtype, B, T, [n_in, n_out])
    p.reset_after, p.output_full_sequence = reset_after, full
    if order is not None:
        p.cell_order = order
    return p


CASES = [  # T, B, in, out, tiles
    (3, 2, 4, 3, 4),
    (4, 3, 5, 2, 16),
    (1, 2, 3, 4, 1),
]


@pytest.mark.parametrize("T,B,n_in,n_out,tiles", CASES)
@pytest.mark.parametrize("reset_after", [False, True])
def test_forward_backward_weight_update_float(T, B, n_in, n_out, tiles, reset_after):
    _check(_params(FLOAT, T, B, n_in, n_out, reset_after), tiles, 2e-5, 1e-4)


@pytest.mark.parametrize("reset_after", [False, True])
def test_last_output_only(reset_after):
    _check(_params(FLOAT, 4, 2, 3, 3, reset_after, full=False), 4, 2e-5, 1e-4)


@pytest.mark.parametrize("reset_after", [False, True])
def test_half(reset_after):
    _check(_params(HALF, 3, 2, 4, 3, reset_after), 8, 2e-2, 6e-2)


@pytest.mark.parametrize("reset_after", [False, True])
def test_permuted_cell_order(reset_after):
    order = [gru.BasicGruCellUnit.CANDIDATE, gru.BasicGruCellUnit.RESET, gru.BasicGruCellUnit.UPDATE]
    _check(_params(FLOAT, 3, 2, 3, 2, reset_after, order=order), 4, 2e-5, 1e-4)


def _check(p, tiles, fwd_tol, grad_tol):
    T, B, n_in, n_out, dtype = p.time_steps, p.batch_size, p.input_size, p.output_size, p.data_type
    dev = small_device(tiles)
    g = popsim.Graph(dev)
    x, init, w = gru.create_input(g, p, "x"), gru.create_initial_state(g, p, "init"), gru.create_weights(g, p, "w")
    prog = Sequence()
    out, inter = gru.gru_fwd(g, p, init, x, w, prog, "fwd", return_intermediates=True)
    assert out.shape == ((T, B, n_out) if p.output_full_sequence else (B, n_out))
    dy = g.add_variable(dtype, out.shape, "dy")
    map_tensor_linearly(g, dy)
    state_grad, dx, bwd = gru.gru_bwd(g, p, prog, init, inter, w, x, out, dy)
    wg = gru.gru_wu(g, p, prog, init, inter, bwd, w, x, out)
    assert bwd.shape == (T, 4 if p.reset_after else 3, B, n_out)
    assert wg.biases.shape == tuple(w.biases.shape)

    rng = np.random.default_rng(T * 10 + n_in)

    def rounded(*shape, scale=1.0):
        return (rng.standard_normal(shape) * scale).astype(dtype.numpy).astype(np.float64)
    bias_shape = (3, 2, n_out) if p.reset_after else (3, n_out)
    hx, h0 = rounded(T, B, n_in), rounded(B, n_out, scale=0.5)
    w_in, w_out, b = rounded(3, n_in, n_out, scale=0.5), rounded(3, n_out, n_out, scale=0.5), rounded(*bias_shape,
                                                                                                      scale=0.5)
    hdy = rounded(*out.shape)
    inv = [int(u) for u in p.cell_order]                 # device gate k is reference gate inv[k]
    pos = [inv.index(u) for u in range(3)]
    writes = {x: hx, init: h0, w.input_weights: w_in[inv], w.output_weights: w_out[inv], w.biases: b[inv], dy: hdy}
    got = run(g, dev, prog, writes, [out, state_grad, dx, wg.input_weights, wg.output_weights, wg.biases])

    hs = ref.gru_forward(hx, h0, w_in, w_out, b, p.reset_after)
    np.testing.assert_allclose(got[0], hs if p.output_full_sequence else hs[-1], atol=fwd_tol, rtol=fwd_tol)

    def loss(a):
        hs = ref.gru_forward(*a, p.reset_after)
        return float(np.sum(hdy * (hs if p.output_full_sequence else hs[-1])))
    arrays = [hx, h0, w_in, w_out, b]
    for index, value in zip([1, 0], got[1:3]):
        _close(value, ref.numeric_grad(loss, arrays, index), grad_tol)
    for index, value in zip([2, 3, 4], got[3:]):
        _close(value[pos], ref.numeric_grad(loss, arrays, index), grad_tol)


def _close(got, want, tol):
    scale = max(1.0, float(np.abs(want).max(initial=0.0)))
    np.testing.assert_allclose(got, want, atol=tol * scale, rtol=tol)


def test_bwd_with_wu_equals_finite_differences():
    p = _params(FLOAT, 3, 2, 3, 2)
    dev = small_device(4)
    g = popsim.Graph(dev)
    x, init, w = gru.create_input(g, p, "x"), gru.create_initial_state(g, p, "init"), gru.create_weights(g, p, "w")
    prog = Sequence()
    out, inter = gru.gru_fwd(g, p, init, x, w, prog, return_intermediates=True)
    dy = g.add_variable(FLOAT, out.shape, "dy")
    map_tensor_linearly(g, dy)
    sg, dx, wg = gru.gru_bwd_with_wu(g, p, prog, init, inter, w, x, out, dy)
    rng = np.random.default_rng(3)
    hx, h0, hdy = rng.standard_normal((3, 2, 3)), rng.standard_normal((2, 2)), rng.standard_normal((3, 2, 2))
    w_in, w_out, b = rng.standard_normal((3, 3, 2)), rng.standard_normal((3, 2, 2)), rng.standard_normal((3, 2))
    got = run(g, dev, prog, {x: hx, init: h0, w.input_weights: w_in, w.output_weights: w_out, w.biases: b, dy: hdy},
              [sg, wg.output_weights, wg.biases])
    arrays = [hx, h0, w_in, w_out, b]

    def loss(a):
        return float(np.sum(hdy * ref.gru_forward(*a)))
    for value, index in zip(got, [1, 3, 4]):
        _close(value, ref.numeric_grad(loss, arrays, index), 1e-4)


# ---- bad input ---------------------------------------------------------------------------------------------------

def _setup(reset_after=False):
    p = _params(FLOAT, 3, 2, 4, 3, reset_after)
    g = popsim.Graph(small_device(4))
    return p, g, gru.create_input(g, p, "x"), gru.create_initial_state(g, p, "init"), gru.create_weights(g, p, "w")


def test_weights_of_the_wrong_shape_name_the_tensor_and_the_shape():
    p, g, x, init, w = _setup()
    bad = g.add_variable(FLOAT, (4, 3, 3), "lstmSizedWeights")
    g.set_tile_mapping(bad, 0)
    with pytest.raises(PoplibsError, match=r"weights.output_weights 'lstmSizedWeights' must have shape \(3, 3, 3\)"
                                           r" \[3 gates, output_size, output_size\], found \(4, 3, 3\)"):
        gru.gru_fwd(g, p, init, x, gru.GruWeights(w.input_weights, bad, w.biases), Sequence())


def test_reset_after_needs_input_and_recurrent_biases():
    p, g, x, init, w = _setup(reset_after=False)
    p.reset_after = True
    with pytest.raises(PoplibsError, match=r"weights.biases '.*' must have shape \(3, 2, 3\) \[3 gates, 2 \(input, "
                                           r"recurrent\), output_size\] \(reset_after\), found \(3, 3\)"):
        gru.gru_fwd(g, p, init, x, w, Sequence())


def test_input_and_state_of_the_wrong_rank_or_size():
    p, g, x, init, w = _setup()
    with pytest.raises(PoplibsError, match=r"input 'x' must have shape \(3, 2, 4\) \[time_steps, batch_size, "
                                           r"input_size\], found \(3, 8\)"):
        gru.gru_fwd(g, p, init, x.reshape([3, 8]), w, Sequence())
    with pytest.raises(PoplibsError, match=r"init_state '.*' must have shape \(2, 3\)"):
        gru.gru_fwd(g, p, init.slice(0, 1, 0), x, w, Sequence())
    with pytest.raises(PoplibsError, match=r"params.reset_after must be True or False"):
        p.reset_after = "yes"
        gru.gru_fwd(g, p, init, x, w, Sequence())


def test_bwd_checks_bwd_intermediates():
    p, g, x, init, w = _setup()
    prog = Sequence()
    out, inter = gru.gru_fwd(g, p, init, x, w, prog, return_intermediates=True)
    _, _, bwd = gru.gru_bwd(g, p, prog, init, inter, w, x, out, out)
    with pytest.raises(PoplibsError, match=r"bwd_intermediates '.*' must have shape \(3, 3, 2, 3\)"):
        gru.gru_wu(g, p, prog, init, inter, bwd.slice(0, 2, 1), w, x, out)
