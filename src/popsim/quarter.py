"""Poplar's 8-bit float, QUARTER, and the metadata each QUARTER tensor carries.

A QUARTER element is one byte: a sign bit, then exponent and mantissa bits in one of two
formats, as Graphcore's IPUs (Poplar SDK 3.2+) define them and ONNX names them:

- ``F143``: 4 exponent bits (bias 8), 3 mantissa bits: ONNX's FLOAT8E4M3FNUZ, largest 240;
- ``F152``: 5 exponent bits (bias 16), 2 mantissa bits: ONNX's FLOAT8E5M2FNUZ, largest 57344.

Neither has infinities or a negative zero; the byte 0x80 is the one NaN. Exponent field 0
holds the subnormals. A QUARTER tensor's value is its bytes' value times ``2**scale``.

Which format and scale is in the tensor's metadata: a one-element QUARTER_METADATA tensor
holding ``QuarterMetadata(format, scale).binary`` (bit 7 the format, 1 for F152; bits 0-5
the scale, a 6-bit two's complement number in [-32, 31]), given when the QUARTER tensor is
made (``graph.add_variable(QUARTER, shape, name, metadata=md)``, ``graph.clone(t,
dtype=QUARTER, metadata=md)``) and read back with ``tensor.metadata`` (Poplar's
``getMetadata()``). ``create_constant_metadata_tensor(graph, format, scale)`` makes one
(Poplar's ``createConstantMetadataTensor``). popops.cast converts FLOAT and HALF to and
from QUARTER on the tiles (poplibs/popops/quarter_cast.py). Host arrays of a QUARTER tensor
(reads, writes, streams) are its bytes, numpy uint8.
"""
from __future__ import annotations

import enum
from typing import TYPE_CHECKING

from . import errors
from .types import QUARTER, QUARTER_METADATA

if TYPE_CHECKING:  # only for annotations: graph.py imports this module
    from .graph import Graph
    from .tensor import Tensor

__all__ = ["QuarterMetadata", "create_constant_metadata_tensor"]

SCALE_MIN, SCALE_MAX = -32, 31


class QuarterMetadata:
    """A QUARTER tensor's format and scale, and their byte (``binary``)."""

    class Format(enum.IntEnum):
        F143 = 0
        F152 = 1

    __slots__ = ("format", "scale")

    def __init__(self, format: QuarterMetadata.Format, scale: int = 0):  # noqa: A002 - Poplar's name
        if not isinstance(format, QuarterMetadata.Format):
            raise errors.TypeError(f"QuarterMetadata: format must be QuarterMetadata.Format.F143 or F152, found "
                                   f"{format!r}")
        if isinstance(scale, bool) or not isinstance(scale, int) or not SCALE_MIN <= scale <= SCALE_MAX:
            raise errors.TypeError(f"QuarterMetadata: scale must be an int in [{SCALE_MIN}, {SCALE_MAX}] (a 6-bit "
                                   f"signed number), found {scale!r}")
        self.format, self.scale = format, scale

    @property
    def binary(self) -> int:
        """The QUARTER_METADATA byte (Poplar's ``getBinary()``)."""
        return (int(self.format) << 7) | (self.scale & 0x3F)

    @classmethod
    def from_binary(cls, byte: int) -> "QuarterMetadata":
        scale = int(byte) & 0x3F
        return cls(cls.Format((int(byte) >> 7) & 1), scale - 64 if scale >= 32 else scale)

    def __eq__(self, other) -> bool:
        return isinstance(other, QuarterMetadata) and (self.format, self.scale) == (other.format, other.scale)

    def __hash__(self) -> int:
        return hash((self.format, self.scale))

    def __repr__(self) -> str:
        return f"QuarterMetadata({self.format.name}, {self.scale})"


def create_constant_metadata_tensor(graph: Graph, format: QuarterMetadata.Format, scale: int = 0,  # noqa: A002
                                    name: str = "quarterMetadata") -> Tensor:
    """A one-element QUARTER_METADATA constant on tile 0 holding ``format`` and ``scale``."""
    md = QuarterMetadata(format, scale)
    t = graph.add_constant(QUARTER_METADATA, (1,), md.binary, name)
    graph.set_tile_mapping(t, 0)
    return t


def checked_metadata(dtype, metadata, owns, what: str):
    """``metadata`` for a new tensor of ``dtype``: a QUARTER_METADATA tensor of one element
    of this graph (``owns``) for QUARTER, None otherwise; anything else a TensorCreationError."""
    if dtype != QUARTER:
        if metadata is not None:
            raise errors.TensorCreationError(f"{what}: metadata goes with QUARTER tensors only, not {dtype.name}")
        return None
    if metadata is None:
        raise errors.TensorCreationError(f"{what}: a QUARTER tensor needs its metadata: pass metadata=, a "
                                         "QUARTER_METADATA tensor (popsim.create_constant_metadata_tensor(graph, "
                                         "popsim.QuarterMetadata.Format.F143, 0))")
    if not owns(metadata) or metadata.dtype != QUARTER_METADATA or metadata.num_elements() != 1:
        shown = f"{metadata.dtype.name} tensor of shape {list(metadata.shape)}" if owns(metadata) else \
            type(metadata).__name__ + (" of another graph" if hasattr(metadata, "dtype") else "")
        raise errors.TensorCreationError(f"{what}: metadata must be a one-element QUARTER_METADATA tensor of this "
                                         f"graph, found a {shown}")
    return metadata
