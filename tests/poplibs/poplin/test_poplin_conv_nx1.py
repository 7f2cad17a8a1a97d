"""ConvPartialnx1 (conv_nx1.cpp) on one tile with hand-made worklists: a 1-D convolution of
K kernel positions with stride and padding, against numpy. With float partials the vertex
sums each run of rows over all its kernel positions at once (conv_nx1_taps.hpp); with
entries out of order it falls back to kernel position after kernel position. Both must add
the same products in the same order, so their float outputs are compared bit for bit."""
import numpy as np
import pytest

import popsim
from popsim import FLOAT, HALF, UNSIGNED_INT
from popsim.poplin import conv_nx1
from poplin_harness import run_conv_vertex

WORKERS = 6


def _worklists(positions, in_positions, kernel, stride, pad, cut, reverse):
    """The flat worklists (conv_nx1.cpp's layout) of out[i] += in[i * stride + k - pad] * w[k]:
    per kernel position and worker, the runs of outputs whose input is real, cut every
    ``cut`` outputs; ``reverse``: each list's entries in reverse order."""
    lists, entries = [], []
    for k in range(kernel):
        for w in range(WORKERS):
            first, last = w * positions // WORKERS, (w + 1) * positions // WORKERS
            real = [i for i in range(first, last) if 0 <= i * stride + k - pad < in_positions]
            runs = []
            for i in real:
                if runs and runs[-1][0] + runs[-1][1] == i and runs[-1][1] < cut:
                    runs[-1][1] += 1
                else:
                    runs.append([i, 1])
            runs = [(o, n, o * stride + k - pad) for o, n in runs]
            lists.append(len(entries))
            entries.extend(runs[::-1] if reverse else runs)
    lists.append(len(entries))
    return np.array(lists + [x for e in entries for x in e], dtype=np.uint32)


def _vertex_graph(in_type, partials_type, positions, in_positions, kernel, stride, groups, in_chans, out_chans,
                  make_worklists):
    """(device, graph, compute set, x, w, y) with one ConvPartialnx1 vertex on tile 0 of a
    2-tile IPU; ``make_worklists(graph)`` makes its worklists tensor."""
    model = popsim.IPUModel("ipu2")
    model.tiles_per_ipu = 2
    device = model.create_device()
    g = popsim.Graph(device)
    conv_nx1.ensure_codelets(g)
    x = g.add_variable(in_type, (groups, in_positions, in_chans), "x")
    w = g.add_variable(in_type, (groups, kernel, in_chans, out_chans), "w")
    y = g.add_variable(partials_type, (positions, out_chans), "y")
    wl = make_worklists(g)
    for t in (x, w, y, wl):
        g.set_tile_mapping(t, 0)
    cs = g.add_compute_set("conv")
    v = g.add_vertex(cs, conv_nx1.conv_partial_nx1_name(in_type, partials_type, 8), {
        "in": [x[i].flatten() for i in range(groups)], "weights": [w[i].flatten() for i in range(groups)],
        "out": [y.flatten()], "worklists": wl, "zerosInfo": positions * out_chans, "inStride": stride,
        "outStride": 1, "numOutGroupsM1": 0, "numInGroups": groups, "kernelOuterSizeM1": 0,
        "kernelInnerElementsM1": kernel - 1, "numConvGroupsM1": 0, "outChansPerGroup": out_chans,
        "inChansPerGroup": in_chans, "outFieldRowSize": positions, "ampKernelHeightM1": 0, "kernelHeight": 1})
    g.set_tile_mapping(v, 0)
    return device, g, cs, x, w, y


def _run(in_type, partials_type, positions, kernel, stride, pad, groups, in_chans, out_chans, cut=1000,
         reverse=False, seed=0):
    in_positions = (positions - 1) * stride + kernel - 2 * pad
    lists = _worklists(positions, in_positions, kernel, stride, pad, cut, reverse)
    device, g, cs, x, w, y = _vertex_graph(in_type, partials_type, positions, in_positions, kernel, stride, groups,
                                           in_chans, out_chans,
                                           lambda g: g.add_constant(UNSIGNED_INT, lists.shape, lists, "worklists"))
    out, hx, hw, _ = run_conv_vertex(g, device, cs, x, w, y, in_type, seed)
    expected = np.zeros((positions, out_chans))
    for i in range(positions):
        for k in range(kernel):
            j = i * stride + k - pad
            if 0 <= j < in_positions:
                expected[i] += np.einsum("gc,gcn->n", hx[:, j].astype(np.float64), hw[:, k].astype(np.float64))
    return out, expected


CASES = [  # positions, kernel, stride, pad, groups, in_chans, out_chans, cut
    (40, 3, 1, 1, 1, 8, 8, 1000),     # 3x3-like rows: edges reach fewer kernel positions
    (30, 7, 2, 3, 1, 2, 8, 1000),     # the stem's shape: 7 taps, stride 2, 2 channels
    (25, 5, 1, 4, 2, 3, 13, 4),       # padding past the kernel (rows with no tap), a tail, cut entries
    (60, 3, 1, 1, 3, 5, 24, 7),       # 16- and 8-column blocks, 3 in-channel groups
]


@pytest.mark.parametrize("case", CASES)
def test_float_partials_against_numpy_and_bit_identical_to_the_position_by_position_loop(case):
    *shape, cut = case
    fast, expected = _run(FLOAT, FLOAT, *shape, cut=cut)
    np.testing.assert_allclose(fast, expected, rtol=1e-4, atol=1e-4)
    slow, _ = _run(FLOAT, FLOAT, *shape, cut=3, reverse=True)  # lists of several entries, reversed
    assert np.array_equal(fast.view(np.uint32), slow.view(np.uint32))


@pytest.mark.parametrize("types", [(HALF, FLOAT), (HALF, HALF)])
def test_half_inputs(types):
    got, expected = _run(*types, 30, 3, 2, 1, 2, 4, 16, cut=5, seed=3)
    tol = 1e-3 if types[1] == FLOAT else 3e-2
    np.testing.assert_allclose(got, expected, rtol=tol, atol=tol * 10)


def test_runs_follow_worklists_that_change_between_runs():
    """The runs of rows come from the worklists as they are on each run: anything the vertex
    derived from them and kept between runs would have to be made again when they change.
    One engine, worklists rewritten before each run (other padding, other cuts, entries
    reversed, then the first lists again)."""
    positions, kernel, stride, groups, in_chans, out_chans = 24, 3, 1, 1, 4, 8
    in_positions = positions
    variants = [(1, 1000, False), (2, 4, False), (1, 3, True), (0, 5, False), (1, 1000, False)]
    lists = [_worklists(positions, in_positions, kernel, stride, pad, cut, rev) for pad, cut, rev in variants]
    size = max(len(a) for a in lists)
    made = []

    def worklists(g):
        made.append(g.add_variable(UNSIGNED_INT, (size,), "worklists"))
        return made[0]
    device, g, cs, x, w, y = _vertex_graph(FLOAT, FLOAT, positions, in_positions, kernel, stride, groups, in_chans,
                                           out_chans, worklists)
    wl, = made
    g.create_host_write("wl", wl)
    g.set_initial_value(wl, np.resize(lists[0], size))
    out, hx, hw, engine = run_conv_vertex(g, device, cs, x, w, y, FLOAT, 5)
    results = [out]
    for a in lists[1:]:
        engine.write_tensor("wl", np.concatenate([a, np.zeros(size - len(a), np.uint32)]))
        engine.run(0)
        results.append(engine.read_tensor("y"))
    for (pad, _, _), got in zip(variants, results):
        expected = np.zeros((positions, out_chans))
        for i in range(positions):
            for k in range(kernel):
                if 0 <= i * stride + k - pad < in_positions:
                    expected[i] += hx[0, i * stride + k - pad].astype(np.float64) @ hw[0, k].astype(np.float64)
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)
    assert np.array_equal(results[0].view(np.uint32), results[-1].view(np.uint32))
    assert not np.array_equal(results[0], results[1])
