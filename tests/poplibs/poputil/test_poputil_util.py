"""poputil.duplicate and poputil.template_vertex."""
import re

import numpy as np
import pytest

import popsim
from popsim import FLOAT, HALF, INT, poputil
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
