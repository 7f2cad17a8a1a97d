"""Helpers of the poprand tests: a graph with a reference tensor under a chosen tile
mapping, and a runner that writes, runs (possibly several times) and reads back."""
import numpy as np

import popsim
from graph_helpers import load_and_run

SEED = (0x1234ABCD, 0x0BADF00D)


def device(tiles=16):
    """An ipu2 IPUModel device with ``tiles`` tiles (small graphs build quickly)."""
    model = popsim.IPUModel("ipu2")
    model.tiles_per_ipu = tiles
    return model.create_device()


def reference(graph, shape, layout="linear", dtype=popsim.FLOAT, name="ref"):
    """A variable of ``shape`` mapped: "linear" over the tiles, "one" all on tile 1, or
    "scattered": blocks of 7 elements dealt to the tiles in a shuffled order."""
    t = graph.add_variable(dtype, shape, name)
    n = t.num_elements()
    if layout == "linear":
        graph.set_tile_mapping(t, graph.linear_mapping(t))
    elif layout == "one":
        graph.set_tile_mapping(t, 1)
    elif layout == "scattered":
        mapping = [[] for _ in range(graph.target.num_tiles)]
        blocks = list(range(0, n, 7))
        tiles = np.random.default_rng(5).integers(0, graph.target.num_tiles, len(blocks))
        for b, tile in zip(blocks, tiles):
            mapping[tile].append((b, min(b + 7, n)))
        graph.set_tile_mapping(t, mapping)
    else:
        raise ValueError(layout)
    return t


def seed_tensor(graph, tile=2, name="seed"):
    s = graph.add_variable(popsim.UNSIGNED_INT, (2,), name)
    graph.set_tile_mapping(s, tile)
    return s


def run(graph, dev, prog, reads, writes=None, options=None, runs=1):
    """Run ``prog`` ``runs`` times; the contents of ``reads`` after each run (flattened)."""
    results = [[v.reshape(-1) for v in values]
               for values in load_and_run(graph, dev, prog, reads, writes, options, runs)[1]]
    return results if runs > 1 else results[0]
