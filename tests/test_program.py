"""Control programs: each program kind's semantics, checked by running it.

References are plain Python re-statements of Poplar's documented behaviour.
"""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import popsim
from popsim import FLOAT, INT
from popsim.program import (Abort, AbortOnCondition, Call, Copy, Execute, If, PrintTensor, Repeat,
                            RepeatWhileFalse, RepeatWhileTrue, Sequence, Switch, Sync, SyncType, WriteUndef)


def scalar(graph, dtype, name, tile=0, value=None):
    t = graph.add_variable(dtype, [], name)
    graph.set_tile_mapping(t, tile)
    if value is not None:
        graph.set_initial_value(t, value)
    return t


def const(graph, dtype, values, name, tile=0):
    c = graph.add_constant(dtype, np.shape(values), values, name)
    graph.set_tile_mapping(c, tile)
    return c


def increment_program(graph, counter, limit=64):
    """A program adding 1 to the INT scalar ``counter`` (0 <= counter < limit), built
    from a Switch over constants: no vertices needed."""
    cases = {}
    for k in range(limit):
        cases[k] = Copy(const(graph, INT, k + 1, f"k{k + 1}"), counter)
    return Switch(counter, cases)


def test_sequence_runs_in_order(device, run_and_read):
    g = popsim.Graph(device)
    x = g.add_variable(FLOAT, [3], "x")
    g.set_tile_mapping(x, 0)
    a, b = const(g, FLOAT, [1, 2, 3], "a"), const(g, FLOAT, [4, 5, 6], "b")
    (out,) = run_and_read(g, device, Sequence(Copy(a, x), Copy(b, x)), [x])
    np.testing.assert_array_equal(out, [4, 5, 6])


def test_sequence_accepts_list_and_add(device, run_and_read):
    g = popsim.Graph(device)
    x = g.add_variable(FLOAT, [2], "x")
    g.set_tile_mapping(x, 0)
    a, b = const(g, FLOAT, [1, 2], "a"), const(g, FLOAT, [3, 4], "b")
    seq = Sequence([Copy(a, x)])
    seq.add(Copy(b[0:1], x[0:1]))
    assert len(seq) == 2
    (out,) = run_and_read(g, device, seq, [x])
    np.testing.assert_array_equal(out, [3, 2])


@pytest.mark.parametrize("count", [0, 1, 5, 37])
def test_repeat_runs_body_count_times(device, run_and_read, count):
    g = popsim.Graph(device)
    counter = scalar(g, INT, "counter", value=0)
    prog = Repeat(count, increment_program(g, counter))
    (out,) = run_and_read(g, device, prog, [counter])
    assert int(out) == count


def test_nested_repeats_multiply(device, run_and_read):
    g = popsim.Graph(device)
    counter = scalar(g, INT, "counter", value=0)
    prog = Repeat(3, Repeat(4, increment_program(g, counter)))
    (out,) = run_and_read(g, device, prog, [counter])
    assert int(out) == 12


@pytest.mark.parametrize("start,expected_iterations", [(0, 5), (4, 1), (5, 0)])
def test_repeat_while_true(device, run_and_read, start, expected_iterations):
    """cond computes pred = (counter < 5) via a Switch; body increments counter and
    a second counter of iterations."""
    g = popsim.Graph(device)
    counter = scalar(g, INT, "counter", value=start)
    iterations = scalar(g, INT, "iterations", value=0)
    pred = scalar(g, INT, "pred")
    one, zero = const(g, INT, 1, "one"), const(g, INT, 0, "zero")
    cond = Switch(counter, {k: Copy(one, pred) for k in range(5)}, Copy(zero, pred))
    body = Sequence(increment_program(g, counter), increment_program(g, iterations))
    out = run_and_read(g, device, RepeatWhileTrue(cond, pred, body), [counter, iterations])
    assert int(out[1]) == expected_iterations
    assert int(out[0]) == max(start, 5)


def test_repeat_while_false_loops_while_zero(device, run_and_read):
    g = popsim.Graph(device)
    counter = scalar(g, INT, "counter", value=0)
    done = scalar(g, INT, "done")
    one, zero = const(g, INT, 1, "one"), const(g, INT, 0, "zero")
    cond = Switch(counter, {7: Copy(one, done)}, Copy(zero, done))
    (out,) = run_and_read(g, device, RepeatWhileFalse(cond, done, increment_program(g, counter)), [counter])
    assert int(out) == 7


@pytest.mark.parametrize("value,dtype", [(0, INT), (1, INT), (-3, INT), (True, popsim.BOOL), (False, popsim.BOOL),
                                         (200, popsim.UNSIGNED_CHAR), (0, popsim.SHORT)])
def test_if_takes_branch_on_nonzero(device, run_and_read, value, dtype):
    g = popsim.Graph(device)
    pred = scalar(g, dtype, "pred", value=value)
    x = scalar(g, INT, "x")
    prog = If(pred, Copy(const(g, INT, 10, "ten"), x), Copy(const(g, INT, 20, "twenty"), x))
    (out,) = run_and_read(g, device, prog, [x])
    assert int(out) == (10 if value else 20)


def test_if_without_else(device, run_and_read):
    g = popsim.Graph(device)
    pred = scalar(g, INT, "pred", value=0)
    x = scalar(g, INT, "x", value=5)
    (out,) = run_and_read(g, device, If(pred, Copy(const(g, INT, 10, "ten"), x)), [x])
    assert int(out) == 5


def test_predicate_may_be_a_one_element_view(device, run_and_read):
    g = popsim.Graph(device)
    flags = g.add_variable(INT, [4], "flags")
    g.set_tile_mapping(flags, 0)
    g.set_initial_value(flags, [0, 0, 1, 0])
    x = scalar(g, INT, "x")
    (out,) = run_and_read(g, device, If(flags[2], Copy(const(g, INT, 10, "ten"), x)), [x])
    assert int(out) == 10


@settings(max_examples=25, deadline=None)
@given(control=st.integers(-5, 8), case_values=st.sets(st.integers(-5, 8), max_size=5))
def test_switch_selects_case_or_default(control, case_values):
    device = popsim.IPUModel().create_device()
    g = popsim.Graph(device)
    c = scalar(g, INT, "control", value=control)
    x = scalar(g, INT, "x", value=-100)
    cases = {v: Copy(const(g, INT, 1000 + v, f"c{v}"), x) for v in case_values}
    prog = Switch(c, cases, Copy(const(g, INT, -1, "dflt"), x))
    g.create_host_read("x", x)
    e = popsim.Engine(g, prog)
    e.load(device)
    e.run()
    assert int(e.read_tensor("x")) == (1000 + control if control in case_values else -1)


def test_switch_add_and_empty_default(device, run_and_read):
    g = popsim.Graph(device)
    c = scalar(g, INT, "control", value=3)
    x = scalar(g, INT, "x", value=7)
    sw = Switch(c)
    sw.add(1, Copy(const(g, INT, 11, "eleven"), x))
    (out,) = run_and_read(g, device, sw, [x])
    assert int(out) == 7  # no case matched, empty default


def test_call_runs_function_each_time(device, run_and_read):
    g = popsim.Graph(device)
    counter = scalar(g, INT, "counter", value=0)
    f = g.add_function(increment_program(g, counter))
    (out,) = run_and_read(g, device, Sequence(Call(f), Repeat(3, Call(f)), Call(f)), [counter])
    assert int(out) == 5


def test_function_is_lowered_once(device):
    g = popsim.Graph(device)
    counter = scalar(g, INT, "counter", value=0)
    body = increment_program(g, counter)
    f = g.add_function(body)
    few = popsim.Engine(g, Sequence(Call(f)))
    many = popsim.Engine(g, Sequence(*[Call(f) for _ in range(50)]))
    grown = many._lowered.programs.instrs.shape[0] - few._lowered.programs.instrs.shape[0]
    assert grown == 49  # one CALL per extra call site, the body exists once


def test_functions_calling_functions(device, run_and_read):
    g = popsim.Graph(device)
    counter = scalar(g, INT, "counter", value=0)
    inc = g.add_function(increment_program(g, counter))
    twice = g.add_function(Sequence(Call(inc), Call(inc)))
    (out,) = run_and_read(g, device, Sequence(Call(twice), Call(twice), Call(inc)), [counter])
    assert int(out) == 5


def test_several_programs_share_state(device):
    g = popsim.Graph(device)
    counter = scalar(g, INT, "counter", value=0)
    reset = Copy(const(g, INT, 0, "zero"), counter)
    g.create_host_read("counter", counter)
    e = popsim.Engine(g, [increment_program(g, counter), reset])
    e.load(device)
    for expected in (1, 2, 3):
        e.run(0)
        assert int(e.read_tensor("counter")) == expected
    e.run(1)
    assert int(e.read_tensor("counter")) == 0
    e.run(0)
    assert int(e.read_tensor("counter")) == 1


def test_state_persists_across_runs_and_load_resets(device):
    g = popsim.Graph(device)
    counter = scalar(g, INT, "counter", value=2)
    g.create_host_read("counter", counter)
    e = popsim.Engine(g, increment_program(g, counter))
    e.load(device)
    e.run()
    e.run()
    assert int(e.read_tensor("counter")) == 4
    e.load(device)  # initial values again
    assert int(e.read_tensor("counter")) == 2


def test_abort_and_abort_on_condition(device):
    g = popsim.Graph(device)
    flag = scalar(g, INT, "flag", value=0)
    x = scalar(g, INT, "x", value=0)
    g.create_host_write("flag", flag)
    g.create_host_read("x", x)
    prog = Sequence(AbortOnCondition(flag, "flag was set"), Copy(const(g, INT, 9, "nine"), x))
    e = popsim.Engine(g, [prog, Abort("always")])
    e.load(device)
    e.run(0)
    assert int(e.read_tensor("x")) == 9
    e.write_tensor("flag", np.array(1, np.int32))
    with pytest.raises(popsim.ApplicationRuntimeError, match="flag was set"):
        e.run(0)
    with pytest.raises(popsim.ApplicationRuntimeError, match="always"):
        e.run(1)


def test_sync_write_undef_and_empty_execute_run(device, run_and_read):
    g = popsim.Graph(device)
    x = g.add_variable(FLOAT, [2], "x")
    g.set_tile_mapping(x, 0)
    cs = g.add_compute_set("nothing")
    prog = Sequence(Copy(const(g, FLOAT, [1, 2], "c"), x), Sync(SyncType.INTERNAL), Sync(SyncType.EXTERNAL),
                    WriteUndef(x[0:1]), Execute(cs))
    (out,) = run_and_read(g, device, prog, [x])
    np.testing.assert_array_equal(out, [1, 2])  # WriteUndef moves no data in the model


def test_print_tensor_output(device, capsys):
    g = popsim.Graph(device)
    m = g.add_variable(FLOAT, [2, 2], "m")
    g.set_tile_mapping(m, 0)
    g.set_initial_value(m, [[5, 4.5], [4, 3.5]])
    i = g.add_variable(INT, [3], "ints")
    g.set_tile_mapping(i, 1)
    g.set_initial_value(i, [10, -2, 7])
    e = popsim.Engine(g, Sequence(PrintTensor("v3", m), PrintTensor(i), PrintTensor("row", m[1])))
    e.load(device)
    print("before")
    e.run()
    print("after")
    assert capsys.readouterr().out == ("before\n"
                                       "v3: [\n  [5.0000000 4.5000000]\n  [4.0000000 3.5000000]\n]\n"
                                       "ints: [10 -2 7]\n"
                                       "row: [4.0000000 3.5000000]\n"
                                       "after\n")


def test_copy_with_overlapping_source_and_destination(device, run_and_read):
    """Copy reads everything before writing, like an exchange."""
    g = popsim.Graph(device)
    x = g.add_variable(INT, [6], "x")
    g.set_tile_mapping(x, 0)
    g.set_initial_value(x, np.arange(6))
    (out,) = run_and_read(g, device, Copy(x[0:5], x[1:6]), [x])
    np.testing.assert_array_equal(out, [0, 0, 1, 2, 3, 4])


def test_copy_reversed_view_onto_itself(device, run_and_read):
    g = popsim.Graph(device)
    x = g.add_variable(FLOAT, [5], "x")
    g.set_tile_mapping(x, 2)
    g.set_initial_value(x, np.arange(5))
    (out,) = run_and_read(g, device, Copy(x.reverse(0), x), [x])
    np.testing.assert_array_equal(out, [4, 3, 2, 1, 0])


def test_copy_between_shapes_with_equal_counts(device, run_and_read):
    g = popsim.Graph(device)
    a = const(g, FLOAT, np.arange(6, dtype=np.float32).reshape(2, 3), "a")
    b = g.add_variable(FLOAT, [3, 2], "b")
    g.set_tile_mapping(b, 5)
    (out,) = run_and_read(g, device, Copy(a, b.transpose()), [b])
    np.testing.assert_array_equal(out, np.arange(6).reshape(2, 3).T)


def test_program_describe_names():
    g = popsim.Graph(popsim.IPUModel().create_device())
    a = g.add_variable(FLOAT, [1], "a")
    b = g.add_variable(FLOAT, [1], "b")
    assert Copy(a, b).describe() == "Copy a -> b"
    assert Copy(a, b, debug_name="mine").describe() == "mine"
    assert PrintTensor(a).title == "a"
