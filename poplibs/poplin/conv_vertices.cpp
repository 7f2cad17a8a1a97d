// poplin's AMP partial-product vertex (PopLibs' lib/poplin/codelets/ConvPartial1x1Out.cpp,
// whose IPU versions are assembler driving the accumulating matrix product units):
//   poplin::ConvPartial1x1Out<FPType, AccumType, useLimitedVer, use128BitConvUnitLoad,
//                             numConvUnits, convInputLoadElems, disableSR>
// with PopLibs' template parameters in PopLibs' order, instantiated as PopLibs instantiates
// them (half/half, half/float, float/float; 8 and 16 conv units; both load widths).
//
// What it computes, per conv group cg and out-channel group og (a 1x1 kernel, stride 1):
//   out[cg, og][p][oc] = sum over ig, ic of in[cg, ig][p][ic] * weights[cg, og, ig][ic][oc]
// Fields (simpler than PopLibs' packed worklists; the mapping):
//   in       Vector of edges, index cg * numInGroups + ig; each [positions x inChansPerGroup]
//            (PopLibs: the same rows, field positions then the group's in-channels)
//   weights  Vector of edges, index (cg * numOutGroups + og) * numInGroups + ig; each
//            [inChansPerGroup x outChansPerGroup], OUT-channels innermost. PopLibs holds a
//            group's weights [outChansPerGroup x inChansPerGroup] for the AMP units' weight
//            registers; a host vector unit wants one input broadcast across adjacent output
//            channels, so the layout is the transpose (a matmul's B as it comes).
//   out      Vector of edges, index cg * numOutGroups + og; each [positions x outChansPerGroup]
//   numConvGroupsM1, numOutGroupsM1 (PopLibs' "minus one" counts), numInGroups,
//   inChansPerGroup, outChansPerGroup: plain state. positions = out[0].size() / outChansPerGroup.
//   PopLibs' worklists (a [outOffset, numFieldElems, inOffset] triple per worker) are
//   replaced by the even split partitionConvPartialByWorker makes: worker w of the
//   MultiVertex takes positions [w * P / 6, (w + 1) * P / 6).
// The sum over every in-channel group is written (PopLibs' first group writes, later ones
// add: the same result). Products accumulate in float, in order of (ig, ic), and are rounded
// once to AccumType; half inputs are exact in float, so half x half products are exact.
// useLimitedVer, use128BitConvUnitLoad, numConvUnits, convInputLoadElems and disableSR
// choose the IPU's instruction sequence and its cycles (the estimator), not the values.
//
// Speed: register blocks of up to 6 positions x 16 output channels (12 eight-float
// accumulators), weights streamed as 8-float vectors, inputs broadcast; half operands are
// widened to float once per worker. The kernel is built for AVX-512 (16-float vectors:
// blocks of 6 x 32), AVX2+FMA and the baseline instruction set, and picked once by what
// the host CPU has.
#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include <ipudef.h>
#include <poplar/HalfFloat.hpp>
#include <poplar/Vertex.hpp>

using namespace poplar;

namespace poplin {
namespace detail {

typedef float float8 __attribute__((vector_size(32)));
typedef float float8u __attribute__((vector_size(32), aligned(4)));  // an unaligned load/store
typedef float float16 __attribute__((vector_size(64)));
typedef float float16u __attribute__((vector_size(64), aligned(4)));
constexpr unsigned MAX_ROWS = 6;

// A vector of LANES floats, and its unaligned form for loads and stores.
template <unsigned LANES> struct Vec;
template <> struct Vec<8> {
  typedef float8 type;
  typedef float8u unaligned;
};
template <> struct Vec<16> {
  typedef float16 type;
  typedef float16u unaligned;
};

#define POPLIN_INLINE inline __attribute__((always_inline))

// The operands of one worker's (cg, og): per in-channel group, the first row's inputs
// (rows `lda` apart) and the weights (rows `ldw` apart), all float.
struct Operands {
  const float *const *in;
  const float *const *w;
  unsigned groups, chans, lda, ldw;
};

// acc[r][c] = sum over groups and chans of in[r][k] * w[k][L·c..L·c+L), for R rows, C vectors.
template <unsigned L, unsigned R, unsigned C>
POPLIN_INLINE void block(const Operands &op, unsigned row, unsigned col, typename Vec<L>::type (&acc)[MAX_ROWS][2]) {
  typedef typename Vec<L>::type V;
  for (unsigned r = 0; r < R; ++r)
    for (unsigned c = 0; c < C; ++c)
      acc[r][c] = V{};
  for (unsigned g = 0; g < op.groups; ++g) {
    const float *a = op.in[g] + std::size_t(row) * op.lda;
    const float *w = op.w[g] + col;
    for (unsigned k = 0; k < op.chans; ++k, w += op.ldw) {
      V b[C];
      for (unsigned c = 0; c < C; ++c)
        b[c] = *reinterpret_cast<const typename Vec<L>::unaligned *>(w + L * c);
      for (unsigned r = 0; r < R; ++r) {
        const float x = a[std::size_t(r) * op.lda + k];
        for (unsigned c = 0; c < C; ++c)
          acc[r][c] += x * b[c];
      }
    }
  }
}

// Writes acc's first `cols` columns of R rows to out (rows `ldo` apart) as AccumType.
template <unsigned L, typename AccumType, unsigned R>
POPLIN_INLINE void store(const typename Vec<L>::type (&acc)[MAX_ROWS][2], AccumType *out, unsigned ldo,
                         unsigned cols) {
  for (unsigned r = 0; r < R; ++r) {
    AccumType *o = out + std::size_t(r) * ldo;
    if (std::is_same<AccumType, float>::value && cols == 2 * L) {
      *reinterpret_cast<typename Vec<L>::unaligned *>(o) = acc[r][0];
      *reinterpret_cast<typename Vec<L>::unaligned *>(o + L) = acc[r][1];
    } else {
      for (unsigned j = 0; j < cols; ++j)
        o[j] = AccumType(acc[r][j / L][j % L]);
    }
  }
}

// R rows starting at `row`: column blocks of 2L, then L, then the < L tail from `tail`
// (the weights' last columns, zero-padded to L wide).
template <unsigned L, typename AccumType, unsigned R>
POPLIN_INLINE void rows(const Operands &op, const Operands &tail, unsigned row, AccumType *out, unsigned ldo,
                        unsigned width) {
  typename Vec<L>::type acc[MAX_ROWS][2];
  unsigned col = 0;
  for (; col + 2 * L <= width; col += 2 * L) {
    block<L, R, 2>(op, row, col, acc);
    store<L, AccumType, R>(acc, out + col, ldo, 2 * L);
  }
  for (; col + L <= width; col += L) {
    block<L, R, 1>(op, row, col, acc);
    store<L, AccumType, R>(acc, out + col, ldo, L);
  }
  if (col < width) {
    block<L, R, 1>(tail, row, 0, acc);
    store<L, AccumType, R>(acc, out + col, ldo, width - col);
  }
}

// Positions [first, last) of one output group: out rows (ldo = width apart) from op.
template <unsigned L, typename AccumType>
POPLIN_INLINE void positions(const Operands &op, const Operands &tail, unsigned first, unsigned last,
                             AccumType *out, unsigned width) {
  unsigned p = first;
  for (; p + MAX_ROWS <= last; p += MAX_ROWS)
    rows<L, AccumType, MAX_ROWS>(op, tail, p, out + std::size_t(p) * width, width, width);
  AccumType *o = out + std::size_t(p) * width;
  switch (last - p) {
  case 5: rows<L, AccumType, 5>(op, tail, p, o, width, width); break;
  case 4: rows<L, AccumType, 4>(op, tail, p, o, width, width); break;
  case 3: rows<L, AccumType, 3>(op, tail, p, o, width, width); break;
  case 2: rows<L, AccumType, 2>(op, tail, p, o, width, width); break;
  case 1: rows<L, AccumType, 1>(op, tail, p, o, width, width); break;
  default: break;
  }
}

// The kernel built three times, picked once by what the host CPU has: AVX-512 (16-float
// vectors), AVX2 + FMA (8), and the baseline instruction set (8, as the compiler can).
template <typename AccumType>
__attribute__((target("avx512f,fma"))) void positionsAvx512(const Operands &op, const Operands &tail,
                                                            unsigned first, unsigned last, AccumType *out,
                                                            unsigned width) {
  positions<16, AccumType>(op, tail, first, last, out, width);
}

template <typename AccumType>
__attribute__((target("avx2,fma"))) void positionsAvx2(const Operands &op, const Operands &tail, unsigned first,
                                                       unsigned last, AccumType *out, unsigned width) {
  positions<8, AccumType>(op, tail, first, last, out, width);
}

template <typename AccumType>
void positionsBaseline(const Operands &op, const Operands &tail, unsigned first, unsigned last, AccumType *out,
                       unsigned width) {
  positions<8, AccumType>(op, tail, first, last, out, width);
}

inline bool hostHasAvx2() {
#if defined(__x86_64__) || defined(__i386__)
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has;
#else
  return false;
#endif
}

inline bool hostHasAvx512() {
#if defined(__x86_64__) || defined(__i386__)
  static const bool has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma");
  return has;
#else
  return false;
#endif
}

// The vector width of the kernel this host runs.
inline unsigned hostLanes() { return hostHasAvx512() ? 16 : 8; }

// Float views of a worker's operands: float data is used in place; half data is widened
// into `store` (inputs: only the worker's positions).
template <typename FPType, typename Edges>
const float *asFloat(const Edges &edges, unsigned index, std::size_t begin, std::size_t count,
                     std::vector<float> &store) {
  const FPType *data = edges[index].data();
  if (std::is_same<FPType, float>::value)
    return reinterpret_cast<const float *>(data) + begin;
  const std::size_t at = store.size();
  store.resize(at + count);
  for (std::size_t i = 0; i < count; ++i)
    store[at + i] = float(data[begin + i]);
  return nullptr;  // the caller takes store.data() + at once every group is widened
}

}  // namespace detail

template <class FPType, class AccumType, bool useLimitedVer, bool use128BitConvUnitLoad, unsigned numConvUnits,
          unsigned convInputLoadElems, bool disableSR>
class ConvPartial1x1Out : public MultiVertex {
public:
  Vector<Input<Vector<FPType>>> in;
  Vector<Input<Vector<FPType>>> weights;
  Vector<Output<Vector<AccumType>>> out;
  unsigned numConvGroupsM1;
  unsigned numOutGroupsM1;
  unsigned numInGroups;
  unsigned inChansPerGroup;
  unsigned outChansPerGroup;

  bool compute(unsigned wid) {
    using namespace detail;
    const unsigned groups = numInGroups, chans = inChansPerGroup, width = outChansPerGroup;
    if (out.size() == 0 || width == 0)
      return true;
    const unsigned numPositions = out[0].size() / width;
    const unsigned first = wid * numPositions / numWorkers(), last = (wid + 1) * numPositions / numWorkers();
    if (first == last)
      return true;
    const unsigned lanes = hostLanes();
    const unsigned numOutGroups = numOutGroupsM1 + 1, tailCols = width % lanes;
    const bool widen = !std::is_same<FPType, float>::value;
    std::vector<const float *> inRows(groups), wRows(groups), tailRows(groups);
    std::vector<float> inStore, wStore, tailStore(std::size_t(groups) * chans * (tailCols ? lanes : 0));
    for (unsigned cg = 0; cg <= numConvGroupsM1; ++cg) {
      // inputs: the worker's positions of every in-channel group, rows `chans` apart
      inStore.clear();
      for (unsigned ig = 0; ig < groups; ++ig)
        inRows[ig] = asFloat<FPType>(in, cg * groups + ig, std::size_t(first) * chans,
                                     std::size_t(last - first) * chans, inStore);
      for (unsigned ig = 0; widen && ig < groups; ++ig)
        inRows[ig] = inStore.data() + std::size_t(ig) * (last - first) * chans;
      for (unsigned og = 0; og < numOutGroups; ++og) {
        const unsigned wBase = (cg * numOutGroups + og) * groups;
        wStore.clear();
        for (unsigned ig = 0; ig < groups; ++ig)
          wRows[ig] = asFloat<FPType>(weights, wBase + ig, 0, std::size_t(chans) * width, wStore);
        for (unsigned ig = 0; widen && ig < groups; ++ig)
          wRows[ig] = wStore.data() + std::size_t(ig) * chans * width;
        for (unsigned ig = 0; tailCols && ig < groups; ++ig) {
          float *t = tailStore.data() + std::size_t(ig) * chans * lanes;
          for (unsigned k = 0; k < chans; ++k)
            for (unsigned j = 0; j < lanes; ++j)
              t[k * lanes + j] = j < tailCols ? wRows[ig][std::size_t(k) * width + width - tailCols + j] : 0.0f;
          tailRows[ig] = t;
        }
        // rows are indexed from the worker's first position (inputs hold only those)
        const Operands op{inRows.data(), wRows.data(), groups, chans, chans, width};
        const Operands tail{inRows.data(), tailRows.data(), groups, chans, chans, lanes};
        AccumType *o = out[cg * numOutGroups + og].data() + std::size_t(first) * width;
        if (lanes == 16)
          positionsAvx512<AccumType>(op, tail, 0, last - first, o, width);
        else if (hostHasAvx2())
          positionsAvx2<AccumType>(op, tail, 0, last - first, o, width);
        else
          positionsBaseline<AccumType>(op, tail, 0, last - first, o, width);
      }
    }
    return true;
  }
};

#define POPLIN_1X1_DISABLE_SR(IN, ACC, LIMITED, W128, UNITS, LOAD)                                              \
  template class ConvPartial1x1Out<IN, ACC, LIMITED, W128, UNITS, LOAD, true>;                                  \
  template class ConvPartial1x1Out<IN, ACC, LIMITED, W128, UNITS, LOAD, false>;
#define POPLIN_1X1_LIMITED(IN, ACC, W128, UNITS, LOAD)                                                          \
  POPLIN_1X1_DISABLE_SR(IN, ACC, true, W128, UNITS, LOAD)                                                       \
  POPLIN_1X1_DISABLE_SR(IN, ACC, false, W128, UNITS, LOAD)
#define POPLIN_1X1(IN, ACC, UNITS, LOAD)                                                                        \
  POPLIN_1X1_LIMITED(IN, ACC, true, UNITS, LOAD)                                                                \
  POPLIN_1X1_LIMITED(IN, ACC, false, UNITS, LOAD)

POPLIN_1X1(half, half, 8, 4)
POPLIN_1X1(half, float, 8, 4)
POPLIN_1X1(float, float, 8, 2)
POPLIN_1X1(half, half, 16, 4)
POPLIN_1X1(float, float, 16, 2)
POPLIN_1X1(half, half, 8, 8)
POPLIN_1X1(half, float, 8, 8)
POPLIN_1X1(float, float, 8, 4)
POPLIN_1X1(half, half, 16, 8)
POPLIN_1X1(half, float, 16, 8)
POPLIN_1X1(float, float, 16, 4)

}  // namespace poplin
