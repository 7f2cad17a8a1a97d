"""The examples' networks and training steps in plain numpy, written from the textbook
equations (nothing of popsim's): the tests compare the device's training with them step
by step (in float64), bench/bench_popnn.py times them (in float32) as the host baseline."""
import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

EPS_LOG = 1.17549435e-38  # PopLibs' cross-entropy eps for FLOAT (the smallest normal float)


def softmax_cross_entropy(logits, labels, batch_size):
    """(per-row losses, the gradient of their mean w.r.t. the logits)."""
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True)
    rows = np.arange(len(labels))
    losses = -np.log(p[rows, labels] + EPS_LOG)
    d = p.copy()
    d[rows, labels] -= 1
    return losses, d / batch_size


class NumpyRegression:
    """Softmax regression: p = softmax(x W^T + b); plain SGD on the batch's mean loss."""

    def __init__(self, weights, learning_rate, dtype=np.float64):
        self.w = weights["weights"].astype(dtype)
        self.b = weights["biases"].astype(dtype)
        self.lr, self.dtype = learning_rate, dtype

    def logits(self, images):
        x = images.reshape(len(images), -1).astype(self.dtype)
        return x, x @ self.w.T + self.b

    def step(self, images, labels):
        x, logits = self.logits(images)
        losses, d = softmax_cross_entropy(logits, labels.astype(np.int64), len(labels))
        self.b -= self.lr * d.sum(axis=0)
        self.w -= self.lr * d.T @ x
        return losses


def conv3x3(x, w):
    """'same' 3x3 convolution: x [B, C, H, W], w [O, C, 3, 3] -> [B, O, H, W]."""
    windows = sliding_window_view(np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1))), (3, 3), axis=(2, 3))
    return np.einsum("bchwij,ocij->bohw", windows, w, optimize=True)


def conv3x3_weight_grad(x, dz):
    windows = sliding_window_view(np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1))), (3, 3), axis=(2, 3))
    return np.einsum("bchwij,bohw->ocij", windows, dz, optimize=True)


def conv3x3_input_grad(dz, w):
    windows = sliding_window_view(np.pad(dz, ((0, 0), (0, 0), (1, 1), (1, 1))), (3, 3), axis=(2, 3))
    return np.einsum("bohwij,ocij->bchw", windows, w[:, :, ::-1, ::-1], optimize=True)


def max_pool2(a):
    b, c, h, w = a.shape
    return a.reshape(b, c, h // 2, 2, w // 2, 2).max(axis=(3, 5))


def max_pool2_grad(a, pooled, d_pooled):
    """Every input equal to its window's max gets the window's gradient (PopLibs' MAX
    pooling gradient without scaling)."""
    up = lambda t: t.repeat(2, axis=2).repeat(2, axis=3)  # noqa: E731
    return (a == up(pooled)) * up(d_pooled)


class NumpyCnn:
    """The CNN of examples/cnn_training.py: conv, batch norm, ReLU, max pool; conv + bias,
    ReLU, max pool; fully connected + bias; softmax cross-entropy; SGD with momentum."""

    def __init__(self, weights, learning_rate, momentum, bn_eps, bn_momentum, dtype=np.float64):
        self.p = {k: v.astype(dtype) for k, v in weights.items()}
        self.v = {k: np.zeros_like(v) for k, v in self.p.items()}
        c1 = self.p["gamma"].shape[0]
        self.running_mean, self.running_var = np.zeros(c1, dtype), np.ones(c1, dtype)
        self.dtype = dtype
        self.lr, self.momentum, self.eps, self.bn_momentum = learning_rate, momentum, bn_eps, bn_momentum

    def forward(self, images, training):
        p = self.p
        x = images[:, None].astype(self.dtype)
        z1 = conv3x3(x, p["conv1"][0])
        if training:
            mean, var = z1.mean(axis=(0, 2, 3)), z1.var(axis=(0, 2, 3))
            m = self.bn_momentum
            self.running_mean = (1 - m) * self.running_mean + m * mean
            self.running_var = (1 - m) * self.running_var + m * var
        else:
            mean, var = self.running_mean, self.running_var
        inv_std = 1 / np.sqrt(var + self.eps)
        z1_hat = (z1 - mean[:, None, None]) * inv_std[:, None, None]
        a1 = np.maximum(p["gamma"][:, None, None] * z1_hat + p["beta"][:, None, None], 0)
        pooled1 = max_pool2(a1)
        a2 = np.maximum(conv3x3(pooled1, p["conv2"][0]) + p["conv2_bias"][:, None, None], 0)
        pooled2 = max_pool2(a2)
        flat = pooled2.reshape(len(x), -1)
        logits = flat @ p["fc"] + p["fc_bias"]
        return logits, dict(x=x, inv_std=inv_std, z1_hat=z1_hat, a1=a1, pooled1=pooled1, a2=a2, pooled2=pooled2,
                            flat=flat)

    def step(self, images, labels):
        """One training step on a batch: its per-image losses."""
        losses, g = self.gradients(images, labels)
        self.apply(g)
        return losses

    def accumulated_step(self, micro_batches):
        """One update from the mean gradient of several (images, labels) micro-batches
        (gradient accumulation; batch norm takes each micro-batch's statistics): their losses."""
        losses, grads = zip(*(self.gradients(x, y) for x, y in micro_batches))
        self.apply({k: sum(g[k] for g in grads) for k in self.p}, 1.0 / len(grads))
        return np.stack(losses)

    def apply(self, g, scale=1.0):
        """SGD with momentum: ``v = momentum v + scale g; p -= lr v``."""
        for k, p in self.p.items():
            self.v[k] = self.momentum * self.v[k] + scale * g[k]
            p -= self.lr * self.v[k]

    def gradients(self, images, labels):
        """(per-image losses, the gradients of their mean); training mode: the running
        statistics move on."""
        p = self.p
        logits, s = self.forward(images, True)
        losses, d = softmax_cross_entropy(logits, labels.astype(np.int64), len(labels))
        g = {"fc": s["flat"].T @ d, "fc_bias": d.sum(axis=0)}
        d_a2 = max_pool2_grad(s["a2"], s["pooled2"], (d @ p["fc"].T).reshape(s["pooled2"].shape))
        d_z2 = d_a2 * (s["a2"] > 0)
        g["conv2"] = conv3x3_weight_grad(s["pooled1"], d_z2)[None]
        g["conv2_bias"] = d_z2.sum(axis=(0, 2, 3))
        d_a1 = max_pool2_grad(s["a1"], s["pooled1"], conv3x3_input_grad(d_z2, p["conv2"][0]))
        d_y1 = d_a1 * (s["a1"] > 0)
        z1_hat = s["z1_hat"]
        g["gamma"] = (d_y1 * z1_hat).sum(axis=(0, 2, 3))
        g["beta"] = d_y1.sum(axis=(0, 2, 3))
        n = d_y1.size / d_y1.shape[1]
        d_z1 = (p["gamma"] * s["inv_std"])[:, None, None] * (
            d_y1 - g["beta"][:, None, None] / n - z1_hat * g["gamma"][:, None, None] / n)
        g["conv1"] = conv3x3_weight_grad(s["x"], d_z1)[None]
        return losses, g
