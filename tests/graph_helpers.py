"""Small graph-building helpers shared by the tests: a variable or constant mapped to one
tile, and a small IPUModel."""
import popsim


def mapped(graph, dtype, shape, name, tile=0):
    """A variable mapped whole to ``tile``."""
    t = graph.add_variable(dtype, shape, name)
    graph.set_tile_mapping(t, tile)
    return t


def mapped_const(graph, dtype, shape, values, name, tile=0):
    """A constant mapped whole to ``tile``."""
    c = graph.add_constant(dtype, shape, values, name)
    graph.set_tile_mapping(c, tile)
    return c


def small_model(tiles=4, version="ipu2", **fields):
    """An IPUModel of ``version`` with ``tiles`` tiles and the given fields set."""
    model = popsim.IPUModel(version)
    model.tiles_per_ipu = tiles
    for k, v in fields.items():
        setattr(model, k, v)
    return model
