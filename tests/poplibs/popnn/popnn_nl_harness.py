"""Helpers the popnn non-linearity and softmax tests share: tile mappings (fixed, linear,
scattered) and running a program with host writes and reads."""
import numpy as np
import pytest

import popsim
from graph_helpers import load_and_run
from popsim import poputil


def scattered(n, num_tiles, rng):
    """``n`` elements cut into about 2 * num_tiles intervals dealt to random tiles."""
    cuts = sorted(set(rng.integers(1, n, size=2 * num_tiles).tolist())) if n > 1 else []
    bounds = [0] + cuts + [n]
    mapping = [[] for _ in range(num_tiles)]
    for b, e in zip(bounds, bounds[1:]):
        mapping[int(rng.integers(num_tiles))].append((b, e))
    return mapping


# 24 elements on 4 tiles: tiles 0 and 3 one region (1D vertices), tiles 1 and 2 several (2D)
MAPPING = [[(0, 4)], [(4, 6), (10, 12), (20, 24)], [(6, 10), (12, 14)], [(14, 20)]]


@pytest.fixture
def g(small_device):
    """A graph on the 4-tile test device (import it into a test module to use it)."""
    return popsim.Graph(small_device)


def variable(g, dtype, shape, name, mapping="linear", rng=None):
    """A new variable mapped linearly, ``"scattered"`` (random intervals on random
    tiles, drawn from ``rng``) or by the given mapping."""
    t = g.add_variable(dtype, shape, name)
    if mapping == "linear":
        poputil.map_tensor_linearly(g, t)
    elif mapping == "scattered":
        g.set_tile_mapping(t, scattered(t.num_elements(), g.target.num_tiles, rng))
    else:
        g.set_tile_mapping(t, mapping)
    return t


def run(g, device, prog, writes, reads):
    """Write ``writes`` {tensor: values}, run ``prog`` once, return (engine, read values)."""
    engine, (values,) = load_and_run(g, device, prog, reads, writes)
    return engine, [v.astype(np.float64) for v in values]
