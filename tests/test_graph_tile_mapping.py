"""Tile mapping: set_tile_mapping's hot paths (a vertex or a strided view to one tile of
a top-level graph) against the general path and against an independent numpy reference
(an array holding, per element, the tile of the last call that mapped it); tiles out of
range, intervals outside the tensor, and elements left unmapped at Engine construction,
each named in the error."""
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

import popsim
from popsim import FLOAT, INT
from popsim.errors import InvalidTileMappingError
from popsim.mapping import VariableMapping
from popsim.program import Sequence

from graph_helpers import mapped
from view_chains import Ctx, run_chain, shapes

PROPS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
TILES = 8


def small_graph():
    model = popsim.IPUModel("ipu2")
    model.tiles_per_ipu = TILES
    device = model.create_device()
    return popsim.Graph(device), device


def intervals_by_tile(owner):
    """mapping[tile] = [(begin, end), ...] of the flat elements ``owner`` puts on each tile."""
    result = [[] for _ in range(TILES)]
    for i, t in enumerate(owner.tolist()):
        if t < 0:
            continue
        row = result[t]
        if row and row[-1][1] == i:
            row[-1] = (row[-1][0], i + 1)
        else:
            row.append((i, i + 1))
    return result


@PROPS
@given(st.data())
def test_mapping_views_to_tiles_matches_numpy_and_the_general_path(data):
    graph, _ = small_graph()
    shape = data.draw(shapes, label="shape")
    v = graph.add_variable(FLOAT, shape, "v")
    ids = np.arange(v.num_elements(), dtype=np.int64).reshape(shape)
    owner = np.full(v.num_elements(), -1, np.int64)
    calls = []
    for _ in range(data.draw(st.integers(1, 5), label="calls")):
        view, view_ids = v, ids
        if data.draw(st.booleans(), label="a view"):
            view, view_ids, _ = run_chain(data, v, ids, Ctx(), min_len=1, max_len=3)
        tile = data.draw(st.integers(0, TILES - 1), label="tile")
        note(f"set_tile_mapping({view!r} {getattr(view, '_strides', None)}, {tile})")
        graph.set_tile_mapping(view, tile)
        owner[view_ids.reshape(-1)] = tile
        calls.append((view, tile))
    assert graph.get_tile_mapping(v, require_complete=False) == intervals_by_tile(owner)
    fast = v._var.mapping.resolved()
    v._var.mapping = VariableMapping(v._var.size)
    for view, tile in calls:
        graph._set_tile_mapping_general(view, tile)
    general = v._var.mapping.resolved()
    for a, b in zip(fast, general):
        np.testing.assert_array_equal(a, b)


def test_vertex_placement_fast_path_matches_general_path_and_its_errors():
    graph, _ = small_graph()
    graph.add_codelets(Nop)
    cs = graph.add_compute_set("cs")
    v = graph.add_vertex(cs, Nop)
    for tile in (0, TILES - 1, np.int64(3)):
        graph.set_tile_mapping(v, tile)
        assert v.tile == int(tile) and type(v.tile) is int
    for bad in (-1, TILES, True, 2.0, "1"):
        with pytest.raises(Exception) as fast:
            graph.set_tile_mapping(v, bad)
        with pytest.raises(Exception) as general:
            graph._set_tile_mapping_general(v, bad)
        assert (fast.type, str(fast.value)) == (general.type, str(general.value))
        assert fast.type in (popsim.TypeError, InvalidTileMappingError)  # both PopsimErrors
    assert v.tile == 3


def test_virtual_graph_tiles_are_translated_on_every_path():
    graph, _ = small_graph()
    sub = graph.create_virtual_graph(4, 8)
    graph.add_codelets(Nop)
    cs = graph.add_compute_set("cs")
    v = sub.add_vertex(cs, Nop)
    t = graph.add_variable(FLOAT, [4, 2], "t")
    sub.set_tile_mapping(v, 1)
    sub.set_tile_mapping(t[1], 2)
    sub.set_tile_mapping(t[2:], 3)
    assert v.tile == 5
    mapping = graph.get_tile_mapping(t, require_complete=False)
    assert mapping[6] == [(2, 4)] and mapping[7] == [(4, 8)]
    with pytest.raises(InvalidTileMappingError, match="tile 4 is out of range: the virtual graph has 4 tiles"):
        sub.set_tile_mapping(t[0], 4)


def test_a_view_of_another_graph_is_refused_on_the_hot_path_too():
    graph, _ = small_graph()
    other, _ = small_graph()
    t = other.add_variable(FLOAT, [4], "elsewhere")
    with pytest.raises(popsim.errors.TensorCreationError, match="tensor 'elsewhere' belongs to a different graph"):
        graph.set_tile_mapping(t[1:3], 0)


class Nop(popsim.Vertex):
    def compute(self):
        return True


def test_partly_unmapped_variable_names_tensor_and_first_gap(small_device):
    g = popsim.Graph(small_device)
    v = g.add_variable(FLOAT, (4,), "v")
    g.set_tile_mapping(v[0:2], 1)
    with pytest.raises(popsim.InvalidTileMappingError) as info:
        popsim.Engine(g, Sequence())
    msg = str(info.value)
    assert "variable 'v'" in msg
    assert "[2, 4)" in msg
    assert "unmapped" in msg
    assert "set_tile_mapping" in msg  # how to fix it


def test_unmapped_gap_in_the_middle_is_the_first_gap(small_device):
    g = popsim.Graph(small_device)
    v = g.add_variable(FLOAT, (2, 4), "mid")
    g.set_tile_mapping(v[0], 0)
    g.set_tile_mapping(v[1, 2:], 3)
    with pytest.raises(popsim.InvalidTileMappingError, match=re.escape("[4, 6)")) as info:
        popsim.Engine(g, Sequence())
    assert "'mid'" in str(info.value)


def test_fully_unmapped_variable(small_device):
    g = popsim.Graph(small_device)
    mapped(g, FLOAT, (3,), "fine")
    g.add_variable(INT, (5,), "lonely")
    with pytest.raises(popsim.InvalidTileMappingError) as info:
        popsim.Engine(g, Sequence())
    msg = str(info.value)
    assert "'lonely'" in msg and "[0, 5)" in msg
    assert "'fine'" not in msg


def test_unmapped_constant(small_device):
    g = popsim.Graph(small_device)
    g.add_constant(INT, (3,), [1, 2, 3], "c1")
    with pytest.raises(popsim.InvalidTileMappingError) as info:
        popsim.Engine(g, Sequence())
    msg = str(info.value)
    assert "constant 'c1'" in msg and "[0, 3)" in msg


def test_partly_mapped_constant(small_device):
    g = popsim.Graph(small_device)
    c = g.add_constant(INT, (3,), [1, 2, 3], "c2")
    g.set_tile_mapping(c[1:], 2)
    with pytest.raises(popsim.InvalidTileMappingError, match=re.escape("[0, 1)")) as info:
        popsim.Engine(g, Sequence())
    assert "'c2'" in str(info.value)


@pytest.mark.parametrize("tile", [4, 100, -1, np.int64(7)])
def test_tile_out_of_range_single_tile(small_device, tile):
    g = popsim.Graph(small_device)
    v = g.add_variable(FLOAT, (4,), "v")
    with pytest.raises(popsim.InvalidTileMappingError) as info:
        g.set_tile_mapping(v, tile)
    msg = str(info.value)
    assert f"tile {int(tile)}" in msg
    assert "'v'" in msg
    assert "4 tiles (0..3)" in msg


def test_tile_out_of_range_on_a_slice(device):
    g = popsim.Graph(device)
    v = g.add_variable(FLOAT, (4,), "sl")
    with pytest.raises(popsim.InvalidTileMappingError, match=re.escape("tile 1472 is out of range")) as info:
        g.set_tile_mapping(v[1], 1472)
    assert "(0..1471)" in str(info.value)
    assert "'sl'" in str(info.value)


def test_tile_out_of_range_interval_list(small_device):
    g = popsim.Graph(small_device)
    v = g.add_variable(FLOAT, (4,), "v")
    with pytest.raises(popsim.InvalidTileMappingError) as info:
        g.set_tile_mapping(v, [[], [], [], [], [(0, 4)]])
    msg = str(info.value)
    assert "'v'" in msg
    assert "5 tiles" in msg and "has 4" in msg


def test_tile_out_of_range_interval_list_names_tile_and_range(small_device):
    g = popsim.Graph(small_device)
    v = g.add_variable(FLOAT, (4,), "v")
    with pytest.raises(popsim.InvalidTileMappingError) as info:
        g.set_tile_mapping(v, [[], [], [], [], [(0, 4)]])
    msg = str(info.value)
    assert "tile 4" in msg
    assert "0..3" in msg


def test_interval_outside_the_tensor(small_device):
    g = popsim.Graph(small_device)
    v = g.add_variable(FLOAT, (4,), "v")
    with pytest.raises(popsim.InvalidTileMappingError) as info:
        g.set_tile_mapping(v, [[(0, 9)]])
    msg = str(info.value)
    assert "'v'" in msg and "[0, 9)" in msg and "4 elements" in msg


def test_tile_out_of_range_in_virtual_graph(small_device):
    g = popsim.Graph(small_device)
    sub = g.create_virtual_graph(1, 3)
    v = sub.add_variable(FLOAT, (4,), "vv")
    # Tile 2 exists on the device but not in the 2-tile virtual graph.
    with pytest.raises(popsim.InvalidTileMappingError) as info:
        sub.set_tile_mapping(v, 2)
    msg = str(info.value)
    assert "tile 2" in msg and "'vv'" in msg
    assert "virtual graph has 2 tiles (0..1)" in msg
    with pytest.raises(popsim.InvalidTileMappingError, match=re.escape("tile -1")):
        sub.set_tile_mapping(v[0], -1)
    with pytest.raises(popsim.InvalidTileMappingError, match="'vv'") as info:
        sub.set_tile_mapping(v, [[], [], [(0, 4)]])
    assert "has 2" in str(info.value)
    sub.set_tile_mapping(v, 1)  # a valid local tile still works


def test_virtual_graph_out_of_range(small_device):
    g = popsim.Graph(small_device)
    with pytest.raises(popsim.InvalidTileMappingError, match=re.escape("[2, 9)")) as info:
        g.create_virtual_graph(2, 9)
    assert "4 tiles" in str(info.value)


def test_sorted_contiguous_regions_cut_views_at_memory_breaks_in_memory_order():
    g = popsim.Graph(popsim.IPUModel("ipu2").create_device())
    a = g.add_variable(FLOAT, (4, 3), "a")
    b = g.add_variable(FLOAT, (2, 3), "b")
    t = popsim.concat([b, a]).flatten()  # b's 6 elements, then a's 12
    assert g.get_sorted_contiguous_regions(t, [(0, 18)]) == [[(6, 18)], [(0, 6)]]  # a (created first), then b
    assert g.get_sorted_contiguous_regions(t, [(4, 8), (10, 12)]) == [[(6, 8)], [(10, 12)], [(4, 6)]]  # a gap
    assert g.get_sorted_contiguous_regions(t, [(4, 8), (8, 12)]) == [[(6, 12)], [(4, 6)]]  # joined in memory
    column = a.transpose()[1]  # a[0][1], a[1][1], ...: every element its own run
    assert g.get_sorted_contiguous_regions(column, [(0, 4)]) == [[(0, 1)], [(1, 2)], [(2, 3)], [(3, 4)]]
    backwards = a.flatten()[::-1]  # one run of memory, met in reverse: cut into elements, sorted by address
    assert g.get_sorted_contiguous_regions(backwards, [(9, 12)]) == [[(11, 12), (10, 11), (9, 10)]]
    with pytest.raises(popsim.InvalidTileMappingError, match="must lie in"):
        g.get_sorted_contiguous_regions(t, [(0, 19)])
