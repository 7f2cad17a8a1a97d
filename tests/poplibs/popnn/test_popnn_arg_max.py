"""popnn.arg_max, arg_min, max_and_arg_max, min_and_arg_min and top_k on the engine
against numpy (float64): every input type, ties (the first index wins), rows cut between
tiles, long rows reduced in several stages, hypothesis over small shapes and mappings,
the vertices and estimates in the report, and bad arguments."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import popsim
from popsim import BOOL, FLOAT, HALF, INT, UNSIGNED_INT, popnn, poputil
from popsim.codelet.python_vertex import fields_of
from popsim.popnn import arg_max_vertices
from popsim.popnn.arg_max_vertices import gather_cycles, sparse_cycles
from popsim.poputil import PoplibsError
from popsim.program import Sequence

from popnn_loss_harness import first_arg, run, scattered, small_device

TYPES = [FLOAT, HALF, INT, UNSIGNED_INT]


def values_of(dtype, shape, rng):
    """Random values of ``dtype`` with many ties (few distinct values)."""
    if dtype in (FLOAT, HALF):
        return (rng.integers(-4, 5, size=shape) * 0.25).astype(dtype.numpy)
    low = 0 if dtype == UNSIGNED_INT else -6
    return rng.integers(low, low + 9, size=shape).astype(dtype.numpy)


@pytest.mark.parametrize("dtype", TYPES, ids=lambda t: t.name)
def test_all_four_against_numpy_with_ties(dtype):
    device = small_device()
    g = popsim.Graph(device)
    rng = np.random.default_rng(1)
    x = scattered(g, dtype, (7, 45), "x", rng)
    prog = Sequence()
    i_max = popnn.arg_max(g, x, prog)
    i_min = popnn.arg_min(g, x, prog)
    v_max, j_max = popnn.max_and_arg_max(g, x, prog)
    v_min, j_min = popnn.min_and_arg_min(g, x, prog)
    host = values_of(dtype, (7, 45), rng)
    host[2] = host[2, 0]  # a row of one value: index 0
    _, got = run(g, device, prog, [i_max, i_min, v_max, j_max, v_min, j_min], {x: host})
    for t in (i_max, i_min, j_max, j_min):
        assert t.dtype == UNSIGNED_INT and t.shape == (7,)
    assert v_max.dtype == dtype and v_min.dtype == dtype
    np.testing.assert_array_equal(got[0], first_arg(host))
    np.testing.assert_array_equal(got[1], first_arg(host, largest=False))
    np.testing.assert_array_equal(got[2], host.max(1))
    np.testing.assert_array_equal(got[3], first_arg(host))
    np.testing.assert_array_equal(got[4], host.min(1))
    np.testing.assert_array_equal(got[5], first_arg(host, largest=False))
    assert got[0][2] == 0 and got[1][2] == 0


@pytest.mark.parametrize("dtype", [HALF, UNSIGNED_INT], ids=lambda t: t.name)
def test_all_four_run_as_python_too(monkeypatch, dtype):
    """The interpreted vertices (debug mode) give the same answers as the compiled ones."""
    monkeypatch.setenv("POPSIM_CODELET_MODE", "interpreted")
    test_all_four_against_numpy_with_ties(dtype)


def test_max_and_min_share_a_class_body_but_declare_their_own_fields():
    def fields(template, *args):
        return [(f.name, f.direction.name, f.dtype) for f in fields_of(template[args])[0]]
    for kind in ("max", "min"):
        gather = getattr(arg_max_vertices, f"Reduce{kind.title()}ClassGather")
        assert fields(gather, HALF, INT) == [
            ("activations", "INPUT", HALF), ("index", "NONE", INT), (f"{kind}Value", "OUTPUT", FLOAT),
            (f"{kind}Index", "OUTPUT", INT), ("size", "NONE", UNSIGNED_INT), ("workerSize", "NONE", UNSIGNED_INT)]
        sparse = getattr(arg_max_vertices, f"Reduce{kind.title()}ClassSparse")
        assert fields(sparse, UNSIGNED_INT, INT) == [
            ("activations", "INPUT", UNSIGNED_INT), ("labels", "INPUT", INT), (f"{kind}Value", "OUTPUT", UNSIGNED_INT),
            (f"{kind}Index", "OUTPUT", INT)]
        assert sparse[FLOAT, INT].__name__ == f"Reduce{kind.title()}ClassSparse"


def test_long_rows_reduce_in_several_stages_and_keep_the_first_tie():
    device = popsim.IPUModel("ipu2").create_device()
    g = popsim.Graph(device)
    x = g.add_variable(FLOAT, (2, 20000), "x")
    poputil.map_tensor_linearly(g, x)  # 32 elements a tile: 625 Gather partials per row
    prog = Sequence()
    values, indices = popnn.max_and_arg_max(g, x, prog, name="am")
    rng = np.random.default_rng(2)
    host = rng.standard_normal((2, 20000)).astype(np.float32)
    host[0, [5000, 17000]] = 9.0   # a tie between two tiles: the first wins
    host[1, 19999] = 9.5           # the very last element
    engine, (got_v, got_i) = run(g, device, prog, [values, indices], {x: host})
    np.testing.assert_array_equal(got_i, [5000, 19999])
    np.testing.assert_array_equal(got_v, [9.0, 9.5])
    steps = [s.name for s in engine.get_report().execution.steps]
    assert [s for s in steps if "ReduceClass" in s] == [f"Execute am/ReduceClass[{i}]" for i in range(3)]


def test_one_row_on_one_tile_needs_one_stage_and_report_names_poplibs_vertices():
    device = small_device()
    g = popsim.Graph(device)
    x = g.add_variable(HALF, (3, 10), "x")
    g.set_tile_mapping(x, 1)
    prog = Sequence()
    idx = popnn.arg_min(g, x, prog, name="amin")
    host = np.arange(30, dtype=np.float16).reshape(3, 10)[:, ::-1].copy()
    engine, (got,) = run(g, device, prog, [idx], {x: host})
    np.testing.assert_array_equal(got, [9, 9, 9])
    report = engine.get_report().to_dict()["execution"]
    names = {v["name"] for v in report["vertex_types"]}
    assert "popnn::ReduceMinClassGather<half,unsigned int>" in names
    assert [s["name"] for s in report["steps"]] == ["Execute amin/ReduceClass[0]"]


def test_gather_and_sparse_estimates():
    # PopLibs' assembly Gather: 30 + 3 * (min(workerSize, size) - 1) per worker, x6 + 9
    assert gather_cycles(FLOAT, 10, 32, 6) == (30 + 27) * 6 + 9
    assert gather_cycles(HALF, 600, 100, 6) == (30 + 297) * 6 + 9
    # the compiled integer version: 22 + outputs * (6 * workerSize + 25)
    assert gather_cycles(INT, 40, 32, 6) == (22 + 2 * (6 * 32 + 25)) * 6 + 9
    assert sparse_cycles(FLOAT, 32) == 5 + 2 + 3 + 3 + 1 + 3 * 31 + 3 + 6 + 4
    assert sparse_cycles(INT, 4) == 5 + 18 + 24


@settings(max_examples=12, deadline=None)
@given(rows=st.integers(1, 5), cols=st.integers(1, 40), dtype=st.sampled_from(TYPES), seed=st.integers(0, 2**16))
def test_hypothesis_small_shapes(rows, cols, dtype, seed):
    device = small_device()
    g = popsim.Graph(device)
    rng = np.random.default_rng(seed)
    x = scattered(g, dtype, (rows, cols), "x", rng)
    prog = Sequence()
    v, i = popnn.max_and_arg_max(g, x, prog)
    j = popnn.arg_min(g, x, prog)
    host = values_of(dtype, (rows, cols), rng)
    _, (got_v, got_i, got_j) = run(g, device, prog, [v, i, j], {x: host})
    np.testing.assert_array_equal(got_i, first_arg(host))
    np.testing.assert_array_equal(got_v, host.max(1))
    np.testing.assert_array_equal(got_j, first_arg(host, largest=False))


@pytest.mark.parametrize("sort", [True, False])
def test_top_k_against_numpy(sort):
    device = small_device()
    g = popsim.Graph(device)
    rng = np.random.default_rng(4)
    x = scattered(g, FLOAT, (5, 13), "x", rng)
    prog = Sequence()
    out_list = []
    vals = popnn.top_k(g, x, out_list, 4, sort, prog)
    written = g.add_variable(UNSIGNED_INT, (5, 1, 4), "written")
    g.set_tile_mapping(written, 2)
    vals2 = popnn.top_k(g, x, written, 4, sort, prog)
    host = rng.permutation(65).reshape(5, 13).astype(np.float32)  # distinct values
    (idx,) = out_list
    assert vals.shape == (5, 1, 4) and idx.shape == (5, 1, 4) and idx.dtype == UNSIGNED_INT
    _, (got_v, got_i, got_v2, got_w) = run(g, device, prog, [vals, idx, vals2, written], {x: host})
    expected = -np.sort(-host, axis=1)[:, :4]
    if sort:
        np.testing.assert_array_equal(got_v[:, 0], expected)
    else:
        np.testing.assert_array_equal(np.sort(got_v[:, 0], 1), np.sort(expected, 1))
    np.testing.assert_array_equal(np.take_along_axis(host, got_i[:, 0].astype(np.int64), 1), got_v[:, 0])
    np.testing.assert_array_equal(got_w, got_i)
    np.testing.assert_array_equal(got_v2, got_v)


def _graph():
    g = popsim.Graph(small_device())
    return g


@pytest.mark.parametrize("op", [popnn.arg_max, popnn.arg_min, popnn.max_and_arg_max, popnn.min_and_arg_min])
def test_bad_inputs(op):
    g = _graph()
    prog = Sequence()
    flat = g.add_variable(FLOAT, (6,), "flat")
    with pytest.raises(PoplibsError, match=r"must be a 2-D tensor \[rows, columns\].*'flat'.*rank 1"):
        op(g, flat, prog)
    cube = g.add_variable(FLOAT, (2, 3, 4), "cube")
    with pytest.raises(PoplibsError, match=r"2-D tensor.*'cube'.*rank 3"):
        op(g, cube, prog)
    flags = g.add_variable(BOOL, (2, 3), "flags")
    with pytest.raises(PoplibsError, match=r"one of FLOAT, HALF, INT, UNSIGNED_INT.*'flags'"):
        op(g, flags, prog)
    empty = g.add_variable(FLOAT, (2, 0), "empty")
    with pytest.raises(PoplibsError, match="must have at least one column: an empty row has no largest"):
        op(g, empty, prog)
    with pytest.raises(PoplibsError, match="prog must be a popsim.Sequence"):
        op(g, g.add_variable(FLOAT, (2, 3), "ok"), "prog")


def test_top_k_bad_arguments():
    g = _graph()
    prog = Sequence()
    x = g.add_variable(FLOAT, (3, 5), "x")
    with pytest.raises(PoplibsError, match=r"k must be a whole number from 1 to the row length 5.*found 6"):
        popnn.top_k(g, x, [], 6, True, prog)
    with pytest.raises(PoplibsError, match="found 0"):
        popnn.top_k(g, x, [], 0, True, prog)
    with pytest.raises(PoplibsError, match=r"output reference: pass a list .*\(3, 1, 2\)"):
        popnn.top_k(g, x, None, 2, True, prog)
    wrong = g.add_variable(UNSIGNED_INT, (3, 2), "wrong")
    with pytest.raises(PoplibsError, match=r"UNSIGNED_INT of shape \(3, 1, 2\).*'wrong'"):
        popnn.top_k(g, x, wrong, 2, True, prog)
    with pytest.raises(PoplibsError, match="sort must be a bool"):
        popnn.top_k(g, x, [], 2, "yes", prog)
    with pytest.raises(PoplibsError, match="2-D tensor"):
        popnn.top_k(g, g.add_variable(FLOAT, (5,), "v"), [], 2, True, prog)


def test_top_k_of_ints_and_bool_refused():
    device = small_device()
    g = popsim.Graph(device)
    x = g.add_variable(INT, (2, 6), "x")
    g.set_tile_mapping(x, 3)
    prog = Sequence()
    out = []
    vals = popnn.top_k(g, x, out, 3, True, prog)
    host = np.array([[3, -1, 7, 7, 0, 2], [-5, -4, -3, -9, -8, -7]], dtype=np.int32)
    _, (got_v, got_i) = run(g, device, prog, [vals, out[0]], {x: host})
    np.testing.assert_array_equal(got_v[:, 0], [[7, 7, 3], [-3, -4, -5]])
    np.testing.assert_array_equal(np.take_along_axis(host, got_i[:, 0].astype(np.int64), 1), got_v[:, 0])
    with pytest.raises(PoplibsError, match=r"one of FLOAT, HALF, INT, UNSIGNED_INT.*'flags'"):
        popnn.top_k(g, g.add_variable(BOOL, (2, 6), "flags"), [], 2, True, prog)
