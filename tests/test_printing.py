"""PrintTensor's text format (Poplar SDK 3)."""
import numpy as np

from popsim.printing import format_tensor


def test_rank1_float_and_int():
    assert format_tensor("v1-debug", np.array([1, 1.5, 2, 2.5], np.float32)) == \
        "v1-debug: [1.0000000 1.5000000 2.0000000 2.5000000]\n"
    assert format_tensor("v4-0", np.arange(10, dtype=np.int32)) == "v4-0: [0 1 2 3 4 5 6 7 8 9]\n"


def test_rank2_rows_indented():
    out = format_tensor("v3", np.array([[5, 4.5], [4, 3.5]], np.float32))
    assert out == "v3: [\n  [5.0000000 4.5000000]\n  [4.0000000 3.5000000]\n]\n"


def test_rank3_nests():
    out = format_tensor("t", np.arange(8, dtype=np.int32).reshape(2, 2, 2))
    assert out == "t: [\n  [\n    [0 1]\n    [2 3]\n  ]\n  [\n    [4 5]\n    [6 7]\n  ]\n]\n"


def test_scalar_half_bool_and_empty():
    assert format_tensor("s", np.array(3, np.int32)) == "s: 3\n"
    assert format_tensor("h", np.array([0.5, -2], np.float16)) == "h: [0.5000000 -2.0000000]\n"
    assert format_tensor("b", np.array([True, False])) == "b: [1 0]\n"
    assert format_tensor("e", np.zeros(0, np.float32)) == "e: []\n"
