// The half type: conversions, arithmetic, comparisons, limits, and half edges and state.
// Checked by test_cpp_codelets.py against numpy's float16.
#include <cmath>
#include <algorithm>
#include <limits>
#include <type_traits>

#include <poplar/HalfFloat.hpp>
#include <poplar/Vertex.hpp>

using namespace poplar;

// Mixed arithmetic follows _Float16: half op int -> half, half op float -> float.
static_assert(std::is_same<decltype(half() + half()), half>::value, "half + half");
static_assert(std::is_same<decltype(half() * 2), half>::value, "half * int");
static_assert(std::is_same<decltype(2u - half()), half>::value, "unsigned - half");
static_assert(std::is_same<decltype(half() / 2.0f), float>::value, "half / float");
static_assert(std::is_same<decltype(1.0 + half()), double>::value, "double + half");
static_assert(std::is_same<decltype(half() < 1), bool>::value, "half < int");
static_assert(sizeof(half) == 2, "half is 2 bytes");
static_assert(std::numeric_limits<half>::is_specialized, "numeric_limits<half>");
static_assert(std::numeric_limits<half>::max().bits() == 0x7BFF, "max");
static_assert(std::numeric_limits<half>::digits == 11, "digits");
#ifdef POPSIM_HAVE_BIT_CAST
static_assert(float(std::numeric_limits<half>::max()) == 65504.0f, "constexpr conversion");
static_assert(half(1.0f).bits() == 0x3C00, "constexpr construction");
#endif

// float -> half and half -> float, one element at a time.
class FromFloat : public Vertex {
public:
  Input<Vector<float>> in;
  Output<Vector<half>> out;
  Output<Vector<float>> back;

  bool compute() {
    for (unsigned i = 0; i < in.size(); ++i) {
      out[i] = in[i];
      back[i] = out[i];
    }
    return true;
  }
};

// double -> half rounds once; int <-> half.
class FromOthers : public Vertex {
public:
  Input<Vector<float>> hi;
  Input<Vector<float>> lo;
  Output<Vector<half>> fromDouble;
  Input<Vector<int>> ints;
  Output<Vector<half>> fromInt;
  Output<Vector<int>> toInt;

  bool compute() {
    for (unsigned i = 0; i < hi.size(); ++i)
      fromDouble[i] = half(double(hi[i]) + double(lo[i]));
    for (unsigned i = 0; i < ints.size(); ++i) {
      fromInt[i] = ints[i];
      toInt[i] = int(fromInt[i]);
    }
    return true;
  }
};

// Element-wise arithmetic; results compared with numpy float16.
class Arith : public Vertex {
public:
  Input<Vector<half>> a;
  Input<Vector<half>> b;
  Output<Vector<half>> sum;
  Output<Vector<half>> diff;
  Output<Vector<half>> prod;
  Output<Vector<half>> quot;
  Output<Vector<half>> neg;
  Output<Vector<half>> compound;
  Output<Vector<half>> mixedInt;
  Output<Vector<float>> mixedFloat;
  Output<Vector<int>> cmp;

  bool compute() {
    for (unsigned i = 0; i < a.size(); ++i) {
      sum[i] = a[i] + b[i];
      diff[i] = a[i] - b[i];
      prod[i] = a[i] * b[i];
      quot[i] = a[i] / b[i];
      neg[i] = -a[i];
      half c = a[i];
      c += b[i];
      c *= 2;
      c -= 1.5f;
      ++c;
      compound[i] = c;
      mixedInt[i] = a[i] * 3 + 1;
      mixedFloat[i] = a[i] * 0.1f;
      cmp[i] = (a[i] < b[i]) + 2 * (a[i] == b[i]) + 4 * (a[i] >= 1) + 8 * (0.5 > b[i]);
    }
    return true;
  }
};

// Limits, <cmath> on half, half edges and state.
class Misc : public Vertex {
public:
  Output<Vector<half>> limits;
  Input<half> x;
  InOut<half> acc;
  Output<half> y;
  half h;
  Output<Vector<float>> math;

  bool compute() {
    using L = std::numeric_limits<half>;
    const half values[] = {L::max(), L::lowest(), L::min(), L::epsilon(), L::infinity(),
                           L::quiet_NaN(), L::denorm_min(), L::round_error()};
    for (unsigned i = 0; i < limits.size(); ++i)
      limits[i] = values[i];
    *y = *x * h + 1;
    *acc += x;
    math[0] = std::sqrt(*x);
    math[1] = std::abs(-*x);
    math[2] = std::max(*x, h);
    math[3] = std::isnan(L::quiet_NaN()) ? 1.0f : 0.0f;
    math[4] = std::exp(h);
    math[5] = std::isinf(L::infinity()) ? 1.0f : 0.0f;
    return true;
  }
};
