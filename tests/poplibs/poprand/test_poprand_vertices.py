"""poprand's vertices: PopLibs' names, placed on the tiles that hold the output, one per
worker piece of each tile's regions, with the documented cycle estimates."""
import pytest

import popsim
from popsim import poprand
from popsim.poprand import cycles
from popsim.poputil import split_regions_between_workers
from popsim.program import Sequence

from poprand_harness import device, reference, seed_tensor


def _vertices(prog):
    return [v for p in prog.programs for v in p.compute_set.vertices]


@pytest.mark.parametrize("op, args, name", [
    (poprand.uniform, (popsim.FLOAT, 0.0, 1.0), "poprand::Uniform<float>"),
    (poprand.uniform, (popsim.HALF, 0.0, 1.0), "poprand::Uniform<half>"),
    (poprand.uniform, (popsim.INT, 0, 9), "poprand::Uniform<int>"),
    (poprand.normal, (popsim.FLOAT, 0.0, 1.0), "poprand::Normal<float>"),
    (poprand.truncated_normal, (popsim.HALF, 0.0, 1.0, 2.0), "poprand::TruncatedNormal<half>"),
    (poprand.bernoulli, (popsim.INT, 0.5), "poprand::Bernoulli<int>"),
    (poprand.log_uniform, (popsim.FLOAT, 1.0, 2.0), "poprand::LogUniform<float>"),
])
def test_vertex_names_and_placement(op, args, name):
    g = popsim.Graph(device())
    ref = reference(g, (37, 29), "scattered")
    seed = seed_tensor(g)
    prog = Sequence()
    out = op(g, seed, 0, ref, *args, prog)
    vs = _vertices(prog)
    assert [v.type.name for v in vs[:1]] == ["poprand::SetSeed"]
    generators = vs[1:]
    assert {v.type.name for v in generators} == {name}
    mapping = g.get_tile_mapping(out)
    for tile, regions in enumerate(mapping):
        pieces = split_regions_between_workers(g.target, regions, g.target.vector_width(out.dtype))
        on_tile = [v for v in generators if v.tile == tile]
        assert len(on_tile) == sum(len(p) for p in pieces)
        sizes = sorted(e - b for p in pieces for b, e in p)
        estimates = sorted(cycles.estimate(_kind(name), g.target, out.dtype, n, 2.0) for n in sizes)
        assert sorted(v.perf_estimate for v in on_tile) == estimates


def _kind(name):
    return {"Uniform<int>": "uniform_int", "Uniform<float>": "uniform", "Uniform<half>": "uniform",
            "Normal<float>": "normal", "TruncatedNormal<half>": "truncated_normal", "Bernoulli<int>": "bernoulli",
            "LogUniform<float>": "log_uniform"}[name.split("::")[1]]


def test_an_op_without_a_seed_moves_the_state_on():
    g = popsim.Graph(device())
    ref = reference(g, (10,), "one")
    prog = Sequence()
    poprand.dropout(g, None, 0, ref, ref, 0.5, 2.0, prog)
    names = [v.type.name for v in _vertices(prog)]
    assert set(names[:-1]) == {"poprand::Dropout<float>"} and names[-1] == "poprand::NextStream"


def test_uniform_cycle_formulas():
    t = popsim.IPUModel("ipu2").create_device().target
    assert cycles.estimate("uniform", t, popsim.FLOAT, 100) == 4 + 4 * 50 + 22
    assert cycles.estimate("uniform", t, popsim.FLOAT, 101) == 4 + 4 * 51 + 22 + 4
    assert cycles.estimate("uniform", t, popsim.HALF, 101) == 4 + 4 * 26 + 24 + 12
    assert cycles.estimate("uniform_int", t, popsim.INT, 101) == 4 + 22 + 6 * 50 + 2
    assert cycles.estimate("normal", t, popsim.FLOAT, 100) == 4 + 4 * 50 + 22 + 2 * 50
    assert cycles.estimate("log_uniform", t, popsim.FLOAT, 100) == 4 + 4 * 50 + 22 + 400
    # truncated normal: more candidates per element the narrower the window
    narrow, wide = (cycles.estimate("truncated_normal", t, popsim.FLOAT, 100, a) for a in (1.0, 3.0))
    assert narrow > wide > cycles.estimate("normal", t, popsim.FLOAT, 100)
    assert cycles.truncated_normal_candidates(1.0) == pytest.approx(1 / 0.6826894921)


def test_the_report_counts_the_estimates():
    dev = device()
    g = popsim.Graph(dev)
    ref = reference(g, (600,), "one")
    prog = Sequence()
    poprand.uniform(g, None, 0, ref, popsim.FLOAT, 0.0, 1.0, prog, name="U")
    engine = popsim.Engine(g, prog)
    engine.load(dev)
    engine.run()
    step = next(s for s in engine.get_report().execution.steps if s.compute_set == "U")
    # six workers, 100 floats each: 4 + 4*50 + 22 cycles apiece
    assert step.tile_compute[1] == 6 * 226


def test_empty_reference_adds_no_generator_vertices():
    g = popsim.Graph(device())
    ref = g.add_variable(popsim.FLOAT, (0, 3), "empty")
    prog = Sequence()
    out = poprand.uniform(g, None, 0, ref, popsim.FLOAT, 0.0, 1.0, prog)
    assert out.shape == (0, 3)
    assert [v.type.name for v in _vertices(prog)] == ["poprand::NextStream"]


@pytest.mark.parametrize("template, dtype, state", [
    ("Uniform", popsim.INT, ["a", "b", "c", "d", "ilo", "ispan"]),
    ("TruncatedNormal", popsim.HALF, ["a", "b", "c", "d", "ilo", "ispan"]),
    ("Dropout", popsim.FLOAT, ["in", "keep", "scale"]),
])
def test_one_generator_class_declares_each_kinds_fields(template, dtype, state):
    """Every kind is the one class of codelets.generator_class; a kind's fields are declared
    under an if on its number, so dropout has its input and the distributions their state."""
    from popsim.codelet.python_compile import vertex_types_from_classes
    from popsim.poprand import codelets
    (vt,) = vertex_types_from_classes([getattr(codelets, template)[dtype]])
    assert vt.name == f"poprand::{template}<{dtype.cpp}>"
    assert [f.name for f in vt.fields] == ["out", "state", "offset"] + state
    with pytest.raises(ValueError, match="unknown poprand distribution 'gamma'"):
        codelets.generator_class("gamma", dtype)
