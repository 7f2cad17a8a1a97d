// The host kernel behind poplin's AMP vertices (ConvPartial1x1Out in conv_vertices.cpp,
// ConvPartialnx1 in conv_nx1.cpp): what the IPU's accumulating matrix product units do,
// written for a host vector unit.
//
//   out[p][oc] (+)= sum over in-channel groups g, channels k of in[g][p][k] * w[g][k][oc]
//
// for output rows p = 0..n-1, where input row p is `lda` floats after row p-1 and output
// row p is `ldo` elements after row p-1 (a strided convolution steps them by the stride).
// Register blocks of up to 6 rows x 16 output channels, or 12 rows x 8 (12 eight-float
// accumulators either way), weights streamed as 8-float vectors, inputs broadcast. The
// "groups" may be any list of (input, weights) pairs: the nx1 vertex passes one per kernel
// position and in-channel group. `Accumulate` adds to what the output holds (the nx1
// vertex with half partials sums kernel positions in memory, as PopLibs' does); without it
// the output is overwritten. Built twice, for AVX2+FMA and for the baseline instruction
// set, and picked once by what the host CPU has.
#ifndef POPSIM_POPLIN_CONV_AMP_KERNEL_HPP
#define POPSIM_POPLIN_CONV_AMP_KERNEL_HPP

#include <cstddef>
#include <type_traits>
#include <vector>

namespace poplin {
namespace detail {

typedef float float8 __attribute__((vector_size(32)));
typedef float float8u __attribute__((vector_size(32), aligned(4)));  // an unaligned load/store
constexpr unsigned MAX_ROWS = 12, WIDE_ROWS = 6, COLS = 8;

#define POPLIN_INLINE inline __attribute__((always_inline))

// The operands of one output group: per in-channel group, the first row's inputs (rows
// `lda` apart) and the weights (rows `ldw` apart), all float.
struct Operands {
  const float *const *in;
  const float *const *w;
  unsigned groups, chans, lda, ldw;
};

// acc[r][c] (loaded from `out` when Accumulate, else zero) += sum over groups and chans of
// in[r][k] * w[k][8c..8c+8), for R rows and C vectors of which `cols` columns are real.
template <bool Accumulate, typename AccumType, unsigned R, unsigned C>
POPLIN_INLINE void block(const Operands &op, unsigned row, unsigned col, float8 (&acc)[MAX_ROWS][2],
                         const AccumType *out, unsigned ldo, unsigned cols) {
  for (unsigned r = 0; r < R; ++r)
    for (unsigned c = 0; c < C; ++c)
      acc[r][c] = float8{};
  if (Accumulate) {
    for (unsigned r = 0; r < R; ++r) {
      const AccumType *o = out + std::size_t(r) * ldo;
      if (std::is_same<AccumType, float>::value && cols == C * COLS) {
        for (unsigned c = 0; c < C; ++c)
          acc[r][c] = *reinterpret_cast<const float8u *>(reinterpret_cast<const float *>(o) + COLS * c);
      } else {
        for (unsigned j = 0; j < cols; ++j)
          acc[r][j / COLS][j % COLS] = float(o[j]);
      }
    }
  }
  for (unsigned g = 0; g < op.groups; ++g) {
    // rows past the sixth from a second base, so that the rows' offsets take 5 registers
    const float *a = op.in[g] + std::size_t(row) * op.lda, *a6 = a + std::size_t(WIDE_ROWS) * op.lda;
    const float *w = op.w[g] + col;
    for (unsigned k = 0; k < op.chans; ++k, w += op.ldw) {
      float8 b[C];
      for (unsigned c = 0; c < C; ++c)
        b[c] = *reinterpret_cast<const float8u *>(w + COLS * c);
      for (unsigned r = 0; r < R; ++r) {
        const float x = (r < WIDE_ROWS ? a : a6)[std::size_t(r % WIDE_ROWS) * op.lda + k];
        for (unsigned c = 0; c < C; ++c)
          acc[r][c] += x * b[c];
      }
    }
  }
}

// Writes acc's first `cols` columns of R rows to out (rows `ldo` apart) as AccumType.
template <typename AccumType, unsigned R>
POPLIN_INLINE void store(const float8 (&acc)[MAX_ROWS][2], AccumType *out, unsigned ldo, unsigned cols) {
  for (unsigned r = 0; r < R; ++r) {
    AccumType *o = out + std::size_t(r) * ldo;
    if (std::is_same<AccumType, float>::value && cols == 2 * COLS) {
      *reinterpret_cast<float8u *>(reinterpret_cast<float *>(o)) = acc[r][0];
      *reinterpret_cast<float8u *>(reinterpret_cast<float *>(o) + COLS) = acc[r][1];
    } else {
      for (unsigned j = 0; j < cols; ++j)
        o[j] = AccumType(acc[r][j / COLS][j % COLS]);
    }
  }
}

// R rows starting at `row`: column blocks of 16, then 8, then the < 8 tail from `tail`
// (the weights' last columns, zero-padded to 8 wide).
template <bool Accumulate, typename AccumType, unsigned R>
POPLIN_INLINE void rows(const Operands &op, const Operands &tail, unsigned row, AccumType *out, unsigned ldo,
                        unsigned width) {
  float8 acc[MAX_ROWS][2];
  unsigned col = 0;
  for (; R <= WIDE_ROWS && col + 2 * COLS <= width; col += 2 * COLS) {  // (more rows: 8-column blocks only)
    block<Accumulate, AccumType, R, 2>(op, row, col, acc, out + col, ldo, 2 * COLS);
    store<AccumType, R>(acc, out + col, ldo, 2 * COLS);
  }
  for (; col + COLS <= width; col += COLS) {
    block<Accumulate, AccumType, R, 1>(op, row, col, acc, out + col, ldo, COLS);
    store<AccumType, R>(acc, out + col, ldo, COLS);
  }
  if (col < width) {
    block<Accumulate, AccumType, R, 1>(tail, row, 0, acc, out + col, ldo, width - col);
    store<AccumType, R>(acc, out + col, ldo, width - col);
  }
}

// R rows (a template argument up to `Max`) from `row`, for R = n at run time.
template <bool Accumulate, typename AccumType, unsigned Max>
POPLIN_INLINE void rowsOf(unsigned n, const Operands &op, const Operands &tail, unsigned row, AccumType *out,
                          unsigned ldo, unsigned width) {
#define POPLIN_ROWS_CASE(R)                                                                                    \
  case R:                                                                                                      \
    if (R <= Max)                                                                                              \
      rows<Accumulate, AccumType, (R <= Max ? R : 1)>(op, tail, row, out, ldo, width);                         \
    break;
  switch (n) {
    POPLIN_ROWS_CASE(1) POPLIN_ROWS_CASE(2) POPLIN_ROWS_CASE(3) POPLIN_ROWS_CASE(4) POPLIN_ROWS_CASE(5)
    POPLIN_ROWS_CASE(6) POPLIN_ROWS_CASE(7) POPLIN_ROWS_CASE(8) POPLIN_ROWS_CASE(9) POPLIN_ROWS_CASE(10)
    POPLIN_ROWS_CASE(11) POPLIN_ROWS_CASE(12)
  default: break;
  }
#undef POPLIN_ROWS_CASE
}

// Rows [first, last): output row p at out + p * ldo. The rows go in blocks of near-equal
// size: at most 6 when there are 16-column blocks (12 accumulators), at most 12 when every
// block is 8 columns wide. A block of few rows is a few chains of dependent additions,
// which wait on the adder's latency, so 13 rows go as 7 + 6, not 12 + 1. How rows are
// blocked changes no sum: each output's products are added in the same order.
template <bool Accumulate, typename AccumType>
POPLIN_INLINE void positions(const Operands &op, const Operands &tail, unsigned first, unsigned last,
                             AccumType *out, unsigned ldo, unsigned width) {
  if (last <= first)
    return;
  const bool narrow = width < 2 * COLS;
  const unsigned most = narrow ? MAX_ROWS : WIDE_ROWS, n = last - first;
  const unsigned blocks = (n + most - 1) / most, base = n / blocks, extra = n % blocks;
  unsigned p = first;
  for (unsigned b = 0; b < blocks; ++b) {
    const unsigned size = base + (b < extra ? 1 : 0);
    AccumType *o = out + std::size_t(p) * ldo;
    if (narrow)
      rowsOf<Accumulate, AccumType, MAX_ROWS>(size, op, tail, p, o, ldo, width);
    else
      rowsOf<Accumulate, AccumType, WIDE_ROWS>(size, op, tail, p, o, ldo, width);
    p += size;
  }
}

template <bool Accumulate, typename AccumType>
__attribute__((target("avx2,fma"))) void positionsAvx2(const Operands &op, const Operands &tail, unsigned first,
                                                       unsigned last, AccumType *out, unsigned ldo,
                                                       unsigned width) {
  positions<Accumulate, AccumType>(op, tail, first, last, out, ldo, width);
}

template <bool Accumulate, typename AccumType>
void positionsBaseline(const Operands &op, const Operands &tail, unsigned first, unsigned last, AccumType *out,
                       unsigned ldo, unsigned width) {
  positions<Accumulate, AccumType>(op, tail, first, last, out, ldo, width);
}

inline bool hostHasAvx2() {
#if defined(__x86_64__) || defined(__i386__)
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has;
#else
  return false;
#endif
}

// The kernel on the host's best instruction set.
template <bool Accumulate, typename AccumType>
inline void runPositions(const Operands &op, const Operands &tail, unsigned first, unsigned last, AccumType *out,
                         unsigned ldo, unsigned width) {
  if (hostHasAvx2())
    positionsAvx2<Accumulate, AccumType>(op, tail, first, last, out, ldo, width);
  else
    positionsBaseline<Accumulate, AccumType>(op, tail, first, last, out, ldo, width);
}

// Single rows, each with its own operands: out[r][oc] = sum over pairs g < n, channels k of
// in[r][g][k] * w[r][g][k][oc], for R <= MAX_SINGLES rows whose n (input, weights) pairs are
// at in[r * n + g] and w[r * n + g] (weights rows `ldw` apart), 8 columns from `col`. Rows of
// a convolution whose kernel positions differ (the first and last columns of a padded
// output row) have nothing to share with a neighbour, so each is a block of one row: one
// chain of dependent additions, which waits on the adder's latency at every product. Here R
// such chains advance together. Each row adds its products in the order block() adds them.
constexpr unsigned MAX_SINGLES = 8;

template <unsigned R>
POPLIN_INLINE void singles(const float *const *in, const float *const *w, unsigned n, unsigned chans, unsigned ldw,
                           unsigned col, float *const *out) {
  float8 acc[R];
  for (unsigned r = 0; r < R; ++r)
    acc[r] = float8{};
  for (unsigned g = 0; g < n; ++g) {
    const float *a[R], *b[R];
    for (unsigned r = 0; r < R; ++r) {
      a[r] = in[r * n + g];
      b[r] = w[r * n + g] + col;
    }
    for (unsigned k = 0; k < chans; ++k)
      for (unsigned r = 0; r < R; ++r)
        acc[r] += a[r][k] * *reinterpret_cast<const float8u *>(b[r] + std::size_t(k) * ldw);
  }
  for (unsigned r = 0; r < R; ++r)
    *reinterpret_cast<float8u *>(out[r] + col) = acc[r];
}

// `rows` (1..MAX_SINGLES) single rows of `width` columns, a multiple of 8.
POPLIN_INLINE void singlesOf(unsigned rows, const float *const *in, const float *const *w, unsigned n,
                             unsigned chans, unsigned ldw, unsigned width, float *const *out) {
  for (unsigned col = 0; col < width; col += COLS) {
    switch (rows) {
#define POPLIN_SINGLES_CASE(R)                                                                                 \
  case R:                                                                                                      \
    singles<R>(in, w, n, chans, ldw, col, out);                                                                \
    break;
      POPLIN_SINGLES_CASE(1) POPLIN_SINGLES_CASE(2) POPLIN_SINGLES_CASE(3) POPLIN_SINGLES_CASE(4)
      POPLIN_SINGLES_CASE(5) POPLIN_SINGLES_CASE(6) POPLIN_SINGLES_CASE(7) POPLIN_SINGLES_CASE(8)
#undef POPLIN_SINGLES_CASE
    default: break;
    }
  }
}

__attribute__((target("avx2,fma"))) inline void singlesAvx2(unsigned rows, const float *const *in,
                                                            const float *const *w, unsigned n, unsigned chans,
                                                            unsigned ldw, unsigned width, float *const *out) {
  singlesOf(rows, in, w, n, chans, ldw, width, out);
}

inline void singlesBaseline(unsigned rows, const float *const *in, const float *const *w, unsigned n,
                            unsigned chans, unsigned ldw, unsigned width, float *const *out) {
  singlesOf(rows, in, w, n, chans, ldw, width, out);
}

// singlesOf on the host's best instruction set.
inline void runSingles(unsigned rows, const float *const *in, const float *const *w, unsigned n, unsigned chans,
                       unsigned ldw, unsigned width, float *const *out) {
  if (hostHasAvx2())
    singlesAvx2(rows, in, w, n, chans, ldw, width, out);
  else
    singlesBaseline(rows, in, w, n, chans, ldw, width, out);
}

// `n` values of T (value-initialised): on the stack when there are few, as a vertex's
// in-channel groups usually are, else on the heap. A worker runs often and briefly: a
// heap allocation per call is a measurable share of a small one.
template <typename T, unsigned N = 32>
class SmallArray {
public:
  explicit SmallArray(std::size_t n) : p_(n <= N ? local_ : nullptr) {
    if (p_ == nullptr) {
      heap_.resize(n);
      p_ = heap_.data();
    } else {
      for (std::size_t i = 0; i < n; ++i) local_[i] = T();
    }
  }
  SmallArray(const SmallArray &) = delete;
  SmallArray &operator=(const SmallArray &) = delete;
  T *data() { return p_; }
  T &operator[](std::size_t i) { return p_[i]; }

private:
  T local_[N];
  std::vector<T> heap_;
  T *p_;
};

// Float views of a worker's operands: float data is used in place; half data is widened
// into `store` (the caller takes store.data() + at once every group is widened).
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
  return nullptr;
}

// The weights' last `tailCols` (< 8) columns of `chans` rows (`width` apart), zero-padded to
// 8 wide, written to `t` (chans x 8).
inline void tailColumns(const float *w, unsigned chans, unsigned width, unsigned tailCols, float *t) {
  for (unsigned k = 0; k < chans; ++k)
    for (unsigned j = 0; j < COLS; ++j)
      t[k * COLS + j] = j < tailCols ? w[std::size_t(k) * width + width - tailCols + j] : 0.0f;
}

}  // namespace detail
}  // namespace poplin

#endif
