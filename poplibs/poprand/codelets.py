"""poprand's vertices: Philox4x32-10, a counter-based generator, evaluated per element.

Element ``j`` of an op's output (``j`` its flat index in the reference) takes its words
from the Philox block of counter ``(j // per_block, stream, modifier, attempt)`` under key
``(seed[0], seed[1])``: word ``j % 4`` of it where one word makes a value (per_block 4),
pair ``j % 2`` for normal (per_block 2), all four for truncated normal (per_block 1) (docs/poplibs.md, section poprand, gives
each distribution's formula). A vertex gets the 4-word seed state ``[seed0, seed1,
modifier, stream]`` and the flat index of its first element (``offset``), so its results
depend on neither the tile it runs on nor how the elements are split between vertices.

Vertex code cannot call helper functions, so every distribution's vertex (and dropout's)
is made from one source (``_SOURCE``) holding the Philox rounds once.
"""
import math
import textwrap

import numpy as np

import popsim
from popsim import FLOAT, HALF, INT, InOut, Input, Output, Vector, Vertex, vertex_template
from popsim.poputil.generated_vertex import vertex_from_source

U32 = popsim.UNSIGNED_INT
# Philox4x32's multipliers and Weyl key increments (Salmon et al., SC11).
PHILOX_M0 = np.uint64(0xD2511F53)
PHILOX_M1 = np.uint64(0xCD9E8D57)
PHILOX_W0 = np.uint32(0x9E3779B9)
PHILOX_W1 = np.uint32(0xBB67AE85)
TWO_POW_M24 = 2.0 ** -24  # exact in float32: a word's top 24 bits times this is in [0, 1)
TWO_PI = 2.0 * math.pi
# Truncated normal: Philox blocks tried per element before the last candidate is clamped.
TRUNCATED_NORMAL_ATTEMPTS = 16

# Elements one Philox block serves: one word each, a pair of words each (normal: a
# Box-Muller pair), or all four words, fresh blocks per attempt (truncated normal).
ELEMENTS_PER_BLOCK = {"uniform": 4, "uniform_int": 4, "bernoulli": 4, "log_uniform": 4, "dropout": 4, "normal": 2,
                      "truncated_normal": 1}


# One vertex source for every distribution and dropout: the Philox block and the choice of
# an element's words are written once; @FIELDS@ and @VALUE@ are the kind's own fields and
# value code (vertex code cannot call helpers, and type-checks branches a kind never takes).
_SOURCE = """class V(Vertex):
    out: Output[Vector[T]]
    state: Input[Vector[U32]]
    offset: U32
@FIELDS@

    def compute(self):
        key0: U32 = self.state[0]
        key1: U32 = self.state[1]
        modifier: U32 = self.state[2]
        stream: U32 = self.state[3]
        y0: U32 = 0
        y1: U32 = 0
        y2: U32 = 0
        y3: U32 = 0
        for i in range(len(self.out)):
            vf = 0.0
            vi = np.int64(0)
            z = 0.0
            done = False
            g: U32 = self.offset + i
            part: U32 = g % @PER_BLOCK@  # which of the block's elements this is
            for attempt in range(@ATTEMPTS@):
                if @PER_BLOCK@ == 1 or i == 0 or part == 0:
                    # Philox4x32-10 of the counter (block, stream, modifier, attempt).
                    x0: U32 = g // @PER_BLOCK@
                    x1: U32 = stream
                    x2: U32 = modifier
                    x3: U32 = attempt
                    k0: U32 = key0
                    k1: U32 = key1
                    for r in range(10):
                        if r > 0:
                            k0 += PHILOX_W0
                            k1 += PHILOX_W1
                        p0 = np.uint64(x0) * PHILOX_M0
                        p1 = np.uint64(x2) * PHILOX_M1
                        x0 = np.uint32(p1 >> 32) ^ x1 ^ k0
                        x1 = np.uint32(p1)
                        x2 = np.uint32(p0 >> 32) ^ x3 ^ k1
                        x3 = np.uint32(p0)
                    y0 = x0
                    y1 = x1
                    y2 = x2
                    y3 = x3
                # This element's words: the block's word `part` (four elements per block),
                # its pair `part` (normal: two per block), or all four.
                wa: U32 = y0
                wb: U32 = y1
                if part == 1:
                    wa = y1 if @PER_BLOCK@ == 4 else y2
                    wb = y3
                if part == 2:
                    wa = y2
                if part == 3:
                    wa = y3
                u = float(wa >> 8) * TWO_POW_M24
@VALUE@
@STORE@
        return True
"""
_GENERATOR_FIELDS = """    a: float
    b: float
    c: float
    d: float
    ilo: int
    ispan: popsim.UNSIGNED_LONGLONG"""
_VALUES = {
    "uniform": "vf = u * self.a + self.b",
    "uniform_int": "vi = np.int64(self.ilo) + np.int64((np.uint64(wa) * self.ispan) >> 32)",
    "bernoulli": "vf = 1.0 if u < self.c else 0.0",
    "log_uniform": "vf = min(max(math.exp(u * self.a + self.b), self.c), self.d)",
    "normal": """r0 = math.sqrt(-2.0 * math.log((float(wa >> 8) + 1.0) * TWO_POW_M24))
vf = r0 * math.cos(TWO_PI * (float(wb >> 8) * TWO_POW_M24)) * self.a + self.b""",
    "truncated_normal": """if self.c >= 1.0:  # normal candidates: cos and sin of two Box-Muller pairs
    for p in range(4):
        wc = y0 if p < 2 else y2
        wd = y1 if p < 2 else y3
        rp = math.sqrt(-2.0 * math.log((float(wc >> 8) + 1.0) * TWO_POW_M24))
        angle = TWO_PI * (float(wd >> 8) * TWO_POW_M24)
        z = rp * math.cos(angle) if p % 2 == 0 else rp * math.sin(angle)
        if abs(z) <= self.c:
            done = True
            break
else:  # uniform candidates in [-alpha, alpha), kept with probability exp(-z*z/2)
    for p in range(2):
        wz = y0 if p == 0 else y2
        wu = y1 if p == 0 else y3
        z = (float(wz >> 8) * TWO_POW_M24 * 2.0 - 1.0) * self.c
        if float(wu >> 8) * TWO_POW_M24 < math.exp(-(z * z) * 0.5):
            done = True
            break
if done:
    break""",
    "dropout": "vf = self.in_[i] * self.scale if u < self.keep else 0.0",
}
_STORES = {
    "uniform_int": "self.out[i] = vi",
    "truncated_normal": """if not done:
    z = min(max(z, -self.c), self.c)
self.out[i] = z * self.a + self.b""",
}


def vertex_source(kind: str) -> str:
    """The source of the vertex for distribution ``kind`` (or dropout), over elements of T."""
    if kind not in ELEMENTS_PER_BLOCK:
        raise ValueError(f"unknown poprand distribution {kind!r}; known: {', '.join(ELEMENTS_PER_BLOCK)}")
    fields = ("    in_: Input[Vector[T]]\n    keep: float\n    scale: float" if kind == "dropout"
              else _GENERATOR_FIELDS)
    return (_SOURCE.replace("@FIELDS@", fields)
            .replace("@PER_BLOCK@", str(ELEMENTS_PER_BLOCK[kind]))
            .replace("@ATTEMPTS@", str(TRUNCATED_NORMAL_ATTEMPTS if kind == "truncated_normal" else 1))
            .replace("@VALUE@", textwrap.indent(_VALUES[kind], " " * 16))
            .replace("@STORE@", textwrap.indent(_STORES.get(kind, "self.out[i] = vf"), " " * 12)))


def generator_class(kind: str, dtype):
    """The vertex class of one distribution (or dropout) and output type. Plain state: ``a``
    scale (or std), ``b`` shift (or mean), ``c`` alpha / probability / lower clamp, ``d``
    upper clamp; ``ilo`` and ``ispan`` the integer range (uniform_int); dropout's ``keep``
    and ``scale``."""
    return vertex_from_source(vertex_source(kind), f"poprand {kind} {dtype.name}", T=dtype, U32=U32,
                              PHILOX_M0=PHILOX_M0, PHILOX_M1=PHILOX_M1, PHILOX_W0=PHILOX_W0,
                              PHILOX_W1=PHILOX_W1, TWO_POW_M24=TWO_POW_M24, TWO_PI=TWO_PI, popsim=popsim)


def _template(kind_of, dtypes, name):
    def factory(dtype):
        return generator_class(kind_of(dtype), dtype)
    factory.__name__ = name.split("::")[1]
    return vertex_template(name, dtype=dtypes)(factory)


Uniform = _template(lambda t: "uniform_int" if t is INT else "uniform", [FLOAT, HALF, INT], "poprand::Uniform")
Normal = _template(lambda t: "normal", [FLOAT, HALF], "poprand::Normal")
TruncatedNormal = _template(lambda t: "truncated_normal", [FLOAT, HALF], "poprand::TruncatedNormal")
Bernoulli = _template(lambda t: "bernoulli", [FLOAT, HALF, INT], "poprand::Bernoulli")
LogUniform = _template(lambda t: "log_uniform", [FLOAT, HALF], "poprand::LogUniform")
Dropout = _template(lambda t: "dropout", [FLOAT, HALF], "poprand::Dropout")


class SetSeed(Vertex):
    """The seed state [seed0, seed1, modifier, stream 0] from a seed tensor and a modifier."""
    vertex_name = "poprand::SetSeed"
    seed: Input[Vector[U32]]
    state: Output[Vector[U32]]
    modifier: U32

    def compute(self):
        self.state[0] = self.seed[0]
        self.state[1] = self.seed[1]
        self.state[2] = self.modifier
        self.state[3] = 0


class NextStream(Vertex):
    """Moves the graph's seed state to its next stream after an op that used it, as the
    hardware generators move on: the next op draws different numbers."""
    vertex_name = "poprand::NextStream"
    state: InOut[Vector[U32]]

    def compute(self):
        self.state[3] = self.state[3] + 1
