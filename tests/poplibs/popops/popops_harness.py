"""Helpers the popops tests share: a mapping with one-region and several-region tiles,
and running a program with host reads and writes."""
from graph_helpers import load_and_run

# 24 elements on 4 tiles: tiles 0 and 3 one region (1D vertices), tiles 1 and 2 several (2D)
MAPPING = [[(0, 4)], [(4, 6), (10, 12), (20, 24)], [(6, 10), (12, 14)], [(14, 20)]]


def mapped(g, dtype, name, shape=(4, 6)):
    """A new variable of ``shape`` (24 elements) mapped by MAPPING."""
    t = g.add_variable(dtype, shape, name)
    g.set_tile_mapping(t, MAPPING)
    return t


def vertex_kinds(engine):
    """The report's vertex types of ``engine``, by name."""
    return {v["name"]: v for v in engine.get_report().to_dict()["execution"]["vertex_types"]}


def run(g, device, prog, reads, writes):
    """Run ``prog`` once after writing ``writes`` ({tensor: values}); the engine and the
    values of ``reads`` (a list of tensors)."""
    engine, (values,) = load_and_run(g, device, prog, reads, writes)
    return engine, values


def scattered_mapping(n, num_tiles, rng):
    """``n`` elements cut into about 2 * num_tiles intervals dealt to random tiles, so some
    tiles hold one region and some several (tests of layout-following ops)."""
    cuts = sorted(set(rng.integers(1, n, size=2 * num_tiles).tolist())) if n > 1 else []
    bounds = [0] + cuts + [n]
    mapping = [[] for _ in range(num_tiles)]
    for b, e in zip(bounds, bounds[1:]):
        mapping[int(rng.integers(num_tiles))].append((b, e))
    return mapping
