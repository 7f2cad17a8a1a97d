// poplin's horizontal-MAC vertex (PopLibs' lib/poplin/codelets/ConvPartialHorizontalMac.cpp,
// whose IPU versions are assembler using the f32v2/f16v4 multiply-accumulate across a vector
// of input channels): the vertex for convolutions with few channels, any kernel.
//   poplin::ConvPartialHorizontalMac<FPType, AccumType, useLimitedVer>
// with PopLibs' template parameters in PopLibs' order, instantiated as PopLibs instantiates
// them (float/float, half/float, half/half).
//
// What it computes, per conv group cg, in-channel group ig and out-channel group og: the
// output positions are zeroed, then for every kernel position k and every worklist entry of k,
//   out[cg, og][outOffset + i * outStride][oc] +=
//       sum over ic of in[cg, ig][inOffset + i * inStride][ic] * weights[cg, og, ig][k][ic][oc]
// for i = 0..numFieldElems-1 (a run of output positions along the innermost field dimension
// whose inputs are real: stride, dilation and padding applied by whoever made the worklist;
// outputs reading only padding are in no entry and stay 0). The sum over the in-channels is
// the horizontal one (a dot product along the channel vector), in float; each (kernel
// position, in-channel group) sum is added to the partial in memory, rounded to AccumType,
// as the IPU's loop adds to the previous partial.
//
// Fields: those of popsim's ConvPartialnx1 (conv_nx1.cpp: in, weights, out, worklists,
// zerosInfo, inStride, outStride, numOutGroupsM1, numInGroups, numConvGroupsM1,
// outChansPerGroup, inChansPerGroup, kernelOuterSizeM1 and kernelInnerElementsM1, which
// PopLibs has as one kernelSizeM1, and outFieldRowSize), in the same layouts and unencoded
// (PopLibs' transformedInStride/transformedOutStride and COMPACT_DELTAN worklists encode the
// same numbers), plus popsim's inChanGrouping: the plan's in-channel group, for the cycle
// estimator (the vertex's inChansPerGroup channels are taken that many at a time).
// useLimitedVer chooses the IPU's instruction sequence and its cycles, not the values.
#include <algorithm>
#include <cstddef>
#include <vector>

#include <ipudef.h>
#include <poplar/HalfFloat.hpp>
#include <poplar/Vertex.hpp>

#include "conv_partial_worklists.hpp"

using namespace poplar;

namespace poplin {

template <class FPType, class AccumType, bool useLimitedVer>
class ConvPartialHorizontalMac : public MultiVertex {
public:
  POPLIN_CONV_WORKLIST_FIELDS(FPType, AccumType)
  unsigned inChanGrouping;

  bool compute(unsigned wid) {
    const unsigned chans = inChansPerGroup, width = outChansPerGroup;
    if (out.size() == 0 || width == 0)
      return true;
    const detail::WorkerLists lists(*this, wid, width);
    const unsigned numOutGroups = numOutGroupsM1 + 1, numConvGroups = numConvGroupsM1 + 1;
    lists.zero(out, numConvGroups * numOutGroups, width);
    if (chans == 0)
      return true;
    std::vector<float> acc(width);
    for (unsigned cg = 0; cg < numConvGroups; ++cg) {
      for (unsigned ig = 0; ig < numInGroups; ++ig) {
        const FPType *x = in[cg * numInGroups + ig].data();
        for (unsigned og = 0; og < numOutGroups; ++og) {
          const FPType *w = weights[(cg * numOutGroups + og) * numInGroups + ig].data();
          AccumType *o = out[cg * numOutGroups + og].data();
          for (unsigned k = 0; k < lists.kernelPositions; ++k) {
            const FPType *wk = w + std::size_t(k) * chans * width;
            for (unsigned e = lists.begin(k); e < lists.end(k); ++e) {
              const unsigned *entry = lists.entry(e);
              for (unsigned i = 0; i < entry[1]; ++i) {
                const FPType *xi = x + (std::ptrdiff_t(entry[2]) + std::ptrdiff_t(i) * inStride) * std::ptrdiff_t(chans);
                AccumType *oi = o + (std::ptrdiff_t(entry[0]) + std::ptrdiff_t(i) * outStride) * std::ptrdiff_t(width);
                std::fill(acc.begin(), acc.end(), 0.0f);
                for (unsigned ic = 0; ic < chans; ++ic) {
                  const float a = float(xi[ic]);
                  const FPType *wr = wk + std::size_t(ic) * width;
                  for (unsigned oc = 0; oc < width; ++oc)
                    acc[oc] += a * float(wr[oc]);
                }
                for (unsigned oc = 0; oc < width; ++oc)
                  oi[oc] = AccumType(float(oi[oc]) + acc[oc]);
              }
            }
          }
        }
      }
    }
    return true;
  }
};

template class ConvPartialHorizontalMac<float, float, true>;
template class ConvPartialHorizontalMac<float, float, false>;
template class ConvPartialHorizontalMac<half, float, true>;
template class ConvPartialHorizontalMac<half, float, false>;
template class ConvPartialHorizontalMac<half, half, true>;
template class ConvPartialHorizontalMac<half, half, false>;

}  // namespace poplin
