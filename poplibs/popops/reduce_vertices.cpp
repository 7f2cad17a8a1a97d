// popops' vectorised reduce vertices (PopLibs' lib/popops/codelets/Reduce.cpp, whose IPU
// versions are assembler): popops::Reduce<op, partials, out, isUpdate, DEFAULT> for the
// accumulating and vectorised operations (ADD, SQUARE_ADD, MUL, MAX, MIN) on float and half
// partials. The other instantiations (int partials, logical ops, LOG_ADD, the scaled
// ScaledReduce) are Python vertices made by reduce_vertices.py, whose header describes the
// fields; both compute the same values in the same order:
//   - element i of a partial feeds out[r][i % len(out[r])] (PopLibs' region wrapping);
//   - each output accumulates its partials, and each partial's elements, in order, in float
//     for half partials, starting from the operation's identity;
//   - a one-element output region spreads a partial's elements over four accumulators
//     (combined in order at the end), as the hardware's vectorised accumulators do.
// Outputs go in blocks of float4 accumulators, each partial streaming past them, then singly.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include <ipudef.h>
#include <poplar/HalfFloat.hpp>
#include <poplar/Vertex.hpp>

using namespace poplar;

namespace popops {

// step() takes floats or float4 vectors (four adjacent outputs' accumulators at once).
struct ReduceAdd {
  static float init() { return 0.0f; }
  template <typename T> static T step(T acc, T x) { return acc + x; }
  static float combine(float acc, float x) { return acc + x; }
};
struct ReduceSquareAdd {
  static float init() { return 0.0f; }
  template <typename T> static T step(T acc, T x) { return acc + x * x; }
  static float combine(float acc, float x) { return acc + x; }
};
struct ReduceMul {
  static float init() { return 1.0f; }
  template <typename T> static T step(T acc, T x) { return acc * x; }
  static float combine(float acc, float x) { return acc * x; }
};
struct ReduceMax {
  static float init() { return -std::numeric_limits<float>::infinity(); }
  template <typename T> static T step(T acc, T x) { return x > acc ? x : acc; }
  static float combine(float acc, float x) { return step(acc, x); }
};
struct ReduceMin {
  static float init() { return std::numeric_limits<float>::infinity(); }
  template <typename T> static T step(T acc, T x) { return x < acc ? x : acc; }
  static float combine(float acc, float x) { return step(acc, x); }
};

enum class ReductionSpecialisation {
  DEFAULT,
  SCALAR_OUTPUT_REGIONS,
  SCALAR_OUTPUT_SINGLE_INPUT,
  STRIDED_REDUCE,
  ALL_REGIONS_CONTINUOUS
};

// Accumulates outputs [o, o + 4·vectors) over one partial's wrapped positions: float
// partials as float4 vectors (a lane an output), half partials one element at a time.
template <typename Op, typename Row>
static inline void accumulateBlock(float4 *acc, unsigned vectors, const Row &row, unsigned o, unsigned n) {
  const unsigned m = row.size();
  for (unsigned i = o; i + 4 * vectors <= m; i += n) {
    const auto *x = &row[i];
    if constexpr (std::is_same<std::decay_t<decltype(*x)>, float>::value) {
      for (unsigned k = 0; k < vectors; ++k) {
        float4 v;
        std::memcpy(&v, x + 4 * k, sizeof v);
        acc[k] = Op::step(acc[k], v);
      }
    } else {
      for (unsigned k = 0; k < 4 * vectors; ++k)
        acc[k / 4][k % 4] = Op::step(acc[k / 4][k % 4], float(x[k]));
    }
  }
}

// Outputs [o, o + 4·vectors) of a region of n from the partials [first, first + count).
// VECTORS > 0: exactly that many accumulators, which stay in registers; 0: ``vectors`` of
// them (up to WIDE_VECTORS) in L1, each partial streaming past them.
constexpr unsigned WIDE_VECTORS = 64;
template <typename Op, unsigned VECTORS, typename PartialsList, typename Store>
static void reduceBlock(const PartialsList &partials, unsigned first, unsigned count, unsigned o, unsigned n,
                        unsigned vectors, const Store &store) {
  if (VECTORS)
    vectors = VECTORS;
  const float identity = Op::init();
  float4 acc[VECTORS ? VECTORS : WIDE_VECTORS];
  for (unsigned k = 0; k < vectors; ++k)
    acc[k] = float4{identity, identity, identity, identity};
  for (unsigned p = first; p < first + count; ++p)
    accumulateBlock<Op>(acc, vectors, partials[p], o, n);
  for (unsigned k = 0; k < 4 * vectors; ++k)
    store(o + k, acc[k / 4][k % 4]);
}

// One output region: out[0, n) from the partials [first, first + count). Outputs go in
// blocks of float4 accumulators (measured on the [4096, 4096] dim-0 sum: with a few
// partials, 16 outputs in registers read fastest; with many, 256 in L1 with each partial
// streaming past), the last n % 4 singly.
template <typename Op, typename PartialsList, typename OutRow>
static void reduceRegion(OutRow &&out, const PartialsList &partials, unsigned first, unsigned count,
                         bool isUpdate) {
  constexpr unsigned MANY_PARTIALS = 8;
  const unsigned n = out.size();
  auto store = [&](unsigned o, float value) {
    if (isUpdate)
      out[o] = float(out[o]) + value;
    else
      out[o] = value;
  };
  unsigned o = 0;
  if (count > MANY_PARTIALS) {  // long streams along each partial
    for (; o + 4 <= n; o += 4 * std::min(WIDE_VECTORS, (n - o) / 4))
      reduceBlock<Op, 0>(partials, first, count, o, n, std::min(WIDE_VECTORS, (n - o) / 4), store);
  } else {  // few partials: accumulators in registers
    for (; o + 16 <= n; o += 16)
      reduceBlock<Op, 4>(partials, first, count, o, n, 4, store);
    for (; o + 4 <= n; o += 4)
      reduceBlock<Op, 1>(partials, first, count, o, n, 1, store);
  }
  const float identity = Op::init();
  for (; o < n; ++o) {
    float acc[4] = {identity, identity, identity, identity};
    for (unsigned p = first; p < first + count; ++p) {
      const auto &row = partials[p];
      const unsigned m = row.size();
      if (n == 1) {
        unsigned i = 0;
        for (; i + 3 < m; i += 4)
          for (unsigned k = 0; k < 4; ++k)
            acc[k] = Op::step(acc[k], float(row[i + k]));
        for (; i < m; ++i)
          acc[0] = Op::step(acc[0], float(row[i]));
      } else {
        for (unsigned i = o; i < m; i += n)
          acc[0] = Op::step(acc[0], float(row[i]));
      }
    }
    float value = acc[0];
    for (unsigned k = 1; k < 4; ++k)
      value = Op::combine(value, acc[k]);
    store(o, value);
  }
}

template <typename ReduceOp, typename PartialsType, typename OutType, bool isUpdate,
          ReductionSpecialisation specialisation>
class Reduce : public Vertex {
public:
  // written, or read and written when the vertex updates it
  std::conditional_t<isUpdate, InOut<VectorList<OutType>>, Output<VectorList<OutType>>> out;
  Input<VectorList<PartialsType>> partials;
  Vector<int> numPartials;

  bool compute() {
    unsigned first = 0;
    for (unsigned r = 0; r < out.size(); ++r) {
      reduceRegion<ReduceOp>(out[r], partials, first, numPartials[r], isUpdate);
      first += numPartials[r];
    }
    return true;
  }
};

#define POPOPS_REDUCE(OP, P, O)                                                      \
  template class Reduce<OP, P, O, false, ReductionSpecialisation::DEFAULT>;        \
  template class Reduce<OP, P, O, true, ReductionSpecialisation::DEFAULT>;
#define POPOPS_REDUCE_TYPES(OP)                                                      \
  POPOPS_REDUCE(OP, float, float)                                                    \
  POPOPS_REDUCE(OP, float, half)                                                     \
  POPOPS_REDUCE(OP, half, float)                                                     \
  POPOPS_REDUCE(OP, half, half)

POPOPS_REDUCE_TYPES(popops::ReduceAdd)
POPOPS_REDUCE_TYPES(popops::ReduceSquareAdd)
POPOPS_REDUCE_TYPES(popops::ReduceMul)
POPOPS_REDUCE_TYPES(popops::ReduceMax)
POPOPS_REDUCE_TYPES(popops::ReduceMin)

}  // namespace popops
