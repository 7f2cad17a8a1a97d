"""Element types and their numpy equivalents."""
import numpy as np
import pytest

import popsim
from popsim import FLOAT
from popsim.types import as_type

from graph_helpers import mapped


@pytest.mark.parametrize("t,size,dtype", [
    (popsim.BOOL, 1, np.bool_), (popsim.CHAR, 1, np.int8), (popsim.SIGNED_CHAR, 1, np.int8),
    (popsim.UNSIGNED_CHAR, 1, np.uint8), (popsim.SHORT, 2, np.int16), (popsim.UNSIGNED_SHORT, 2, np.uint16),
    (popsim.INT, 4, np.int32), (popsim.UNSIGNED_INT, 4, np.uint32), (popsim.LONGLONG, 8, np.int64),
    (popsim.UNSIGNED_LONGLONG, 8, np.uint64), (popsim.HALF, 2, np.float16), (popsim.FLOAT, 4, np.float32),
])
def test_type_table(t, size, dtype):
    assert t.size == size
    assert t.numpy == np.dtype(dtype)
    assert t.name in repr(t)


def test_as_type_accepts_python_numpy_and_names():
    assert as_type(float) is popsim.FLOAT
    assert as_type(int) is popsim.INT
    assert as_type(bool) is popsim.BOOL
    assert as_type(np.float16) is popsim.HALF
    assert as_type(np.dtype("uint32")) is popsim.UNSIGNED_INT
    assert as_type("half") is popsim.HALF
    assert as_type(popsim.SHORT) is popsim.SHORT


def test_as_type_rejects_others():
    with pytest.raises(TypeError, match="not an element type"):
        as_type(np.complex64)
    with pytest.raises(TypeError, match="not an element type"):
        as_type("quaternion")


def test_graph_takes_numpy_dtypes():
    g = popsim.Graph(popsim.IPUModel().create_device())
    assert g.add_variable(np.float32, [2]).dtype is popsim.FLOAT
    assert g.add_variable(float, [2]).dtype is popsim.FLOAT


def test_cpp_spelling_is_poplars_and_is_accepted_back():
    spelled = {t.name: t.cpp for t in (popsim.BOOL, popsim.CHAR, popsim.SIGNED_CHAR, popsim.UNSIGNED_CHAR,
                                       popsim.SHORT, popsim.UNSIGNED_SHORT, popsim.INT, popsim.UNSIGNED_INT,
                                       popsim.LONGLONG, popsim.UNSIGNED_LONGLONG, popsim.HALF, popsim.FLOAT)}
    assert spelled == {"BOOL": "bool", "CHAR": "char", "SIGNED_CHAR": "signed char", "UNSIGNED_CHAR": "unsigned char",
                       "SHORT": "short", "UNSIGNED_SHORT": "unsigned short", "INT": "int",
                       "UNSIGNED_INT": "unsigned int", "LONGLONG": "long long",
                       "UNSIGNED_LONGLONG": "unsigned long long", "HALF": "half", "FLOAT": "float"}
    assert as_type("unsigned int") is popsim.UNSIGNED_INT
    assert as_type("unsigned  long long") is popsim.UNSIGNED_LONGLONG


def test_bogus_element_type(small_device):
    with pytest.raises(TypeError) as info:
        popsim.types.as_type("bogus")
    msg = str(info.value)
    assert "'bogus' is not an element type" in msg
    assert "FLOAT" in msg and "np.float32" in msg
    g = popsim.Graph(small_device)
    with pytest.raises(TypeError, match="'bogus' is not an element type"):
        g.add_variable("bogus", (2,), "v")
    with pytest.raises(TypeError, match="is not an element type"):
        g.add_variable(np.complex64, (2,), "v")
    with pytest.raises(TypeError, match="is not an element type"):
        mapped(g, FLOAT, (4,), "f").reinterpret("nope")


@pytest.mark.parametrize("t", [[1], np.zeros(2), {}, 1.5, None, "²"])
def test_what_is_not_a_type_is_a_popsim_type_error(small_device, t):
    """Was Python's TypeError (unhashable type) or numpy's ValueError (a tensor, whose
    .dtype numpy tried to read) for some of these."""
    with pytest.raises(popsim.TypeError, match="is not an element type"):
        as_type(t)
    g = popsim.Graph(small_device)
    with pytest.raises(popsim.TypeError, match="is not an element type"):
        mapped(g, FLOAT, (4,), "f").reinterpret(g.add_variable(FLOAT, [1]) if t is None else t)


def test_values_the_host_cannot_hold_are_the_callers_error(small_device):
    """A constant within the graph limit but past the host's memory: the caller's
    PopsimError naming the bytes, not a MemoryError (the address space is capped so that
    the allocation fails at once however the host overcommits memory)."""
    from api_fuzz import guarded
    g = popsim.Graph(small_device)
    with guarded(), pytest.raises(popsim.TensorCreationError,
                                  match=r"add_constant 'c': the host cannot allocate 35,184,372,088,832 values of "
                                        r"CHAR \(35,184,372,088,832 bytes\)"):
        g.add_constant(popsim.CHAR, [2 ** 45], 1, "c")
