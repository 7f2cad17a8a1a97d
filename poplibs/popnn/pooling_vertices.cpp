// popnn's pooling vertices (PopLibs' lib/popnn/codelets/MaxPooling.cpp, SumPooling.cpp,
// MaxPoolingGrad.cpp, MaxPoolingGradientScale.cpp, SelectiveScaling.cpp; assembler on the
// IPU), under PopLibs' names and template parameters:
//   popnn::MaxPooling<FPType>               out = max over the window (padding left out)
//   popnn::SumPooling<FPType>               out = scale * sum over the window (SUM, AVG)
//   popnn::MaxPoolingGrad<FPType>           out (input gradient) = sum of in (pooled gradient)
//                                           over the windows whose max (fwdActsOut) equals
//                                           fwdActsIn at that position
//   popnn::MaxPoolingGradientScale<FPType>  out = 1 / (how many inputs of the window equal its
//                                           max), 0 when none
//   popnn::SelectiveScaling<FPType>         inOut /= divisor, on runs of positions
//
// Layout: every tensor is planes of [positions x chansPerGroup] (channels innermost, as
// PopLibs holds pooling tensors); a "position" is chansPerGroup contiguous elements.
// The MultiVertices work on destination rows of rowSize positions held one after another in
// `out`. Fields (popsim's encoding of PopLibs' startPos/offsetBase/workList lists, unpacked):
//   rowStarts  state vector of rows + 1 offsets into workList, in entries
//   workList   state vector of entries (outOffset, inOffset, numElements): for f < numElements,
//              destination position row * rowSize + outOffset + f * outStride combines source
//              position inOffset + f * inStride of `in`
//   inStride, outStride, rowSize, chansPerGroup: positions, positions, positions, elements
// Worker w owns rows [w * rows / 6, (w + 1) * rows / 6): it initialises them and applies their
// entries, so workers never write the same element. Each row is accumulated in float (HALF
// rounded once when stored; PopLibs' half vertices accumulate in half) and entries are applied
// in order, so results do not depend on how rows are split between tiles and workers.
#include <algorithm>
#include <cfloat>
#include <vector>

#include <ipudef.h>
#include <poplar/HalfFloat.hpp>
#include <poplar/Vertex.hpp>

using namespace poplar;

namespace popnn {
namespace detail {

template <class T> inline float lowestOf() { return -FLT_MAX; }
template <> inline float lowestOf<half>() { return -65504.0f; }

// The rows of worker `wid`: [first, last).
inline void workerRows(unsigned rows, unsigned wid, unsigned workers, unsigned &first, unsigned &last) {
  first = wid * rows / workers;
  last = (wid + 1) * rows / workers;
}

// Runs `combine(acc, destPos, srcPos)` over every element of each entry of row `row`, with a
// float accumulator row `acc` of rowSize * cpg elements; destPos/srcPos are element indices
// (of the row and of `in`) of the first channel.
template <class V, class F>
inline void forEntries(const V &rowStarts, const V &work, unsigned row, unsigned cpg, unsigned inStride,
                       unsigned outStride, F combine) {
  for (unsigned e = rowStarts[row]; e < rowStarts[row + 1]; ++e) {
    unsigned o = work[3 * e] * cpg, i = work[3 * e + 1] * cpg;
    const unsigned n = work[3 * e + 2], os = outStride * cpg, is = inStride * cpg;
    for (unsigned f = 0; f < n; ++f, o += os, i += is)
      combine(o, i);
  }
}

}  // namespace detail

template <typename FPType> class MaxPooling : public MultiVertex {
public:
  Output<Vector<FPType>> out;
  Input<Vector<FPType>> in;
  Vector<unsigned> rowStarts;
  Vector<unsigned> workList;
  unsigned rowSize;
  unsigned chansPerGroup;
  unsigned inStride;
  unsigned outStride;

  bool compute(unsigned wid) {
    const unsigned cpg = chansPerGroup, width = rowSize * cpg;
    unsigned first, last;
    detail::workerRows(rowStarts.size() - 1, wid, numWorkers(), first, last);
    std::vector<float> acc(width);
    const FPType *src = &in[0];
    for (unsigned r = first; r < last; ++r) {
      std::fill(acc.begin(), acc.end(), detail::lowestOf<FPType>());
      float *a = acc.data();
      detail::forEntries(rowStarts, workList, r, cpg, inStride, outStride, [&](unsigned o, unsigned i) {
        for (unsigned c = 0; c < cpg; ++c)
          a[o + c] = std::max(a[o + c], float(src[i + c]));
      });
      for (unsigned k = 0; k < width; ++k)
        out[r * width + k] = FPType(a[k]);
    }
    return true;
  }
};

template <typename FPType> class SumPooling : public MultiVertex {
public:
  Output<Vector<FPType>> out;
  Input<Vector<FPType>> in;
  Vector<unsigned> rowStarts;
  Vector<unsigned> workList;
  unsigned rowSize;
  unsigned chansPerGroup;
  unsigned inStride;
  unsigned outStride;
  float scale;

  bool compute(unsigned wid) {
    const unsigned cpg = chansPerGroup, width = rowSize * cpg;
    unsigned first, last;
    detail::workerRows(rowStarts.size() - 1, wid, numWorkers(), first, last);
    std::vector<float> acc(width);
    const FPType *src = &in[0];
    for (unsigned r = first; r < last; ++r) {
      std::fill(acc.begin(), acc.end(), 0.0f);
      float *a = acc.data();
      detail::forEntries(rowStarts, workList, r, cpg, inStride, outStride, [&](unsigned o, unsigned i) {
        for (unsigned c = 0; c < cpg; ++c)
          a[o + c] += float(src[i + c]);
      });
      for (unsigned k = 0; k < width; ++k)
        out[r * width + k] = FPType(scale * a[k]);
    }
    return true;
  }
};

template <typename FPType> class MaxPoolingGrad : public MultiVertex {
public:
  Output<Vector<FPType>> out;
  Input<Vector<FPType>> in;
  Input<Vector<FPType>> fwdActsIn;
  Input<Vector<FPType>> fwdActsOut;
  Vector<unsigned> rowStarts;
  Vector<unsigned> workList;
  unsigned rowSize;
  unsigned chansPerGroup;
  unsigned inStride;
  unsigned outStride;

  bool compute(unsigned wid) {
    const unsigned cpg = chansPerGroup, width = rowSize * cpg;
    unsigned first, last;
    detail::workerRows(rowStarts.size() - 1, wid, numWorkers(), first, last);
    std::vector<float> acc(width);
    const FPType *grad = &in[0], *maxes = &fwdActsOut[0];
    for (unsigned r = first; r < last; ++r) {
      std::fill(acc.begin(), acc.end(), 0.0f);
      float *a = acc.data();
      const FPType *acts = &fwdActsIn[0] + std::size_t(r) * width;
      detail::forEntries(rowStarts, workList, r, cpg, inStride, outStride, [&](unsigned o, unsigned i) {
        for (unsigned c = 0; c < cpg; ++c)
          if (float(acts[o + c]) == float(maxes[i + c]))
            a[o + c] += float(grad[i + c]);
      });
      for (unsigned k = 0; k < width; ++k)
        out[r * width + k] = FPType(a[k]);
    }
    return true;
  }
};

template <typename FPType> class MaxPoolingGradientScale : public MultiVertex {
public:
  Output<Vector<FPType>> out;
  Input<Vector<FPType>> in;
  Input<Vector<FPType>> fwdActsOut;
  Vector<unsigned> rowStarts;
  Vector<unsigned> workList;
  unsigned rowSize;
  unsigned chansPerGroup;
  unsigned inStride;
  unsigned outStride;

  bool compute(unsigned wid) {
    const unsigned cpg = chansPerGroup, width = rowSize * cpg;
    unsigned first, last;
    detail::workerRows(rowStarts.size() - 1, wid, numWorkers(), first, last);
    std::vector<float> acc(width);
    const FPType *acts = &in[0];
    for (unsigned r = first; r < last; ++r) {
      std::fill(acc.begin(), acc.end(), 0.0f);
      float *a = acc.data();
      const FPType *maxes = &fwdActsOut[0] + std::size_t(r) * width;
      detail::forEntries(rowStarts, workList, r, cpg, inStride, outStride, [&](unsigned o, unsigned i) {
        for (unsigned c = 0; c < cpg; ++c)
          a[o + c] += float(acts[i + c]) == float(maxes[o + c]) ? 1.0f : 0.0f;
      });
      for (unsigned k = 0; k < width; ++k)
        out[r * width + k] = FPType(a[k] != 0.0f ? 1.0f / a[k] : 0.0f);
    }
    return true;
  }
};

// One worker: runs (position, numPositions, divisor) of inOut divided by the divisor.
template <typename FPType> class SelectiveScaling : public Vertex {
public:
  InOut<Vector<FPType>> inOut;
  Vector<unsigned> scaleWorklist;
  unsigned chansPerGroup;

  bool compute() {
    const unsigned cpg = chansPerGroup;
    for (unsigned w = 0; w + 2 < scaleWorklist.size(); w += 3) {
      const unsigned begin = scaleWorklist[w] * cpg, end = begin + scaleWorklist[w + 1] * cpg;
      const float divisor = float(scaleWorklist[w + 2]);
      for (unsigned k = begin; k < end; ++k)
        inOut[k] = FPType(float(inOut[k]) / divisor);
    }
    return true;
  }
};

template class MaxPooling<float>;
template class MaxPooling<half>;
template class SumPooling<float>;
template class SumPooling<half>;
template class MaxPoolingGrad<float>;
template class MaxPoolingGrad<half>;
template class MaxPoolingGradientScale<float>;
template class MaxPoolingGradientScale<half>;
template class SelectiveScaling<float>;
template class SelectiveScaling<half>;

}  // namespace popnn
