"""popops expressions (popsim.popops.expr): building nodes with functions and Python
operators, PopLibs' type rules, constant folding, and the errors for bad expressions."""
import re

import numpy as np
import pytest

from popsim import BOOL, FLOAT, HALF, INT, UNSIGNED_INT, poputil
from popsim.popops import expr as pe
from popsim.popops.elementwise_ops import BINARY_OPS, UNARY_OPS
from popsim.popops.expr_typing import infer


def test_placeholders_are_one_based_up_to_20():
    assert pe._1.index == 1 and pe._20.index == 20
    assert not hasattr(pe, "_21") and not hasattr(pe, "_0")
    with pytest.raises(poputil.PoplibsError, match="1-based"):
        pe.PlaceHolder(0)


def test_every_table_op_is_a_function():
    for spec in UNARY_OPS:
        node = getattr(pe, spec.name)(pe._1)
        assert isinstance(node, pe.UnaryOp) and node.name == spec.name
    for spec in BINARY_OPS:
        node = getattr(pe, spec.name)(pe._1, pe._2)
        assert isinstance(node, pe.BinaryOp) and (node.name, node.rhs.index) == (spec.name, 2)


@pytest.mark.parametrize("build, name", [
    (lambda a, b: a + b, "add"), (lambda a, b: a - b, "sub"), (lambda a, b: a * b, "mul"),
    (lambda a, b: a / b, "div"), (lambda a, b: a % b, "rem"), (lambda a, b: a ** b, "pow"),
    (lambda a, b: a == b, "eq"), (lambda a, b: a != b, "neq"), (lambda a, b: a < b, "lt"),
    (lambda a, b: a <= b, "lteq"), (lambda a, b: a > b, "gt"), (lambda a, b: a >= b, "gteq"),
    (lambda a, b: a & b, "bitwise_and"), (lambda a, b: a | b, "bitwise_or"), (lambda a, b: a ^ b, "bitwise_xor"),
    (lambda a, b: a << b, "shift_left"), (lambda a, b: a >> b, "shift_right")])
def test_binary_operators(build, name):
    node = build(pe._1, pe._2)
    assert isinstance(node, pe.BinaryOp) and node.name == name
    assert (node.lhs.index, node.rhs.index) == (1, 2)


def test_unary_operators_and_numbers_promoted_to_const():
    assert (-pe._1).name == "neg" and (~pe._1).name == "bitwise_not" and abs(pe._1).name == "abs"
    right = 2 - pe._1  # a reflected operator keeps the order
    assert isinstance(right.lhs, pe.Const) and right.lhs.value == 2 and right.rhs is pe._1
    assert isinstance((pe._1 * np.float32(0.5)).rhs, pe.Const)
    assert repr(pe.select(pe._1, 0.0, pe._1 > 0)) == "select(_1, Const(0.0), gt(_1, Const(0)))"


def test_type_inference():
    assert infer(pe._1, [HALF]).dtype == HALF
    assert infer(pe._1 < pe._2, [INT, INT]).dtype == BOOL  # comparisons give BOOL
    assert infer(pe.is_nan(pe._1), [FLOAT]).dtype == BOOL
    typed = infer(pe._1 * 2, [HALF])  # the constant adopts the other operand's type
    assert typed.args[1].dtype == HALF and typed.args[1].detail == 2.0
    assert infer(3 + pe._1, [UNSIGNED_INT]).args[0].dtype == UNSIGNED_INT
    assert infer(pe.Cast(pe._1, INT) + pe._2, [FLOAT, INT]).dtype == INT
    assert infer(pe.select(pe._1, 0, pe._2), [INT, BOOL]).dtype == INT
    assert infer(pe.clamp(pe._1, 0, 1), [FLOAT]).dtype == FLOAT
    assert infer(pe.Const(1.5), []).dtype == FLOAT and infer(pe.Const(True), []).dtype == BOOL


def test_bool_operators_are_the_logical_ops():
    assert infer(pe._1 & pe._2, [BOOL, BOOL]).detail == "logical_and"
    assert infer(pe._1 | pe._2, [BOOL, BOOL]).detail == "logical_or"
    assert infer(pe._1 ^ pe._2, [BOOL, BOOL]).detail == "neq"
    assert infer(~pe._1, [BOOL]).detail == "logical_not"
    assert infer(pe._1 & pe._2, [INT, INT]).detail == "bitwise_and"


def test_constant_folding():
    typed = infer(pe._1 * (pe.Const(2) + pe.Const(3)), [FLOAT])
    assert typed.args[1].kind == "const" and typed.args[1].detail == 5.0 and typed.args[1].dtype == FLOAT
    assert infer(pe.sqrt(pe.Const(16.0)) * pe.Const(2.0), []).detail == 8.0
    assert infer(pe.Cast(pe.Const(2.7), INT), []).detail == 2  # float to int truncates
    assert infer(pe.Const(-7) / pe.Const(2), []).detail == -3  # integer DIVIDE truncates, as C
    assert infer(pe.Const(1.0) < pe.Const(2.0), []).detail is True
    assert infer(pe.select(pe.Const(1), pe.Const(2), pe.Const(False)), []).detail == 2
    # constants on their own take their own type: INT here (the predicate's 0.5 is not a value)
    assert infer(pe.select(pe.Const(1), pe.Const(2), pe._1 > 0.5), [FLOAT]).args[0].dtype == INT
    assert infer(pe.exp(pe.Const(1.0)), []).detail == float(np.float32(np.e))  # float32, as the vertex
    # a subtree with a placeholder is not folded
    assert infer(pe._1 + pe.Const(1.0) * pe.Const(2.0), [FLOAT]).key() == "add(_1:FLOAT,FLOAT(2.0))"


def test_structure_key_names_structure_types_and_constants():
    assert infer(pe._1 * 2 + pe.exp(pe._2), [FLOAT, FLOAT]).key() == "add(mul(_1:FLOAT,FLOAT(2.0)),exp(_2:FLOAT))"
    assert infer(pe._1 * 2, [HALF]).key() != infer(pe._1 * 2, [FLOAT]).key()
    assert infer(pe._1 * 2, [FLOAT]).key() != infer(pe._1 * 3, [FLOAT]).key()


def test_placeholder_index_out_of_range():
    with pytest.raises(poputil.PoplibsError, match=re.escape("placeholder _3 refers to tensor 3 (1-based), but only "
                                                             "2 tensor(s) were given")):
        infer(pe._1 + pe._3, [FLOAT, FLOAT])


def test_mismatched_types_need_a_cast():
    with pytest.raises(poputil.PoplibsError, match=re.escape("operands of different types (FLOAT, INT); convert "
                                                             "one with pe.Cast")):
        infer(pe._1 + pe._2, [FLOAT, INT])
    with pytest.raises(poputil.PoplibsError, match="operands of different types"):
        infer(pe._1 * pe.Const(2.0, HALF), [FLOAT])  # a typed constant keeps its type
    with pytest.raises(poputil.PoplibsError, match="the predicate .* must be BOOL, found FLOAT"):
        infer(pe.select(pe._1, pe._1, pe._1), [FLOAT])


def test_unsupported_types_and_inexact_constants():
    with pytest.raises(poputil.PoplibsError, match="EXPONENT does not take INT operands; it takes FLOAT, HALF"):
        infer(pe.exp(pe._1), [INT])
    with pytest.raises(poputil.PoplibsError, match=re.escape("the constant 1.5 does not fit INT exactly")):
        infer(pe._1 + 1.5, [INT])
    with pytest.raises(poputil.PoplibsError, match="clamp takes FLOAT, HALF, INT or UNSIGNED_INT"):
        infer(pe.clamp(pe._1, pe._1, pe._1), [BOOL])


def test_bad_node_types():
    with pytest.raises(TypeError, match="operands must be expression nodes .* found str 'a'"):
        pe._1 + "a"
    with pytest.raises(TypeError, match="found list"):
        pe.exp([1.0])
    with pytest.raises(TypeError, match="pe.Const: the value must be a real number"):
        pe.Const(pe._1)
    with pytest.raises(poputil.PoplibsError, match="pe.Cast: dtype must be one of"):
        pe.Cast(pe._1, "float")
    with pytest.raises(TypeError, match="expected an expression"):
        infer(3.0, [])
    with pytest.raises(TypeError, match="no truth value .* pe.logical_and"):
        pe._1 < pe._2 < pe._3  # a chained comparison asks for bool(node)
    with pytest.raises(TypeError, match="no PopLibs op"):
        pe._1 // 2
    with pytest.raises(poputil.PoplibsError, match="unknown unary op 'exp2'"):
        pe.UnaryOp("exp2", pe._1)


@pytest.mark.parametrize("dtype, value", [(FLOAT, 1e300), (FLOAT, 10 ** 400), (INT, 2 ** 100)])
def test_a_constant_that_fits_no_value_of_its_type(dtype, value):
    """An integer past 64 bits was numpy's OverflowError; 1e300 became inf in FLOAT unseen."""
    with pytest.raises(poputil.PoplibsError, match=f"the constant .* does not fit {dtype.name} exactly"):
        infer(pe._1 + pe.Const(value), [dtype])
