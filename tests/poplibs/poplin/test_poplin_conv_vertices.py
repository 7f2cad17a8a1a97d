"""ConvPartial1x1Out (conv_vertices.cpp) on one tile against numpy: every type pair, conv
groups, in- and out-channel groups, positions that do not fill the register blocks or the
workers, output widths with an 8-column tail; and the estimator's cycles."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import popsim
from popsim import FLOAT, HALF
from popsim.poplin import conv_vertices as cv
from popsim.poputil import PoplibsError
from poplin_harness import run_conv_vertex


def _run(in_type, partials_type, groups, in_groups, out_groups, positions, in_chans, out_chans, seed):
    model = popsim.IPUModel("ipu2")
    model.tiles_per_ipu = 2
    device = model.create_device()
    g = popsim.Graph(device)
    cv.ensure_codelets(g)
    name = cv.conv_partial_1x1_name(in_type, partials_type, 8, 4 if in_type == HALF else 2)
    x = g.add_variable(in_type, (groups, in_groups, positions, in_chans), "x")
    w = g.add_variable(in_type, (groups, out_groups, in_groups, in_chans, out_chans), "w")
    y = g.add_variable(partials_type, (groups, out_groups, positions, out_chans), "y")
    for t in (x, w, y):
        g.set_tile_mapping(t, 0)
    cs = g.add_compute_set("conv")
    v = g.add_vertex(cs, name, {
        "in": [x[c][i].flatten() for c in range(groups) for i in range(in_groups)],
        "weights": [w[c][o][i].flatten() for c in range(groups) for o in range(out_groups) for i in range(in_groups)],
        "out": [y[c][o].flatten() for c in range(groups) for o in range(out_groups)],
        "numConvGroupsM1": groups - 1, "numOutGroupsM1": out_groups - 1, "numInGroups": in_groups,
        "inChansPerGroup": in_chans, "outChansPerGroup": out_chans})
    g.set_tile_mapping(v, 0)
    out, hx, hw, engine = run_conv_vertex(g, device, cs, x, w, y, in_type, seed)
    # out[c, o, p, :] = sum_i x[c, i, p, :] @ w[c, o, i]
    expected = np.einsum("cipk,coikn->copn", hx.astype(np.float64), hw.astype(np.float64))
    return out, expected, engine


TYPES = [(FLOAT, FLOAT), (HALF, FLOAT), (HALF, HALF)]


@pytest.mark.parametrize("in_type,partials_type", TYPES)
def test_matmul_block(in_type, partials_type):
    got, expected, _ = _run(in_type, partials_type, 1, 1, 1, 23, 40, 37, 1)
    tol = 1e-4 if partials_type == FLOAT else 2e-2
    np.testing.assert_allclose(got, expected, rtol=tol, atol=tol * 10)


@settings(max_examples=25, deadline=None)
@given(types=st.sampled_from(TYPES), groups=st.integers(1, 3), in_groups=st.integers(1, 3),
       out_groups=st.integers(1, 2), positions=st.integers(1, 20), in_chans=st.integers(1, 12),
       out_chans=st.integers(1, 35), seed=st.integers(0, 2 ** 31))
def test_against_numpy(types, groups, in_groups, out_groups, positions, in_chans, out_chans, seed):
    got, expected, _ = _run(*types, groups, in_groups, out_groups, positions, in_chans, out_chans, seed)
    tol = 1e-4 if types[1] == FLOAT else 2e-2
    np.testing.assert_allclose(got, expected, rtol=tol, atol=tol * 10)


def test_estimate_is_the_reference_formula():
    _, _, engine = _run(FLOAT, FLOAT, 1, 1, 1, 12, 16, 16, 0)
    kinds = {v["name"]: v for v in engine.get_report().to_dict()["execution"]["vertex_types"]}
    name = cv.conv_partial_1x1_name(FLOAT, FLOAT, 8, 2)
    from popsim.poplin import conv_estimates as ce
    tile = ce.conv_partial_1x1_cycles(ce.worker_item_sizes(12, 12, 6), 1, 2, 2, 8, 8, 2, 8, True, True, 6)
    # a MultiVertex is charged on each of the 6 workers
    assert kinds[name]["cycles"] == 6 * -(-tile // 6)


def test_names_follow_poplibs_and_reject_missing_instantiations():
    assert cv.conv_partial_1x1_name(HALF, FLOAT, 16, 8, True, False, False) == \
        "poplin::ConvPartial1x1Out<half,float,true,false,16,8,false>"
    with pytest.raises(PoplibsError, match="no vertex for"):
        cv.conv_partial_1x1_name(FLOAT, HALF, 8, 2)
