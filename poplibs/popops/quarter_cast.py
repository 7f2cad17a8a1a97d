"""popops' casts to and from QUARTER, Poplar's 8-bit float (popsim/quarter.py): the
``popops::Cast1D<float,quarter>``, ``<half,quarter>``, ``<quarter,float>`` and
``<quarter,half>`` vertices (and their Cast2D forms), which PopLibs instantiates for
quarter (its elemwiseMiscCodelets.cpp). Each reads the QUARTER side's metadata: F143 (4
exponent bits, bias 8, 3 mantissa bits) or F152 (5, bias 16, 2), and the scale, so that
a byte's value is its decoded value times ``2**scale``.

To QUARTER, as PopLibs' codelets and the IPU's f32/f16 to f8 conversions do: the value
times ``2**-scale``, rounded to the nearest format value, ties to even (subnormals
included); NaN and infinities give the NaN byte 0x80, and so does a magnitude that
rounds past the format's largest value (240, 57344): the cast on an IPUModel, which has
no FP_CTL register and behaves as with its NANOO bit set (PopLibs' getNanoo). A result
of magnitude 0 is 0x00 (no negative zero). From QUARTER: 0x80 is NaN, any other byte its
exact value times ``2**scale`` (then rounded to HALF for a HALF destination).

PopLibs reaches the same results on ipu2, which has no f8 instructions, through HALF
(FLOAT to QUARTER: scaled, a sticky bit set below HALF's mantissa, cast to HALF, then to
QUARTER); popsim runs the one-vertex form. The vertex reads the metadata through a scalar
edge ``metadata`` where PopLibs' reads ``getMetadata()`` of its quarter field.

Each vertex decodes the metadata once (``metadata_format``, ``metadata_scale``), then
calls its direction's conversion (``to_quarter`` or ``from_quarter``, picked when the
class is made) on each element; the translator inlines these functions into the loop.
"""
import math

from popsim import FLOAT, HALF, QUARTER, QUARTER_METADATA, Input, MultiVertex, Output, Vector, VectorList, Vertex

from ..poputil import PoplibsError

__all__ = ["QUARTER_PAIRS", "quarter_cast_class"]

#: the pairs popsim's quarter casts take (PopLibs' also cast quarter to and from the 8-bit integers)
QUARTER_PAIRS = ((FLOAT, QUARTER), (HALF, QUARTER), (QUARTER, FLOAT), (QUARTER, HALF))


# -- the metadata byte: bit 7 the format (1: F152), bits 0-5 the scale (two's complement) ---------
def metadata_format(md):
    """1 for F152, 0 for F143."""
    return (md >> 7) & 1


def metadata_scale(md):
    """The scale, a power of two in -32..31."""
    scale = md & 63
    if scale >= 32:
        scale = scale - 64
    return scale


# -- the format's constants, from metadata_format's f152 -----------------------------------------
def mantissa_bits(f152):
    return 3 - f152


def exponent_bias(f152):
    return 8 + 8 * f152


def top_exponent(f152):
    """The largest biased exponent."""
    return 15 + 16 * f152


# -- one element's conversion, in the format f152 (metadata_format) and with the scale --------------
def to_quarter(value, scale, f152):
    """The byte of ``value`` times 2**-scale (see the module docstring)."""
    mbits = mantissa_bits(f152)
    bias = exponent_bias(f152)
    top = top_exponent(f152)
    x = float(value) * math.exp2(float(-scale))
    q = 128
    if not math.isnan(x) and not math.isinf(x):
        a = math.fabs(x)
        mag = 0
        if a >= math.exp2(float(1 - bias)):
            e = math.floor(math.log2(a))
            p = math.exp2(float(e))
            if a < p:
                e = e - 1
                p = p * 0.5
            elif a >= 2.0 * p:
                e = e + 1
                p = p * 2.0
            m = round((a / p - 1.0) * math.exp2(float(mbits)))
            if m == (1 << mbits):
                m = 0
                e = e + 1
            if e + bias > top:
                mag = 128
            else:
                mag = ((e + bias) << mbits) | m
        else:
            mag = round(a / math.exp2(float(1 - bias - mbits)))
        if mag == 0:
            q = 0
        elif mag < 128:
            q = mag | (128 if x < 0.0 else 0)
    return q


def from_quarter(byte, scale, f152):
    """The value of ``byte`` times 2**scale (NaN for 0x80)."""
    mbits = mantissa_bits(f152)
    bias = exponent_bias(f152)
    c = int(byte)
    v = math.nan
    if c != 128:
        ef = (c & 127) >> mbits
        m = c & ((1 << mbits) - 1)
        if ef == 0:
            v = float(m) * math.exp2(float(1 - bias - mbits))
        else:
            v = (1.0 + float(m) * math.exp2(float(-mbits))) * math.exp2(float(ef - bias))
        if c >= 128:
            v = -v
        v = v * math.exp2(float(scale))
    return v


def quarter_cast_class(src_type, dst_type, two_d: bool) -> type:
    """The vertex class of ``popops::Cast1D/2D<src,dst>`` for a QUARTER pair."""
    if (src_type, dst_type) not in QUARTER_PAIRS:
        raise PoplibsError(f"vertex template popops::Cast{'2D' if two_d else '1D'}: no cast from {src_type.name} to "
                           f"{dst_type.name}; popsim's quarter casts take FLOAT and HALF to and from QUARTER")
    convert = to_quarter if dst_type == QUARTER else from_quarter
    if two_d:
        return _cast_2d(src_type, dst_type, convert)

    class Cast1D(MultiVertex):
        src: Input[Vector[src_type]]
        dst: Output[Vector[dst_type]]
        metadata: Input[QUARTER_METADATA]

        def compute(self, worker_id):
            md = int(self.metadata)
            f152 = metadata_format(md)
            scale = metadata_scale(md)
            for i in range(worker_id, len(self.dst), self.num_workers()):
                self.dst[i] = convert(self.src[i], scale, f152)
            return True
    return Cast1D


def _cast_2d(src_type, dst_type, convert):
    class Cast2D(Vertex):
        src: Input[VectorList[src_type]]
        dst: Output[VectorList[dst_type]]
        metadata: Input[QUARTER_METADATA]

        def compute(self):
            md = int(self.metadata)
            f152 = metadata_format(md)
            scale = metadata_scale(md)
            for r in range(len(self.dst)):
                for i in range(len(self.dst[r])):
                    self.dst[r][i] = convert(self.src[r][i], scale, f152)
            return True
    return Cast2D


def metadata_edge(t):
    """The scalar the vertices' ``metadata`` edge reads: QUARTER tensor ``t``'s metadata."""
    md = t.metadata
    if md is None:   # an empty view of no variable: nothing to cast
        raise PoplibsError(f"popops.cast: {t.name!r} is a QUARTER tensor without metadata")
    return md.reshape(())


def check_quarter_pair(src, dst, what: str) -> None:
    """A PoplibsError unless popsim's quarter casts take ``src`` to ``dst``."""
    if (src.dtype, dst.dtype) == (QUARTER, QUARTER):
        raise PoplibsError(f"{what}: casting QUARTER to QUARTER (a change of metadata) is not supported; cast to "
                           "HALF and back")
    if (src.dtype, dst.dtype) not in QUARTER_PAIRS:
        other = dst.dtype if src.dtype == QUARTER else src.dtype
        raise PoplibsError(f"{what}: casting between QUARTER and {other.name} is not supported; popsim casts FLOAT "
                           "and HALF to and from QUARTER (cast through HALF)")

