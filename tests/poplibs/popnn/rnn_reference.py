"""float64 numpy references for popnn's LSTM and GRU layers (the cell equations of
PopLibs' poplibs_test/Lstm.cpp and Gru.cpp), written independently of popsim, and the
helpers their tests share."""
import numpy as np

import graph_helpers
from graph_helpers import load_and_run


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def lstm_forward(x, h0, c0, w_in, w_out, b):
    """x [T, B, in]; weights in the default gate order (forget, input, candidate, output).
    Returns (hs [T, B, out], cs [T, B, out])."""
    h, c, hs, cs = h0, c0, [], []
    for t in range(x.shape[0]):
        pre = [x[t] @ w_in[k] + h @ w_out[k] + b[k] for k in range(4)]
        f, i, g, o = sigmoid(pre[0]), sigmoid(pre[1]), np.tanh(pre[2]), sigmoid(pre[3])
        c = f * c + i * g
        h = o * np.tanh(c)
        hs.append(h)
        cs.append(c)
    return np.stack(hs), np.stack(cs)


def lstm_loss(x, h0, c0, w_in, w_out, b, dys, dc_last):
    """A scalar whose gradients are the backward pass's: sum(dys * hs) + sum(dc_last * c_T)."""
    hs, cs = lstm_forward(x, h0, c0, w_in, w_out, b)
    return float(np.sum(dys * hs) + np.sum(dc_last * cs[-1]))


def gru_forward(x, h0, w_in, w_out, b, reset_after=False):
    """x [T, B, in]; gates reset, update, candidate; b [3, out] or [3, 2, out] with
    reset_after (input bias, recurrent bias). Returns hs [T, B, out]."""
    h, hs = h0, []
    for t in range(x.shape[0]):
        if reset_after:
            bi, bh = b[:, 0], b[:, 1]
            r = sigmoid(x[t] @ w_in[0] + bi[0] + h @ w_out[0] + bh[0])
            u = sigmoid(x[t] @ w_in[1] + bi[1] + h @ w_out[1] + bh[1])
            cand = np.tanh(x[t] @ w_in[2] + bi[2] + r * (h @ w_out[2] + bh[2]))
        else:
            r = sigmoid(x[t] @ w_in[0] + h @ w_out[0] + b[0])
            u = sigmoid(x[t] @ w_in[1] + h @ w_out[1] + b[1])
            cand = np.tanh(x[t] @ w_in[2] + (r * h) @ w_out[2] + b[2])
        h = u * h + (1 - u) * cand
        hs.append(h)
    return np.stack(hs)


def numeric_grad(f, arrays, index, eps=1e-6):
    """d f / d arrays[index] by central differences (f takes the list of arrays)."""
    base = [a.copy() for a in arrays]
    target = base[index]
    grad = np.zeros_like(target)
    if target.size == 0:  # an empty array (a zero-size layer): nothing to differentiate
        return grad
    it = np.nditer(target, flags=["multi_index"])
    for _ in it:
        k = it.multi_index
        old = target[k]
        target[k] = old + eps
        up = f(base)
        target[k] = old - eps
        down = f(base)
        target[k] = old
        grad[k] = (up - down) / (2 * eps)
    return grad


def small_device(tiles: int = 8):
    return graph_helpers.small_device(tiles)


def run(g, device, prog, writes, reads):
    """Run ``prog`` once after writing ``writes`` ({tensor: values}); the values of
    ``reads`` as float64 arrays."""
    return [np.asarray(v, dtype=np.float64) for v in load_and_run(g, device, prog, reads, writes)[1][0]]
