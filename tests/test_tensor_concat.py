"""popsim.concat in both of Poplar's forms: concat([a, b, ...], dim) and concat(a, b, dim)."""
import numpy as np
import pytest

import popsim
from popsim import FLOAT, INT
from popsim.program import Copy

from graph_helpers import mapped


def constant(graph, values, name):
    values = np.asarray(values, np.float32)
    c = graph.add_constant(FLOAT, values.shape, values, name)
    graph.set_tile_mapping(c, 0)
    return c


def read(graph, device, run_and_read, view):
    out = graph.add_variable(view.dtype, view.shape, "out")
    graph.set_tile_mapping(out, 1)
    return run_and_read(graph, device, Copy(view, out), [out])[0]


def test_the_advanced_example_two_tensor_form(small_device, run_and_read):
    # Graphcore's advanced example: concat(a.reshape({4,1}), b.reshape({4,1}), 1) -> {4,2}.
    g = popsim.Graph(small_device)
    a_vals, b_vals = np.arange(4), 10 + np.arange(4)
    a, b = constant(g, a_vals, "a"), constant(g, b_vals, "b")
    joined = popsim.concat(a.reshape([4, 1]), b.reshape([4, 1]), 1)
    assert joined.shape == (4, 2)
    expected = np.concatenate([a_vals.reshape(4, 1), b_vals.reshape(4, 1)], 1)
    np.testing.assert_array_equal(read(g, small_device, run_and_read, joined), expected)


@pytest.mark.parametrize("call", [
    lambda a, b: popsim.concat(a, b),
    lambda a, b: popsim.concat(a, b, 0),
    lambda a, b: popsim.concat(a, b, dim=0),
    lambda a, b: popsim.concat([a, b]),
    lambda a, b: popsim.concat([a, b], 0),
    lambda a, b: popsim.concat([a, b], dim=0),
    lambda a, b: popsim.concat((a, b), np.int64(0)),
])
def test_every_spelling_joins_along_dim_0(small_device, run_and_read, call):
    g = popsim.Graph(small_device)
    a_vals, b_vals = np.arange(6).reshape(2, 3), 10 + np.arange(3).reshape(1, 3)
    joined = call(constant(g, a_vals, "a"), constant(g, b_vals, "b"))
    np.testing.assert_array_equal(read(g, small_device, run_and_read, joined), np.concatenate([a_vals, b_vals]))


def test_two_tensor_form_along_the_last_dim_of_views(small_device, run_and_read):
    g = popsim.Graph(small_device)
    m_vals = np.arange(12).reshape(3, 4)
    m = constant(g, m_vals, "m")
    joined = popsim.concat(m.transpose(), m[:, 1:3].transpose(), 0)
    expected = np.concatenate([m_vals.T, m_vals[:, 1:3].T], 0)
    np.testing.assert_array_equal(read(g, small_device, run_and_read, joined), expected)


def test_misuse_says_which_form_to_write(small_device):
    g = popsim.Graph(small_device)
    a = g.add_variable(FLOAT, [2], "a")
    with pytest.raises(popsim.TensorCreationError, match=r"concat\(a, b, dim\) joins two tensors, but the second "
                                                         r"argument is int"):
        popsim.concat(a, 1)
    with pytest.raises(popsim.TensorCreationError, match="the second must be the dimension"):
        popsim.concat([a, a], a)
    with pytest.raises(popsim.TensorCreationError, match="dim given twice"):
        popsim.concat([a, a], 0, dim=0)
    with pytest.raises(popsim.TensorCreationError, match="type INT but"):
        popsim.concat(a, g.add_variable(INT, [2], "i"))


def test_concat_type_mismatch(views_graph):
    g, t, _ = views_graph
    i = mapped(g, INT, (4,), "ints")
    with pytest.raises(popsim.TensorCreationError) as info:
        popsim.concat([t, i])
    msg = str(info.value)
    assert "'ints'" in msg and "'t'" in msg and "INT" in msg and "FLOAT" in msg


def test_concat_shape_mismatch(views_graph):
    g, t, m = views_graph
    w = mapped(g, FLOAT, (4, 3), "w")
    with pytest.raises(popsim.TensorCreationError) as info:
        popsim.concat([m, w], 0)
    msg = str(info.value)
    assert "'w'" in msg and "[4, 3]" in msg and "'m'" in msg and "[4, 4]" in msg
    popsim.concat([m, w], 1)  # fine along the differing dimension
    with pytest.raises(popsim.TensorCreationError, match=r"'t' of shape \[4\].*'m' of shape \[4, 4\]"):
        popsim.concat([m, t])
    with pytest.raises(popsim.TensorCreationError, match="at least one tensor"):
        popsim.concat([])


def test_concat_across_graphs(small_device):
    a = mapped(popsim.Graph(small_device), FLOAT, (2,), "a")
    b = mapped(popsim.Graph(small_device), FLOAT, (2,), "b")
    with pytest.raises(popsim.TensorCreationError, match="different graph"):
        popsim.concat([a, b])


def test_append_rank_mismatch(views_graph):
    _, t, m = views_graph
    with pytest.raises(popsim.TensorCreationError, match=r"append:.*'m'.*rank 0"):
        popsim.append(t, m)
