"""popart.TensorInfo: an ONNX data type and shape, and the types popsim.popart runs."""
import numpy as np

from . import float8
from .errors import popart_exception

#: ONNX/PopART type names -> numpy dtype, for the types a model may hold
NUMPY_OF = {"FLOAT": np.float32, "FLOAT16": np.float16, "DOUBLE": np.float64, "INT32": np.int32,
            "INT64": np.int64, "UINT32": np.uint32, "INT8": np.int8, "UINT8": np.uint8, "INT16": np.int16,
            "UINT16": np.uint16, "BOOL": np.bool_, **float8.NUMPY_OF}
#: numpy dtype -> the ONNX/PopART name
NAME_OF = {np.dtype(v): k for k, v in NUMPY_OF.items()}
#: the types that may live on the device (int64 and uint64 as INT and UNSIGNED_INT; lowering.py;
#: the FNUZ float8 types as QUARTER, popart/float8.py)
DEVICE_TYPES = ("FLOAT", "FLOAT16", "BOOL", "INT8", "UINT8", "INT16", "UINT16", "INT32", "UINT32", "INT64", "UINT64",
                *float8.NUMPY_OF)


def _numpy_name(name: str):
    try:
        return np.dtype(name)
    except TypeError:
        return None


def dtype_name(dtype) -> str:
    """The ONNX/PopART name of a PopART type name ("FLOAT") or a numpy dtype (np.float32)."""
    if isinstance(dtype, str):   # PopART's names, exactly ("float32" is numpy's: np.float32 is taken)
        if dtype in NUMPY_OF:
            return dtype
        hint = next((k for k, v in NUMPY_OF.items() if dtype.upper() == k or _numpy_name(dtype) == np.dtype(v)), None)
        raise popart_exception(f"TensorInfo: unknown data type {dtype!r}; PopART's names are {sorted(NUMPY_OF)}"
                               + (f" (did you mean {hint!r}?)" if hint else "") + ", or pass a numpy dtype")
    try:
        return NAME_OF[np.dtype(dtype)]
    except (TypeError, KeyError):
        raise popart_exception(f"TensorInfo: unknown data type {dtype!r}; expected one of "
                               f"{sorted(NUMPY_OF)} or a numpy dtype") from None


def lcase_name(name: str) -> str:
    """PopART's lower-case name of an ONNX type name: numpy's ("FLOAT" -> "float32")."""
    return "bool" if name == "BOOL" else np.dtype(NUMPY_OF[name]).name


class TensorInfo:
    """``TensorInfo("FLOAT", [4, 784])``, ``TensorInfo(dtype, shape)`` or ``TensorInfo(array)``."""

    def __init__(self, dtype_or_array, shape=None):
        if shape is None and isinstance(dtype_or_array, np.ndarray):
            self._dtype, self._shape = dtype_name(dtype_or_array.dtype), list(dtype_or_array.shape)
            return
        if shape is None:
            raise popart_exception("TensorInfo needs a shape: TensorInfo(\"FLOAT\", [4, 784]) or TensorInfo(array)")
        self._dtype = dtype_name(dtype_or_array)
        self._shape = [int(d) for d in shape]
        if any(d < 0 for d in self._shape):
            raise popart_exception(f"TensorInfo: shape {self._shape} has a negative dimension")

    def data_type(self) -> str:
        return self._dtype

    def shape(self) -> list:
        return list(self._shape)

    def rank(self) -> int:
        return len(self._shape)

    def nelms(self) -> int:
        return int(np.prod(self._shape, dtype=np.int64))

    def data_type_lcase(self) -> str:
        """PopART's lower-case name of the type: numpy's ("float32", "float16", "int32", "bool")."""
        return lcase_name(self._dtype)

    def nbytes(self) -> int:
        return self.nelms() * self.numpy_dtype().itemsize

    def dim(self, i) -> int:
        if not -len(self._shape) <= int(i) < len(self._shape):
            raise popart_exception(f"TensorInfo.dim({i}): the shape {self._shape} has rank {len(self._shape)}")
        return self._shape[int(i)]

    def set(self, dataType, shape=None) -> None:  # noqa: N803 - PopART's names
        """Change the type (and the shape)."""
        new = TensorInfo(dataType, self._shape if shape is None else shape)
        self._dtype, self._shape = new._dtype, new._shape

    def numpy_dtype(self):
        return np.dtype(NUMPY_OF[self._dtype])

    def __eq__(self, other):
        return isinstance(other, TensorInfo) and (self._dtype, self._shape) == (other._dtype, other._shape)

    def __ne__(self, other):
        return not self == other

    def __str__(self):
        return f"({self.data_type_lcase()},[{' '.join(map(str, self._shape))}])"

    def __repr__(self):
        return f"TensorInfo({self._dtype!r}, {self._shape})"
