"""poputil.memory_order and the element-wise ops that follow it: over a tensor that is
channels-innermost in memory under an [N, C, H, W] shape (a convolution's output), popops'
and popnn's element-wise ops give each tile one region (one 1D vertex, one edge a field)
and lay their output out in the same order, with results numpy's."""
import numpy as np
import pytest

import popsim
from popsim import FLOAT, popnn, popops
from popsim.popops import expr as pe
from popsim.poputil.memory_order import dim_grouping, memory_order
from popsim.program import Sequence

from graph_helpers import load_and_run

C, H, W = 8, 4, 4


@pytest.fixture
def g(small_device):
    return popsim.Graph(small_device)


def _channels_innermost(g, name="x"):
    """[1, C, H, W] viewed over a [1, H, W, C] variable; tile t holds row t: one run of
    W·C elements in memory, C runs of W in the [N, C, H, W] order."""
    mem = g.add_variable(FLOAT, (1, H, W, C), name)
    g.set_tile_mapping(mem, [[(t * W * C, (t + 1) * W * C)] for t in range(H)])
    return mem.dim_shuffle([0, 3, 1, 2])


def _vertex_types(engine):
    return {v["name"] for v in engine.get_report().to_dict()["execution"]["vertex_types"] if v["instances"]}


def test_memory_order_finds_the_group_held_innermost(g):
    x = _channels_innermost(g)
    order = memory_order(g, x)
    assert order is not None and dim_grouping(x, 1) == C
    assert order.view(x).is_contiguous()                         # memory order: one run
    assert order.restore(order.view(x)).shape == x.shape
    plain = g.add_variable(FLOAT, (1, C, H, W), "plain")
    g.set_tile_mapping(plain, [[(t * 32, (t + 1) * 32)] for t in range(4)])
    assert memory_order(g, plain) is None                        # its own order already is


def test_binary_unary_and_map_take_one_region_a_tile(g, small_device):
    x = _channels_innermost(g)
    scale = g.add_variable(FLOAT, (C, 1, 1), "scale")
    g.set_tile_mapping(scale, 0)
    prog = Sequence()
    y = popops.mul(g, x, scale, prog, "mul")                     # a per-channel operand, broadcast
    z = popnn.relu(g, y, prog, "relu")
    m = popops.map(g, pe._1 + pe._2, [z, x], prog, "map")
    for t in (y, z, m):                                          # laid out as x is in memory
        assert dim_grouping(t, 1) == C and g.get_tile_mapping(t) == g.get_tile_mapping(x)
    vx = (np.arange(C * H * W, dtype=np.float32).reshape(1, C, H, W) - 60) / 7
    vs = np.linspace(-2, 2, C, dtype=np.float32).reshape(C, 1, 1)
    engine, ((got_y, got_z, got_m),) = load_and_run(g, small_device, prog, [y, z, m], {x: vx, scale: vs})
    want_y = vx * vs
    np.testing.assert_array_equal(got_y, want_y)
    np.testing.assert_array_equal(got_z, np.maximum(want_y, 0))
    np.testing.assert_array_equal(got_m, np.maximum(want_y, 0) + vx)
    types = _vertex_types(engine)
    assert not [t for t in types if "2D" in t], types             # one region a tile: MultiVertices only
    assert {"popops::BinaryOp1D<MULTIPLY,float>", "popnn::NonLinearity1D<float,popnn::NonLinearityType::RELU>"} <= types


@pytest.mark.parametrize("shape, mem_perm, groups", [
    ((2, 8, 3, 5), (0, 2, 3, 1), 8),       # channels innermost: [N, H, W, C]
    ((2, 8, 3, 5), (1, 0, 2, 3), 4),       # [C/G, N, H, W, G]
    ((3, 8, 1, 1), (1, 0, 2, 3), 4),       # nothing after the channels but dimensions of size 1
    ((1, 16, 1, 1), (0, 2, 3, 1), 4),
    ((2, 6, 4), (0, 2, 1), 3),
])
@pytest.mark.parametrize("split_tiles", [1, 3])
def test_the_order_create_output_clones_in_lists_tensors_as_memory_order_of_the_clone(small_device, shape, mem_perm,
                                                                                      groups, split_tiles):
    """Element-wise ops take the order create_output_in_order cloned their output in, instead
    of working out memory_order of the output again: it must be the one memory_order finds."""
    g = popsim.Graph(small_device)
    n, c = shape[0], shape[1]
    mem_shape = [shape[d] for d in mem_perm]
    if mem_perm[0] == 1:   # [C/G, N, ..., G]: channel groups outermost, G innermost
        mem_shape = [c // groups] + [shape[0]] + list(shape[2:]) + [groups]
        var = g.add_variable(FLOAT, tuple(mem_shape), "x")
        rank = len(shape)
        x = var.dim_shuffle([1, 0] + list(range(2, rank)) + [rank]).reshape((n,) + (c // groups,) + shape[2:] +
                                                                            (groups,))
        x = x.dim_shuffle([0, 1, rank] + list(range(2, rank))).reshape(shape)
    else:
        var = g.add_variable(FLOAT, tuple(mem_shape), "x")
        x = var.dim_shuffle([mem_perm.index(d) for d in range(len(shape))])
    total = x.num_elements()
    cuts = np.linspace(0, total, split_tiles * 4 + 1).astype(int)
    g.set_tile_mapping(var, [[(int(cuts[k]), int(cuts[k + 1])) for k in range(t, len(cuts) - 1, 4)] for t in range(4)])
    out, order = popsim.poputil.per_tile.create_output_in_order(g, [x], FLOAT, "out")
    assert order == memory_order(g, x)
    if order is not None:   # (None: not worked out; the op works it out)
        assert memory_order(g, out) == order
        assert order.view(out).is_contiguous()   # the clone's own order
