"""ONNX's FLOAT8E4M3FNUZ and FLOAT8E5M2FNUZ, which are Graphcore's 8-bit floats: on the
device a QUARTER tensor (popsim/quarter.py) whose metadata is format F143 or F152 with
scale 0. Host arrays are ml_dtypes' float8_e4m3fnuz and float8_e5m2fnuz (onnx's numpy
types for them); their bytes are what is streamed, as PopART streams its FLOAT8 tensors as
UINT8 and copies them into QUARTER clones. The other float8 types (FLOAT8E4M3FN,
FLOAT8E5M2, FLOAT8E8M0) have infinities, a negative zero or no mantissa, which the IPU's
formats have not: they stay refused."""
import weakref

import numpy as np

import popsim
from popsim import QUARTER, UNSIGNED_CHAR, QuarterMetadata
from popsim.program import Copy

try:   # onnx's float8 numpy types; without them (no onnx, no ml_dtypes) there is no FNUZ
    import ml_dtypes
    NUMPY_OF = {"FLOAT8E4M3FNUZ": np.dtype(ml_dtypes.float8_e4m3fnuz),
                "FLOAT8E5M2FNUZ": np.dtype(ml_dtypes.float8_e5m2fnuz)}
except ImportError:  # pragma: no cover - onnx brings ml_dtypes
    NUMPY_OF = {}

#: ONNX type name -> the QUARTER format
FORMAT_OF = {"FLOAT8E4M3FNUZ": QuarterMetadata.Format.F143, "FLOAT8E5M2FNUZ": QuarterMetadata.Format.F152}
#: the largest finite value of each (Cast's saturation bound)
LARGEST = {"FLOAT8E4M3FNUZ": 240.0, "FLOAT8E5M2FNUZ": 57344.0}


def name_of(dtype):
    """The ONNX name of a float8 numpy dtype popsim.popart runs, or None."""
    return next((k for k, v in NUMPY_OF.items() if v == np.dtype(dtype)), None)


def is_float8(dtype) -> bool:
    return name_of(dtype) is not None


# graph -> {ONNX name: its metadata tensor}
_MADE: "weakref.WeakKeyDictionary[popsim.Graph, dict]" = weakref.WeakKeyDictionary()


def metadata(graph, name: str):
    """``graph``'s QUARTER_METADATA constant for ONNX type ``name`` (scale 0; made once)."""
    made = _MADE.setdefault(graph, {})
    if name not in made:
        made[name] = popsim.create_constant_metadata_tensor(graph, FORMAT_OF[name], 0, f"quarterMetadata/{name}")
    return made[name]


def as_quarter(graph, raw, md, prog):
    """A QUARTER clone of UNSIGNED_CHAR tensor ``raw`` holding its bytes (a Copy into the
    clone's bytes, as PopART turns its UINT8-held FLOAT8 tensors into QUARTER ones)."""
    q = graph.clone(raw, f"{raw.name}/quarter", QUARTER, metadata=md)
    prog.add(Copy(raw, q.reinterpret(UNSIGNED_CHAR)))
    return q


def as_bytes(array: np.ndarray) -> np.ndarray:
    """A float8 array's bytes (uint8, the same memory); other arrays unchanged."""
    return array.view(np.uint8) if is_float8(array.dtype) else array
