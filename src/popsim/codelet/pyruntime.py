"""Numeric helpers for interpreted Python vertices: each mirrors, operation for
operation, a helper in include/popsim_python_runtime.h, so that interpreted and compiled
runs give the same bits.

Values are numpy scalars of their static C type (np.float32, np.int32, ...). Plain
arithmetic on two scalars of one numpy type already behaves like C (IEEE float32,
wrapping integers); what numpy does differently from C, or from the semantics popsim
defines, is here: Python-style floor division and modulo, saturating float -> int
conversion, masked shifts, integer powers, half rounding, libm math functions, and the
formatting print uses.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import math
from fractions import Fraction

import numpy as np

from .typed_ir import T

NP = {t: t.np for t in T}
_BITS = {T.I32: 32, T.U32: 32, T.I64: 64, T.U64: 64}
_LIMITS = {T.I32: (-2 ** 31, 2 ** 31 - 1), T.U32: (0, 2 ** 32 - 1), T.I64: (-2 ** 63, 2 ** 63 - 1),
           T.U64: (0, 2 ** 64 - 1)}


def wrap(value: int, t: T):
    """A Python int wrapped into integer type ``t`` (two's complement)."""
    bits = _BITS[t]
    value &= (1 << bits) - 1
    if t.is_signed and value >= 1 << (bits - 1):
        value -= 1 << bits
    return t.np(value)


# -- conversions ---------------------------------------------------------------------------------
def _f2i(t: T):
    lo, hi = _LIMITS[t]
    lo_f, hi_f = float(lo), float(hi) + 1.0   # exact powers of two, as in the C helper
    np_t = t.np

    def convert(x):
        f = float(x)
        if f != f:
            return np_t(0)
        if f >= hi_f:
            return np_t(hi)
        if f <= lo_f:
            return np_t(lo)
        return np_t(int(f))
    return convert


def _make_converters():
    conv = {}
    for src in T:
        for dst in T:
            if src is dst:
                continue
            if dst is T.BOOL:
                conv[src, dst] = lambda x: x != 0
            elif src is T.F32:
                conv[src, dst] = _f2i(dst)
            elif src is T.BOOL or dst is T.F32:
                conv[src, dst] = dst.np
            else:
                conv[src, dst] = (lambda np_t: lambda x: x.astype(np_t))(dst.np)
    return conv


CONVERT = _make_converters()


def convert(value, src: T, dst: T):
    """``value`` (a numpy scalar of ``src``) as ``dst``, as the C helper converts it."""
    return value if src is dst else CONVERT[src, dst](value)


def const(value, t: T):
    """A Python number as a numpy scalar of ``t`` (ints wrap; floats round to nearest)."""
    if t is T.F32:
        return np.float32(value)
    if t is T.BOOL:
        return np.bool_(value)
    return wrap(int(value), t)


# -- integer arithmetic with Python's floor semantics ----------------------------------------------
def floordiv(a, b):
    """Python's a // b for one integer type; x // 0 == 0 (no exception in vertex code)."""
    t = _T_OF[type(a)]
    ib = int(b)
    if ib == 0:
        return t.np(0)
    return wrap(int(a) // ib, t)


def mod(a, b):
    """Python's a % b (the sign of b) for one integer type; x % 0 == x."""
    t = _T_OF[type(a)]
    ib = int(b)
    if ib == 0:
        return a
    return wrap(int(a) % ib, t)


def ipow(a, b):
    """a ** b for integers, wrapping; a negative exponent gives int(a ** b) (0 unless
    a is 1 or -1)."""
    t = _T_OF[type(a)]
    ia, ib = int(a), int(b)
    if ib < 0:
        if ia == 1:
            return t.np(1)
        if ia == -1:
            return t.np(-1 if ib & 1 else 1)
        return t.np(0)
    return wrap(pow(ia, ib, 1 << _BITS[t]), t)


def lshift(a, n):
    t = _T_OF[type(a)]
    bits = _BITS[t]
    return wrap(int(a) << (int(n) & (bits - 1)), t)


def rshift(a, n):
    t = _T_OF[type(a)]
    bits = _BITS[t]
    return wrap(int(a) >> (int(n) & (bits - 1)), t)


def iabs(a):
    t = _T_OF[type(a)]
    return wrap(abs(int(a)), t)


def cmp3_ui(u, s):
    """Three-way comparison of a uint64 and an int64, exact (-1, 0, 1 as int32)."""
    a, b = int(u), int(s)
    return np.int32((a > b) - (a < b))


def cmp3_iu(s, u):
    a, b = int(s), int(u)
    return np.int32((a > b) - (a < b))


# -- float arithmetic -------------------------------------------------------------------------------
def quiet(a):
    return np.uint32(int(a.view(np.uint32)) | 0x00400000).view(np.float32)


def nan2(a, b, r):
    """The NaN a float operation returns: the first NaN operand, quieted (as the C
    helpers decide it, whatever order the hardware saw the operands in)."""
    if a != a:
        return quiet(a)
    if b != b:
        return quiet(b)
    return r


def fadd(a, b):
    r = a + b
    return r if r == r else nan2(a, b, r)


def fsub(a, b):
    r = a - b
    return r if r == r else nan2(a, b, r)


def fmul(a, b):
    r = a * b
    return r if r == r else nan2(a, b, r)


def fdiv(a, b):
    r = a / b
    return r if r == r else nan2(a, b, r)


_F0 = np.float32(0.0)
_F1 = np.float32(1.0)
_FHALF = np.float32(0.5)


def fdivmod(vx, wx):
    """CPython's float_divmod, in float32 (the C helper performs the same steps)."""
    m = np.fmod(vx, wx)
    div = fdiv(fsub(vx, m), wx)
    if m != _F0:
        if (wx < _F0) != (m < _F0):
            m = fadd(m, wx)
            div = fsub(div, _F1)
    else:
        m = np.copysign(_F0, wx)
    if div != _F0:
        fd = np.floor(div)
        if fsub(div, fd) > _FHALF:
            fd = fadd(fd, _F1)
    else:
        fd = np.copysign(_F0, fdiv(vx, wx))
    return fd, m


def ffloordiv(a, b):
    return fdivmod(a, b)[0]


def fmod_py(a, b):
    return fdivmod(a, b)[1]


def fmin(a, b):
    """Python's min(a, b): b only if b < a."""
    return b if b < a else a


def fmax(a, b):
    return b if b > a else a


# -- libm: the same functions the compiled code calls, in double precision -------------------------
def _libm():
    for name in (ctypes.util.find_library("m"), "libm.so.6", None):
        try:
            lib = ctypes.CDLL(name)
            lib.exp  # probe: the attribute lookup fails where libm is not the library
            return lib
        except (OSError, AttributeError, TypeError):
            continue
    raise OSError("cannot load the C math library (libm)")


_M = _libm()
UNARY_MATH = ("exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "sin", "cos", "tan", "asin",
              "acos", "atan", "sinh", "cosh", "tanh", "erf", "erfc")
BINARY_MATH = ("pow", "atan2", "hypot", "fmod", "copysign")
MATH = {}
for _name in UNARY_MATH + BINARY_MATH:
    _fn = getattr(_M, _name)
    _fn.restype = ctypes.c_double
    _fn.argtypes = [ctypes.c_double] * (2 if _name in BINARY_MATH else 1)
    MATH[_name] = _fn


def math1(name):
    fn = MATH[name]
    return lambda x: np.float32(fn(float(x)))


def math2(name):
    fn = MATH[name]
    return lambda x, y: np.float32(fn(float(x), float(y)))


def ffloor(x):
    return np.floor(x)


def fceil(x):
    return np.ceil(x)


def ftrunc(x):
    return np.trunc(x)


# -- half precision ---------------------------------------------------------------------------------
def f2h_bits(f) -> int:
    """IEEE float32 -> binary16 bits, round to nearest even (popsim_f2h in C)."""
    x = f if isinstance(f, int) else int(np.float32(f).view(np.uint32))
    sign = (x >> 16) & 0x8000
    ax = x & 0x7FFFFFFF
    if ax >= 0x7F800000:
        if ax == 0x7F800000:
            return sign | 0x7C00
        return sign | 0x7E00 | ((ax & 0x7FFFFF) >> 13)      # NaN: quiet, top payload bits kept
    if ax >= 0x477FF000:                                    # rounds to 65536 or more
        return sign | 0x7C00
    if ax >= 0x38800000:                                    # a normal half
        r = ax - 0x38000000
        h, rem = r >> 13, r & 0x1FFF
        if rem > 0x1000 or (rem == 0x1000 and (h & 1)):
            h += 1
        return sign | h
    if ax <= 0x33000000:                                    # at most 2^-25: rounds to zero
        return sign
    e = ax >> 23
    m = (ax & 0x7FFFFF) | 0x800000
    shift = 126 - e
    h = m >> shift
    rem = m & ((1 << shift) - 1)
    half = 1 << (shift - 1)
    if rem > half or (rem == half and (h & 1)):
        h += 1
    return sign | h


def h2f_bits(h: int) -> int:
    """binary16 bits -> float32 bits, exact (popsim_h2f in C)."""
    sign = (h & 0x8000) << 16
    e = (h >> 10) & 0x1F
    m = h & 0x3FF
    if e == 0:
        if m == 0:
            return sign
        e = 113
        while not (m & 0x400):
            m <<= 1
            e -= 1
        m &= 0x3FF
        return sign | (e << 23) | (m << 13)
    if e == 31:
        return sign | 0x7F800000 | (m << 13)
    return sign | ((e + 112) << 23) | (m << 13)


_H2F = np.array([h2f_bits(h) for h in range(65536)], dtype=np.uint32).view(np.float32)
_H2F_LIST = [_H2F[i] for i in range(65536)]


def h2f(h):
    """A float16 scalar as float32, exactly."""
    return _H2F_LIST[int(h.view(np.uint16))]


def f2h(f):
    """A float32 scalar rounded to float16 (a numpy float16 scalar)."""
    return np.uint16(f2h_bits(f)).view(np.float16)


# -- formatting, for print ---------------------------------------------------------------------------
def _f32_from_fraction(q: Fraction) -> float:
    """The float32 nearest to an exact rational (ties to even), as strtof rounds."""
    if q == 0:
        return 0.0
    neg = q < 0
    q = -q if neg else q
    e = q.numerator.bit_length() - q.denominator.bit_length()
    if Fraction(2) ** e > q:
        e -= 1
    e = max(e, -126)                                   # subnormals share the lowest exponent
    scaled = q / Fraction(2) ** (e - 23)
    m = scaled.numerator // scaled.denominator
    rem = scaled - m
    if rem > Fraction(1, 2) or (rem == Fraction(1, 2) and (m & 1)):
        m += 1
    value = math.ldexp(m, e - 23)
    if value >= 2.0 ** 128:
        value = math.inf
    return -value if neg else value


def shortest_digits(f: float):
    """(negative, digits, exponent10) of the shortest decimal that reads back as float32
    ``f`` (finite, non-zero): the first precision p = 1..9 whose correctly rounded
    %.{p-1}e form round-trips, as the C helper does with snprintf and strtof."""
    for p in range(1, 10):
        s = "%.*e" % (p - 1, f)
        if _f32_from_fraction(Fraction(s)) == f:
            break
    mant, exp = s.split("e")
    neg = mant.startswith("-")
    digits = mant.lstrip("-").replace(".", "").rstrip("0") or "0"
    return neg, digits, int(exp)


def format_f32(x) -> str:
    """str() of a numpy float32, as numpy writes it: positional for 1e-4 <= |x| < 1e6,
    else scientific; shortest round-trip digits."""
    f = float(x)
    if f != f:
        return "nan"
    if math.isinf(f):
        return "-inf" if f < 0 else "inf"
    if f == 0:
        return "-0.0" if math.copysign(1.0, f) < 0 else "0.0"
    neg, digits, e = shortest_digits(f)
    sign = "-" if neg else ""
    if 1e-4 <= abs(f) < 1e6:
        if e >= 0:
            whole = digits[:e + 1].ljust(e + 1, "0")
            frac = digits[e + 1:] or "0"
        else:
            whole, frac = "0", "0" * (-e - 1) + digits
        return f"{sign}{whole}.{frac}"
    mant = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    return f"{sign}{mant}e{'-' if e < 0 else '+'}{abs(e):02d}"


def to_text(x, t: T) -> str:
    """What print writes for a value of type ``t``."""
    if t is T.F32:
        return format_f32(x)
    if t is T.BOOL:
        return "True" if x else "False"
    return str(int(x))


def format_spec(x, t: T, spec: str) -> str:
    """format(x, spec) for the specs vertex code allows ([+ ]?0?width?(.prec)?[feEgGd])."""
    if t is T.F32:
        f = float(x)
        if f != f:
            f = math.nan   # a positive NaN: C prints "-nan" for negative ones
        return format(f, spec)
    return format(int(x), spec)


# -- loops ------------------------------------------------------------------------------------------
def py_range(start, stop, step):
    s = int(step)
    return range(int(start), int(stop), s) if s != 0 else ()


_T_OF = {t.np: t for t in T}
