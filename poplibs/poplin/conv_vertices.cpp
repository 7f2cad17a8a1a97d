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
// Speed: the register-blocked kernel of conv_amp_kernel.hpp (shared with ConvPartialnx1);
// half operands are widened to float once per worker.
#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include <ipudef.h>
#include <poplar/HalfFloat.hpp>
#include <poplar/Vertex.hpp>

#include "conv_amp_kernel.hpp"

using namespace poplar;

namespace poplin {

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
    const unsigned numOutGroups = numOutGroupsM1 + 1, tailCols = width % COLS;
    const bool widen = !std::is_same<FPType, float>::value;
    SmallArray<const float *> inRows(groups), wRows(groups), tailRows(groups);
    std::vector<float> inStore, wStore, tailStore(std::size_t(groups) * chans * (tailCols ? COLS : 0));
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
          float *t = tailStore.data() + std::size_t(ig) * chans * COLS;
          tailColumns(wRows[ig], chans, width, tailCols, t);
          tailRows[ig] = t;
        }
        // rows are indexed from the worker's first position (inputs hold only those)
        const Operands op{inRows.data(), wRows.data(), groups, chans, chans, width};
        const Operands tail{inRows.data(), tailRows.data(), groups, chans, chans, COLS};
        AccumType *o = out[cg * numOutGroups + og].data() + std::size_t(first) * width;
        runPositions<false, AccumType>(op, tail, 0, last - first, o, width, width);
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
