"""poputil's linear tile mapping, against the mappings worked out by hand from PopLibs'
algorithm in Poplar's tutorials (tutorials 4 and 5, the MNIST example)."""
import re

import pytest

import popsim
from popsim import FLOAT, HALF, INT, poputil


def _tiles(graph):
    return graph.target.num_tiles


def _used(mapping):
    return [tile for tile, intervals in enumerate(mapping) if intervals]


def _sizes(mapping):
    return [sum(e - b for b, e in intervals) for intervals in mapping if intervals]


@pytest.mark.parametrize("shape, tiles_used, smallest, largest", [
    ((40, 50), 59, 32, 34),      # tut5 matrix
    ((50,), 1, 50, 50),          # tut5 inputVector
    ((40,), 1, 40, 40),          # tut5 outputVector
    ((900, 600), 1468, 366, 368),  # tut4 m1
    ((600, 300), 1452, 122, 124),  # tut4 m2
    ((300, 200), 1429, 40, 42),    # tut4 m3
])
def test_tutorial_tensors_map_as_in_poplar(graph, shape, tiles_used, smallest, largest):
    t = graph.add_variable(FLOAT, shape, "t")
    poputil.map_tensor_linearly(graph, t)
    mapping = graph.get_tile_mapping(t)
    assert _used(mapping) == list(range(tiles_used))  # partition v on tile v, in order
    sizes = _sizes(mapping)
    assert (min(sizes), max(sizes)) == (smallest, largest)
    assert mapping == poputil.calc_linear_tile_mapping(graph, t)


def test_tutorial5_matrix_first_and_last_tiles(graph):
    m = graph.add_variable(FLOAT, (40, 50), "matrix")
    poputil.map_tensor_linearly(graph, m)
    mapping = graph.get_tile_mapping(m)
    assert mapping[0] == [(0, 32)] and mapping[58] == [(1966, 2000)]


@pytest.mark.parametrize("shape, per_tile", [((10, 784), [1960] * 4), ((784, 1), [196] * 4), ((10, 1), [10])])
def test_mnist_tensors_on_four_tiles(small_device, shape, per_tile):
    g = popsim.Graph(small_device)
    t = g.add_variable(FLOAT, shape, "t")
    poputil.map_tensor_linearly(g, t)
    assert _sizes(g.get_tile_mapping(t)) == per_tile


def test_half_defaults_are_a_vector_of_four_and_64_elements(graph):
    # HALF: 2 bytes, vector width 4 -> grain 4, minimum ceil(128 / 2) = 64 elements a tile
    t = graph.add_variable(HALF, (130,), "h")
    assert _sizes(poputil.calc_linear_tile_mapping(graph, t)) == [64, 66]
    # the same sizes given explicitly give the same mapping
    assert poputil.calc_linear_tile_mapping(graph, t, 64, 4) == poputil.calc_linear_tile_mapping(graph, t)


def test_explicit_sizes_follow_poplibs_four_argument_overload(small_device):
    g = popsim.Graph(small_device)
    t = g.add_variable(INT, (10,), "t")
    # minimum 0 means no minimum (PopLibs), grain 1: 10 elements over 4 tiles -> 2, 3, 2, 3
    assert poputil.calc_linear_tile_mapping(g, t, 0, 1) == [[(0, 2)], [(2, 5)], [(5, 7)], [(7, 10)]]
    # grain 4: grains [0,4) [4,8) [8,10) over 3 tiles
    assert poputil.calc_linear_tile_mapping(g, t, 0, 4) == [[(0, 4)], [(4, 8)], [(8, 10)], []]
    # minimum 5: at most 10 // 5 = 2 partitions
    assert poputil.calc_linear_tile_mapping(g, t, 5, 1) == [[(0, 5)], [(5, 10)], [], []]
    poputil.map_tensor_linearly(g, t, 0, 4)
    assert g.get_tile_mapping(t) == [[(0, 4)], [(4, 8)], [(8, 10)], []]


def test_offset_rotates_the_mapping_round_the_tiles(small_device):
    g = popsim.Graph(small_device)
    t = g.add_variable(INT, (10,), "t")
    poputil.map_tensor_linearly_with_offset(g, t, 3, min_elements_per_tile=0, grain_size=4)
    assert g.get_tile_mapping(t) == [[(4, 8)], [(8, 10)], [], [(0, 4)]]
    mapping, new_offset = poputil.calc_linear_tile_mapping_and_new_offset(g, t, 3, min_elements_per_tile=0,
                                                                          grain_size=4)
    assert mapping == g.get_tile_mapping(t) and new_offset == (3 + 3) % 4
    assert poputil.calc_linear_tile_mapping(g, t, 0, 4, offset=4) == poputil.calc_linear_tile_mapping(g, t, 0, 4)


def test_views_and_virtual_graphs(graph):
    sub = graph.create_virtual_graph(100, 104)
    v = graph.add_variable(FLOAT, (8, 8), "v")
    poputil.map_tensor_linearly(sub, v.transpose(), 0, 1)
    # the transposed view's flat elements 0..15 (v's column 0 and 1) go to virtual tile 0 = tile 100
    assert sub.get_tile_mapping(v.transpose())[0] == [(0, 16)]
    assert graph.get_tile_mapping(v[:, 0])[100] == [(0, 8)]


def test_empty_tensor_maps_nowhere(graph):
    t = graph.add_variable(FLOAT, (0, 3), "empty")
    poputil.map_tensor_linearly(graph, t)
    assert _used(graph.get_tile_mapping(t)) == []


def test_zero_sizes_are_the_defaults_api_md_spells(graph):
    """popsim's API writes the defaults as min_elements_per_tile=0, grain_size=0: passing them is
    the same as leaving them out; a minimum of 0 with a real grain is PopLibs' no minimum."""
    t = graph.add_variable(FLOAT, (1000,), "t")
    default = poputil.calc_linear_tile_mapping(graph, t)
    assert poputil.calc_linear_tile_mapping(graph, t, 0, 0) == default
    assert poputil.calc_linear_tile_mapping(graph, t, grain_size=0) == default
    assert poputil.calc_linear_tile_mapping(graph, t, 0, 1) != default  # no minimum: more tiles used


def test_tensor_of_another_graph(device, graph):
    t = popsim.Graph(device).add_variable(FLOAT, (4,), "elsewhere")
    with pytest.raises(poputil.PoplibsError, match="map_tensor_linearly: tensor 'elsewhere' belongs to another graph"):
        poputil.map_tensor_linearly(graph, t)
    with pytest.raises(poputil.PoplibsError, match="belongs to another graph"):
        poputil.map_tensor_linearly_with_offset(graph, t, 1)


@pytest.mark.parametrize("kwargs, message", [
    ({"min_elements_per_tile": -1}, "min_elements_per_tile must be >= 0, found -1"),
    ({"grain_size": -1}, "grain_size (0 or left out: the type's vector width) must be >= 0, found -1"),
    ({"grain_size": 2.0}, "vector width) must be a whole number >= 0, found float 2.0"),
    ({"min_elements_per_tile": True}, "min_elements_per_tile must be a whole number"),
])
def test_bad_sizes(graph, kwargs, message):
    t = graph.add_variable(FLOAT, (4,), "t")
    with pytest.raises(poputil.PoplibsError, match=re.escape(message)):
        poputil.map_tensor_linearly(graph, t, **kwargs)


def test_bad_objects(graph):
    t = graph.add_variable(FLOAT, (4,), "t")
    with pytest.raises(popsim.TypeError, match="expected a popsim.Graph"):
        poputil.map_tensor_linearly(t, graph)
    with pytest.raises(popsim.TypeError, match="expected a popsim.Tensor"):
        poputil.calc_linear_tile_mapping(graph, [1, 2])
    with pytest.raises(poputil.PoplibsError, match="offset must be >= 0, found -2"):
        poputil.map_tensor_linearly_with_offset(graph, t, -2)
    with pytest.raises(TypeError):  # PopLibs' (min, grain, offset) order is refused, not misread (Python's arity)
        poputil.map_tensor_linearly_with_offset(graph, t, 1, 1, 5)
