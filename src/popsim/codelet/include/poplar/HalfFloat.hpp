// popsim's host implementation of the IPU's `half` type, for Poplar codelets compiled
// with the host C++ compiler.
//
// Storage is IEEE 754 binary16 (so a Vector<half> field is the fp16 array the engine
// holds); arithmetic converts to float, computes there and rounds back to nearest-even.
// For + - * / that gives the correctly rounded binary16 result (float has more than
// 2 * 11 + 2 significand bits, so double rounding cannot bite).
//
// Mixed arithmetic follows the rules of C's _Float16: half op half -> half,
// half op integer -> half (the integer converts to half first), half op float -> float,
// half op double -> double. Comparisons are exact.
//
// Host-only difference: `half` is a class here, so a conversion that goes through two
// user-defined steps (an Input<half> scalar edge straight to float) needs one spelled
// out: `float f = *in;` rather than `float f = in;`.
#ifndef POPSIM_POPLAR_HALFFLOAT_HPP
#define POPSIM_POPLAR_HALFFLOAT_HPP

#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#if defined(__has_builtin)
#if __has_builtin(__builtin_bit_cast)
#define POPSIM_HAVE_BIT_CAST 1
#endif
#endif

#ifdef POPSIM_HAVE_BIT_CAST
#define POPSIM_HALF_CONSTEXPR constexpr
#else
#define POPSIM_HALF_CONSTEXPR inline
#endif

namespace popsim {
namespace half_detail {

template <class To, class From> POPSIM_HALF_CONSTEXPR To bit_cast(const From &from) {
  static_assert(sizeof(To) == sizeof(From), "bit_cast needs equal sizes");
#ifdef POPSIM_HAVE_BIT_CAST
  return __builtin_bit_cast(To, from);
#else
  To to;
  std::memcpy(&to, &from, sizeof(To));
  return to;
#endif
}

// Round a float (given as its bits) to the nearest binary16, ties to even.
constexpr std::uint16_t from_float_bits(std::uint32_t x) {
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  const std::uint32_t mag = x & 0x7FFFFFFFu;
  if (mag >= 0x7F800000u) {                      // infinity or NaN
    if (mag == 0x7F800000u)
      return std::uint16_t(sign | 0x7C00u);
    return std::uint16_t(sign | 0x7E00u | ((mag >> 13) & 0x1FFu));  // quiet NaN, payload kept
  }
  if (mag >= 0x477FF000u)                        // >= 65520: rounds past the largest half
    return std::uint16_t(sign | 0x7C00u);
  if (mag >= 0x38800000u) {                      // normal half range (>= 2^-14)
    const std::uint32_t exp = (mag >> 23) - 127u + 15u;
    const std::uint32_t mant = mag & 0x7FFFFFu;
    std::uint32_t r = (exp << 10) | (mant >> 13);
    const std::uint32_t rest = mant & 0x1FFFu;
    if (rest > 0x1000u || (rest == 0x1000u && (r & 1u)))
      ++r;                                       // a carry into the exponent is still right
    return std::uint16_t(sign | r);
  }
  const std::uint32_t exp = mag >> 23;           // subnormal half (or zero)
  if (exp < 102u)                                // below 2^-25: rounds to zero
    return std::uint16_t(sign);
  const std::uint32_t mant = (mag & 0x7FFFFFu) | 0x800000u;
  const std::uint32_t shift = 126u - exp;        // 14..24: units of 2^-24
  std::uint32_t r = mant >> shift;
  const std::uint32_t rest = mant & ((1u << shift) - 1u);
  const std::uint32_t halfway = 1u << (shift - 1u);
  if (rest > halfway || (rest == halfway && (r & 1u)))
    ++r;
  return std::uint16_t(sign | r);
}

// The same from a double's bits, rounding once (no detour through float).
constexpr std::uint16_t from_double_bits(std::uint64_t x) {
  const std::uint32_t sign = std::uint32_t(x >> 48) & 0x8000u;
  const std::uint64_t mag = x & 0x7FFFFFFFFFFFFFFFull;
  if (mag >= 0x7FF0000000000000ull) {
    if (mag == 0x7FF0000000000000ull)
      return std::uint16_t(sign | 0x7C00u);
    return std::uint16_t(sign | 0x7E00u | std::uint32_t((mag >> 42) & 0x1FFu));
  }
  if (mag >= 0x40EFFE0000000000ull)              // >= 65520
    return std::uint16_t(sign | 0x7C00u);
  if (mag >= 0x3F10000000000000ull) {            // >= 2^-14
    const std::uint64_t exp = (mag >> 52) - 1023u + 15u;
    const std::uint64_t mant = mag & 0xFFFFFFFFFFFFFull;
    std::uint64_t r = (exp << 10) | (mant >> 42);
    const std::uint64_t rest = mant & ((1ull << 42) - 1u);
    const std::uint64_t halfway = 1ull << 41;
    if (rest > halfway || (rest == halfway && (r & 1u)))
      ++r;
    return std::uint16_t(sign | std::uint32_t(r));
  }
  const std::uint64_t exp = mag >> 52;
  if (exp < 998u)                                // below 2^-25
    return std::uint16_t(sign);
  const std::uint64_t mant = (mag & 0xFFFFFFFFFFFFFull) | (1ull << 52);
  const std::uint64_t shift = 1051u - exp;       // 43..53
  std::uint64_t r = mant >> shift;
  const std::uint64_t rest = mant & ((1ull << shift) - 1u);
  const std::uint64_t halfway = 1ull << (shift - 1u);
  if (rest > halfway || (rest == halfway && (r & 1u)))
    ++r;
  return std::uint16_t(sign | std::uint32_t(r));
}

// Widen binary16 bits to float bits (exact).
constexpr std::uint32_t to_float_bits(std::uint16_t h) {
  const std::uint32_t sign = std::uint32_t(h & 0x8000u) << 16;
  std::uint32_t exp = (h >> 10) & 0x1Fu;
  std::uint32_t mant = h & 0x3FFu;
  if (exp == 0x1Fu)
    return sign | 0x7F800000u | (mant << 13);
  if (exp == 0) {
    if (mant == 0)
      return sign;
    exp = 1;
    while (!(mant & 0x400u)) {                   // normalise the subnormal
      mant <<= 1;
      --exp;
    }
    mant &= 0x3FFu;
  }
  return sign | ((exp + 112u) << 23) | (mant << 13);
}

template <class T>
using if_arith = std::enable_if_t<std::is_arithmetic<T>::value, int>;
template <class T>
using if_float = std::enable_if_t<std::is_floating_point<T>::value, int>;
template <class T>
using if_integral = std::enable_if_t<std::is_integral<T>::value, int>;

}  // namespace half_detail

class half {
public:
  half() = default;  // trivial: uninitialised like any arithmetic type

  template <class T, half_detail::if_arith<T> = 0>
  POPSIM_HALF_CONSTEXPR half(T value) : bits_(convert(value)) {}

  POPSIM_HALF_CONSTEXPR operator float() const {
    return half_detail::bit_cast<float>(half_detail::to_float_bits(bits_));
  }

  static constexpr half fromBits(std::uint16_t bits) { return half(bits, raw_tag{}); }
  constexpr std::uint16_t bits() const { return bits_; }

  half &operator+=(half b) { return *this = half(float(*this) + float(b)); }
  half &operator-=(half b) { return *this = half(float(*this) - float(b)); }
  half &operator*=(half b) { return *this = half(float(*this) * float(b)); }
  half &operator/=(half b) { return *this = half(float(*this) / float(b)); }
  template <class T, half_detail::if_arith<T> = 0> half &operator+=(T b) { return *this = half(*this + b); }
  template <class T, half_detail::if_arith<T> = 0> half &operator-=(T b) { return *this = half(*this - b); }
  template <class T, half_detail::if_arith<T> = 0> half &operator*=(T b) { return *this = half(*this * b); }
  template <class T, half_detail::if_arith<T> = 0> half &operator/=(T b) { return *this = half(*this / b); }

  half &operator++() { return *this += half(1.0f); }
  half &operator--() { return *this -= half(1.0f); }
  half operator++(int) { half old = *this; ++*this; return old; }
  half operator--(int) { half old = *this; --*this; return old; }

private:
  struct raw_tag {};
  constexpr half(std::uint16_t bits, raw_tag) : bits_(bits) {}

  template <class T> static POPSIM_HALF_CONSTEXPR std::uint16_t convert(T value) {
    if (std::is_same<T, float>::value)
      return half_detail::from_float_bits(half_detail::bit_cast<std::uint32_t>(float(value)));
    // Every other arithmetic type converts exactly to double in the range that matters
    // (integers beyond 2^53 overflow half anyway), so this rounds once.
    return half_detail::from_double_bits(half_detail::bit_cast<std::uint64_t>(double(value)));
  }

  std::uint16_t bits_;
};

static_assert(sizeof(half) == 2 && alignof(half) == 2, "half must be stored as binary16");
static_assert(std::is_trivially_copyable<half>::value && std::is_standard_layout<half>::value,
              "half must be a plain 2-byte value");

// half op half -> half
inline half operator+(half a, half b) { return half(float(a) + float(b)); }
inline half operator-(half a, half b) { return half(float(a) - float(b)); }
inline half operator*(half a, half b) { return half(float(a) * float(b)); }
inline half operator/(half a, half b) { return half(float(a) / float(b)); }
inline half operator-(half a) { return half::fromBits(std::uint16_t(a.bits() ^ 0x8000u)); }
inline half operator+(half a) { return a; }

// half op floating -> that floating type; half op integer -> half
#define POPSIM_HALF_MIXED_OP(OP)                                                          \
  template <class T, half_detail::if_float<T> = 0> inline T operator OP(half a, T b) {    \
    return T(float(a)) OP b;                                                              \
  }                                                                                       \
  template <class T, half_detail::if_float<T> = 0> inline T operator OP(T a, half b) {    \
    return a OP T(float(b));                                                              \
  }                                                                                       \
  template <class T, half_detail::if_integral<T> = 0> inline half operator OP(half a, T b) { \
    return a OP half(b);                                                                  \
  }                                                                                       \
  template <class T, half_detail::if_integral<T> = 0> inline half operator OP(T a, half b) { \
    return half(a) OP b;                                                                  \
  }
POPSIM_HALF_MIXED_OP(+)
POPSIM_HALF_MIXED_OP(-)
POPSIM_HALF_MIXED_OP(*)
POPSIM_HALF_MIXED_OP(/)
#undef POPSIM_HALF_MIXED_OP

// Comparisons are exact: a half widens to float without loss.
#define POPSIM_HALF_COMPARE(OP)                                                           \
  inline bool operator OP(half a, half b) { return float(a) OP float(b); }                \
  template <class T, half_detail::if_arith<T> = 0> inline bool operator OP(half a, T b) { \
    return float(a) OP b;                                                                 \
  }                                                                                       \
  template <class T, half_detail::if_arith<T> = 0> inline bool operator OP(T a, half b) { \
    return a OP float(b);                                                                 \
  }
POPSIM_HALF_COMPARE(==)
POPSIM_HALF_COMPARE(!=)
POPSIM_HALF_COMPARE(<)
POPSIM_HALF_COMPARE(<=)
POPSIM_HALF_COMPARE(>)
POPSIM_HALF_COMPARE(>=)
#undef POPSIM_HALF_COMPARE

}  // namespace popsim

// On the IPU `half` is a built-in type, so codelets use it unqualified.
using half = popsim::half;
namespace poplar {
using half = popsim::half;
}

namespace std {
template <> class numeric_limits<popsim::half> {
  using H = popsim::half;

public:
  static constexpr bool is_specialized = true;
  static constexpr bool is_signed = true;
  static constexpr bool is_integer = false;
  static constexpr bool is_exact = false;
  static constexpr bool has_infinity = true;
  static constexpr bool has_quiet_NaN = true;
  static constexpr bool has_signaling_NaN = true;
  static constexpr float_denorm_style has_denorm = denorm_present;
  static constexpr bool has_denorm_loss = false;
  static constexpr float_round_style round_style = round_to_nearest;
  static constexpr bool is_iec559 = true;
  static constexpr bool is_bounded = true;
  static constexpr bool is_modulo = false;
  static constexpr int digits = 11;
  static constexpr int digits10 = 3;
  static constexpr int max_digits10 = 5;
  static constexpr int radix = 2;
  static constexpr int min_exponent = -13;
  static constexpr int min_exponent10 = -4;
  static constexpr int max_exponent = 16;
  static constexpr int max_exponent10 = 4;
  static constexpr bool traps = false;
  static constexpr bool tinyness_before = false;

  static constexpr H min() noexcept { return H::fromBits(0x0400); }         // 2^-14
  static constexpr H lowest() noexcept { return H::fromBits(0xFBFF); }      // -65504
  static constexpr H max() noexcept { return H::fromBits(0x7BFF); }         // 65504
  static constexpr H epsilon() noexcept { return H::fromBits(0x1400); }     // 2^-10
  static constexpr H round_error() noexcept { return H::fromBits(0x3800); } // 0.5
  static constexpr H infinity() noexcept { return H::fromBits(0x7C00); }
  static constexpr H quiet_NaN() noexcept { return H::fromBits(0x7E00); }
  static constexpr H signaling_NaN() noexcept { return H::fromBits(0x7D00); }
  static constexpr H denorm_min() noexcept { return H::fromBits(0x0001); }  // 2^-24
};
template <> class numeric_limits<const popsim::half> : public numeric_limits<popsim::half> {};
template <> class numeric_limits<volatile popsim::half> : public numeric_limits<popsim::half> {};
template <> class numeric_limits<const volatile popsim::half> : public numeric_limits<popsim::half> {};
}  // namespace std

#endif  // POPSIM_POPLAR_HALFFLOAT_HPP
