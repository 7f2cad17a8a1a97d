"""poplin::ReduceAdd (the cross-tile reduction of convolution partials) on one tile against
numpy, for each type pair, element counts around the workers' split and past a block of outputs,
and many partials; and its estimate against the reference's formula evaluated by hand."""
import numpy as np
import pytest

import popsim
from popsim import FLOAT, HALF
from popsim.poplin import reduce_add
from popsim.program import Execute


@pytest.mark.parametrize("out_type, partials_type", [(FLOAT, FLOAT), (HALF, FLOAT), (FLOAT, HALF), (HALF, HALF)])
@pytest.mark.parametrize("elems, partials", [(1, 1), (7, 3), (48, 8), (101, 5), (3001, 4), (50, 70)])
def test_sums_like_numpy(out_type, partials_type, elems, partials):
    model = popsim.IPUModel("ipu2")
    model.tiles_per_ipu = 2
    device = model.create_device()
    g = popsim.Graph(device)
    reduce_add.ensure_codelets(g)
    p = g.add_variable(partials_type, (partials, elems), "p")
    out = g.add_variable(out_type, (elems,), "out")
    g.set_tile_mapping(p, 1)
    g.set_tile_mapping(out, 0)
    cs = g.add_compute_set("reduce")
    v = g.add_vertex(cs, reduce_add.reduce_add_name(out_type, partials_type),
                     {"partials": [p[j] for j in range(partials)], "out": out, "numPartials": partials,
                      "numElems": elems})
    g.set_tile_mapping(v, 0)
    g.create_host_write("p", p)
    g.create_host_read("out", out)
    engine = popsim.Engine(g, Execute(cs))
    engine.load(device)
    x = np.random.default_rng(elems).uniform(-2, 2, (partials, elems)).astype(partials_type.numpy)
    engine.write_tensor("p", x)
    engine.run(0)
    expected = np.zeros(elems, np.float32)
    for j in range(partials):  # in order, in float, rounded once
        expected += x[j].astype(np.float32)
    np.testing.assert_array_equal(engine.read_tensor("out"), expected.astype(out_type.numpy))


def test_estimate_by_hand():
    """48 float outputs, 8 float partials, 6 workers: accVW 4, 2 partials per 64-bit load,
    cyclesPerLoop 4/2 + 1 = 3, loops 12 (2 per worker, none left over), c = 7:
    6 * (32 + (3 * 8 + 7) * 2) = 564 cycles for the tile, 94 per worker."""
    from popsim.poplin import cost_model
    assert cost_model.reduce_add_cycles(48, 8, True, True, 6) == 564

    class Info:
        def initial_value(self, name):
            return {"numPartials": 8, "numElems": 48}[name]
    target = popsim.IPUModel("ipu2").create_device().target
    assert reduce_add.estimator(FLOAT, FLOAT)(Info(), target) == 94
