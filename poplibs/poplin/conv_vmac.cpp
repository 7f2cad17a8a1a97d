// poplin's vertical-MAC vertex (PopLibs' lib/poplin/codelets/ConvPartialVerticalMac.cpp,
// whose IPU versions are assembler multiplying convGroupsPerGroup conv groups at once, a
// lane each): the vertex for depthwise-like convolutions, one out-channel per conv group.
//   poplin::ConvPartialVerticalMac<FPType, AccumType, useLimitedVer, convGroupsPerGroup>
// with PopLibs' template parameters in PopLibs' order, instantiated as PopLibs does (half
// inputs; float or half partials; 4, 8 or 16 conv groups per group).
//
// What it computes, per conv group cg of the vertex and in-channel ic: the outputs are
// zeroed, then for every kernel position k and every worklist entry of k,
//   out[cg][outOffset + i * outStride] += in[cg][inOffset + i * inStride][ic] * weights[cg][k][ic]
// for i = 0..numFieldElems-1, each product rounded to AccumType and added in AccumType (as
// PopLibs' vertex adds products into its partials). The IPU's workers each add into a copy
// of the partials, reduced at the end; the sums are the same, in another order.
//
// Fields: those of popsim's ConvPartialHorizontalMac (conv_hmac.cpp) with outChansPerGroup
// 1: per conv group one in edge [positions x inChansPerGroup], one weights edge
// [kernel positions x inChansPerGroup x 1] and one out edge [positions] (PopLibs interleaves
// the group's convGroupsPerGroup conv groups innermost in one edge, and numInGroups counts
// its in-channels; the values are the same), the worklists and strides unencoded, plus
// popsim's batchSize (the batch elements among the positions), for the cycle estimator.
// useLimitedVer chooses the IPU's instruction sequence and its cycles, not the values.
#include <cstddef>

#include <ipudef.h>
#include <poplar/HalfFloat.hpp>
#include <poplar/Vertex.hpp>

#include "conv_partial_worklists.hpp"

using namespace poplar;

namespace poplin {

template <class FPType, class AccumType, bool useLimitedVer, unsigned convGroupsPerGroup>
class ConvPartialVerticalMac : public MultiVertex {
public:
  POPLIN_CONV_WORKLIST_FIELDS(FPType, AccumType)
  unsigned batchSize;

  bool compute(unsigned wid) {
    const unsigned chans = inChansPerGroup;
    if (out.size() == 0 || outChansPerGroup != 1)
      return outChansPerGroup == 1;   // one out-channel per conv group, as PopLibs' vertex
    const detail::WorkerLists lists(*this, wid, 1);
    const unsigned numConvGroups = numConvGroupsM1 + 1;
    lists.zero(out, numConvGroups, 1);
    for (unsigned cg = 0; cg < numConvGroups; ++cg) {
      for (unsigned ig = 0; ig < numInGroups; ++ig) {
        const FPType *x = in[cg * numInGroups + ig].data();
        const FPType *w = weights[cg * numInGroups + ig].data();
        AccumType *o = out[cg].data();
        for (unsigned k = 0; k < lists.kernelPositions; ++k) {
          for (unsigned e = lists.begin(k); e < lists.end(k); ++e) {
            const unsigned *entry = lists.entry(e);
            for (unsigned i = 0; i < entry[1]; ++i) {
              const FPType *xi = x + (std::ptrdiff_t(entry[2]) + std::ptrdiff_t(i) * inStride) * std::ptrdiff_t(chans);
              AccumType &oi = o[std::ptrdiff_t(entry[0]) + std::ptrdiff_t(i) * outStride];
              for (unsigned ic = 0; ic < chans; ++ic)
                oi = AccumType(float(oi) + float(AccumType(float(xi[ic]) * float(w[std::size_t(k) * chans + ic]))));
            }
          }
        }
      }
    }
    return true;
  }
};

#define POPLIN_VMAC(ACC, GROUPS)                                                                                \
  template class ConvPartialVerticalMac<half, ACC, true, GROUPS>;                                               \
  template class ConvPartialVerticalMac<half, ACC, false, GROUPS>;

POPLIN_VMAC(float, 4)
POPLIN_VMAC(half, 4)
POPLIN_VMAC(float, 8)
POPLIN_VMAC(half, 8)
POPLIN_VMAC(float, 16)
POPLIN_VMAC(half, 16)

}  // namespace poplin
