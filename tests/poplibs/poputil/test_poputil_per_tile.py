"""poputil.per_tile: the per-tile vertex layout element-wise ops share, checked by running
small ops built on it against numpy, and by the groups it hands to make_vertex."""
import re

import numpy as np
import pytest

import popsim
from popsim import FLOAT, INT, Input, Output, Vector, VectorList, Vertex, poputil
from popsim.poputil import per_tile
from popsim.program import Execute, Sequence


class Twice(Vertex):
    in_: Input[Vector[float]]
    out: Output[Vector[float]]

    def compute(self):
        for i in range(len(self.in_)):
            self.out[i] = 2 * self.in_[i]
        return True


class AddRegions(Vertex):
    a: Input[VectorList[float]]
    b: Input[VectorList[float]]
    out: Output[VectorList[float]]

    def compute(self):
        for r in range(len(self.a)):
            for i in range(len(self.a[r])):
                self.out[r][i] = self.a[r][i] + self.b[r][i]
        return True


# 24 elements on 4 tiles: tile 0 one region, tile 1 three regions, tile 2 two, tile 3 one
_MAPPING = [[(0, 4)], [(4, 6), (10, 12), (20, 24)], [(6, 10), (12, 14)], [(14, 20)]]


@pytest.fixture
def g(small_device):
    return popsim.Graph(small_device)


def _x(g, name="x", shape=(4, 6)):
    x = g.add_variable(FLOAT, shape, name)
    g.set_tile_mapping(x, _MAPPING)
    return x


def test_tile_regions_lists_the_tiles_that_hold_elements(g):
    x = g.add_variable(FLOAT, (4, 6), "x")
    g.set_tile_mapping(x, [[(0, 10)], [], [(10, 24)], []])
    assert per_tile.tile_regions(g, x) == [(0, [(0, 10)]), (2, [(10, 24)])]
    assert per_tile.tile_regions(g, _x(g, "y")) == [(t, r) for t, r in enumerate(_MAPPING)]


def test_one_vertex_per_worker_group_runs_on_the_data(g, small_device, run_and_read):
    x = _x(g)
    y = per_tile.create_output(g, [x], name="y")
    assert g.get_tile_mapping(y) == _MAPPING and y.shape == (4, 6) and y.name == "y"
    calls = []

    def make(tile, regions):
        calls.append((tile, regions))
        return Twice, {"in": per_tile.regions_view(x, regions), "out": per_tile.regions_view(y, regions)}

    cs = per_tile.add_per_tile_compute_set(g, "twice", x, make)
    target = g.target
    expected = [(tile, group) for tile, regions in enumerate(_MAPPING)
                for group in poputil.split_regions_between_workers(target, regions, 1)]
    assert calls == expected and g.num_vertices == len(expected)
    data = np.arange(24, dtype=np.float32).reshape(4, 6) - 5
    (out,) = run_and_read(g, small_device, Sequence(Execute(cs)), [y], writes={x: data})
    np.testing.assert_array_equal(out, 2 * data)


def test_list_fields_and_broadcast_operands(g, small_device, run_and_read):
    a = _x(g, "a")
    b_row = g.add_variable(FLOAT, (6,), "b")
    g.set_tile_mapping(b_row, 3)
    b = poputil.broadcast_to_match(b_row, a.shape)
    out = per_tile.create_output(g, [b, a])  # b repeats elements: the output is mapped like a
    assert g.get_tile_mapping(out) == _MAPPING and out.name == "a_out"
    cs = g.add_compute_set("add")
    groups = []

    def make(tile, regions):
        groups.append(regions)
        return AddRegions, {"a": per_tile.region_views(a, regions), "b": per_tile.region_views(b, regions),
                            "out": per_tile.region_views(out, regions)}

    count = per_tile.add_vertices_per_tile(g, cs, out, make, grouping="tile")
    assert count == 4 and groups == _MAPPING
    va = np.arange(24, dtype=np.float32).reshape(4, 6)
    vb = np.array([1, 10, 100, 1000, 1e4, 1e5], dtype=np.float32)
    (res,) = run_and_read(g, small_device, Sequence(Execute(cs)), [out], writes={a: va, b_row: vb})
    np.testing.assert_array_equal(res, va + vb)


def test_auto_grouping_keeps_a_single_region_whole(g):
    x = g.add_variable(FLOAT, (64,), "x")
    g.set_tile_mapping(x, [[(0, 40)], [(40, 44), (48, 52), (56, 60)], [(44, 48), (52, 56), (60, 64)], []])
    calls = []
    per_tile.add_per_tile_compute_set(g, None, x, lambda tile, r: calls.append((tile, r)) or
                                      (Twice, {"in": per_tile.regions_view(x, r), "out": per_tile.regions_view(x, r)}),
                                      grain_size=2, grouping="auto")
    # tile 0: one region, one vertex; tiles 1, 2: 12 elements in grains of 2 over 6 workers
    assert calls[0] == (0, [(0, 40)])
    assert [c for c in calls if c[0] == 1] == [(1, [(40, 42)]), (1, [(42, 44)]), (1, [(48, 50)]),
                                               (1, [(50, 52)]), (1, [(56, 58)]), (1, [(58, 60)])]
    assert len(calls) == 13


def test_create_output_types_and_fallback_to_linear(g):
    col = g.add_variable(INT, (3, 1), "col")
    row = g.add_variable(INT, (1, 4), "row")
    for t in (col, row):
        g.set_tile_mapping(t, 2)
    out = per_tile.create_output(g, [col, row], dtype=FLOAT)
    assert (out.shape, out.dtype, out.name) == ((3, 4), FLOAT, "col_out")
    assert g.get_tile_mapping(out) == g.linear_mapping(out)
    c = g.add_constant(INT, (3, 4), 0, "zeros")
    assert g.get_tile_mapping(per_tile.create_output(g, [c, out])) == g.get_tile_mapping(out)


def test_errors(g, small_device):
    x = _x(g)
    with pytest.raises(poputil.PoplibsError, match="create_output: needs at least one input"):
        per_tile.create_output(g, [])
    with pytest.raises(poputil.PoplibsError, match=re.escape(
            "create_output: cannot broadcast tensor 'x' of shape (4, 6), tensor 'w' of shape (5,) together")):
        per_tile.create_output(g, [x, g.add_variable(FLOAT, (5,), "w")])
    with pytest.raises(poputil.PoplibsError, match="create_output: input 'v' belongs to another graph"):
        per_tile.create_output(g, [popsim.Graph(small_device).add_variable(FLOAT, (2,), "v")])
    with pytest.raises(poputil.PoplibsError, match="grouping must be one of workers, tile, auto, found 'rows'"):
        per_tile.add_per_tile_compute_set(g, "cs", x, None, grouping="rows")
    with pytest.raises(poputil.PoplibsError, match="add_vertices_per_tile: grain_size must be >= 1, found 0"):
        per_tile.add_per_tile_compute_set(g, "cs", x, None, grain_size=0)
    unmapped = g.add_variable(FLOAT, (3,), "unmapped")
    with pytest.raises(popsim.InvalidTileMappingError, match="tensor 'unmapped'"):
        per_tile.tile_regions(g, unmapped)
    with pytest.raises(poputil.PoplibsError, match="regions_view of tensor 'x': no regions given"):
        per_tile.regions_view(x, [])
