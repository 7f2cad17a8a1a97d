"""An independent numpy convolution for the poplin tests: the transformed input and kernel
materialised (truncated, dilated with zeros, padded, flipped, as ConvParams defines them),
a direct correlation over every kernel position, then the output truncated, strided and
padded. The passes' references are the adjoints of that linear map (Jacobians built from
unit vectors), so they share nothing with poplin's pass params."""
import itertools

import numpy as np


def _transform(a, first_dim, trunc_lo, trunc_hi, dilation, pad_lo, pad_hi, flip):
    """Truncate, dilate, pad and flip the field dimensions (from ``first_dim``) of ``a``."""
    for d in range(len(dilation)):
        axis = first_dim + d
        n = a.shape[axis]
        a = np.take(a, np.arange(trunc_lo[d], n - trunc_hi[d]), axis=axis)
        n = a.shape[axis]
        size = 0 if n == 0 else 1 + (n - 1) * dilation[d]
        shape = list(a.shape)
        shape[axis] = size
        dil = np.zeros(shape, a.dtype)
        index = [slice(None)] * a.ndim
        index[axis] = slice(0, size, dilation[d])
        dil[tuple(index)] = a
        widths = [(0, 0)] * a.ndim
        widths[axis] = (pad_lo[d], pad_hi[d])
        a = np.pad(dil, widths)
        if flip[d]:
            a = np.flip(a, axis=axis)
    return a


def conv(x, w, p):
    """x [B, G*Cin, *F], w [G, Cout, Cin, *K] -> [B, G*Cout, *F'] in float64."""
    x, w = np.asarray(x, np.float64), np.asarray(w, np.float64)
    rank = p.num_field_dims
    g, cin, cout, b = p.num_conv_groups, p.input_channels_per_group, p.output_channels_per_group, p.batch_size
    xt = _transform(x, 2, p.input_truncation_lower, p.input_truncation_upper, p.input_dilation, p.padding_lower,
                    p.padding_upper, p.input_flip)
    wt = _transform(w, 3, p.kernel_truncation_lower, p.kernel_truncation_upper, p.kernel_dilation,
                    p.kernel_padding_lower, p.kernel_padding_upper, p.kernel_flip)
    field, kernel = xt.shape[2:], wt.shape[3:]
    untransformed = tuple(f - k + 1 for f, k in zip(field, kernel))
    xg = xt.reshape((b, g, cin) + field)
    out = np.zeros((b, g, cout) + untransformed)
    for kpos in itertools.product(*[range(k) for k in kernel]):
        window = tuple(slice(k, k + u) for k, u in zip(kpos, untransformed))
        patch = xg[(slice(None),) * 3 + window]                      # [b, g, cin, *u]
        wk = wt[(slice(None),) * 3 + tuple(kpos)]                    # [g, cout, cin]
        out += np.einsum("bgc...,goc->bgo...", patch, wk)
    for d in range(rank):
        axis = 3 + d
        n = out.shape[axis]
        out = np.take(out, np.arange(p.output_truncation_lower[d], n - p.output_truncation_upper[d],
                                     p.stride[d]), axis=axis)
        widths = [(0, 0)] * out.ndim
        widths[axis] = (p.output_padding_lower[d], p.output_padding_upper[d])
        out = np.pad(out, widths)
    return out.reshape((b, g * cout) + out.shape[3:])


def input_gradient(dy, w, p):
    """d<conv(x, w), dy>/dx: the adjoint of conv in x, from its Jacobian."""
    one = p.replace(batch_size=1)
    n = int(np.prod(one.input_shape()))
    basis = np.eye(n).reshape((n,) + one.input_shape()[1:])
    jac = conv(basis, w, one.replace(batch_size=n)).reshape(n, -1)     # [input elem, output elem]
    dy = np.asarray(dy, np.float64).reshape(p.batch_size, -1)
    return (dy @ jac.T).reshape(p.input_shape())


def weight_gradient(dy, x, p):
    """d<conv(x, w), dy>/dw: the adjoint of conv in w."""
    shape = p.weights_shape()
    n = int(np.prod(shape))
    dy = np.asarray(dy, np.float64)
    out = np.zeros(n)
    for j in range(n):
        e = np.zeros(n)
        e[j] = 1
        out[j] = np.sum(conv(x, e.reshape(shape), p) * dy)
    return out.reshape(shape)
