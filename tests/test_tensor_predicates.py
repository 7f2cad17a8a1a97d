"""Tensor predicates, checked against hand-worked answers on small variables: is_contiguous,
contains_aliases, intersects_with, same_elements, contains_constant; empty views."""
import numpy as np
import pytest

import popsim
from popsim import FLOAT, INT
from popsim.program import Copy


def test_is_contiguous(v34, graph):
    t, _ = v34
    assert t.is_contiguous()
    assert t[1].is_contiguous() and t[1:].is_contiguous() and t[1, 1:3].is_contiguous()
    assert t.flatten()[3:9].is_contiguous()
    assert t[1, 2].is_contiguous()                  # one element
    assert t[:, 1:2][1:2].is_contiguous()
    assert t[None].is_contiguous() and t.expand([1, 2]).is_contiguous()
    assert t[1:2].broadcast(1, 0).is_contiguous()
    assert popsim.concat([t[0], t[1]]).is_contiguous()  # adjacent pieces join
    assert popsim.concat([t[0:1], t[1:3]]).is_contiguous()
    assert not t[:, 2].is_contiguous()
    assert not t[:, :2].is_contiguous()
    assert not t.transpose().is_contiguous()
    assert not t.reverse(1).is_contiguous()
    assert not t[::2].is_contiguous()
    assert not t[1:2].broadcast(2, 0).is_contiguous()
    assert not t.upsample(2, 1).is_contiguous()
    assert not popsim.concat([t[1], t[0]]).is_contiguous()
    assert not popsim.concat([t[0], t[2]]).is_contiguous()
    assert t.transpose().transpose().is_contiguous()
    assert t.reinterpret(INT).is_contiguous()


def test_is_contiguous_of_empty_views(v34):
    t, _ = v34
    assert t[1:1].is_contiguous()
    assert t[:0].broadcast(2, 0).is_contiguous()  # an empty view with explicit ids


def test_is_contiguous_of_empty_strided_views(v34):
    t, _ = v34
    assert t[0:0:2].is_contiguous()  # shape (0, 4), strides (8, 1)
    assert t[:, 2:2].transpose().is_contiguous()


def test_contains_aliases(v34):
    t, _ = v34
    assert not t.contains_aliases()
    for view in (t.transpose(), t[::-1, ::2], t[None], t.expand([0, 2]), t.reshape((2, 6)), t.broadcast(1, 0),
                 t[1:2].broadcast(1, 0), t.upsample(1, 1), popsim.concat([t[0], t[2]]), t[1, 1], t[1:2][None],
                 t.broadcast(0, 1), t.upsample(0, 0)):
        assert not view.contains_aliases(), view
    for view in (t.broadcast(2, 0), t[1:2].broadcast(2, 0), t.upsample(2, 1), popsim.concat([t, t]),
                 popsim.concat([t[0], t[::-1, 0]]), t[:, :1].broadcast(3, 1), t[None].broadcast(2, 0),
                 popsim.concat([t[1:], t[:2]])):
        assert view.contains_aliases(), view


@pytest.mark.parametrize("shape", [
    (0,), (0, 2), (1, 0), (0, 1), (0, 0), (0, 3, 2),
    (2, 0), (3, 0, 2),
    (2, 3, 0),
])
def test_empty_variables_have_no_aliases_and_are_contiguous(graph, shape):
    v = graph.add_variable(FLOAT, shape, "e")
    assert v.num_elements() == 0
    assert v.is_contiguous()
    assert not v.contains_aliases()


def test_contains_aliases_of_empty_views(v34):
    t, _ = v34
    assert not t[:0].reshape((2, 0)).contains_aliases()


def test_contains_aliases_of_empty_broadcast(v34):
    t, _ = v34
    e = t[:, 0:0][0:1].broadcast(3, 0)  # shape (3, 0): no elements
    assert e.num_elements() == 0
    assert not e.contains_aliases()


def test_set_initial_value_of_an_empty_2d_variable(graph):
    e = graph.add_variable(FLOAT, (2, 0), "e")
    graph.set_tile_mapping(e, 0)
    graph.set_initial_value(e, np.zeros((2, 0), np.float32))  # accepted: no elements, so no aliases


def test_host_write_of_an_empty_2d_variable(graph):
    e = graph.add_variable(FLOAT, (2, 0), "e")
    graph.create_host_write("e", e)  # accepted: no elements, so no aliases


def test_copy_into_an_empty_2d_view(graph):
    s = graph.add_variable(FLOAT, (4,), "s")
    Copy(s[0:0], s[2:2].reshape((3, 0)))  # accepted: no elements, so no aliases


def test_intersects_with(graph):
    t = graph.add_variable(FLOAT, (4, 4), "t")
    u = graph.add_variable(FLOAT, (4, 4), "u")
    assert t.intersects_with(t)
    assert t[1].intersects_with(t[:, 2]) and t[:, 2].intersects_with(t[1])
    assert not t[1].intersects_with(t[2])
    assert not t[::2].intersects_with(t[1::2])
    assert not t[:, ::2].intersects_with(t[:, 1::2])
    assert t[:, ::2].intersects_with(t[1:2, 1:3])
    assert t.reverse(0).intersects_with(t[3])
    assert not t.intersects_with(u)
    assert not popsim.concat([t[0], u[0]]).intersects_with(popsim.concat([t[1], u[1]]))
    assert popsim.concat([t[0], u[0]]).intersects_with(u[:, 3])
    assert t[0, 0:1].broadcast(5, 0).intersects_with(t.flatten()[0:1])
    assert not t[0, 1:2].broadcast(5, 0).intersects_with(t.flatten()[0:1])
    assert not t[0:0].intersects_with(t)
    assert not t.intersects_with(t[:, 0:0])
    other = popsim.Graph(popsim.IPUModel().create_device()).add_variable(FLOAT, (4, 4), "o")
    assert not t.intersects_with(other)  # different graphs share nothing


def test_same_elements(v34):
    t, _ = v34
    assert t.same_elements(t)
    assert t.transpose().transpose().same_elements(t)
    assert t.reshape((12,)).reshape((3, 4)).same_elements(t)
    assert popsim.concat([t[:1], t[1:]]).same_elements(t)
    assert popsim.concat([t[:, 2:], t[:, :2]], 1).slice(2, 4, 1).same_elements(t[:, :2])
    assert not t.same_elements(t.reshape((4, 3)))   # same order, different shape
    assert not t.same_elements(t.reverse(0))
    assert not t[0].same_elements(t[1])


def test_contains_constant(graph):
    v = graph.add_variable(FLOAT, (3,), "v")
    c = graph.add_constant(FLOAT, (3,), [1, 2, 3], "c")
    assert not v.contains_constant()
    assert c[1:].contains_constant()
    assert popsim.concat([v, c]).contains_constant()
    assert not popsim.concat([v, c])[:3].contains_constant()
