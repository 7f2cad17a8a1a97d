"""The reduce vertex's two implementations agree bit for bit: the C++ codelet file of the
vectorised instantiations (reduce_vertices.cpp, compiled with the host compiler) and the
Python vertex template's instantiation of the same template arguments, run on the same regions, partials
(with wrapping) and updates, drawn by hypothesis; and which instantiations come from where."""
import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import popsim
from popsim import FLOAT, HALF, INT
from popsim.popops import Operation
from popsim.popops import reduce_vertices as rv
from popsim.program import Execute

VECTORISED = [Operation.ADD, Operation.SQUARE_ADD, Operation.MUL, Operation.MAX, Operation.MIN]


def _graph():
    model = popsim.IPUModel("ipu2")
    model.tiles_per_ipu = 2
    device = model.create_device()
    return device, popsim.Graph(device)


def _run(vertex_source, op, partials_type, out_type, update, regions, values, initial):
    """One vertex on tile 0 reducing ``regions`` ([(width, [partial lengths])]); the outputs."""
    device, g = _graph()
    name = rv.vertex_name(op, partials_type, out_type, update, False)
    if vertex_source == "cpp":
        assert rv.ensure_vertex(g, op, partials_type, out_type, update, False) == name
    else:
        g.add_codelets(rv.TEMPLATES[False][op, partials_type, out_type, update, rv.ReductionSpecialisation.DEFAULT])
    widths = [w for w, _ in regions]
    lengths = [n for _, ps in regions for n in ps]
    out = g.add_variable(out_type, (sum(widths),), "out")
    partials = g.add_variable(partials_type, (sum(lengths),), "partials")
    g.set_tile_mapping(out, 0)
    g.set_tile_mapping(partials, 0)
    cs = g.add_compute_set("reduce")
    cuts, starts = np.cumsum([0] + widths), np.cumsum([0] + lengths)
    v = g.add_vertex(cs, name, {
        "out": [out.slice(int(a), int(b)) for a, b in zip(cuts, cuts[1:])],
        "partials": [partials.slice(int(a), int(b)) for a, b in zip(starts, starts[1:])]})
    g.set_initial_value(v["numPartials"], np.array([len(ps) for _, ps in regions], dtype=np.int32))
    g.set_tile_mapping(v, 0)
    for t in (out, partials):
        g.create_host_write(t.name, t)
    g.create_host_read("result", out)
    engine = popsim.Engine(g, Execute(cs))
    engine.load(device)
    engine.write_tensor("partials", values)
    engine.write_tensor("out", initial)
    engine.run(0)
    return engine.read_tensor("result")


# Every instantiation the two sides share; the Python side's are translated and compiled
# one by one (seconds each on a cold codelet cache), so the default run covers three of
# them (float and half partials and outputs, with and without update: a sum, a sum of
# squares and a maximum) and the slow run all.
EVERY_INSTANTIATION = list(itertools.product(VECTORISED, (FLOAT, HALF), (FLOAT, HALF), (False, True)))
QUICK_INSTANTIATIONS = [(Operation.ADD, FLOAT, FLOAT, False), (Operation.SQUARE_ADD, HALF, FLOAT, True),
                        (Operation.MAX, HALF, HALF, True)]


@st.composite
def cases(draw, instantiations):
    op, partials_type, out_type, update = draw(st.sampled_from(instantiations))
    # widths cover the 16-output register blocks, blocks of 4, single outputs and one-element
    # regions; partial counts on both sides of the streaming threshold (8), lengths wrapping
    regions = draw(st.lists(st.tuples(st.integers(1, 40), st.lists(st.integers(1, 3), max_size=12)),
                            min_size=1, max_size=3))
    regions = [(w, [w * k for k in ks]) for w, ks in regions]
    return op, partials_type, out_type, update, regions, draw(st.integers(0, 2 ** 31))


def _check_agreement(case):
    op, partials_type, out_type, update, regions, seed = case
    rng = np.random.default_rng(seed)
    total = sum(n for _, ps in regions for n in ps)
    low = 0.5 if op is Operation.MUL else -2.0  # products of many partials stay finite
    values = rng.uniform(low, 2.0, total).astype(partials_type.numpy)
    initial = rng.uniform(-1, 1, sum(w for w, _ in regions)).astype(out_type.numpy)
    args = (op, partials_type, out_type, update, regions, values, initial)
    cpp, python = _run("cpp", *args), _run("python", *args)
    np.testing.assert_array_equal(cpp, python)


@settings(max_examples=30, deadline=None)
@given(cases(QUICK_INSTANTIATIONS))
def test_cpp_and_python_vertices_agree(case):
    _check_agreement(case)


@pytest.mark.slow
@settings(max_examples=120, deadline=None)
@given(cases(EVERY_INSTANTIATION))
def test_cpp_and_python_vertices_agree_for_every_instantiation(case):
    _check_agreement(case)


def test_which_instantiations_are_cpp():
    assert rv.is_cpp(Operation.ADD, FLOAT, FLOAT, False) and rv.is_cpp(Operation.MAX, HALF, FLOAT, False)
    assert not rv.is_cpp(Operation.ADD, FLOAT, FLOAT, True)  # ScaledReduce: Python
    assert not rv.is_cpp(Operation.ADD, INT, INT, False)
    assert not rv.is_cpp(Operation.LOG_ADD, FLOAT, FLOAT, False)
    device, g = _graph()
    name = rv.ensure_vertex(g, Operation.ADD, FLOAT, FLOAT, False, False)
    assert g.vertex_type(name).source.split(":")[0].endswith("reduce_vertices.cpp")
    # the file registers every instantiation at once
    for key in EVERY_INSTANTIATION:
        assert g.has_codelet(rv.vertex_name(*key, False))
