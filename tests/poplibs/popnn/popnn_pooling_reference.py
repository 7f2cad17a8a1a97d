"""An independent float64 numpy model of PopLibs' pooling (poplibs_test/Pooling.cpp's
semantics, any field rank): the input padded (negative padding truncates) with a mask of
real elements, every kernel position's strided window taken, then MAX (of the real
elements; float's lowest when there are none), SUM, or AVG (SUM over the real count, 0 when
none). The gradients scatter back through the same windows: SUM/AVG the (1/count-scaled)
gradient, MAX the gradient to every real input equal to the window's max (divided by how
many with ``scaled``)."""
import itertools

import numpy as np

LOWEST = float(np.finfo(np.float32).min)


def _pad(a, lower, upper, fill):
    """Pad (or, negative, truncate) the field dims (2..) of ``a``."""
    for d, (lo, hi) in enumerate(zip(lower, upper)):
        axis = 2 + d
        n = a.shape[axis]
        a = np.take(a, np.arange(max(0, -lo), n - max(0, -hi)), axis=axis)
        widths = [(0, 0)] * a.ndim
        widths[axis] = (max(0, lo), max(0, hi))
        a = np.pad(a, widths, constant_values=fill)
    return a


def _windows(shape_padded, kernel, stride, out_field):
    """For each kernel position, the index tuple of its strided window in the padded array."""
    for kpos in itertools.product(*[range(k) for k in kernel]):
        yield (slice(None), slice(None)) + tuple(slice(k, k + s * (o - 1) + 1, s)
                                                 for k, s, o in zip(kpos, stride, out_field))


def output_field(field, kernel, stride, lower, upper):
    return tuple((f + lo + hi - k) // s + 1 for f, k, s, lo, hi in zip(field, kernel, stride, lower, upper))


def pool(kind, x, kernel, stride, lower, upper):
    """kind: "MAX", "AVG" or "SUM"; x [B, C, *field] -> float64 [B, C, *out]."""
    x = np.asarray(x, np.float64)
    out_field = output_field(x.shape[2:], kernel, stride, lower, upper)
    xp = _pad(x, lower, upper, 0.0)
    mp = _pad(np.ones_like(x, dtype=bool), lower, upper, False)
    shape = x.shape[:2] + out_field
    acc = np.full(shape, -np.inf if kind == "MAX" else 0.0)
    count = np.zeros(shape)
    for w in _windows(xp.shape, kernel, stride, out_field):
        vals, real = xp[w], mp[w]
        if kind == "MAX":
            acc = np.where(real, np.maximum(acc, vals), acc)
        else:
            acc = acc + np.where(real, vals, 0.0)
        count += real
    if kind == "MAX":
        return np.where(count > 0, acc, LOWEST)
    if kind == "AVG":
        return np.where(count > 0, acc / np.maximum(count, 1), 0.0)
    return acc


def pool_grad(kind, x, dy, kernel, stride, lower, upper, scaled=False):
    """The input gradient of ``pool`` for the output gradient ``dy``."""
    x, dy = np.asarray(x, np.float64), np.asarray(dy, np.float64)
    out_field = dy.shape[2:]
    xp = _pad(x, lower, upper, 0.0)
    mp = _pad(np.ones_like(x, dtype=bool), lower, upper, False)
    y = pool(kind, x, kernel, stride, lower, upper)
    count = np.zeros(dy.shape)
    ties = np.zeros(dy.shape)
    for w in _windows(xp.shape, kernel, stride, out_field):
        count += mp[w]
        ties += mp[w] & (xp[w] == y)
    if kind == "MAX":
        weight = np.where(ties > 0, 1.0 / np.maximum(ties, 1), 0.0) if scaled else np.ones(dy.shape)
    elif kind == "AVG":
        weight = np.where(count > 0, 1.0 / np.maximum(count, 1), 1.0)
    else:
        weight = np.ones(dy.shape)
    gp = np.zeros(xp.shape)
    for w in _windows(xp.shape, kernel, stride, out_field):
        hit = mp[w] & (xp[w] == y) if kind == "MAX" else mp[w]
        gp[w] += np.where(hit, dy * weight, 0.0)
    return _unpad(gp, x.shape, lower, upper)


def _unpad(gp, shape, lower, upper):
    """The gradient of the original (untruncated) input: truncated elements get 0."""
    out = np.zeros(shape)
    src = [slice(None), slice(None)]
    dst = [slice(None), slice(None)]
    for d, (lo, hi) in enumerate(zip(lower, upper)):
        n = shape[2 + d]
        kept = n - max(0, -lo) - max(0, -hi)
        src.append(slice(max(0, lo), max(0, lo) + kept))
        dst.append(slice(max(0, -lo), max(0, -lo) + kept))
    out[tuple(dst)] = gp[tuple(src)]
    return out
