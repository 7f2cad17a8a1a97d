"""Lowering of control programs (lower/programs.py): nesting of any kind and depth."""
import itertools

import numpy as np
import pytest

import popsim
from popsim import INT, LONGLONG, UNSIGNED_INT, UNSIGNED_LONGLONG
from popsim.errors import ControlProgramError
from popsim.program import Call, Copy, If, PrintTensor, Repeat, RepeatWhileTrue, Sequence, Switch


def scalar(graph, dtype, name, value=None):
    t = graph.add_variable(dtype, [], name)
    graph.set_tile_mapping(t, 0)
    if value is not None:
        graph.set_initial_value(t, value)
    return t


def const(graph, dtype, value, name):
    c = graph.add_constant(dtype, [], value, name)
    graph.set_tile_mapping(c, 0)
    return c


def test_switch_nested_in_switch_cases_dispatches_on_both_controls(device):
    g = popsim.Graph(device)
    a, b, out = scalar(g, INT, "a"), scalar(g, INT, "b"), scalar(g, INT, "out")
    k = {v: const(g, INT, v, f"k{v}") for v in range(10, 20)}
    inner_a = Switch(b, {0: Copy(k[10], out), 1: Copy(k[11], out)}, Copy(k[12], out))
    inner_b = Switch(b, {0: Copy(k[13], out), 2: Copy(k[14], out)})
    outer = Switch(a, {0: inner_a, 1: Copy(k[15], out), 2: inner_b}, Switch(b, {1: Copy(k[16], out)},
                                                                          Copy(k[17], out)))
    g.create_host_write("a", a)
    g.create_host_write("b", b)
    g.create_host_read("out", out)
    engine = popsim.Engine(g, outer)
    engine.load(device)
    expected = {(0, 0): 10, (0, 1): 11, (0, 2): 12, (1, 0): 15, (1, 1): 15, (1, 2): 15,
                (2, 0): 13, (2, 1): -1, (2, 2): 14, (3, 0): 17, (3, 1): 16, (3, 2): 17}
    for (av, bv), want in expected.items():
        engine.write_tensor("a", np.array(av, np.int32))
        engine.write_tensor("b", np.array(bv, np.int32))
        engine.run()
        got = int(engine.read_tensor("out"))
        if want == -1:  # inner_b has no default: out keeps the previous run's value
            continue
        assert got == want, f"a={av} b={bv}"


def test_switch_nested_three_deep_in_a_loop(device):
    g = popsim.Graph(device)
    controls = [scalar(g, INT, f"c{i}") for i in range(3)]
    total = scalar(g, INT, "total", 0)
    adds = {v: const(g, INT, v, f"add{v}") for v in range(8)}

    def tree(level, code):
        if level == 3:
            return Copy(adds[code], total)
        return Switch(controls[level], {0: tree(level + 1, 2 * code), 1: tree(level + 1, 2 * code + 1)})
    for name, c in zip("xyz", controls):
        g.create_host_write(name, c)
    g.create_host_read("total", total)
    engine = popsim.Engine(g, Repeat(2, tree(0, 0)))
    engine.load(device)
    for bits in itertools.product((0, 1), repeat=3):
        for name, bit in zip("xyz", bits):
            engine.write_tensor(name, np.array(bit, np.int32))
        engine.run()
        assert int(engine.read_tensor("total")) == 4 * bits[0] + 2 * bits[1] + bits[2]
