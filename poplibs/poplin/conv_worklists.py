"""Worklists of a ConvPartialnx1 vertex (PopLibs' ConvVertices.cpp createConvPartialAmpVertex
and partitionConvPartialByWorker): which runs of output positions each worker accumulates for
each kernel position, and which input positions they read, for one tile's box of the
convolution. Stride, input and kernel dilation, padding (input, kernel and output) and
output truncation are all here: an output position whose input is padding or a dilation
hole is in no run, so padding is never materialised. Pure numpy, no graph.

Coordinates per field dimension (``DimMap``), after truncation and flips (views, made by the
caller): output ``o`` (with output padding) -> strided output ``o' = o - out_pad_lower``
(valid below ``out_count``) -> untransformed output ``u = out_trunc_lower + o' * stride`` ->
transformed input ``j = u + kernel_pad_lower + k * kernel_dilation`` -> input
``i = (j - pad_lower) / dilation`` when that divides and ``0 <= i < in_size``.
"""
import math
from dataclasses import dataclass
from typing import List, Sequence, Tuple

import numpy as np
import popsim

from ..poputil import PoplibsError

#: Lists per kernel position: one per worker id the vertex's compute runs for. The vertices
#: (conv_nx1.cpp, conv_hmac.cpp, conv_vmac.cpp) index the lists with their MultiVertex's
#: numWorkers(), which in a C++ codelet is Poplar's constant, the hardware's count, on any
#: target: popsim runs every one of those ids whatever the target's num_worker_contexts
#: (src/popsim/codelet/include/poplar/Vertex.hpp), so the lists follow the codelet, not the
#: target; lists made for the target's count would be read at the wrong offsets on a target
#: of another count. The cycle estimates do use the target's count (conv_estimates).
WORKERS = popsim.Target.HARDWARE_WORKER_CONTEXTS


@dataclass(frozen=True)
class DimMap:
    """One field dimension of a (view-canonicalised) convolution: module docstring."""
    in_size: int
    dilation: int
    pad_lower: int
    kernel_dilation: int
    kernel_pad_lower: int
    stride: int
    out_trunc_lower: int
    out_pad_lower: int
    out_count: int

    def inputs(self, o: np.ndarray, k: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """(valid, i) of shape [len(k), len(o)]: whether output o reads a real input at
        kernel position k, and which."""
        strided = o[None, :] - self.out_pad_lower
        j = self.out_trunc_lower + strided * self.stride + self.kernel_pad_lower + k[:, None] * self.kernel_dilation
        t = j - self.pad_lower
        i = np.floor_divide(t, self.dilation)
        valid = ((strided >= 0) & (strided < self.out_count) & (t >= 0) & (t % self.dilation == 0)
                 & (i < self.in_size))
        return valid, i

    @property
    def steps(self) -> Tuple[int, int]:
        """(input step, output step) between consecutive valid outputs of one kernel
        position: the outputs whose inputs are real repeat every dilation / gcd positions."""
        g = math.gcd(self.stride, self.dilation)
        return self.stride // g, self.dilation // g


@dataclass
class TileWork:
    """A tile's worklists: the input window it reads (per dimension [lo, hi) of the input),
    the flat worklist vector (conv_nx1.cpp's format) and the strides of its runs."""
    window: List[Tuple[int, int]]
    worklists: np.ndarray
    in_stride: int
    out_stride: int
    num_entries: int


def tile_work(dims: Sequence[DimMap], batch: int, out_ranges: Sequence[Tuple[int, int]],
              kernel_ranges: Sequence[Tuple[int, int]], workers: int = WORKERS) -> TileWork:
    """The worklists of the box ``batch`` x ``out_ranges`` (output field) x ``kernel_ranges``;
    positions are flattened batch-major, row-major, innermost dimension last; ``workers``
    lists per kernel position (WORKERS: what the C++ vertices read)."""
    rank = len(dims)
    valid, index, window = [], [], []
    for d in range(rank):
        o = np.arange(*out_ranges[d])
        k = np.arange(*kernel_ranges[d])
        v, i = dims[d].inputs(o, k)
        valid.append(v)
        index.append(i)
        window.append((int(i[v].min()), int(i[v].max()) + 1) if v.any() else (0, 0))
    out_shape = [hi - lo for lo, hi in out_ranges]
    k_shape = [hi - lo for lo, hi in kernel_ranges]
    win_shape = [hi - lo for lo, hi in window]
    kernel_positions = math.prod(k_shape)
    positions = batch * math.prod(out_shape)
    in_step, out_step = dims[-1].steps
    # the batch, then every outer dimension's (output, kernel, input) combinations
    out_flat = np.arange(batch, dtype=np.int64)
    in_flat = out_flat.copy()
    k_flat = np.zeros(batch, dtype=np.int64)
    for d in range(rank - 1):
        kk, oo = np.nonzero(valid[d])
        ii = index[d][kk, oo] - window[d][0]
        out_flat = (out_flat[:, None] * out_shape[d] + oo[None, :]).ravel()
        in_flat = (in_flat[:, None] * win_shape[d] + ii[None, :]).ravel()
        k_flat = (k_flat[:, None] * k_shape[d] + kk[None, :]).ravel()
    # the innermost dimension: one run per kernel position
    runs = []
    for kk in range(k_shape[-1]):
        hits = np.nonzero(valid[-1][kk])[0]
        if len(hits) == 0:
            continue
        if len(hits) > 1 and np.any(np.diff(hits) != out_step):
            raise PoplibsError(f"poplin: internal error: the outputs of kernel position {kk} are not evenly "
                               f"spaced ({hits.tolist()})")
        runs.append((kk, int(hits[0]), len(hits), int(index[-1][kk, hits[0]]) - window[-1][0]))
    if runs and len(out_flat):
        r = np.array(runs, dtype=np.int64)
        start = (out_flat[:, None] * out_shape[-1] + r[None, :, 1]).ravel()
        count = np.broadcast_to(r[None, :, 2], (len(out_flat), len(r))).ravel()
        first_in = (in_flat[:, None] * win_shape[-1] + r[None, :, 3]).ravel()
        kpos = (k_flat[:, None] * k_shape[-1] + r[None, :, 0]).ravel()
    else:
        start = count = first_in = kpos = np.zeros(0, dtype=np.int64)
    start, count, first_in, kpos = _split_at_workers(start, count, first_in, kpos, positions, in_step, out_step,
                                                     workers)
    bounds = np.array([positions * w // workers for w in range(workers + 1)], dtype=np.int64)
    worker = np.searchsorted(bounds, start, side="right") - 1
    order = np.lexsort((start, worker, kpos))
    lists = np.bincount(kpos * workers + worker, minlength=kernel_positions * workers)
    offsets = np.concatenate([[0], np.cumsum(lists)])
    entries = np.stack([start[order], count[order], first_in[order]], axis=1)
    flat = np.concatenate([offsets, entries.ravel()]).astype(np.uint32)
    return TileWork(window, flat, in_step, out_step, len(start))


def _split_at_workers(start, count, first_in, kpos, positions, in_step, out_step, workers):
    """Cut every run that crosses a worker's boundary (worker w owns positions
    [w * P / W, (w + 1) * P / W)) in two, so that each worker writes only its own."""
    for w in range(1, workers):
        boundary = positions * w // workers
        last = start + (count - 1) * out_step
        cross = (start < boundary) & (last >= boundary)
        if not cross.any():
            continue
        before = -(-(boundary - start[cross]) // out_step)
        start = np.concatenate([start, start[cross] + before * out_step])
        first_in = np.concatenate([first_in, first_in[cross] + before * in_step])
        kpos = np.concatenate([kpos, kpos[cross]])
        rest = count[cross] - before
        count = count.copy()
        count[np.nonzero(cross)[0]] = before
        count = np.concatenate([count, rest])
    return start, count, first_in, kpos
