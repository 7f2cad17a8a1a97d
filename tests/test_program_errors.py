"""Control programs refuse bad arguments when they are built (popsim/program.py): copies
between tensors of different sizes or types or in a stream's wrong direction, repeat
counts, predicates, switch cases and calls; each message names the object and the fix."""
import pytest

import popsim
from popsim import FLOAT, HALF, INT
from popsim.program import AbortOnCondition, Call, Copy, If, Repeat, RepeatWhileFalse, RepeatWhileTrue, Sequence, Switch

from graph_helpers import mapped, mapped_const


def test_copy_element_count_mismatch(small_device):
    g = popsim.Graph(small_device)
    a = mapped(g, FLOAT, (4,), "src4")
    b = mapped(g, FLOAT, (4, 4), "dst16")
    with pytest.raises(popsim.ControlProgramError) as info:
        Copy(a, b)
    msg = str(info.value)
    assert "'src4'" in msg and "'dst16'" in msg
    assert "4 elements" in msg and "16 elements" in msg
    assert "must be equal" in msg


def test_copy_type_mismatch(small_device):
    g = popsim.Graph(small_device)
    a = mapped(g, FLOAT, (4,), "f")
    b = mapped(g, INT, (4,), "i")
    with pytest.raises(popsim.ControlProgramError) as info:
        Copy(a, b)
    msg = str(info.value)
    assert "'f'" in msg and "'i'" in msg
    assert "FLOAT" in msg and "INT" in msg
    assert "cast" in msg


def test_copy_shapes_may_differ(small_device):
    g = popsim.Graph(small_device)
    Copy(mapped(g, FLOAT, (2, 3), "a"), mapped(g, FLOAT, (6,), "b"))  # no error


def test_copy_into_constant(small_device):
    g = popsim.Graph(small_device)
    v = mapped(g, FLOAT, (4,), "v")
    c = mapped_const(g, FLOAT, (4,), 1.0, "cst")
    with pytest.raises(popsim.ControlProgramError, match="'cst'.*constant"):
        Copy(v, c)


@pytest.mark.parametrize("direction", ["device-to-host", "host-to-device"])
def test_copy_with_a_stream_the_wrong_way(small_device, direction):
    """A stream copied against its direction names both ends and the fifo to add instead."""
    g = popsim.Graph(small_device)
    x = mapped(g, INT, (10,), "x")
    if direction == "device-to-host":
        stream, fix = g.add_device_to_host_fifo("results", INT, 10), "add_host_to_device_fifo"
        copy = lambda: Copy(stream, x)  # noqa: E731
    else:
        stream, fix = g.add_host_to_device_fifo("inputs", INT, 10), "add_device_to_host_fifo"
        copy = lambda: Copy(x, stream)  # noqa: E731
    with pytest.raises(popsim.StreamConnectionError) as info:
        copy()
    msg = str(info.value)
    assert f"'{stream.handle}'" in msg and "'x'" in msg
    assert direction in msg and fix in msg


def test_copy_stream_type_and_size_mismatch(small_device):
    g = popsim.Graph(small_device)
    x = mapped(g, INT, (10,), "x")
    fs = g.add_host_to_device_fifo("floats", FLOAT, 10)
    short = g.add_host_to_device_fifo("short", INT, 8)
    with pytest.raises(popsim.StreamConnectionError) as info:
        Copy(fs, x)
    assert "'floats'" in str(info.value) and "FLOAT" in str(info.value) and "INT" in str(info.value)
    with pytest.raises(popsim.StreamConnectionError) as info:
        Copy(short, x)
    msg = str(info.value)
    assert "'short'" in msg and "8 elements" in msg and "10 elements" in msg


def test_negative_repeat_count():
    with pytest.raises(popsim.ControlProgramError, match=r"Repeat count must be >= 0, found -1"):
        Repeat(-1, Sequence())


@pytest.mark.parametrize("count,found", [(2.5, "float 2.5"), ("3", "str '3'"), (True, "bool True"),
                                         (None, "NoneType None")])
def test_non_integer_repeat_count(count, found):
    with pytest.raises(popsim.ControlProgramError) as info:
        Repeat(count, Sequence())
    msg = str(info.value)
    assert "Repeat count must be an integer" in msg
    assert found in msg


def test_repeat_body_must_be_a_program():
    with pytest.raises(popsim.ControlProgramError, match="Repeat body must be a Program, found int"):
        Repeat(2, 5)


_PREDICATE_USERS = {
    "If predicate": lambda p: If(p, Sequence()),
    "RepeatWhileTrue predicate": lambda p: RepeatWhileTrue(Sequence(), p, Sequence()),
    "RepeatWhileFalse predicate": lambda p: RepeatWhileFalse(Sequence(), p, Sequence()),
    "Switch control": lambda p: Switch(p, {0: Sequence()}),
    "AbortOnCondition predicate": lambda p: AbortOnCondition(p, "m"),
}


@pytest.mark.parametrize("what", sorted(_PREDICATE_USERS))
def test_non_scalar_predicate(small_device, what):
    g = popsim.Graph(small_device)
    p = mapped(g, INT, (2, 3), "pred")
    with pytest.raises(popsim.ControlProgramError) as info:
        _PREDICATE_USERS[what](p)
    msg = str(info.value)
    assert msg.startswith(what)
    assert "'pred'" in msg
    assert "[2, 3]" in msg
    assert "one element" in msg


@pytest.mark.parametrize("what", sorted(_PREDICATE_USERS))
@pytest.mark.parametrize("dtype", [FLOAT, HALF])
def test_floating_point_predicate(small_device, what, dtype):
    g = popsim.Graph(small_device)
    p = mapped(g, dtype, (), "fpred")
    with pytest.raises(popsim.ControlProgramError) as info:
        _PREDICATE_USERS[what](p)
    msg = str(info.value)
    assert msg.startswith(what)
    assert "'fpred'" in msg and dtype.name in msg
    assert "integral" in msg


def test_predicate_that_is_not_a_tensor():
    with pytest.raises(popsim.ControlProgramError, match="If predicate must be a scalar Tensor, found int"):
        If(1, Sequence())


def test_single_element_predicates_are_fine(small_device):
    g = popsim.Graph(small_device)
    If(mapped(g, popsim.BOOL, (1, 1), "b"), Sequence())
    Switch(mapped(g, INT, (4,), "c")[2], {1: Sequence()})


def test_switch_duplicate_and_bad_case(small_device):
    g = popsim.Graph(small_device)
    c = mapped(g, INT, (), "c")
    sw = Switch(c, {1: Sequence()})
    with pytest.raises(popsim.ControlProgramError, match="two cases for the value 1"):
        sw.add(1, Sequence())
    with pytest.raises(popsim.ControlProgramError, match="integers, found str 'x'"):
        sw.add("x", Sequence())


def test_call_needs_a_function():
    with pytest.raises(popsim.ControlProgramError, match="Call takes a Function.*found Sequence"):
        Call(Sequence())


@pytest.mark.parametrize("cases", ["x", 3, [1, 2], [(1,)], Sequence()])
def test_switch_cases_that_are_not_value_program_pairs(small_device, cases):
    g = popsim.Graph(small_device)
    c = mapped(g, INT, (), "c")
    with pytest.raises(popsim.ControlProgramError, match="Switch cases must be"):
        Switch(c, cases)
