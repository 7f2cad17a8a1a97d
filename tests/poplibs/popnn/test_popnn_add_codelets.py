"""popnn.add_codelets, as a Poplar port calls popnn::addCodelets(graph) before using popnn:
idempotent, an op runs after it, and anything but a graph is refused by name."""
import numpy as np
import pytest

import popsim
from popsim import FLOAT, popnn, popops, poputil
from popsim.program import Sequence


def test_a_ported_add_codelets_call_works_and_can_repeat(device):
    g = popsim.Graph(device)
    popops.add_codelets(g)
    popnn.add_codelets(g)
    popnn.add_codelets(g)  # Poplar ports often add codelets in several places
    x = g.add_variable(FLOAT, [6], "x")
    poputil.map_tensor_linearly(g, x)
    prog = Sequence()
    y = popnn.relu(g, x, prog)
    g.create_host_write("x", x)
    g.create_host_read("y", y)
    engine = popsim.Engine(g, prog)
    engine.load(device)
    values = np.array([-2, -1, 0, 1, 2, 3], np.float32)
    engine.write_tensor("x", values)
    engine.run(0)
    np.testing.assert_array_equal(engine.read_tensor("y"), np.maximum(values, 0))


@pytest.mark.parametrize("library", [popnn, popops], ids=["popnn", "popops"])
def test_add_codelets_needs_a_graph(library):
    name = library.__name__.rsplit(".", 1)[-1]
    with pytest.raises(popsim.TypeError,
                       match=rf"{name}.add_codelets: expected a popsim.Graph as the graph, found int"):
        library.add_codelets(3)
