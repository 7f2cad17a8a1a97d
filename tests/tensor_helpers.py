"""Checking a tensor view against numpy by its element ids (``t._element_ids()``: global
element ids in row-major view order; the first variable of a fresh graph has base 0)."""
import numpy as np


def ids(t):
    """The view's global element ids, in its shape."""
    flat = t._element_ids()
    assert flat.dtype == np.int64
    assert flat.size == t.num_elements()
    return flat.reshape(t.shape)


def check(t, expected):
    """The view has numpy's shape and numpy's elements."""
    expected = np.asarray(expected)
    assert t.shape == expected.shape, (t.shape, expected.shape)
    assert t.rank == expected.ndim
    assert t.num_elements() == expected.size
    np.testing.assert_array_equal(ids(t), expected)
