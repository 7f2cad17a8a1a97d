"""Lowering of control programs (lower/programs.py): nesting of any kind and depth."""
import itertools
import re

import numpy as np
import pytest

import popsim
from popsim import INT, LONGLONG, UNSIGNED_INT, UNSIGNED_LONGLONG
from popsim.errors import ControlProgramError
from popsim.lower import programs as lowering
from popsim.program import Call, Copy, Repeat, Sequence, Switch
from popsim.reference import ReferenceExecutor


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


# -- any depth: lowering, digest and the reference executor walk without recursion ----------------
def test_ten_thousand_nested_sequences_lower_and_run(device, tmp_path):
    g = popsim.Graph(device)
    x = scalar(g, INT, "x")
    p = Copy(const(g, INT, 7, "seven"), x)
    for _ in range(10000):
        p = Sequence(p)
    g.create_host_read("x", x)
    engine = popsim.Engine(g, p, {"popsim.cacheDir": str(tmp_path)})  # the digest walks it too
    engine.load(device)
    engine.run()
    assert int(engine.read_tensor("x")) == 7
    reference = ReferenceExecutor(g, p)
    reference.run()
    assert int(reference.read_tensor("x")) == 7


def chain_of_calls(g, length, x, step):
    """Function i calls function i + 1; the last adds ``step`` to ``x`` (an INT scalar)."""
    f = g.add_function(step, "last")
    for i in range(length - 1):
        f = g.add_function(Sequence(Call(f)), f"f{length - 2 - i}")
    return f


def test_five_thousand_chained_calls_lower_and_run(device, tmp_path):
    g = popsim.Graph(device)
    x = scalar(g, INT, "x", 0)
    f = chain_of_calls(g, 5000, x, Copy(const(g, INT, 5, "five"), x))
    g.create_host_read("x", x)
    engine = popsim.Engine(g, Sequence(Call(f), Call(f)), {"popsim.cacheDir": str(tmp_path)})
    engine.load(device)
    engine.run()
    assert int(engine.read_tensor("x")) == 5
    reference = ReferenceExecutor(g, Call(f))
    reference.run()
    assert int(reference.read_tensor("x")) == 5


def test_calls_nested_deeper_than_the_core_stack_are_refused_when_built(device, monkeypatch):
    monkeypatch.setattr(lowering, "CALL_DEPTH_MAX", 100)
    g = popsim.Graph(device)
    x = scalar(g, INT, "x", 0)
    f = chain_of_calls(g, 101, x, Sequence())
    with pytest.raises(ControlProgramError, match="nests Calls 101 deep.*holds 100"):
        popsim.Engine(g, Call(f))
    popsim.Engine(g, Call(g._state.functions[1]))  # 100 deep: fits


@pytest.mark.slow
def test_the_core_runs_calls_as_deep_as_lowering_allows(cpu_device):
    device = cpu_device  # no memory limit: on an IPU this much control code fills every tile
    g = popsim.Graph(device)
    x = scalar(g, INT, "x", 0)
    f = chain_of_calls(g, lowering.CALL_DEPTH_MAX, x, Copy(const(g, INT, 3, "three"), x))
    g.create_host_read("x", x)
    engine = popsim.Engine(g, Call(f))
    engine.load(device)
    engine.run()
    assert int(engine.read_tensor("x")) == 3


# -- 64-bit Repeat counts and Switch values ------------------------------------------------------------
def test_repeat_count_must_fit_the_cores_counter(device):
    with pytest.raises(ControlProgramError, match=r"Repeat count 9223372036854775808 is too large.*2\*\*63-1"):
        Repeat(2 ** 63, Sequence())
    g = popsim.Graph(device)
    scalar(g, INT, "x")
    engine = popsim.Engine(g, Repeat(2 ** 63 - 1, Sequence()))  # the largest count lowers as it is
    assert int(engine.executable.lowered.programs.instrs[0, 3]) == 2 ** 63 - 1


@pytest.mark.parametrize("dtype,values", [
    (UNSIGNED_LONGLONG, [2 ** 64 - 1, 2 ** 63, 2 ** 63 - 1, 5, 0]),
    (LONGLONG, [-2 ** 63, -1, 2 ** 63 - 1, 0]),
    (UNSIGNED_INT, [2 ** 32 - 1, 2 ** 31, 1]),
])
def test_switch_on_64_bit_and_unsigned_controls(device, dtype, values):
    g = popsim.Graph(device)
    control, out = scalar(g, dtype, "control"), scalar(g, INT, "out")
    marks = [const(g, INT, 100 + i, f"m{i}") for i in range(len(values) + 1)]
    prog = Switch(control, {v: Copy(marks[i], out) for i, v in enumerate(values)}, Copy(marks[-1], out))
    g.create_host_write("control", control)
    g.create_host_read("out", out)
    engine = popsim.Engine(g, prog)
    engine.load(device)
    reference = ReferenceExecutor(g, prog)
    others = [v + 1 for v in values if v + 1 not in values and v + 1 <= np.iinfo(dtype.numpy).max]
    for v in values + others:
        want = 100 + values.index(v) if v in values else 100 + len(values)
        for runner in (engine, reference):
            runner.write_tensor("control", np.array(v, dtype.numpy))
            runner.run()
            assert int(runner.read_tensor("out")) == want, (runner, v)


@pytest.mark.parametrize("dtype,value,limits", [
    (INT, 2 ** 31, "-2147483648..2147483647"), (UNSIGNED_INT, -1, "0..4294967295"),
    (UNSIGNED_LONGLONG, 2 ** 64, "0..18446744073709551615"), (popsim.BOOL, 2, "0..1"),
])
def test_switch_case_values_the_control_cannot_hold_are_refused(device, dtype, value, limits):
    g = popsim.Graph(device)
    control = scalar(g, dtype, "control")
    with pytest.raises(ControlProgramError, match=f"Switch case value {value} can never match.*'control' is "
                                                  f"{dtype.name}, which holds {limits}"):
        Switch(control, {value: Sequence()})


def test_switch_accepts_numpy_integer_case_values(device):
    g = popsim.Graph(device)
    control = scalar(g, UNSIGNED_LONGLONG, "control", 2 ** 64 - 2)
    out = scalar(g, INT, "out", 0)
    prog = Switch(control, {np.uint64(2 ** 64 - 2): Copy(const(g, INT, 9, "nine"), out)})
    g.create_host_read("out", out)
    engine = popsim.Engine(g, prog)
    engine.load(device)
    engine.run()
    assert int(engine.read_tensor("out")) == 9


def test_function_calling_itself(small_device):
    g = popsim.Graph(small_device)
    body = Sequence()
    f = g.add_function(body, "selfish")
    body.add(Call(f))
    with pytest.raises(popsim.ControlProgramError) as info:
        popsim.Engine(g, Sequence(Call(f)))
    msg = str(info.value)
    assert "'selfish' calls itself" in msg
    assert "recurse" in msg
    assert "Repeat" in msg  # how to fix it


def test_mutually_recursive_functions(small_device):
    g = popsim.Graph(small_device)
    a, b = Sequence(), Sequence()
    fa = g.add_function(a, "ping")
    fb = g.add_function(b, "pong")
    a.add(Call(fb))
    b.add(Call(fa))
    with pytest.raises(popsim.ControlProgramError, match=re.escape("(ping -> pong -> ping)")):
        popsim.Engine(g, Call(fa))
