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

// The worklist fields every pooling MultiVertex declares after its edges, in this order (the
// encoding the header describes). A macro and not a base class: popsim reads a vertex's
// fields from the members of the class that derives from MultiVertex itself, after the
// preprocessor (src/popsim/codelet/cpp.py).
#define POPNN_POOLING_WORKLIST_FIELDS                                                                           \
  Vector<unsigned> rowStarts;                                                                                   \
  Vector<unsigned> workList;                                                                                    \
  unsigned rowSize;                                                                                             \
  unsigned chansPerGroup;                                                                                       \
  unsigned inStride;                                                                                            \
  unsigned outStride;

namespace popnn {
namespace detail {

template <class T> inline float lowestOf() { return -FLT_MAX; }
template <> inline float lowestOf<half>() { return -65504.0f; }

// Worker `wid`'s rows of the pooling MultiVertex `v` (its fields rowStarts, workList, rowSize,
// chansPerGroup, inStride, outStride): each row accumulated in float from `init`, with
// `combine(acc, rowElem, destElem, srcElem)` run for every position of each of the row's
// entries (rowElem: the row's first element in `out`, and so in any tensor laid out like it;
// destElem/srcElem: element indices, in the row and in `in`, of the first channel), then
// `store(outElem, value)` for each of its rowSize * chansPerGroup elements.
template <class V, class Combine, class Store>
inline void poolRows(V &v, unsigned wid, unsigned workers, float init, Combine combine, Store store) {
  const unsigned cpg = v.chansPerGroup, width = v.rowSize * cpg, rows = v.rowStarts.size() - 1;
  const unsigned os = v.outStride * cpg, is = v.inStride * cpg;
  std::vector<float> acc(width);
  for (unsigned r = wid * rows / workers; r < (wid + 1) * rows / workers; ++r) {
    std::fill(acc.begin(), acc.end(), init);
    for (unsigned e = v.rowStarts[r]; e < v.rowStarts[r + 1]; ++e) {
      unsigned o = v.workList[3 * e] * cpg, i = v.workList[3 * e + 1] * cpg;
      for (unsigned f = 0, n = v.workList[3 * e + 2]; f < n; ++f, o += os, i += is)
        combine(acc.data(), r * width, o, i);
    }
    for (unsigned k = 0; k < width; ++k)
      store(r * width + k, acc[k]);
  }
}

}  // namespace detail

template <typename FPType> class MaxPooling : public MultiVertex {
public:
  Output<Vector<FPType>> out;
  Input<Vector<FPType>> in;
  POPNN_POOLING_WORKLIST_FIELDS

  bool compute(unsigned wid) {
    const FPType *src = &in[0];
    detail::poolRows(*this, wid, numWorkers(), detail::lowestOf<FPType>(),
                     [&](float *a, unsigned, unsigned o, unsigned i) {
                       for (unsigned c = 0; c < chansPerGroup; ++c)
                         a[o + c] = std::max(a[o + c], float(src[i + c]));
                     },
                     [&](unsigned k, float value) { out[k] = FPType(value); });
    return true;
  }
};

template <typename FPType> class SumPooling : public MultiVertex {
public:
  Output<Vector<FPType>> out;
  Input<Vector<FPType>> in;
  POPNN_POOLING_WORKLIST_FIELDS
  float scale;

  bool compute(unsigned wid) {
    const FPType *src = &in[0];
    detail::poolRows(*this, wid, numWorkers(), 0.0f,
                     [&](float *a, unsigned, unsigned o, unsigned i) {
                       for (unsigned c = 0; c < chansPerGroup; ++c)
                         a[o + c] += float(src[i + c]);
                     },
                     [&](unsigned k, float value) { out[k] = FPType(scale * value); });
    return true;
  }
};

template <typename FPType> class MaxPoolingGrad : public MultiVertex {
public:
  Output<Vector<FPType>> out;
  Input<Vector<FPType>> in;
  Input<Vector<FPType>> fwdActsIn;
  Input<Vector<FPType>> fwdActsOut;
  POPNN_POOLING_WORKLIST_FIELDS

  bool compute(unsigned wid) {
    const FPType *grad = &in[0], *maxes = &fwdActsOut[0], *acts = &fwdActsIn[0];
    detail::poolRows(*this, wid, numWorkers(), 0.0f,
                     [&](float *a, unsigned rowElem, unsigned o, unsigned i) {
                       const FPType *row = acts + rowElem;
                       for (unsigned c = 0; c < chansPerGroup; ++c)
                         if (float(row[o + c]) == float(maxes[i + c]))
                           a[o + c] += float(grad[i + c]);
                     },
                     [&](unsigned k, float value) { out[k] = FPType(value); });
    return true;
  }
};

template <typename FPType> class MaxPoolingGradientScale : public MultiVertex {
public:
  Output<Vector<FPType>> out;
  Input<Vector<FPType>> in;
  Input<Vector<FPType>> fwdActsOut;
  POPNN_POOLING_WORKLIST_FIELDS

  bool compute(unsigned wid) {
    const FPType *acts = &in[0], *maxes = &fwdActsOut[0];
    detail::poolRows(*this, wid, numWorkers(), 0.0f,
                     [&](float *a, unsigned rowElem, unsigned o, unsigned i) {
                       const FPType *row = maxes + rowElem;
                       for (unsigned c = 0; c < chansPerGroup; ++c)
                         a[o + c] += float(acts[i + c]) == float(row[o + c]) ? 1.0f : 0.0f;
                     },
                     [&](unsigned k, float value) { out[k] = FPType(value != 0.0f ? 1.0f / value : 0.0f); });
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

#define POPNN_POOLING(VERTEX)                                                                                   \
  template class VERTEX<float>;                                                                                 \
  template class VERTEX<half>;

POPNN_POOLING(MaxPooling)
POPNN_POOLING(SumPooling)
POPNN_POOLING(MaxPoolingGrad)
POPNN_POOLING(MaxPoolingGradientScale)
POPNN_POOLING(SelectiveScaling)

}  // namespace popnn
