"""popart.TensorInfo: an ONNX data type and shape, and the types popsim.popart runs."""
import numpy as np

from .errors import popart_exception

#: ONNX/PopART type names -> numpy dtype, for the types a model may hold
NUMPY_OF = {"FLOAT": np.float32, "FLOAT16": np.float16, "DOUBLE": np.float64, "INT32": np.int32,
            "INT64": np.int64, "UINT32": np.uint32, "INT8": np.int8, "UINT8": np.uint8, "INT16": np.int16,
            "UINT16": np.uint16, "BOOL": np.bool_}
#: numpy dtype -> the ONNX/PopART name
NAME_OF = {np.dtype(v): k for k, v in NUMPY_OF.items()}
#: the types that may live on the device (int64 and uint64 as INT and UNSIGNED_INT; lowering.py)
DEVICE_TYPES = ("FLOAT", "FLOAT16", "BOOL", "INT8", "UINT8", "INT16", "UINT16", "INT32", "UINT32", "INT64", "UINT64")


def dtype_name(dtype) -> str:
    """The ONNX/PopART name of a numpy dtype or type name ("FLOAT", "float32", np.float32)."""
    if isinstance(dtype, str) and dtype.upper() in NUMPY_OF:
        return dtype.upper()
    try:
        return NAME_OF[np.dtype(dtype)]
    except (TypeError, KeyError):
        raise popart_exception(f"TensorInfo: unknown data type {dtype!r}; expected one of "
                               f"{sorted(NUMPY_OF)} or a numpy dtype") from None


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

    def numpy_dtype(self):
        return np.dtype(NUMPY_OF[self._dtype])

    def __eq__(self, other):
        return isinstance(other, TensorInfo) and (self._dtype, self._shape) == (other._dtype, other._shape)

    def __repr__(self):
        return f"TensorInfo({self._dtype!r}, {self._shape})"
