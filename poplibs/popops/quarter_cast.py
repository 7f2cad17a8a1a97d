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
"""
from popsim import FLOAT, HALF, QUARTER, QUARTER_METADATA

from ..poputil import PoplibsError
from ..poputil.generated_vertex import vertex_from_source

__all__ = ["QUARTER_PAIRS", "quarter_cast_class"]

#: the pairs popsim's quarter casts take (PopLibs' also cast quarter to and from the 8-bit integers)
QUARTER_PAIRS = ((FLOAT, QUARTER), (HALF, QUARTER), (QUARTER, FLOAT), (QUARTER, HALF))

# the metadata byte: bit 7 the format (1: F152), bits 0-5 the scale (two's complement)
_METADATA = """\
        md = int(self.metadata)
        f152 = (md >> 7) & 1
        scale = md & 63
        if scale >= 32:
            scale = scale - 64
        mbits = 3 - f152
        bias = 8 + 8 * f152
        top = 15 + 16 * f152
"""

# {x} (a float) to the byte {q}
_ENCODE = """\
{ind}x = float({src}) * math.exp2(float(-scale))
{ind}q = 128
{ind}if not math.isnan(x) and not math.isinf(x):
{ind}    a = math.fabs(x)
{ind}    mag = 0
{ind}    if a >= math.exp2(float(1 - bias)):
{ind}        e = math.floor(math.log2(a))
{ind}        p = math.exp2(float(e))
{ind}        if a < p:
{ind}            e = e - 1
{ind}            p = p * 0.5
{ind}        elif a >= 2.0 * p:
{ind}            e = e + 1
{ind}            p = p * 2.0
{ind}        m = round((a / p - 1.0) * math.exp2(float(mbits)))
{ind}        if m == (1 << mbits):
{ind}            m = 0
{ind}            e = e + 1
{ind}        if e + bias > top:
{ind}            mag = 128
{ind}        else:
{ind}            mag = ((e + bias) << mbits) | m
{ind}    else:
{ind}        mag = round(a / math.exp2(float(1 - bias - mbits)))
{ind}    if mag == 0:
{ind}        q = 0
{ind}    elif mag < 128:
{ind}        q = mag | (128 if x < 0.0 else 0)
{dst} = q
"""

# the byte {src} to its value
_DECODE = """\
{ind}c = int({src})
{ind}v = math.nan
{ind}if c != 128:
{ind}    ef = (c & 127) >> mbits
{ind}    m = c & ((1 << mbits) - 1)
{ind}    if ef == 0:
{ind}        v = float(m) * math.exp2(float(1 - bias - mbits))
{ind}    else:
{ind}        v = (1.0 + float(m) * math.exp2(float(-mbits))) * math.exp2(float(ef - bias))
{ind}    if c >= 128:
{ind}        v = -v
{ind}    v = v * math.exp2(float(scale))
{dst} = v
"""

_ONE_D = """\
class V(MultiVertex):
    src: Input[Vector[SRC]]
    dst: Output[Vector[DST]]
    metadata: Input[QUARTER_METADATA]

    def compute(self, worker_id):
{metadata}
        for i in range(worker_id, len(self.dst), self.num_workers()):
{body}
        return True
"""

_TWO_D = """\
class V(Vertex):
    src: Input[VectorList[SRC]]
    dst: Output[VectorList[DST]]
    metadata: Input[QUARTER_METADATA]

    def compute(self):
{metadata}
        for r in range(len(self.dst)):
            for i in range(len(self.dst[r])):
{body}
        return True
"""


def quarter_cast_class(src_type, dst_type, two_d: bool) -> type:
    """The vertex class of ``popops::Cast1D/2D<src,dst>`` for a QUARTER pair."""
    if (src_type, dst_type) not in QUARTER_PAIRS:
        raise PoplibsError(f"vertex template popops::Cast{'2D' if two_d else '1D'}: no cast from {src_type.name} to "
                           f"{dst_type.name}; popsim's quarter casts take FLOAT and HALF to and from QUARTER")
    index = "[r][i]" if two_d else "[i]"
    ind = " " * (16 if two_d else 12)
    body = (_ENCODE if dst_type == QUARTER else _DECODE).format(ind=ind, src=f"self.src{index}",
                                                               dst=f"{ind}self.dst{index}")
    source = (_TWO_D if two_d else _ONE_D).format(metadata=_METADATA, body=body.rstrip("\n"))
    label = f"popops Cast{'2D' if two_d else '1D'} {src_type.name} {dst_type.name}"
    return vertex_from_source(source, label, SRC=src_type, DST=dst_type, QUARTER=QUARTER,
                              QUARTER_METADATA=QUARTER_METADATA)


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

