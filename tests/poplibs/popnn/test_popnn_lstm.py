"""popnn.lstm on the engine against a float64 numpy LSTM (rnn_reference.py): the forward
pass over a sequence, and the backward pass and weight update against central finite
differences of that numpy forward; FLOAT and HALF, both output modes, a permuted cell
order, several tile counts; bad input."""
import numpy as np
import pytest

import popsim
from popsim import FLOAT, HALF, popnn
from popsim.poputil import PoplibsError
from popsim.program import Sequence

import rnn_reference as ref
from rnn_reference import run, small_device

lstm = popnn.lstm


def _build(p, tiles, order=None):
    dev = small_device(tiles)
    g = popsim.Graph(dev)
    if order is not None:
        p.cell_order = order
    x = lstm.create_input(g, p, "x")
    init = lstm.create_initial_state(g, p, "init")
    w = lstm.create_weights(g, p, "w")
    return dev, g, x, init, w


def _host(rng, T, B, n_in, n_out, dtype):
    vals = dict(x=rng.standard_normal((T, B, n_in)), h0=rng.standard_normal((B, n_out)) * 0.5,
                c0=rng.standard_normal((B, n_out)) * 0.5, w_in=rng.standard_normal((4, n_in, n_out)) * 0.5,
                w_out=rng.standard_normal((4, n_out, n_out)) * 0.5, b=rng.standard_normal((4, n_out)) * 0.5)
    # what the device holds: the values rounded to the data type
    return {k: v.astype(dtype.numpy).astype(np.float64) for k, v in vals.items()}


CASES = [  # T, B, in, out, tiles
    (3, 2, 4, 3, 4),
    (4, 3, 5, 2, 16),
    (1, 2, 3, 4, 1),
]


@pytest.mark.parametrize("T,B,n_in,n_out,tiles", CASES)
@pytest.mark.parametrize("full", [True, False])
def test_forward_backward_weight_update_float(T, B, n_in, n_out, tiles, full):
    _check(T, B, n_in, n_out, tiles, full, FLOAT, 2e-5, 1e-4)


def test_half():
    _check(3, 2, 4, 3, 8, True, HALF, 2e-2, 6e-2)


def test_permuted_cell_order_reads_weights_in_that_order():
    order = [lstm.BasicLstmCellUnit.OUTPUT, lstm.BasicLstmCellUnit.CANDIDATE, lstm.BasicLstmCellUnit.FORGET,
             lstm.BasicLstmCellUnit.INPUT]
    _check(3, 2, 3, 2, 4, True, FLOAT, 2e-5, 1e-4, order=order)


def _check(T, B, n_in, n_out, tiles, full, dtype, fwd_tol, grad_tol, order=None):
    p = lstm.LstmParams(dtype, B, T, [n_in, n_out])
    p.output_full_sequence = full
    dev, g, x, init, w = _build(p, tiles, order)
    prog = Sequence()
    out, cell, inter = lstm.lstm_fwd(g, p, init, x, w, prog, "fwd", return_intermediates=True)
    assert out.shape == ((T, B, n_out) if full else (B, n_out)) and cell.shape == (B, n_out)
    assert inter.shape == (T, 6 if full else 7, B, n_out)
    dy = g.add_variable(dtype, out.shape, "dy")
    popsim.poputil.map_tensor_linearly(g, dy)
    dc = lstm.create_initial_state(g, p, "lastGrad").cell
    state_grad, dx, bwd = lstm.lstm_bwd(g, p, prog, init, inter, w, x, out, dy, dc)
    wg = lstm.lstm_wu(g, p, prog, init, inter, bwd, w, x, out)
    assert bwd.shape == (T, 4, B, n_out) and dx.shape == (T, B, n_in)
    assert wg.input_weights.shape == (4, n_in, n_out) and wg.biases.shape == (4, n_out)

    rng = np.random.default_rng(T * 100 + n_in)
    h = _host(rng, T, B, n_in, n_out, dtype)
    hdy = rng.standard_normal(out.shape).astype(dtype.numpy).astype(np.float64)
    hdc = rng.standard_normal((B, n_out)).astype(dtype.numpy).astype(np.float64)
    # the device's weights in cell order; the reference's in the default order
    pos = [list(map(int, p.cell_order)).index(u) for u in range(4)]
    inv = [int(u) for u in p.cell_order]
    writes = {x: h["x"], init.output: h["h0"], init.cell: h["c0"], w.input_weights: h["w_in"][inv],
              w.output_weights: h["w_out"][inv], w.biases: h["b"][inv], dy: hdy, dc: hdc}
    got = run(g, dev, prog, writes, [out, cell, state_grad.output, state_grad.cell, dx, wg.input_weights,
                                     wg.output_weights, wg.biases])

    hs, cs = ref.lstm_forward(h["x"], h["h0"], h["c0"], h["w_in"], h["w_out"], h["b"])
    np.testing.assert_allclose(got[0], hs if full else hs[-1], atol=fwd_tol, rtol=fwd_tol)
    np.testing.assert_allclose(got[1], cs[-1], atol=fwd_tol, rtol=fwd_tol)

    def loss(a):
        hs, cs = ref.lstm_forward(*a)
        dys = hdy if full else np.concatenate([np.zeros((T - 1, B, n_out)), hdy[None]])
        return float(np.sum(dys * hs) + np.sum(hdc * cs[-1]))

    arrays = [h["x"], h["h0"], h["c0"], h["w_in"], h["w_out"], h["b"]]
    for index, value in zip([1, 2, 0], got[2:5]):
        _close(value, ref.numeric_grad(loss, arrays, index), grad_tol)
    for index, value in zip([3, 4, 5], got[5:]):
        _close(value[pos], ref.numeric_grad(loss, arrays, index), grad_tol)


def _close(got, want, tol):
    scale = max(1.0, float(np.abs(want).max(initial=0.0)))
    np.testing.assert_allclose(got, want, atol=tol * scale, rtol=tol)


def test_bwd_with_wu_matches_bwd_then_wu_and_zero_cell_grad():
    T, B, n_in, n_out = 3, 2, 3, 2
    p = lstm.LstmParams(FLOAT, B, T, [n_in, n_out])
    dev, g, x, init, w = _build(p, 4)
    prog = Sequence()
    out, _, inter = lstm.lstm_fwd(g, p, init, x, w, prog, return_intermediates=True)
    dy = lstm.create_input(g, lstm.LstmParams(FLOAT, B, T, [n_out, n_out]), "dy")
    sg, dx, wg = lstm.lstm_bwd_with_wu(g, p, prog, init, inter, w, x, out, dy)
    rng = np.random.default_rng(5)
    h = _host(rng, T, B, n_in, n_out, FLOAT)
    hdy = rng.standard_normal((T, B, n_out))
    got = run(g, dev, prog, {x: h["x"], init.output: h["h0"], init.cell: h["c0"], w.input_weights: h["w_in"],
                             w.output_weights: h["w_out"], w.biases: h["b"], dy: hdy},
              [sg.output, dx, wg.output_weights])
    arrays = [h["x"], h["h0"], h["c0"], h["w_in"], h["w_out"], h["b"]]

    def loss(a):
        return float(np.sum(hdy * ref.lstm_forward(*a)[0]))
    for value, index in zip(got, [1, 0, 4]):
        _close(value, ref.numeric_grad(loss, arrays, index), 1e-4)


def test_time_loop_does_not_grow_the_graph():
    """The cell is built once: ten times the steps adds no compute sets per step (only the
    matmuls over the whole sequence, planned for their own sizes, may differ by a few)."""
    counts = []
    for T in (3, 30):
        p = lstm.LstmParams(FLOAT, 2, T, [3, 2])
        dev, g, x, init, w = _build(p, 4)
        prog = Sequence()
        out, _, inter = lstm.lstm_fwd(g, p, init, x, w, prog, return_intermediates=True)
        lstm.lstm_bwd_with_wu(g, p, prog, init, inter, w, x, out, out)
        counts.append(g.add_compute_set("probe").index)  # compute sets made so far
    assert abs(counts[1] - counts[0]) < 8, counts


def test_gate_activations_run_on_popnn_non_linearity_vertices():
    """As PopLibs applies them (nonLinearityInPlace): sigmoid gates, tanh candidate and cell."""
    p = lstm.LstmParams(FLOAT, 2, 3, [4, 3])
    dev, g, x, init, w = _build(p, 4)
    prog = Sequence()
    lstm.lstm_fwd(g, p, init, x, w, prog)
    engine = popsim.Engine(g, prog)
    engine.load(dev)
    engine.run(0)
    names = {v["name"] for v in engine.get_report().to_dict()["execution"]["vertex_types"]}
    for nl in ("SIGMOID", "TANH"):
        assert any(n.startswith("popnn::NonLinearity") and n.endswith(f"popnn::NonLinearityType::{nl}>")
                   for n in names), (nl, sorted(names))


# ---- bad input ---------------------------------------------------------------------------------------------------

def _fwd_setup():
    p = lstm.LstmParams(FLOAT, 2, 3, [4, 3])
    dev, g, x, init, w = _build(p, 4)
    return p, g, x, init, w


def test_weights_of_the_wrong_shape_name_the_tensor_and_the_shape():
    p, g, x, init, w = _fwd_setup()
    bad = g.add_variable(FLOAT, (4, 3, 3), "badInputWeights")
    g.set_tile_mapping(bad, 0)
    with pytest.raises(PoplibsError, match=r"weights.input_weights 'badInputWeights' must have shape \(4, 4, 3\)"
                                           r".*found \(4, 3, 3\)"):
        lstm.lstm_fwd(g, p, init, x, lstm.LstmWeights(bad, w.output_weights, w.biases), Sequence())
    bias = g.add_variable(FLOAT, (3, 3), "badBias")
    g.set_tile_mapping(bias, 0)
    with pytest.raises(PoplibsError, match=r"weights.biases 'badBias' must have shape \(4, 3\)"):
        lstm.lstm_fwd(g, p, init, x, lstm.LstmWeights(w.input_weights, w.output_weights, bias), Sequence())


def test_input_of_the_wrong_rank_or_size_or_type():
    p, g, x, init, w = _fwd_setup()
    with pytest.raises(PoplibsError, match=r"input 'x' must have shape \(3, 2, 4\) \[time_steps, batch_size, "
                                           r"input_size\], found \(6, 4\)"):
        lstm.lstm_fwd(g, p, init, x.reshape([6, 4]), w, Sequence())
    with pytest.raises(PoplibsError, match=r"found \(2, 2, 4\)"):
        lstm.lstm_fwd(g, p, init, x.slice(0, 2, 0), w, Sequence())
    h = g.add_variable(HALF, (3, 2, 4), "xh")
    g.set_tile_mapping(h, 0)
    with pytest.raises(PoplibsError, match=r"input .xh. must be FLOAT \(params.data_type\), found HALF"):
        lstm.lstm_fwd(g, p, init, h, w, Sequence())


def test_bad_params_state_and_options():
    with pytest.raises(PoplibsError, match=r"layer_sizes must be \[input_size, output_size\]"):
        lstm.LstmParams(FLOAT, 2, 3, [4, 3, 2])
    with pytest.raises(PoplibsError, match="time_steps must be a whole number >= 0"):
        lstm.LstmParams(FLOAT, 2, -1, [4, 3])
    with pytest.raises(PoplibsError, match="activation must be one of"):
        lstm.LstmParams(FLOAT, 2, 3, [4, 3], activation="SOFTMAX")
    p, g, x, init, w = _fwd_setup()
    with pytest.raises(PoplibsError, match=r"init_state.cell 'x' must have shape \(2, 3\)"):
        lstm.lstm_fwd(g, p, lstm.LstmState(init.output, x), x, w, Sequence())
    with pytest.raises(popsim.InvalidOptionError, match="unknown option 'bogus'"):
        lstm.lstm_fwd(g, p, init, x, w, Sequence(), options={"bogus": "1"})
    p.cell_order = [0, 0, 1, 2]
    with pytest.raises(PoplibsError, match="cell_order must name each of the 4 gates once"):
        lstm.lstm_fwd(g, p, init, x, w, Sequence())


def test_bwd_checks_intermediates_and_output_grad():
    p, g, x, init, w = _fwd_setup()
    prog = Sequence()
    out, _, inter = lstm.lstm_fwd(g, p, init, x, w, prog, return_intermediates=True)
    with pytest.raises(PoplibsError, match=r"intermediates '.*' must have shape \(3, 6, 2, 3\)"):
        lstm.lstm_bwd(g, p, prog, init, inter.slice(0, 5, 1), w, x, out, out)
    with pytest.raises(PoplibsError, match=r"output_grad '.*' must have shape \(3, 2, 3\)"):
        lstm.lstm_bwd(g, p, prog, init, inter, w, x, out, out[0])
