"""Host reference of poprand's generator, written independently of the vertex codelets:
Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC11) in
numpy over whole arrays of counters, and the distributions built on it, in float32 with
the same operations in the same order as docs/poplibs.md specifies (math functions
through Python's math module, i.e. the C library in double, rounded to float32 as vertex
code computes them). Tests compare the device's results with it bit for bit."""
import math

import numpy as np

M0, M1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
W0, W1 = np.uint32(0x9E3779B9), np.uint32(0xBB67AE85)
MASK32 = np.uint64(0xFFFFFFFF)
TWO_POW_M24 = np.float32(2.0 ** -24)


def philox4x32_10(c0, c1, c2, c3, k0, k1):
    """Four arrays of uint32 outputs for arrays of counter words (broadcast) and a key."""
    c = [np.asarray(x, np.uint32) for x in np.broadcast_arrays(c0, c1, c2, c3)]
    k0, k1 = np.uint32(k0), np.uint32(k1)
    with np.errstate(over="ignore"):
        for r in range(10):
            if r:
                k0, k1 = np.uint32(k0 + W0), np.uint32(k1 + W1)
            p0 = c[0].astype(np.uint64) * M0
            p1 = c[2].astype(np.uint64) * M1
            hi0, lo0 = (p0 >> np.uint64(32)).astype(np.uint32), (p0 & MASK32).astype(np.uint32)
            hi1, lo1 = (p1 >> np.uint64(32)).astype(np.uint32), (p1 & MASK32).astype(np.uint32)
            c = [hi1 ^ c[1] ^ k0, lo1, hi0 ^ c[3] ^ k1, lo0]
    return c


def words(n, key, modifier, stream=0, attempt=0, per_block=1):
    """The four Philox words each of elements 0..n-1 take them from: element j uses the
    block of counter (j // per_block, stream, modifier, attempt)."""
    idx = (np.arange(n, dtype=np.uint64) // np.uint64(per_block)).astype(np.uint32)
    return philox4x32_10(idx, stream, modifier, attempt, key[0], key[1])


def word(n, key, modifier, stream=0):
    """Each element's own word: word j % 4 of block j // 4 (four elements per block)."""
    w = np.stack(words(n, key, modifier, stream, per_block=4))
    return w[np.arange(n) % 4, np.arange(n)]


def pair(n, key, modifier, stream=0):
    """Each element's pair of words: pair j % 2 of block j // 2 ((w0, w1) or (w2, w3))."""
    w = np.stack(words(n, key, modifier, stream, per_block=2))
    first = 2 * (np.arange(n) % 2)
    return w[first, np.arange(n)], w[first + 1, np.arange(n)]


def unit(w):
    """[0, 1) with 24 bits: (w >> 8) * 2**-24, exact in float32."""
    return (w >> np.uint32(8)).astype(np.float32) * TWO_POW_M24


def unit_open_low(w):
    """(0, 1]: ((w >> 8) + 1) * 2**-24."""
    return ((w >> np.uint32(8)).astype(np.float32) + np.float32(1.0)) * TWO_POW_M24


def libm(fn, x):
    """fn (a math function) of each float32 element, in double, rounded to float32."""
    flat = np.asarray(x, np.float32).reshape(-1)
    return np.array([fn(float(v)) for v in flat], np.float32).reshape(np.shape(x))


def uniform(n, key, modifier, lo, hi, stream=0):
    scale = np.float32(hi - lo)
    return unit(word(n, key, modifier, stream)) * scale + np.float32(lo)


def uniform_int(n, key, modifier, lo, hi, stream=0):
    span = np.uint64(hi - lo + 1)
    w = word(n, key, modifier, stream).astype(np.uint64)
    with np.errstate(over="ignore"):
        return (np.int64(lo) + ((w * span) >> np.uint64(32)).astype(np.int64)).astype(np.int32)


def box_muller(wa, wb, use_sin=False):
    """A standard normal from two words: sqrt(-2 log u1) * cos(2 pi u2) (or sin)."""
    r = libm(math.sqrt, np.float32(-2.0) * libm(math.log, unit_open_low(wa)))
    angle = np.float32(2 * math.pi) * unit(wb)
    return r * libm(math.sin if use_sin else math.cos, angle)


def normal(n, key, modifier, mean, std, stream=0):
    wa, wb = pair(n, key, modifier, stream)
    return box_muller(wa, wb) * np.float32(std) + np.float32(mean)


def truncated_normal(n, key, modifier, mean, std, alpha, stream=0, attempts=16):
    """Rejection sampling, element by element: for alpha >= 1 normal candidates kept when
    |z| <= alpha (four per Philox call: the cos and sin of two Box-Muller pairs); below 1
    uniform candidates z in [-alpha, alpha) kept when u < exp(-z*z/2) (two per call). After
    ``attempts`` calls the last candidate is clamped to [-alpha, alpha]."""
    a = np.float32(alpha)
    out = np.zeros(n, np.float32)
    todo = np.ones(n, bool)
    z = np.zeros(n, np.float32)
    for attempt in range(attempts):
        w = words(n, key, modifier, stream, attempt)
        if alpha >= 1.0:
            cands = [box_muller(w[0], w[1]), box_muller(w[0], w[1], True),
                     box_muller(w[2], w[3]), box_muller(w[2], w[3], True)]
            tests = [np.abs(c) <= a for c in cands]
        else:
            cands, tests = [], []
            for wz, wu in ((w[0], w[1]), (w[2], w[3])):
                c = (unit(wz) * np.float32(2.0) - np.float32(1.0)) * a
                cands.append(c)
                tests.append(unit(wu) < libm(math.exp, -(c * c) * np.float32(0.5)))
        for c, ok in zip(cands, tests):
            take = todo & ok
            out[take] = c[take]
            todo &= ~ok
            z[todo] = c[todo]
    out[todo] = np.clip(z[todo], -a, a)
    return out * np.float32(std) + np.float32(mean)


def bernoulli(n, key, modifier, prob, stream=0):
    return unit(word(n, key, modifier, stream)) < np.float32(prob)


def log_uniform(n, key, modifier, lo, hi, stream=0):
    llo = np.float32(math.log(lo))
    span = np.float32(math.log(hi) - math.log(lo))
    v = libm(math.exp, unit(word(n, key, modifier, stream)) * span + llo)
    return np.minimum(np.maximum(v, np.float32(lo)), np.float32(hi))


def dropout(x, key, modifier, keep_prob, scale, stream=0):
    x = np.asarray(x, np.float32).reshape(-1)
    keep = bernoulli(x.size, key, modifier, keep_prob, stream)
    return np.where(keep, x * np.float32(scale), np.float32(0.0))


def ks_statistic(samples, cdf):
    """The Kolmogorov-Smirnov statistic of samples against a vectorized CDF."""
    x = np.sort(np.asarray(samples, np.float64))
    n = x.size
    f = cdf(x)
    return max(np.max(np.arange(1, n + 1) / n - f), np.max(f - np.arange(n) / n))
