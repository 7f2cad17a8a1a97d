"""poputil.duplicate, poputil.template_vertex and poputil.util.ensure_vertex."""
import re

import numpy as np
import pytest

import popsim
from popsim import FLOAT, HALF, INT, poputil
from popsim.popops.all_true import AllTrue
from popsim.popops.encoding import Iota
from popsim.poputil.util import ensure_vertex
from popsim.program import Sequence


def test_template_vertex_builds_poplibs_names():
    assert poputil.template_vertex("popops::ScaledAdd", FLOAT, True) == "popops::ScaledAdd<float,true>"
    assert poputil.template_vertex("popops::Cast", HALF, INT) == "popops::Cast<half,int>"
    assert poputil.template_vertex("Plain") == "Plain"


def test_duplicate_copies_values_and_keeps_the_mapping(small_device, run_and_read):
    g = popsim.Graph(small_device)
    t = g.add_variable(FLOAT, (3, 4), "t")
    g.set_tile_mapping(t, [[(0, 5)], [], [(5, 12)], []])
    prog = Sequence()
    view = t.transpose()
    d = poputil.duplicate(g, view, prog, "d")
    assert (d.name, d.shape, d.dtype) == ("d", (4, 3), FLOAT)
    assert g.get_tile_mapping(d) == g.get_tile_mapping(view)
    assert not d.intersects_with(t) and len(prog) == 1
    data = np.arange(12, dtype=np.float32).reshape(3, 4)
    (out,) = run_and_read(g, small_device, prog, [d], writes={t: data})
    np.testing.assert_array_equal(out, data.T)
    assert poputil.duplicate(g, t, prog).name == "t_duplicate"


def test_duplicate_errors(small_device):
    g = popsim.Graph(small_device)
    t = g.add_variable(FLOAT, (2,), "t")
    with pytest.raises(poputil.PoplibsError, match=re.escape("duplicate of tensor 't': prog must be a "
                                                             "popsim.Sequence")):
        poputil.duplicate(g, t, [])
    other = popsim.Graph(small_device)
    with pytest.raises(poputil.PoplibsError, match="duplicate: tensor 't' belongs to another graph"):
        poputil.duplicate(other, t, Sequence())


class _Spy:
    """A graph's registration calls, recorded: ensure_vertex's own logic, without an engine."""

    def __init__(self):
        self.codelets, self.estimators = [], {}

    def has_codelet(self, name):
        return name in self.estimators

    def add_codelets(self, cls):
        self.codelets.append(cls)

    def register_perf_estimator(self, name, estimate):
        self.estimators[name] = estimate


def test_ensure_vertex_registers_a_class_and_its_estimator_once():
    spy = _Spy()
    first, second = (lambda info, target: 1), (lambda info, target: 2)
    assert ensure_vertex(spy, Iota[INT], first) == "popops::Iota<int>"
    assert ensure_vertex(spy, Iota[INT], second) == "popops::Iota<int>"   # already there: kept as it was
    assert spy.codelets == [Iota[INT]] and spy.estimators == {"popops::Iota<int>": first}


def test_ensure_vertex_on_a_graph(small_device):
    g = popsim.Graph(small_device)
    assert not g.has_codelet("popops::AllTrue")
    assert ensure_vertex(g, AllTrue, lambda info, target: 7) == "popops::AllTrue"   # a plain Vertex class
    assert g.has_codelet("popops::AllTrue")
    assert ensure_vertex(g, AllTrue, lambda info, target: 8) == "popops::AllTrue"
