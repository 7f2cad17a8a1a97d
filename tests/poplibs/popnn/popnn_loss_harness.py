"""Helpers the loss and arg-max tests share: a small device, tensors with a scattered
tile mapping, running a program with host writes and reads, and the numpy (float64)
references of PopLibs' loss, arg max and accuracy."""
import numpy as np

import graph_helpers
from graph_helpers import load_and_run

MASKED = 0xFFFFFFFF
EPS = {"FLOAT": 1.17549435e-38, "HALF": 5.9605e-8}


def small_device(tiles=4):
    return graph_helpers.small_device(tiles)


def scattered(g, dtype, shape, name, rng):
    """A new variable whose elements are dealt out in random intervals to random tiles
    (some tiles one region, some several, rows cut between tiles)."""
    t = g.add_variable(dtype, shape, name)
    n, tiles = int(np.prod(shape)), g.target.num_tiles
    cuts = sorted(set(rng.integers(1, n, size=2 * tiles).tolist())) if n > 1 else []
    mapping = [[] for _ in range(tiles)]
    for b, e in zip([0] + cuts, cuts + [n]):
        mapping[int(rng.integers(tiles))].append((b, e))
    g.set_tile_mapping(t, mapping)
    return t


def on_tile(g, dtype, shape, name, tile=0):
    t = g.add_variable(dtype, shape, name)
    g.set_tile_mapping(t, tile)
    return t


def run(g, device, prog, reads, writes, runs=1):
    """Write ``writes`` ({tensor: values}), run ``prog`` ``runs`` times; the engine and the
    values of ``reads``."""
    engine, results = load_and_run(g, device, prog, reads, writes, runs=runs)
    return engine, results[-1]


def first_arg(x, largest=True):
    """Each row's first position of its largest (smallest) value, in float64."""
    x = np.asarray(x, dtype=np.float64)
    return (x.argmax(1) if largest else x.argmin(1)).astype(np.uint32)


def one_hot(labels, classes):
    y = np.zeros((len(labels), classes))
    for i, k in enumerate(np.asarray(labels, dtype=np.int64) & 0xFFFFFFFF):
        if k < classes:
            y[i, k] = 1
    return y


def reference_loss(p, labels, cross_entropy, deltas_scale=1.0, scaling=1.0, dtype="FLOAT"):
    """PopLibs' per-element transforms summed per row, MASKED rows zero: (loss, deltas)."""
    p = np.asarray(p, dtype=np.float64)
    y = one_hot(labels, p.shape[1])
    live = (np.asarray(labels, dtype=np.int64) & 0xFFFFFFFF) != MASKED
    if cross_entropy:
        deltas = deltas_scale / scaling * (p - y * scaling)
        loss = (-y * (np.log(p + EPS[dtype]) - np.log(scaling))).sum(1)
    else:
        deltas = p - y
        loss = (0.5 * deltas ** 2).sum(1)
    return loss * live, deltas * live[:, None]


def reference_correct(p, labels):
    labels = np.asarray(labels, dtype=np.int64) & 0xFFFFFFFF
    return int(((first_arg(p) == labels) & (labels != MASKED)).sum())
