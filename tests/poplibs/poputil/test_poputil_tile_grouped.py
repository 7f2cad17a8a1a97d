"""Element-wise outputs one region a tile after a concatenation (poputil.memory_order's
tile_grouped_clone and element_order): create_output of a concat of differently-mapped
tensors is mapped as the concat is, element for element, yet holds one contiguous region
of memory a tile (Poplar's clone); the element-wise ops over it give numpy's results and
one vertex a tile for their output."""
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import popsim
from popsim import FLOAT, popnn, popops
from popsim.poputil import per_tile
from popsim.popops import expr as pe
from popsim.poputil.memory_order import element_order, tile_grouped_clone
from popsim.program import Sequence

from graph_helpers import load_and_run, small_device

TILES = 4
H, W = 2, 3


def _device():
    return small_device(TILES)


@st.composite
def sources(draw):
    """[(channels, layout, cuts, tiles)]: 2 or 3 tensors [1, c, H, W] to concatenate along
    dimension 1, each mapped its own way: row-major intervals on drawn tiles, or
    channels-innermost in memory (a convolution's output) with rows on drawn tiles."""
    out = []
    for _ in range(draw(st.integers(2, 3))):
        c = draw(st.integers(1, 5))
        n = c * H * W
        cuts = sorted(set(draw(st.lists(st.integers(1, n - 1), max_size=3)))) if n > 1 else []
        tiles = draw(st.lists(st.integers(0, TILES - 1), min_size=len(cuts) + 1, max_size=len(cuts) + 1))
        out.append((c, draw(st.sampled_from(["rows", "channels_innermost"])), cuts, tiles))
    return out


def _concat(g, spec):
    """(the concatenation along dimension 1, its source variables)."""
    parts, variables = [], []
    for k, (c, layout, cuts, tiles) in enumerate(spec):
        shape = (1, c, H, W) if layout == "rows" else (1, H, W, c)
        v = g.add_variable(FLOAT, shape, f"src{k}")
        bounds = [0] + cuts + [c * H * W]
        mapping = [[] for _ in range(TILES)]
        for b, e, t in zip(bounds[:-1], bounds[1:], tiles):
            mapping[t].append((b, e))
        g.set_tile_mapping(v, mapping)
        variables.append(v)
        parts.append(v if layout == "rows" else v.dim_shuffle([0, 3, 1, 2]))
    return popsim.concat(parts, 1), variables


def _memory_regions_a_tile(g, t):
    """Per tile, how many regions of contiguous memory its share of ``t`` is."""
    flat = t.flatten()
    return [len(g.get_sorted_contiguous_regions(flat, m)) for m in g.get_tile_mapping(flat)]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=sources())
def test_create_output_of_a_concat_is_one_region_a_tile_mapped_as_the_concat(spec):
    g = popsim.Graph(_device())
    x, _ = _concat(g, spec)
    out = per_tile.create_output(g, [x])
    assert out.shape == x.shape
    assert g.get_tile_mapping(out) == g.get_tile_mapping(x)        # element for element
    assert all(n <= 1 for n in _memory_regions_a_tile(g, out)), _memory_regions_a_tile(g, out)
    order = element_order(g, out)                                 # the ops' order: one region a tile
    flat = order.view(out) if order is not None else out.flatten()
    assert all(len(m) <= 1 for m in g.get_tile_mapping(flat))


def test_tile_grouped_clone_leaves_one_region_a_tile_and_unmapped_views_to_clone():
    g = popsim.Graph(_device())
    v = g.add_variable(FLOAT, (8,), "v")
    g.set_tile_mapping(v, [[(0, 4)], [(4, 8)], [], []])
    assert tile_grouped_clone(g, v, FLOAT, "c") is None           # a plain clone is that already
    u = g.add_variable(FLOAT, (4,), "u")
    g.set_tile_mapping(u.slice(0, 2), 1)                          # half unmapped
    assert tile_grouped_clone(g, popsim.concat([v, u]), FLOAT, "c") is None


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=sources(), seed=st.integers(0, 2 ** 16))
def test_element_wise_ops_after_a_concat_give_numpys_results(spec, seed):
    device = _device()
    g = popsim.Graph(device)
    popops.add_codelets(g)
    popnn.add_codelets(g)
    x, variables = _concat(g, spec)
    c = x.shape[1]
    scale = g.add_variable(FLOAT, (c, 1, 1), "scale")
    g.set_tile_mapping(scale, 0)
    prog = Sequence()
    y = popops.mul(g, x, scale, prog, "mul")                      # first op after the concat
    z = popnn.relu(g, popops.add(g, y, 0.5, prog, "add"), prog, "relu")
    m = popops.map(g, pe._1 * pe._2 - pe._1, [z, x], prog, "map")
    popops.sub_in_place(g, z, x, prog, "sub")
    rng = np.random.default_rng(seed)
    vx = rng.standard_normal(x.shape).astype(np.float32)
    vs = rng.standard_normal((c, 1, 1)).astype(np.float32)
    writes, first = {}, 0
    for v, (channels, layout, _, _) in zip(variables, spec):
        part = vx[:, first:first + channels]
        writes[v] = part if layout == "rows" else part.transpose(0, 2, 3, 1)
        first += channels
    writes[scale] = vs
    _, ((got_y, got_z, got_m),) = load_and_run(g, device, prog, [y, z, m], writes)
    want_y = vx * vs
    want_r = np.maximum(want_y + np.float32(0.5), 0)
    np.testing.assert_array_equal(got_y, want_y)
    np.testing.assert_allclose(got_m, want_r * vx - want_r, rtol=1e-6, atol=1e-6)   # one expression: may fuse
    np.testing.assert_array_equal(got_z, want_r - vx)


def test_the_first_op_after_a_concat_gets_one_vertex_a_tile():
    """Two sources, each spread over all four tiles: each tile holds several regions of
    the concat (the second is channels-innermost in memory); the output of the op after it
    is one, so one MultiVertex a tile, not a 2D vertex per worker."""
    device = _device()
    g = popsim.Graph(device)
    popops.add_codelets(g)
    x, _ = _concat(g, [(4, "rows", [6, 12, 18], [0, 1, 2, 3]), (4, "channels_innermost", [6, 12, 18], [0, 1, 2, 3])])
    assert all(len(m) > 1 for m in g.get_tile_mapping(x)), g.get_tile_mapping(x)
    prog = Sequence()
    before = g.num_vertices
    y = popops.add(g, x, x, prog, "add")
    assert g.num_vertices - before == TILES
    assert _memory_regions_a_tile(g, y) == [1] * TILES


def test_the_ops_after_those_stay_one_region_a_tile_and_one_variable_views_keep_their_order():
    """A clone of a tile-grouped output is tile-grouped too (each op of a chain after a
    concat: one region a tile), while a one-variable view with several regions a tile is
    cloned in its own order, as before (ResNet-50's residual additions)."""
    device = _device()
    g = popsim.Graph(device)
    popops.add_codelets(g)
    popnn.add_codelets(g)
    x, _ = _concat(g, [(4, "rows", [6, 12, 18], [0, 1, 2, 3]), (4, "channels_innermost", [6, 12, 18], [0, 1, 2, 3])])
    prog = Sequence()
    y = x
    for k in range(3):
        y = popops.mul(g, y, 2.0, prog, f"mul{k}")
        assert _memory_regions_a_tile(g, y) == [1] * TILES, k
    v = g.add_variable(FLOAT, (1, 8, H, W), "v")
    g.set_tile_mapping(v, [[(0, 6), (24, 30)], [(6, 12), (30, 36)], [(12, 18), (36, 42)], [(18, 24), (42, 48)]])
    w = per_tile.create_output(g, [v])
    assert g.get_tile_mapping(w) == g.get_tile_mapping(v) and _memory_regions_a_tile(g, w) == [2] * TILES
    assert w.get_var_regions() == [(w.get_var_regions()[0].var, w.get_var_regions()[0].name, 0, 48)]


def test_batch_normalisation_of_a_concat_is_one_region_a_tile_and_right():
    device = _device()
    g = popsim.Graph(device)
    popops.add_codelets(g)
    popnn.add_codelets(g)
    x, variables = _concat(g, [(4, "rows", [6, 12, 18], [0, 1, 2, 3]),
                               (4, "channels_innermost", [6, 12, 18], [0, 1, 2, 3])])
    c = x.shape[1]
    params = [g.add_variable(FLOAT, (c,), p) for p in ("gamma", "beta", "mean", "istd")]
    for p in params:
        g.set_tile_mapping(p, 0)
    prog = Sequence()
    y = popnn.bn.batch_normalise(g, x, *params, prog, name="bn")[0]
    assert _memory_regions_a_tile(g, y) == [1] * TILES
    rng = np.random.default_rng(3)
    vx = rng.standard_normal(x.shape).astype(np.float32)
    vp = [rng.standard_normal(c).astype(np.float32) for _ in params]
    writes = {variables[0]: vx[:, :4], variables[1]: vx[:, 4:].transpose(0, 2, 3, 1)}
    writes.update(zip(params, vp))
    _, ((got,),) = load_and_run(g, device, prog, [y], writes)
    gamma, beta, mean, istd = (p.reshape(1, c, 1, 1) for p in vp)
    np.testing.assert_allclose(got, (vx - mean) * istd * gamma + beta, rtol=1e-5, atol=1e-5)
