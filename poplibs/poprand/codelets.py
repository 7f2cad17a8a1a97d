"""poprand's vertices: Philox4x32-10, a counter-based generator, evaluated per element.

Element ``j`` of an op's output (``j`` its flat index in the reference) takes its words
from the Philox block of counter ``(j // per_block, stream, modifier, attempt)`` under key
``(seed[0], seed[1])``: word ``j % 4`` of it where one word makes a value (per_block 4),
pair ``j % 2`` for normal (per_block 2), all four for truncated normal (per_block 1)
(docs/poplibs.md, section poprand, gives each distribution's formula). A vertex gets the
4-word seed state ``[seed0, seed1, modifier, stream]`` and the flat index of its first
element (``offset``), so its results depend on neither the tile it runs on nor how the
elements are split between vertices.

Every distribution's vertex (and dropout's) is one class, made by ``generator_class``, that
holds the Philox rounds once: the kind's fields and value code sit under ``if``s on the
kind's number (``kind_id``), which the translator decides for each instantiation, and the
value code calls the word-to-number functions below (``unit``, ``radius``, ``angle``,
``uniform_int``), which it inlines.
"""
import math

import numpy as np

import popsim
from popsim import FLOAT, HALF, INT, InOut, Input, Output, Vector, Vertex, vertex_template

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
# Each kind's number, as compute tests it (vertex code compares numbers, not strings).
KINDS = tuple(ELEMENTS_PER_BLOCK)
UNIFORM, UNIFORM_INT, BERNOULLI, LOG_UNIFORM, DROPOUT, NORMAL, TRUNCATED_NORMAL = range(len(KINDS))


# -- a Philox word to a number (called from compute) ----------------------------------------------
def unit(w):
    """The word's top 24 bits as a float in [0, 1)."""
    return float(w >> 8) * TWO_POW_M24


def radius(w):
    """Box-Muller's radius sqrt(-2 ln v) of the word's v in (0, 1]."""
    return math.sqrt(-2.0 * math.log((float(w >> 8) + 1.0) * TWO_POW_M24))


def angle(w):
    """Box-Muller's angle: the word's unit value times 2 pi."""
    return TWO_PI * unit(w)


def uniform_int(w, lo, span):
    """lo plus the word scaled to [0, span): the high word of w * span."""
    return np.int64(lo) + np.int64((np.uint64(w) * span) >> 32)


def generator_class(kind: str, dtype):
    """The vertex class of one distribution (or dropout) and output type. Plain state: ``a``
    scale (or std), ``b`` shift (or mean), ``c`` alpha / probability / lower clamp, ``d``
    upper clamp; ``ilo`` and ``ispan`` the integer range (uniform_int); dropout's ``keep``
    and ``scale``."""
    if kind not in ELEMENTS_PER_BLOCK:
        raise ValueError(f"unknown poprand distribution {kind!r}; known: {', '.join(ELEMENTS_PER_BLOCK)}")
    kind_id = KINDS.index(kind)
    per_block = ELEMENTS_PER_BLOCK[kind]
    attempts = TRUNCATED_NORMAL_ATTEMPTS if kind == "truncated_normal" else 1

    class Generator(Vertex):
        out: Output[Vector[dtype]]
        state: Input[Vector[U32]]
        offset: U32
        if kind_id == DROPOUT:
            in_: Input[Vector[dtype]]
            keep: float
            scale: float
        else:
            a: float
            b: float
            c: float
            d: float
            ilo: int
            ispan: popsim.UNSIGNED_LONGLONG

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
                part: U32 = g % per_block  # which of the block's elements this is
                for attempt in range(attempts):
                    if per_block == 1 or i == 0 or part == 0:
                        # Philox4x32-10 of the counter (block, stream, modifier, attempt).
                        x0: U32 = g // per_block
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
                        wa = y1 if per_block == 4 else y2
                        wb = y3
                    if part == 2:
                        wa = y2
                    if part == 3:
                        wa = y3
                    u = unit(wa)
                    if kind_id == UNIFORM:
                        vf = u * self.a + self.b
                    elif kind_id == UNIFORM_INT:
                        vi = uniform_int(wa, self.ilo, self.ispan)
                    elif kind_id == BERNOULLI:
                        vf = 1.0 if u < self.c else 0.0
                    elif kind_id == LOG_UNIFORM:
                        vf = min(max(math.exp(u * self.a + self.b), self.c), self.d)
                    elif kind_id == DROPOUT:
                        vf = self.in_[i] * self.scale if u < self.keep else 0.0
                    elif kind_id == NORMAL:
                        r0 = radius(wa)
                        vf = r0 * math.cos(angle(wb)) * self.a + self.b
                    else:  # truncated normal
                        if self.c >= 1.0:  # normal candidates: cos and sin of two Box-Muller pairs
                            for p in range(4):
                                wc = y0 if p < 2 else y2
                                wd = y1 if p < 2 else y3
                                rp = radius(wc)
                                phi = angle(wd)
                                z = rp * math.cos(phi) if p % 2 == 0 else rp * math.sin(phi)
                                if abs(z) <= self.c:
                                    done = True
                                    break
                        else:  # uniform candidates in [-alpha, alpha), kept with probability exp(-z*z/2)
                            for p in range(2):
                                wz = y0 if p == 0 else y2
                                wu = y1 if p == 0 else y3
                                z = (unit(wz) * 2.0 - 1.0) * self.c
                                if unit(wu) < math.exp(-(z * z) * 0.5):
                                    done = True
                                    break
                        if done:
                            break
                if kind_id == UNIFORM_INT:
                    self.out[i] = vi
                elif kind_id == TRUNCATED_NORMAL:
                    if not done:
                        z = min(max(z, -self.c), self.c)
                    self.out[i] = z * self.a + self.b
                else:
                    self.out[i] = vf
            return True
    return Generator


@vertex_template("poprand::Uniform", dtype=[FLOAT, HALF, INT])
def Uniform(dtype):  # noqa: N802 - Poplar's vertex name
    return generator_class("uniform_int" if dtype is INT else "uniform", dtype)


@vertex_template("poprand::Normal", dtype=[FLOAT, HALF])
def Normal(dtype):  # noqa: N802 - Poplar's vertex name
    return generator_class("normal", dtype)


@vertex_template("poprand::TruncatedNormal", dtype=[FLOAT, HALF])
def TruncatedNormal(dtype):  # noqa: N802 - Poplar's vertex name
    return generator_class("truncated_normal", dtype)


@vertex_template("poprand::Bernoulli", dtype=[FLOAT, HALF, INT])
def Bernoulli(dtype):  # noqa: N802 - Poplar's vertex name
    return generator_class("bernoulli", dtype)


@vertex_template("poprand::LogUniform", dtype=[FLOAT, HALF])
def LogUniform(dtype):  # noqa: N802 - Poplar's vertex name
    return generator_class("log_uniform", dtype)


@vertex_template("poprand::Dropout", dtype=[FLOAT, HALF])
def Dropout(dtype):  # noqa: N802 - Poplar's vertex name
    return generator_class("dropout", dtype)


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
