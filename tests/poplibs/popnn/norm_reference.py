"""Independent numpy (float64) references of the norms, and a helper that runs them on the
engine: statistics per index of a regrouped axis, the forward pass, and its gradients."""
import numpy as np

from graph_helpers import load_and_run


def grouped(x, groups, strided=True):
    """x [B, C, ...] as [B, G, C/G·prod(field)]: the elements of each (batch, group) statistic."""
    b, c = x.shape[:2]
    per = c // groups
    channels = np.arange(c).reshape(per, groups).T if strided else np.arange(c).reshape(groups, per)
    return x[:, channels].reshape(b, groups, -1)


def statistics(x, groups, eps, unbiased=False, strided=True):
    """(mean, inv_std) [B·G] for group norm (bn: transpose so that B is 1 and G is C)."""
    g = grouped(np.asarray(x, np.float64), groups, strided)
    n = g.shape[-1]
    var = g.var(-1)
    if unbiased and n > 1:
        return g.mean(-1).reshape(-1), 1 / np.sqrt((var + eps) * n / (n - 1)).reshape(-1)
    return g.mean(-1).reshape(-1), 1 / np.sqrt(var + eps).reshape(-1)


def forward(x, gamma, beta, groups, eps, strided=True):
    """Group norm forward in float64: (y, x_hat)."""
    x = np.asarray(x, np.float64)
    b, c = x.shape[:2]
    per = c // groups
    group_of = (np.arange(c) % groups) if strided else (np.arange(c) // per)
    g = grouped(x, groups, strided)
    mean = g.mean(-1)[:, group_of]
    inv = 1 / np.sqrt(g.var(-1) + eps)[:, group_of]
    shape = (b, c) + (1,) * (x.ndim - 2)
    x_hat = (x - mean.reshape(shape)) * inv.reshape(shape)
    cs = (1, c) + (1,) * (x.ndim - 2)
    return x_hat * np.reshape(gamma, cs) + np.reshape(beta, cs), x_hat


def batch_forward(x, gamma, beta, eps):
    """Batch norm forward: statistics per channel over batch and field."""
    xt = np.swapaxes(np.asarray(x, np.float64), 0, 1)[None]  # [1, C, B, ...]: one batch, C groups
    y, x_hat = forward(xt.reshape((1, xt.shape[1], -1)), gamma, beta, xt.shape[1], eps)
    return [np.swapaxes(a.reshape(xt.shape)[0], 0, 1) for a in (y, x_hat)]


def finite_difference(f, x, dy, h=1e-6):
    """d(sum(f(x) · dy))/dx by central differences (float64)."""
    x = np.asarray(x, np.float64)
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[i] += h
        down[i] -= h
        grad[i] = ((f(up) - f(down)) * dy).sum() / (2 * h)
    return grad


def run(graph, device, prog, writes, reads):
    """Run ``prog`` once; ``writes`` {tensor: values}; returns the values of ``reads``."""
    engine, (values,) = load_and_run(graph, device, prog, reads, writes)
    return [v.astype(np.float64) for v in values], engine
