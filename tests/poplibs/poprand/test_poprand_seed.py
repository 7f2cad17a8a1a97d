"""The seed state on the device: set_seed, ops given seed=None drawing consecutive streams,
ops given a seed leaving the graph's state alone; PopLibs' seed checks and the ops' other
argument checks."""
import re

import numpy as np
import pytest

import popsim
from popsim import poprand
from popsim.poputil import PoplibsError
from popsim.program import Sequence

import poprand_reference as R
from poprand_harness import SEED, device, reference, run, seed_tensor

N = 200


def _graph():
    dev = device()
    g = popsim.Graph(dev)
    return dev, g, reference(g, (N,), "linear")


def test_set_seed_then_ops_without_a_seed_draw_consecutive_streams():
    dev, g, ref = _graph()
    seed = seed_tensor(g)
    prog = Sequence()
    poprand.set_seed(g, seed, 77, prog)
    a = poprand.uniform(g, None, 123, ref, popsim.FLOAT, 0.0, 1.0, prog)  # modifier unused, as in PopLibs
    b = poprand.uniform(g, None, 0, ref, popsim.FLOAT, 0.0, 1.0, prog)
    got_a, got_b = run(g, dev, prog, [a, b], {seed: SEED})
    np.testing.assert_array_equal(got_a, R.uniform(N, SEED, 77, 0.0, 1.0, stream=0))
    np.testing.assert_array_equal(got_b, R.uniform(N, SEED, 77, 0.0, 1.0, stream=1))


def test_an_op_with_its_own_seed_leaves_the_graph_state_alone():
    dev, g, ref = _graph()
    seed, own = seed_tensor(g), seed_tensor(g, tile=3, name="own")
    prog = Sequence()
    poprand.set_seed(g, seed, 5, prog)
    mine = poprand.normal(g, own, 6, ref, popsim.FLOAT, 0.0, 1.0, prog)
    after = poprand.uniform(g, None, 0, ref, popsim.FLOAT, 0.0, 1.0, prog)
    got_mine, got_after = run(g, dev, prog, [mine, after], {seed: SEED, own: (1, 2)})
    np.testing.assert_array_equal(got_mine, R.normal(N, (1, 2), 6, 0.0, 1.0))
    np.testing.assert_array_equal(got_after, R.uniform(N, SEED, 5, 0.0, 1.0, stream=0))


def test_default_seed_and_the_state_persisting_between_runs():
    dev, g, ref = _graph()
    prog = Sequence()
    u = poprand.uniform(g, None, 0, ref, popsim.FLOAT, 0.0, 1.0, prog)
    runs = run(g, dev, prog, [u], runs=2)
    for stream, (got,) in enumerate(runs):  # the state lives on the device: run 2 moves on
        np.testing.assert_array_equal(got, R.uniform(N, (0, 0), 0, 0.0, 1.0, stream=stream))


def test_set_seed_in_the_program_repeats_the_numbers_each_run():
    dev, g, ref = _graph()
    seed = seed_tensor(g)
    prog = Sequence()
    poprand.set_seed(g, seed, 1, prog)
    u = poprand.bernoulli(g, None, 0, ref, popsim.INT, 0.5, prog)
    (first,), (second,) = run(g, dev, prog, [u], {seed: SEED}, runs=2)
    np.testing.assert_array_equal(first, second)


@pytest.mark.parametrize("shape, dtype, message", [
    ((1, 2), popsim.UNSIGNED_INT, "seed tensor 'bad' must be of rank 1, found rank 2"),
    ((3,), popsim.UNSIGNED_INT, "seed tensor 'bad' must have 2 elements, found 3"),
    ((2,), popsim.INT, "seed tensor 'bad' must be of type UNSIGNED_INT, found INT"),
])
def test_seed_checks(shape, dtype, message):
    _, g, ref = _graph()
    bad = g.add_variable(dtype, shape, "bad")
    g.set_tile_mapping(bad, 0)
    for call in (lambda: poprand.uniform(g, bad, 0, ref, popsim.FLOAT, 0.0, 1.0, Sequence()),
                 lambda: poprand.set_seed(g, bad, 0, Sequence()),
                 lambda: poprand.dropout(g, bad, 0, ref, ref, 0.5, 2.0, Sequence())):
        with pytest.raises(PoplibsError, match=re.escape(message)):
            call()


def test_tensors_of_another_graph_are_refused():
    _, g, ref = _graph()
    other = popsim.Graph(device())
    foreign = reference(other, (N,), "linear", name="foreign")
    foreign_seed = seed_tensor(other, name="foreignSeed")
    with pytest.raises(PoplibsError, match="reference 'foreign' belongs to a different graph"):
        poprand.normal(g, None, 0, foreign, popsim.FLOAT, 0.0, 1.0, Sequence())
    with pytest.raises(PoplibsError, match="seed 'foreignSeed' belongs to a different graph"):
        poprand.uniform(g, foreign_seed, 0, ref, popsim.FLOAT, 0.0, 1.0, Sequence())
    with pytest.raises(PoplibsError, match="input 'foreign' belongs to a different graph"):
        poprand.dropout(g, None, 0, foreign, ref, 0.5, 2.0, Sequence())


@pytest.mark.parametrize("call, message", [
    (lambda g, r, p: poprand.bernoulli(g, None, 0, r, popsim.FLOAT, 1.5, p), "prob must be a probability in [0, 1]"),
    (lambda g, r, p: poprand.dropout(g, None, 0, r, r, -0.1, 1.0, p), "keep_probability must be a probability"),
    (lambda g, r, p: poprand.normal(g, None, 0, r, popsim.FLOAT, 0.0, -1.0, p), "std_dev must not be negative"),
    (lambda g, r, p: poprand.truncated_normal(g, None, 0, r, popsim.FLOAT, 0.0, 1.0, 0.0, p),
     "alpha must be positive"),
    (lambda g, r, p: poprand.uniform(g, None, 0, r, popsim.FLOAT, 2.0, 1.0, p), "must not be greater than"),
    (lambda g, r, p: poprand.uniform(g, None, 0, r, popsim.INT, 0, 2.5, p), "max_val must be a 32-bit integer"),
    (lambda g, r, p: poprand.uniform(g, None, 0, r, popsim.FLOAT, 0.0, float("inf"), p), "must be a finite number"),
    (lambda g, r, p: poprand.uniform(g, None, 0, r, popsim.FLOAT, 0.0, 10 ** 400, p),  # was an OverflowError
     "max_val 1000000000"),
    (lambda g, r, p: poprand.log_uniform(g, None, 0, r, popsim.FLOAT, 0.0, 1.0, p), "needs 0 < min_val < max_val"),
    (lambda g, r, p: poprand.log_uniform(g, None, 0, r, popsim.FLOAT, 1.0, 2.0, p, base=1.0), "base must be"),
    (lambda g, r, p: poprand.normal(g, None, 0, r, popsim.INT, 0.0, 1.0, p), "output type INT is not supported"),
    # an array was an unhashable-type TypeError, a tensor numpy's ValueError (its .dtype read as a numpy dtype)
    (lambda g, r, p: poprand.bernoulli(g, None, 0, r, np.zeros((2, 2)), 0.5, p), "output type ndarray array("),
    (lambda g, r, p: poprand.bernoulli(g, None, 0, r, r, 0.5, p), "output type Tensor Tensor('ref'"),
    (lambda g, r, p: poprand.uniform(g, None, -1, r, popsim.FLOAT, 0.0, 1.0, p), "seed_modifier must be an unsigned"),
    (lambda g, r, p: poprand.uniform(g, None, 0, r, popsim.FLOAT, 0.0, 1.0, [p]), "prog must be a popsim.Sequence"),
])
def test_bad_arguments(call, message):
    _, g, ref = _graph()
    vertices = g.num_vertices
    with pytest.raises(PoplibsError, match=re.escape(message)):
        call(g, ref, Sequence())
    assert g.num_vertices == vertices  # nothing was added to the graph


def test_dropout_shapes_and_types_must_match():
    _, g, ref = _graph()
    x = reference(g, (N // 2, 2), "linear", name="x")
    with pytest.raises(PoplibsError, match=r"input 'x' has shape \[100, 2\] but reference 'ref' has shape \[200\]"):
        poprand.dropout(g, None, 0, x, ref, 0.5, 2.0, Sequence())
    xi = reference(g, (N,), "linear", dtype=popsim.INT, name="xi")
    with pytest.raises(PoplibsError, match="input 'xi' is INT; dropout takes FLOAT or HALF"):
        poprand.dropout(g, None, 0, xi, ref, 0.5, 2.0, Sequence())


def test_numpy_and_python_output_types_are_accepted():
    _, g, ref = _graph()
    assert poprand.uniform(g, None, 0, ref, np.float16, 0.0, 1.0, Sequence()).dtype is popsim.HALF
    assert poprand.uniform(g, None, 0, ref, int, 0, 3, Sequence()).dtype is popsim.INT
    assert poprand.normal(g, None, 0, ref, float, 0.0, 1.0, Sequence()).dtype is popsim.FLOAT


def test_a_virtual_graph_has_its_own_state_on_its_tiles():
    dev = device()
    g = popsim.Graph(dev)
    sub = g.create_virtual_graph(4, 8)
    ref = reference(sub, (N,), "linear")
    seed = seed_tensor(sub, tile=1)
    prog = Sequence()
    poprand.set_seed(sub, seed, 3, prog)
    u = poprand.uniform(sub, None, 0, ref, popsim.FLOAT, 0.0, 1.0, prog)
    assert all(not r for r in g.get_tile_mapping(u)[:4] + g.get_tile_mapping(u)[8:])
    got = run(g, dev, prog, [u], {seed: SEED})[0]
    np.testing.assert_array_equal(got, R.uniform(N, SEED, 3, 0.0, 1.0))


def test_add_codelets_is_idempotent_and_registers_the_vertices():
    _, g, ref = _graph()
    poprand.add_codelets(g)
    poprand.add_codelets(g)
    cs = g.add_compute_set("mine")
    state = g.add_variable(popsim.UNSIGNED_INT, (4,), "state")
    v = g.add_vertex(cs, "poprand::Bernoulli<half>", {"out": g.clone(ref, "o", dtype=popsim.HALF), "state": state})
    assert v.type.name == "poprand::Bernoulli<half>"


def test_a_reference_not_fully_mapped_is_refused():
    _, g, _ = _graph()
    part = g.add_variable(popsim.FLOAT, (10,), "part")
    g.set_tile_mapping(part[:4], 0)
    g.set_tile_mapping(part[6:], 1)
    with pytest.raises(popsim.InvalidTileMappingError, match=re.escape("reference 'part' has elements [4, 6) on no")):
        poprand.uniform(g, None, 0, part, popsim.FLOAT, 0.0, 1.0, Sequence())
    tail = g.add_variable(popsim.FLOAT, (10,), "tail")
    g.set_tile_mapping(tail[:8], 0)
    with pytest.raises(popsim.InvalidTileMappingError, match=re.escape("input 'tail' has elements [8, 10) on no")):
        poprand.dropout(g, None, 0, tail, part, 0.5, 1.0, Sequence(), output_clones_ref=False)
