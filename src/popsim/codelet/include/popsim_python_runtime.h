/* Helpers for C translated from Python vertices (popsim/codelet/emit_c.py).
 *
 * Every helper has a twin in popsim/codelet/pyruntime.py that performs the same steps,
 * so compiled and interpreted vertices give the same bits. Semantics (documented in
 * docs/python_vertices.md): Python's floor division and modulo (x // 0 == 0, x % 0 == x),
 * saturating float -> int conversion (NaN -> 0), shift counts masked to the width,
 * half precision rounded to nearest even, math functions computed in double and
 * rounded to float.
 *
 * POPSIM_CHECKED (default 1) makes every indexed access check its bounds: a bad index
 * records the error (the first in Python's evaluation order wins) and compute returns
 * -1 with ctx->error = POPSIM_INDEX_ERROR.
 */
#ifndef POPSIM_PYTHON_RUNTIME_H
#define POPSIM_PYTHON_RUNTIME_H

#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "popsim_codelet.h"

#ifndef POPSIM_CHECKED
#define POPSIM_CHECKED 1
#endif

#define POPSIM_PY_NO_ERROR INT32_MAX

typedef struct popsim_py_err {
  int32_t seq, field, line;
  int64_t index, size;
} popsim_py_err;

#if defined(__GNUC__)
#define POPSIM_PY_COLD __attribute__((noinline, cold))
#define POPSIM_PY_UNUSED __attribute__((unused))
#else
#define POPSIM_PY_COLD
#define POPSIM_PY_UNUSED
#endif

/* An optimisation barrier for a float: the compiler forgets what it knows about the
 * value. Used where the sign bit is observed (fabs, copysign, printing): C compilers may
 * assume the sign of a NaN or zero from value ranges (e.g. drop fabs of a quotient of
 * non-negative numbers, whose NaN is negative on x86); the interpreter cannot. */
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define POPSIM_PY_OPAQUE(v) __asm__("" : "+x"(v))
#elif defined(__GNUC__) && defined(__aarch64__)
#define POPSIM_PY_OPAQUE(v) __asm__("" : "+w"(v))
#elif defined(__GNUC__)
#define POPSIM_PY_OPAQUE(v) __asm__("" : "+m"(v))
#else
#define POPSIM_PY_OPAQUE(v)          \
  do {                               \
    volatile float popsim_py_v_ = (v); \
    (v) = popsim_py_v_;              \
  } while (0)
#endif

/* What loops poll when the caller gave no interrupt flag (popsim_exec.interrupt NULL). */
static const volatile int32_t popsim_py_not_interrupted POPSIM_PY_UNUSED = 0;

static POPSIM_PY_COLD POPSIM_PY_UNUSED void popsim_py_fail(popsim_py_err *E, int64_t i, uint64_t n, int field,
                                                           int line, int seq) {
  if (seq < E->seq) {
    E->seq = seq;
    E->field = field;
    E->line = line;
    E->index = i;
    E->size = (int64_t)n;
  }
}

#if POPSIM_CHECKED
#define POPSIM_PY_CHECK(v, i, ret)                                   \
  if ((uint64_t)(i) >= (v).size) {                                   \
    popsim_py_fail(E, (i), (v).size, field, line, seq);              \
    return ret;                                                      \
  }
#else
#define POPSIM_PY_CHECK(v, i, ret)
#endif

/* -- half precision ------------------------------------------------------------------ */
static inline uint16_t popsim_f2h(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) {
    if (ax == 0x7f800000u) return (uint16_t)(sign | 0x7c00u);
    return (uint16_t)(sign | 0x7e00u | ((ax & 0x7fffffu) >> 13)); /* NaN: quiet */
  }
  if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds to 65536 or more */
  if (ax >= 0x38800000u) {                                  /* a normal half */
    uint32_t r = ax - 0x38000000u, h = r >> 13, rem = r & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++;
    return (uint16_t)(sign | h);
  }
  if (ax <= 0x33000000u) return (uint16_t)sign; /* at most 2^-25: zero */
  uint32_t e = ax >> 23, m = (ax & 0x7fffffu) | 0x800000u, shift = 126u - e;
  uint32_t h = m >> shift, rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
  if (rem > half || (rem == half && (h & 1u))) h++;
  return (uint16_t)(sign | h);
}

static inline float popsim_h2f(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu, bits;
  if (e == 0) {
    if (m == 0) {
      bits = sign;
    } else {
      e = 113;
      while (!(m & 0x400u)) {
        m <<= 1;
        e--;
      }
      bits = sign | (e << 23) | ((m & 0x3ffu) << 13);
    }
  } else if (e == 31) {
    bits = sign | 0x7f800000u | (m << 13);
  } else {
    bits = sign | ((e + 112u) << 23) | (m << 13);
  }
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

/* -- loads and stores, by storage type --------------------------------------------------
 * ld: element i of a vector / row; lds: the element of sub-edge i of a vector of scalar
 * edges; get/put: a scalar field; st/sts: stores, refused once an error is recorded;
 * uld/ulds/ust/usts: accesses the translator proved in range (no check). */
#define POPSIM_PY_ACCESS(SFX, CT, VT, LOAD, SAVE)                                                          \
  static inline POPSIM_PY_UNUSED VT popsim_py_ld_##SFX(popsim_span v, int64_t i, popsim_py_err *E, int field, \
                                                       int line, int seq) {                                 \
    (void)E; (void)field; (void)line; (void)seq;                                                          \
    POPSIM_PY_CHECK(v, i, (VT)0)                                                                          \
    CT raw = ((const CT *)v.data)[i];                                                                     \
    return LOAD;                                                                                          \
  }                                                                                                       \
  static inline POPSIM_PY_UNUSED VT popsim_py_lds_##SFX(popsim_span v, int64_t i, popsim_py_err *E, int field, \
                                                        int line, int seq) {                                \
    (void)E; (void)field; (void)line; (void)seq;                                                          \
    POPSIM_PY_CHECK(v, i, (VT)0)                                                                          \
    CT raw = ((const CT *)((const popsim_span *)v.data)[i].data)[0];                                      \
    return LOAD;                                                                                          \
  }                                                                                                       \
  static inline POPSIM_PY_UNUSED VT popsim_py_uld_##SFX(popsim_span v, int64_t i) {                       \
    CT raw = ((const CT *)v.data)[i];                                                                     \
    return LOAD;                                                                                          \
  }                                                                                                       \
  static inline POPSIM_PY_UNUSED VT popsim_py_ulds_##SFX(popsim_span v, int64_t i) {                      \
    CT raw = ((const CT *)((const popsim_span *)v.data)[i].data)[0];                                      \
    return LOAD;                                                                                          \
  }                                                                                                       \
  static inline POPSIM_PY_UNUSED void popsim_py_ust_##SFX(popsim_span v, int64_t i, VT x) {               \
    ((CT *)v.data)[i] = SAVE;                                                                             \
  }                                                                                                       \
  static inline POPSIM_PY_UNUSED void popsim_py_usts_##SFX(popsim_span v, int64_t i, VT x) {              \
    ((CT *)((const popsim_span *)v.data)[i].data)[0] = SAVE;                                              \
  }                                                                                                       \
  static inline POPSIM_PY_UNUSED VT popsim_py_get_##SFX(popsim_span v) {                                  \
    CT raw = ((const CT *)v.data)[0];                                                                     \
    return LOAD;                                                                                          \
  }                                                                                                       \
  static inline POPSIM_PY_UNUSED void popsim_py_put_##SFX(popsim_span v, VT x) { ((CT *)v.data)[0] = SAVE; } \
  static inline POPSIM_PY_UNUSED int popsim_py_st_##SFX(popsim_span v, int64_t i, VT x, popsim_py_err *E,   \
                                                        int field, int line, int seq) {                     \
    (void)field; (void)line; (void)seq;                                                                   \
    if (E->seq != POPSIM_PY_NO_ERROR) return 0;                                                           \
    POPSIM_PY_CHECK(v, i, 0)                                                                              \
    ((CT *)v.data)[i] = SAVE;                                                                             \
    return 1;                                                                                             \
  }                                                                                                       \
  static inline POPSIM_PY_UNUSED int popsim_py_sts_##SFX(popsim_span v, int64_t i, VT x, popsim_py_err *E,  \
                                                         int field, int line, int seq) {                    \
    (void)field; (void)line; (void)seq;                                                                   \
    if (E->seq != POPSIM_PY_NO_ERROR) return 0;                                                           \
    POPSIM_PY_CHECK(v, i, 0)                                                                              \
    ((CT *)((const popsim_span *)v.data)[i].data)[0] = SAVE;                                              \
    return 1;                                                                                             \
  }

POPSIM_PY_ACCESS(f32, float, float, raw, x)
POPSIM_PY_ACCESS(f16, uint16_t, float, popsim_h2f(raw), popsim_f2h(x))
POPSIM_PY_ACCESS(i32, int32_t, int32_t, raw, x)
POPSIM_PY_ACCESS(u32, uint32_t, uint32_t, raw, x)
POPSIM_PY_ACCESS(i16, int16_t, int32_t, (int32_t)raw, (int16_t)x)
POPSIM_PY_ACCESS(u16, uint16_t, int32_t, (int32_t)raw, (uint16_t)x)
POPSIM_PY_ACCESS(i8, int8_t, int32_t, (int32_t)raw, (int8_t)x)
POPSIM_PY_ACCESS(u8, uint8_t, int32_t, (int32_t)raw, (uint8_t)x)
POPSIM_PY_ACCESS(i64, int64_t, int64_t, raw, x)
POPSIM_PY_ACCESS(u64, uint64_t, uint64_t, raw, x)
POPSIM_PY_ACCESS(b8, uint8_t, bool, raw != 0, (uint8_t)(x ? 1 : 0))

static inline POPSIM_PY_UNUSED popsim_span popsim_py_row(popsim_span v, int64_t i, popsim_py_err *E, int field,
                                                         int line, int seq) {
  (void)E; (void)field; (void)line; (void)seq;
#if POPSIM_CHECKED
  if ((uint64_t)i >= v.size) {
    popsim_py_fail(E, i, v.size, field, line, seq);
    popsim_span empty = {0, 0};
    return empty;
  }
#endif
  return ((const popsim_span *)v.data)[i];
}

static inline POPSIM_PY_UNUSED popsim_span popsim_py_urow(popsim_span v, int64_t i) {
  return ((const popsim_span *)v.data)[i];
}

/* -- conversions: float -> int saturates, NaN -> 0 -------------------------------------- */
static inline int32_t popsim_py_f2i32(float f) {
  if (f != f) return 0;
  if (f >= 2147483648.0f) return INT32_MAX;
  if (f <= -2147483648.0f) return INT32_MIN;
  return (int32_t)f;
}
static inline uint32_t popsim_py_f2u32(float f) {
  if (f != f || f <= 0.0f) return 0;
  if (f >= 4294967296.0f) return UINT32_MAX;
  return (uint32_t)f;
}
static inline int64_t popsim_py_f2i64(float f) {
  if (f != f) return 0;
  if (f >= 9223372036854775808.0f) return INT64_MAX;
  if (f <= -9223372036854775808.0f) return INT64_MIN;
  return (int64_t)f;
}
static inline uint64_t popsim_py_f2u64(float f) {
  if (f != f || f <= 0.0f) return 0;
  if (f >= 18446744073709551616.0f) return UINT64_MAX;
  return (uint64_t)f;
}

/* -- integer arithmetic: Python's floor division and modulo, masked shifts -------------- */
#define POPSIM_PY_SIGNED_INT(SFX, CT, UT, BITS)                                                        \
  static inline POPSIM_PY_UNUSED CT popsim_py_floordiv_##SFX(CT a, CT b) {                             \
    if (b == 0) return 0;                                                                              \
    if (b == -1) return (CT)((UT)0 - (UT)a);                                                           \
    CT q = a / b, r = a % b;                                                                           \
    if (r != 0 && ((r < 0) != (b < 0))) q -= 1;                                                        \
    return q;                                                                                          \
  }                                                                                                    \
  static inline POPSIM_PY_UNUSED CT popsim_py_mod_##SFX(CT a, CT b) {                                  \
    if (b == 0) return a;                                                                              \
    if (b == -1) return 0;                                                                             \
    CT r = a % b;                                                                                      \
    if (r != 0 && ((r < 0) != (b < 0))) r += b;                                                        \
    return r;                                                                                          \
  }                                                                                                    \
  static inline POPSIM_PY_UNUSED CT popsim_py_pow_##SFX(CT a, CT b) {                                  \
    if (b < 0) return a == 1 ? 1 : (a == -1 ? ((b & 1) ? -1 : 1) : 0);                                 \
    UT r = 1, x = (UT)a;                                                                               \
    for (; b; b >>= 1, x *= x)                                                                         \
      if (b & 1) r *= x;                                                                               \
    return (CT)r;                                                                                      \
  }                                                                                                    \
  static inline POPSIM_PY_UNUSED CT popsim_py_shl_##SFX(CT a, int64_t n) {                             \
    return (CT)((UT)a << (n & (BITS - 1)));                                                            \
  }                                                                                                    \
  static inline POPSIM_PY_UNUSED CT popsim_py_shr_##SFX(CT a, int64_t n) { return (CT)(a >> (n & (BITS - 1))); } \
  static inline POPSIM_PY_UNUSED CT popsim_py_abs_##SFX(CT a) { return (CT)(a < 0 ? (UT)0 - (UT)a : (UT)a); }

#define POPSIM_PY_UNSIGNED_INT(SFX, CT, BITS)                                                          \
  static inline POPSIM_PY_UNUSED CT popsim_py_floordiv_##SFX(CT a, CT b) { return b ? a / b : 0; }     \
  static inline POPSIM_PY_UNUSED CT popsim_py_mod_##SFX(CT a, CT b) { return b ? a % b : a; }          \
  static inline POPSIM_PY_UNUSED CT popsim_py_pow_##SFX(CT a, CT b) {                                  \
    CT r = 1;                                                                                          \
    for (; b; b >>= 1, a *= a)                                                                         \
      if (b & 1) r *= a;                                                                               \
    return r;                                                                                          \
  }                                                                                                    \
  static inline POPSIM_PY_UNUSED CT popsim_py_shl_##SFX(CT a, int64_t n) { return (CT)(a << (n & (BITS - 1))); } \
  static inline POPSIM_PY_UNUSED CT popsim_py_shr_##SFX(CT a, int64_t n) { return (CT)(a >> (n & (BITS - 1))); }

POPSIM_PY_SIGNED_INT(i32, int32_t, uint32_t, 32)
POPSIM_PY_SIGNED_INT(i64, int64_t, uint64_t, 64)
POPSIM_PY_UNSIGNED_INT(u32, uint32_t, 32)
POPSIM_PY_UNSIGNED_INT(u64, uint64_t, 64)

#define POPSIM_PY_MINMAX(SFX, CT)                                                                      \
  static inline POPSIM_PY_UNUSED CT popsim_py_min_##SFX(CT a, CT b) { return (b < a) ? b : a; }        \
  static inline POPSIM_PY_UNUSED CT popsim_py_max_##SFX(CT a, CT b) { return (b > a) ? b : a; }
POPSIM_PY_MINMAX(b, bool)
POPSIM_PY_MINMAX(i32, int32_t)
POPSIM_PY_MINMAX(u32, uint32_t)
POPSIM_PY_MINMAX(i64, int64_t)
POPSIM_PY_MINMAX(u64, uint64_t)
POPSIM_PY_MINMAX(f32, float)

static inline POPSIM_PY_UNUSED int32_t popsim_py_cmp3_ui(uint64_t u, int64_t s) {
  if (s < 0) return 1;
  return (u > (uint64_t)s) - (u < (uint64_t)s);
}
static inline POPSIM_PY_UNUSED int32_t popsim_py_cmp3_iu(int64_t s, uint64_t u) { return -popsim_py_cmp3_ui(u, s); }

/* -- float arithmetic ---------------------------------------------------------------------
 * + - * / with a deterministic NaN: when an operand is NaN, the first NaN operand
 * (quieted) is the result, whatever the compiler would do with the operands (it may swap
 * the operands of + and *, fold x * -1 into -x or x / 1 into x). On x86 the instruction
 * itself has that rule when its first source is the left operand, so it is issued as is
 * (the right operand may come straight from memory, as a compiler would fold a load);
 * elsewhere the result is fixed up. pyruntime.fadd & co apply the same rule. */
static inline POPSIM_PY_UNUSED float popsim_py_quiet(float a) {
  uint32_t b;
  memcpy(&b, &a, 4);
  b |= 0x00400000u;
  memcpy(&a, &b, 4);
  return a;
}
static POPSIM_PY_COLD POPSIM_PY_UNUSED float popsim_py_nan2(float a, float b, float r) {
  if (a != a) return popsim_py_quiet(a);
  if (b != b) return popsim_py_quiet(b);
  return r;
}
#if defined(__GNUC__) && defined(__AVX__) && (defined(__x86_64__) || defined(__i386__))
#define POPSIM_PY_FOP(NAME, OP, INSN)                                               \
  static inline POPSIM_PY_UNUSED float popsim_py_f##NAME(float a, float b) {         \
    float r;                                                                        \
    __asm__("v" INSN " %2, %1, %0" : "=x"(r) : "x"(a), "xm"(b));                     \
    return r;                                                                       \
  }
#elif defined(__GNUC__) && defined(__SSE2__) && (defined(__x86_64__) || defined(__i386__))
#define POPSIM_PY_FOP(NAME, OP, INSN)                                               \
  static inline POPSIM_PY_UNUSED float popsim_py_f##NAME(float a, float b) {         \
    __asm__(INSN " %1, %0" : "+x"(a) : "xm"(b));                                     \
    return a;                                                                       \
  }
#else
#define POPSIM_PY_FOP(NAME, OP, INSN)                                               \
  static inline POPSIM_PY_UNUSED float popsim_py_f##NAME(float a, float b) {         \
    float r = a OP b;                                                               \
    if (r != r) r = popsim_py_nan2(a, b, r);                                        \
    return r;                                                                       \
  }
#endif
POPSIM_PY_FOP(add, +, "addss")
POPSIM_PY_FOP(sub, -, "subss")
POPSIM_PY_FOP(mul, *, "mulss")
POPSIM_PY_FOP(div, /, "divss")

static inline POPSIM_PY_UNUSED float popsim_py_fabs(float x) {
  POPSIM_PY_OPAQUE(x);
  return fabsf(x);
}

/* CPython's float_divmod, in float */
static inline void popsim_py_fdivmod(float vx, float wx, float *floordiv, float *modulo) {
  POPSIM_PY_OPAQUE(vx);
  POPSIM_PY_OPAQUE(wx);
  float mod = fmodf(vx, wx);
  POPSIM_PY_OPAQUE(mod);
  float div = popsim_py_fdiv(popsim_py_fsub(vx, mod), wx);
  if (mod != 0.0f) {
    if ((wx < 0.0f) != (mod < 0.0f)) {
      mod = popsim_py_fadd(mod, wx);
      div = popsim_py_fsub(div, 1.0f);
    }
  } else {
    mod = copysignf(0.0f, wx);
  }
  float fd;
  if (div != 0.0f) {
    fd = floorf(div);
    if (popsim_py_fsub(div, fd) > 0.5f) fd = popsim_py_fadd(fd, 1.0f);
  } else {
    float q = popsim_py_fdiv(vx, wx);
    POPSIM_PY_OPAQUE(q);
    fd = copysignf(0.0f, q);
  }
  *floordiv = fd;
  *modulo = mod;
}
static inline POPSIM_PY_UNUSED float popsim_py_floordiv_f32(float a, float b) {
  float q, r;
  popsim_py_fdivmod(a, b, &q, &r);
  return q;
}
static inline POPSIM_PY_UNUSED float popsim_py_mod_f32(float a, float b) {
  float q, r;
  popsim_py_fdivmod(a, b, &q, &r);
  return r;
}

/* math.* in double, rounded to float (the interpreter calls the same libm functions) */
#define POPSIM_PY_MATH1(NAME) \
  static inline POPSIM_PY_UNUSED float popsim_py_##NAME(float x) { return (float)NAME((double)x); }
#define POPSIM_PY_MATH2(NAME) \
  static inline POPSIM_PY_UNUSED float popsim_py_##NAME(float x, float y) { return (float)NAME((double)x, (double)y); }
POPSIM_PY_MATH1(exp) POPSIM_PY_MATH1(exp2) POPSIM_PY_MATH1(expm1) POPSIM_PY_MATH1(log) POPSIM_PY_MATH1(log2)
POPSIM_PY_MATH1(log10) POPSIM_PY_MATH1(log1p) POPSIM_PY_MATH1(sqrt) POPSIM_PY_MATH1(sin) POPSIM_PY_MATH1(cos)
POPSIM_PY_MATH1(tan) POPSIM_PY_MATH1(asin) POPSIM_PY_MATH1(acos) POPSIM_PY_MATH1(atan) POPSIM_PY_MATH1(sinh)
POPSIM_PY_MATH1(cosh) POPSIM_PY_MATH1(tanh) POPSIM_PY_MATH1(erf) POPSIM_PY_MATH1(erfc)
POPSIM_PY_MATH2(pow) POPSIM_PY_MATH2(atan2) POPSIM_PY_MATH2(hypot) POPSIM_PY_MATH2(fmod)
static inline POPSIM_PY_UNUSED float popsim_py_copysign(float x, float y) {
  POPSIM_PY_OPAQUE(x);
  POPSIM_PY_OPAQUE(y);
  return (float)copysign((double)x, (double)y);
}

/* -- range(): the number of iterations, as Python counts them ----------------------------- */
static inline POPSIM_PY_UNUSED uint64_t popsim_py_count_i64(int64_t a, int64_t b, int64_t s) {
  if (s > 0) return a < b ? ((uint64_t)b - (uint64_t)a - 1u) / (uint64_t)s + 1u : 0u;
  if (s < 0) return a > b ? ((uint64_t)a - (uint64_t)b - 1u) / (0u - (uint64_t)s) + 1u : 0u;
  return 0u;
}
static inline POPSIM_PY_UNUSED uint64_t popsim_py_count_u64(uint64_t a, uint64_t b, uint64_t s) {
  return (s != 0 && a < b) ? (b - a - 1u) / s + 1u : 0u;
}

/* -- loop versioning (popsim/codelet/loop_versioning.py) ---------------------------------
 * popsim_py_fits_i / _u: whether x + o is a valid index of a span of `size` elements, and
 * does not wrap around in a loop type whose largest value is `max`, for every x in
 * [lo, hi] and every o in [low, high]. |low|, |high| < 2^31, so nothing overflows.
 * popsim_py_row_size: the size of row i, or 0 when i is out of range (never fails). */
static inline POPSIM_PY_UNUSED bool popsim_py_fits_i(int64_t lo, int64_t hi, int64_t low, int64_t high, int64_t max,
                                                     uint64_t size) {
  return lo >= -low && (high <= 0 || hi <= max - high) && (uint64_t)(hi + high) < size;
}
static inline POPSIM_PY_UNUSED bool popsim_py_fits_u(uint64_t lo, uint64_t hi, int64_t low, int64_t high,
                                                     uint64_t max, uint64_t size) {
  return (low >= 0 || lo >= (uint64_t)-low) && (high <= 0 || hi <= max - (uint64_t)high) &&
         hi + (uint64_t)high < size;
}
static inline POPSIM_PY_UNUSED uint64_t popsim_py_row_size(popsim_span rows, int64_t i) {
  return (uint64_t)i < rows.size ? ((const popsim_span *)rows.data)[i].size : 0u;
}

/* -- print: str() of float32 as numpy writes it (shortest round-trip digits) -------------- */
static POPSIM_PY_UNUSED void popsim_py_format_f32(char *out, float f) {
  POPSIM_PY_OPAQUE(f);
  if (f != f) {
    strcpy(out, "nan");
    return;
  }
  if (isinf(f)) {
    strcpy(out, f < 0 ? "-inf" : "inf");
    return;
  }
  if (f == 0.0f) {
    strcpy(out, signbit(f) ? "-0.0" : "0.0");
    return;
  }
  char buf[64], digits[24];
  int p, nd = 0, k;
  for (p = 1; p <= 9; p++) {
    snprintf(buf, sizeof buf, "%.*e", p - 1, (double)f);
    if (strtof(buf, NULL) == f) break;
  }
  const char *s = buf + (buf[0] == '-');
  for (; *s && *s != 'e'; s++)
    if (*s != '.') digits[nd++] = *s;
  while (nd > 1 && digits[nd - 1] == '0') nd--;
  int e = atoi(s + 1);
  double af = fabs((double)f);
  char *o = out;
  if (f < 0) *o++ = '-';
  if (af >= 1e-4 && af < 1e6) {
    if (e >= 0) {
      for (k = 0; k <= e; k++) *o++ = k < nd ? digits[k] : '0';
      *o++ = '.';
      if (nd > e + 1)
        for (k = e + 1; k < nd; k++) *o++ = digits[k];
      else
        *o++ = '0';
    } else {
      *o++ = '0';
      *o++ = '.';
      for (k = 0; k < -e - 1; k++) *o++ = '0';
      for (k = 0; k < nd; k++) *o++ = digits[k];
    }
    *o = 0;
  } else {
    *o++ = digits[0];
    if (nd > 1) {
      *o++ = '.';
      for (k = 1; k < nd; k++) *o++ = digits[k];
    }
    sprintf(o, "e%c%02d", e < 0 ? '-' : '+', e < 0 ? -e : e);
  }
}

static POPSIM_PY_UNUSED void popsim_py_print_str(const char *s, size_t n) { fwrite(s, 1, n, stdout); }
static POPSIM_PY_UNUSED void popsim_py_print_f32(float f) {
  char buf[64];
  popsim_py_format_f32(buf, f);
  fputs(buf, stdout);
}
static POPSIM_PY_UNUSED void popsim_py_print_i64(int64_t x) { printf("%" PRId64, x); }
static POPSIM_PY_UNUSED void popsim_py_print_u64(uint64_t x) { printf("%" PRIu64, x); }
static POPSIM_PY_UNUSED void popsim_py_print_bool(bool x) { fputs(x ? "True" : "False", stdout); }
static POPSIM_PY_UNUSED void popsim_py_print_fmt_f(const char *fmt, float x) {
  POPSIM_PY_OPAQUE(x);
  double d = (double)x;
  if (d != d) d = fabs(d); /* Python prints every NaN as nan */
  printf(fmt, d);
}
static POPSIM_PY_UNUSED void popsim_py_print_fmt_i(const char *fmt, int64_t x) { printf(fmt, x); }
static POPSIM_PY_UNUSED void popsim_py_print_fmt_u(const char *fmt, uint64_t x) { printf(fmt, x); }
static POPSIM_PY_UNUSED void popsim_py_print_fmt_d(const char *fmt, double x) { printf(fmt, x); }
static POPSIM_PY_UNUSED void popsim_py_print_end(const char *end, size_t n) {
  fwrite(end, 1, n, stdout);
  fflush(stdout);
}

#endif /* POPSIM_PYTHON_RUNTIME_H */
