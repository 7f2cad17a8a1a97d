"""popops.reduce / reduce_with_output with a list of compute sets for ``prog`` (PopLibs'
``std::vector<ComputeSet> &css`` overloads): the stages go into the list, which the
caller runs as Execute programs; against numpy, several stages, two reductions sharing
one list (PopLibs' ComputeSetList reuses the list's compute sets by position), errors."""
import numpy as np
import pytest

import popsim
from popsim import FLOAT, popops
from popsim.popops import Operation, ReduceParams, SingleReduceOp
from popsim.poputil import PoplibsError
from popsim.program import Execute, Sequence

from popops_harness import run
from test_popops_reduce import scattered


def device_with(tiles):
    model = popsim.IPUModel("ipu2")
    model.tiles_per_ipu = tiles
    return model.create_device()


def as_program(css):
    return Sequence(*[Execute(cs) for cs in css])


def test_reduce_into_a_list_of_several_stages():
    """Two rows of [128, 64] on each of 64 tiles, reduced over the rows: an on-tile stage,
    an intermediate stage (64 x 64 partials > 32 per output), the final stage; all three
    in the list, in order."""
    device = device_with(64)
    g = popsim.Graph(device)
    t = g.add_variable(FLOAT, (128, 64), "t")
    g.set_tile_mapping(t, [[(128 * i, 128 * i + 128)] for i in range(64)])
    css = []
    out = popops.reduce(g, t, [0], ReduceParams(Operation.ADD, scale=0.5), css, "r")
    assert all(isinstance(cs, popsim.ComputeSet) for cs in css)
    assert [cs.name.split("/")[-1] for cs in css] == ["ReduceOnTile", "ReduceStage0", "ReduceFinalStage"]
    x = np.random.default_rng(1).standard_normal((128, 64)).astype(np.float32)
    _, (got,) = run(g, device, as_program(css), [out], {t: x})
    np.testing.assert_allclose(got, 0.5 * x.sum(axis=0), rtol=1e-5, atol=1e-5)


def test_two_reductions_share_the_list_and_update_with_output():
    """The second reduction puts its stages into the first one's compute sets (they run
    side by side); reduce_with_output with a list reduces on the output's tile (no Copy)."""
    device = device_with(16)
    g = popsim.Graph(device)
    a, b = g.add_variable(FLOAT, (8, 50), "a"), g.add_variable(FLOAT, (6, 10), "b")
    scattered(g, a, 16)
    scattered(g, b, 16)
    out = g.add_variable(FLOAT, (6,), "out")
    g.set_tile_mapping(out, 5)
    css = []
    ra = popops.reduce(g, a, [0], ReduceParams(Operation.MAX), css)
    first = list(css)
    popops.reduce_with_output(g, b, out, [1], ReduceParams(Operation.ADD, update=True), css)
    assert css[:len(first)] == first and len(css) == 2
    assert 5 in {v.tile for v in css[-1].vertices}  # the output's tile
    rng = np.random.default_rng(2)
    x, y, z = rng.standard_normal((8, 50)), rng.standard_normal((6, 10)), rng.standard_normal(6)
    _, (got_a, got_out) = run(g, device, as_program(css), [ra, out], {a: x, b: y, out: z})
    np.testing.assert_allclose(got_a, x.max(axis=0).astype(np.float32), rtol=1e-6)
    np.testing.assert_allclose(got_out, z + y.sum(axis=1), rtol=1e-5, atol=1e-5)


def test_existing_compute_sets_are_used_first():
    device = device_with(4)
    g = popsim.Graph(device)
    t = g.add_variable(FLOAT, (4, 6), "t")
    g.set_tile_mapping(t, 1)  # tile-local: one stage
    mine = g.add_compute_set("mine")
    css = [mine]
    out = popops.reduce(g, t, [1], ReduceParams(Operation.ADD), css)
    assert css == [mine] and len(mine.vertices) > 0
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    _, (got,) = run(g, device, as_program(css), [out], {t: x})
    np.testing.assert_array_equal(got, x.sum(axis=1))


def test_list_errors():
    g = popsim.Graph(device_with(4))
    t = g.add_variable(FLOAT, (4, 6), "t")
    g.set_tile_mapping(t, 0)
    with pytest.raises(PoplibsError, match=r"popops.reduce: prog is a list, so it must hold compute sets .* found "
                                           r"Sequence at index 1"):
        popops.reduce(g, t, [0], ReduceParams(Operation.ADD), [g.add_compute_set("cs"), Sequence()])
    with pytest.raises(PoplibsError, match="popops.reduce_with_output: prog is a list, .* found str at index 0"):
        popops.reduce_with_output(g, t, g.add_variable(FLOAT, (6,), "o"), [0], ReduceParams(Operation.ADD), ["x"])
    with pytest.raises(PoplibsError, match="popops.reduce_many: prog must be a popsim.Sequence"):
        popops.reduce_many(g, [SingleReduceOp(t, [0], ReduceParams(Operation.ADD))], [])
