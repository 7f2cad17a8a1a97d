"""Element types: Poplar's type constants, with their device size and numpy dtype."""
from __future__ import annotations

from typing import Iterable, SupportsIndex, Union

import numpy as np
import numpy.typing as npt

from . import errors
from .contract import ScalarType

__all__ = [
    "Type", "as_type", "BOOL", "CHAR", "UNSIGNED_CHAR", "SIGNED_CHAR", "SHORT", "UNSIGNED_SHORT",
    "INT", "UNSIGNED_INT", "LONGLONG", "UNSIGNED_LONGLONG", "HALF", "FLOAT", "QUARTER", "QUARTER_METADATA",
]

#: What the API takes as an element type (as_type): a Type, its name or C++ spelling, a
#: numpy dtype, or float/int/bool.
TypeLike = Union["Type", str, type, np.dtype]
#: What the API takes as a shape: a size, or a sequence of sizes (ints or numpy integers).
ShapeLike = Union[SupportsIndex, Iterable[SupportsIndex]]


class Type:
    """A device element type (``popsim.FLOAT``, ``popsim.INT``...).

    ``name`` is Poplar's constant name, ``cpp`` its C++ spelling as Poplar's
    ``Type::toString()`` writes it and vertex template names use it
    (``popops::ScaledAdd<float,true>``, ``Copy<unsigned int>``), ``size`` the bytes one
    element takes in tile memory and ``numpy`` the host dtype used for reads, writes and
    streams.
    """

    __slots__ = ("name", "cpp", "size", "numpy", "code", "opaque")

    def __init__(self, name: str, cpp: str, numpy_dtype: npt.DTypeLike, code: ScalarType, opaque: bool = False):
        self.name = name
        self.cpp = cpp
        self.numpy = np.dtype(numpy_dtype)
        self.size = self.numpy.itemsize
        self.code = int(code)  # the core's scalar type code (popsim/contract.py)
        # QUARTER and QUARTER_METADATA: bytes whose meaning the host arrays (uint8) do not carry
        self.opaque = opaque

    @property
    def is_floating_point(self) -> bool:
        return self.numpy.kind == "f" and not self.opaque

    @property
    def is_integral(self) -> bool:
        return self.numpy.kind in "iub" and not self.opaque

    def __repr__(self) -> str:
        return f"popsim.{self.name}"

    def __str__(self) -> str:
        return self.name

    def __reduce__(self):
        return (as_type, (self.name,))


BOOL = Type("BOOL", "bool", np.bool_, ScalarType.BOOL)
SIGNED_CHAR = Type("SIGNED_CHAR", "signed char", np.int8, ScalarType.I8)
CHAR = Type("CHAR", "char", np.int8, ScalarType.I8)
UNSIGNED_CHAR = Type("UNSIGNED_CHAR", "unsigned char", np.uint8, ScalarType.U8)
SHORT = Type("SHORT", "short", np.int16, ScalarType.I16)
UNSIGNED_SHORT = Type("UNSIGNED_SHORT", "unsigned short", np.uint16, ScalarType.U16)
INT = Type("INT", "int", np.int32, ScalarType.I32)
UNSIGNED_INT = Type("UNSIGNED_INT", "unsigned int", np.uint32, ScalarType.U32)
LONGLONG = Type("LONGLONG", "long long", np.int64, ScalarType.I64)
UNSIGNED_LONGLONG = Type("UNSIGNED_LONGLONG", "unsigned long long", np.uint64, ScalarType.U64)
HALF = Type("HALF", "half", np.float16, ScalarType.F16)
FLOAT = Type("FLOAT", "float", np.float32, ScalarType.F32)
# Poplar's 8-bit float (SDK 3.2+): one byte per element, its format (F143, F152) and scale
# in the QUARTER_METADATA tensor it carries (popsim/quarter.py); host arrays hold the bytes.
QUARTER = Type("QUARTER", "quarter", np.uint8, ScalarType.U8, opaque=True)
QUARTER_METADATA = Type("QUARTER_METADATA", "quarter_metadata", np.uint8, ScalarType.U8, opaque=True)

ALL_TYPES = (BOOL, CHAR, SIGNED_CHAR, UNSIGNED_CHAR, SHORT, UNSIGNED_SHORT, INT, UNSIGNED_INT,
             LONGLONG, UNSIGNED_LONGLONG, HALF, FLOAT, QUARTER, QUARTER_METADATA)
_BY_NAME = {t.name: t for t in ALL_TYPES}
_BY_CPP = {t.cpp: t for t in ALL_TYPES}
# CHAR and SIGNED_CHAR share int8; numpy int8 means CHAR (and uint8 UNSIGNED_CHAR, never QUARTER).
_BY_DTYPE = {t.numpy: t for t in reversed(ALL_TYPES) if not t.opaque}
_BY_PYTHON = {float: FLOAT, int: INT, bool: BOOL}


def as_type(t: object) -> Type:
    """Accept a popsim Type, a Type name ("FLOAT", "float"), its C++ spelling ("unsigned
    int"), a numpy dtype, or float/int/bool; anything else is a popsim.TypeError."""
    if isinstance(t, Type):
        return t
    if isinstance(t, type) and t in _BY_PYTHON:
        return _BY_PYTHON[t]
    if isinstance(t, str) and t.upper() in _BY_NAME:
        return _BY_NAME[t.upper()]
    if isinstance(t, str) and " ".join(t.split()) in _BY_CPP:
        return _BY_CPP[" ".join(t.split())]
    try:
        dt = np.dtype(t)
    except (TypeError, ValueError):  # numpy's words for "not a dtype"
        dt = None
    if dt is not None and dt in _BY_DTYPE:
        return _BY_DTYPE[dt]
    names = ", ".join(_BY_NAME)
    shown = repr(t) if len(repr(t)) <= 60 else f"{type(t).__name__} {repr(t)[:57]}..."
    raise errors.TypeError(f"{shown} is not an element type: use one of popsim.{{{names}}}, a numpy dtype "
                           "such as np.float32, or float/int/bool")


def typed_array(values, dtype: Type, shape, what: str, error: type) -> np.ndarray:
    """Host ``values`` (scalar, nested lists, array) as a C-contiguous array of ``dtype``
    and ``shape`` (a single value fills it). Refuses, with ``error``, values the type
    cannot hold exactly: fractions or out-of-range numbers for integer types, finite
    numbers that overflow a float type; and values the host has no memory for."""
    try:
        arr = np.asarray(values)
    except (ValueError, TypeError, OverflowError) as e:
        raise error(f"{what}: cannot read the values as an array ({e})") from None
    if arr.dtype == object or arr.dtype.kind not in "biuf":
        raise error(f"{what}: values must be numbers, found {str(values)[:60]}")
    shape = tuple(shape)
    count = 1
    for n in shape:  # a Python product: np.prod wraps around past 2**63
        count *= int(n)
    if arr.size != 1 and arr.size != count:
        raise error(f"{what}: {arr.size} values given for shape {list(shape)} ({count} elements)")
    target = dtype.numpy
    if arr.size and arr.dtype != target:
        _check_fits(arr, dtype, what, error)
    try:
        arr = arr.reshape(shape) if arr.size != 1 else np.broadcast_to(arr.reshape(()), shape)
        with np.errstate(all="ignore"):
            return np.ascontiguousarray(arr.astype(target))
    except (MemoryError, ValueError):  # ValueError: numpy's "array is too big" for sizes past its limit
        raise error(f"{what}: the host cannot allocate {count:,} values of {dtype.name} "
                    f"({count * dtype.size:,} bytes); use fewer elements") from None


def _check_fits(arr: np.ndarray, dtype: Type, what: str, error: type) -> None:
    target = dtype.numpy
    if target.kind in "biu":
        if arr.dtype.kind == "f":
            if not np.all(np.isfinite(arr)) or np.any(arr != np.floor(arr)):
                raise error(f"{what}: values do not fit {dtype.name}: non-integral or non-finite numbers "
                            f"(e.g. {arr.reshape(-1)[0]!r}); round them first")
        lo, hi = (0, 1) if target.kind == "b" else (np.iinfo(target).min, np.iinfo(target).max)
        if arr.dtype.kind != "b" and (arr.min() < lo or arr.max() > hi):
            raise error(f"{what}: values do not fit {dtype.name}: the range is {lo}..{hi}, found "
                        f"{arr.min()}..{arr.max()}")
    elif arr.dtype.kind in "iuf":
        finite = arr[np.isfinite(arr)] if arr.dtype.kind == "f" else arr
        limit = np.finfo(target).max
        if finite.size and np.abs(finite.astype(np.float64)).max() > limit:
            raise error(f"{what}: values do not fit {dtype.name}: its largest finite value is {float(limit):g}, "
                        f"found {float(np.abs(finite.astype(np.float64)).max()):g}")
