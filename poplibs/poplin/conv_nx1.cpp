// poplin's AMP vertex for general kernels (PopLibs' lib/poplin/codelets/ConvPartialnx1.cpp,
// whose IPU versions are assembler driving the accumulating matrix product units):
//   poplin::ConvPartialnx1<FPType, AccumType, useLimitedVer, use128BitLoad, numConvUnits>
// with PopLibs' template parameters in PopLibs' order, instantiated as PopLibs instantiates
// them (8 conv units: float/float, half/half, half/float; 16: float/float, half/half).
//
// What it computes, per conv group cg and out-channel group og: the output positions are
// zeroed, then for every kernel position k and every worklist entry of k,
//   out[cg, og][outOffset + i * outStride][oc] +=
//       sum over ig, ic of in[cg, ig][inOffset + i * inStride][ic] * weights[cg, og, ig][k][ic][oc]
// for i = 0..numFieldElems-1: a run of output positions along the innermost field dimension,
// whose inputs (stride, dilation and padding applied by whoever made the worklist) are real.
// Padding is never materialised: outputs that read only padding are in no entry and stay 0.
//
// Fields (simpler than PopLibs' packed encodings; the mapping):
//   in        Vector of edges, index cg * numInGroups + ig; each [positions x inChansPerGroup]
//             (the tile's input window, batch and field flattened, channels innermost)
//   weights   Vector of edges, index (cg * numOutGroups + og) * numInGroups + ig; each
//             [kernel positions x inChansPerGroup x outChansPerGroup], OUT-channels innermost
//             (PopLibs holds [outChans x inChans] per kernel position for the AMP weight
//             registers; a host vector unit wants the transpose, as in ConvPartial1x1Out)
//   out       Vector of edges, index cg * numOutGroups + og; each [positions x outChansPerGroup]
//   worklists one flat vector: (kernel positions x 6 + 1) offsets, in entries, of the lists
//             (PopLibs' VectorList order: list k * 6 + worker), then the entries as triples
//             (outOffset, numFieldElems, inOffset) in positions (PopLibs: bytes / 8 and
//             numFieldElems - 3)
//   zerosInfo output elements per out edge (PopLibs' name and meaning); worker w zeroes and
//             owns positions [w * P / 6, (w + 1) * P / 6) of P = zerosInfo / outChansPerGroup,
//             as partitionConvPartialByWorker cuts them, and its lists hold only those
//   inStride, outStride: positions between an entry's consecutive inputs and outputs
//             (PopLibs' transformedInStride/transformedOutStride, unencoded)
//   numOutGroupsM1, numInGroups, kernelOuterSizeM1, kernelInnerElementsM1, numConvGroupsM1,
//   outChansPerGroup, inChansPerGroup, ampKernelHeightM1 (kernel rows the AMP chain holds
//   at once, less one: PopLibs' convUnitWeightHeight) : PopLibs' fields; outFieldRowSize and
//   kernelHeight (popsim's): output positions per innermost row and the kernel's rows
//   (dimension 0), for the cycle estimator. The chain's rows change the IPU's instruction
//   sequence and its cycles, not the values.
// Products accumulate in float and each kernel position's sum is rounded to AccumType in
// memory (as the AMP's partials are); useLimitedVer, use128BitLoad and numConvUnits choose
// the IPU's instruction sequence and its cycles (the estimator), not the values.
//
// Speed: with float partials (and unit output steps) a worker sums each run of rows over
// all its kernel positions in registers (conv_nx1_taps.hpp) and writes it once, instead of
// loading and storing the output once per kernel position. Storing a float and loading it
// back changes nothing, so the sums are the same bits. Runs of one row (a padded output
// row's first and last columns, whose kernel positions differ from their neighbours') go
// to the kernel in batches of rows with as many taps, so that their chains of additions
// advance together (conv_amp_kernel.hpp's singles); each row's sum is unchanged.
#include <algorithm>
#include <vector>

#include <ipudef.h>
#include <poplar/HalfFloat.hpp>
#include <poplar/Vertex.hpp>

#include "conv_amp_kernel.hpp"
#include "conv_nx1_taps.hpp"
#include "conv_partial_worklists.hpp"

using namespace poplar;

namespace poplin {

template <class FPType, class AccumType, bool useLimitedVer, bool use128BitLoad, unsigned numConvUnits>
class ConvPartialnx1 : public MultiVertex {
public:
  POPLIN_CONV_WORKLIST_FIELDS(FPType, AccumType)
  unsigned ampKernelHeightM1;
  unsigned kernelHeight;

  bool compute(unsigned wid) {
    using namespace detail;
    const unsigned groups = numInGroups, chans = inChansPerGroup, width = outChansPerGroup;
    if (out.size() == 0 || width == 0)
      return true;
    const WorkerLists lists(*this, wid, width);
    const unsigned first = lists.first, last = lists.last, kernelPositions = lists.kernelPositions;
    const unsigned numOutGroups = numOutGroupsM1 + 1, numConvGroups = numConvGroupsM1 + 1;
    bool any = false;
    for (unsigned k = 0; k < kernelPositions && !any; ++k)
      any = lists.end(k) > lists.begin(k);
    // float partials with unit output steps: each row is summed over all its kernel positions
    // at once, and rows no entry reaches are zeroed (conv_nx1_taps.hpp). Scratch is kept
    // per thread, reached through references: in a shared library each thread_local access
    // in a loop would cost a call.
    thread_local Taps threadTaps;
    thread_local std::vector<const float *> threadTapPointers;
    Taps &taps = threadTaps;
    taps.usable = false;
    if (any && chans != 0 && std::is_same<AccumType, float>::value && outStride == 1)
      taps.build(lists.offsets, lists.entries, kernelPositions, lists.workers, wid, first, last, unsigned(inStride));
    if (!taps.usable)
      lists.zero(out, numConvGroups * numOutGroups, width);
    if (!any || chans == 0)
      return true;
    const unsigned tailCols = width % COLS;
    const bool widen = !std::is_same<FPType, float>::value;
    const std::size_t inSize = in[0].size(), wSize = std::size_t(kernelPositions) * chans * width;
    SmallArray<const float *> inBase(groups), wBase(groups), inRows(groups), wRows(groups), tailRows(groups);
    std::vector<float> inStore, wStore, tailStore(std::size_t(groups) * kernelPositions * chans * (tailCols ? COLS : 0));
    std::vector<const float *> &tapPointers = threadTapPointers;
    const std::size_t tapPairs = std::size_t(taps.maxTaps) * groups;
    tapPointers.resize(tapPairs * (3 + 2 * MAX_SINGLES));
    const float **tapIn = tapPointers.data(), **tapW = tapIn + tapPairs, **tapTail = tapW + tapPairs;
    const float **singleIn = tapTail + tapPairs, **singleW = singleIn + tapPairs * MAX_SINGLES;
    float *singleOut[MAX_SINGLES];
    // single rows (runs of one row) go to the kernel in batches of rows with as many taps
    const bool batchSingles = std::is_same<AccumType, float>::value && width % COLS == 0;
    const unsigned *tapPos = taps.kernelPos.data(), *tapRow = taps.inRow.data();
    for (unsigned cg = 0; cg < numConvGroups; ++cg) {
      inStore.clear();
      for (unsigned ig = 0; ig < groups; ++ig)
        inBase[ig] = asFloat<FPType>(in, cg * groups + ig, 0, inSize, inStore);
      for (unsigned ig = 0; widen && ig < groups; ++ig)
        inBase[ig] = inStore.data() + std::size_t(ig) * inSize;
      for (unsigned og = 0; og < numOutGroups; ++og) {
        const unsigned wEdge = (cg * numOutGroups + og) * groups;
        wStore.clear();
        for (unsigned ig = 0; ig < groups; ++ig)
          wBase[ig] = asFloat<FPType>(weights, wEdge + ig, 0, wSize, wStore);
        for (unsigned ig = 0; widen && ig < groups; ++ig)
          wBase[ig] = wStore.data() + std::size_t(ig) * wSize;
        for (unsigned ig = 0; tailCols && ig < groups; ++ig)
          for (unsigned k = 0; k < kernelPositions; ++k)
            tailColumns(wBase[ig] + std::size_t(k) * chans * width, chans, width, tailCols,
                        tailStore.data() + (std::size_t(ig) * kernelPositions + k) * chans * COLS);
        AccumType *o = out[cg * numOutGroups + og].data();
        if (taps.usable) {
          // each run of rows that every kernel position treats alike, summed over its kernel
          // positions in one pass (conv_nx1_taps.hpp): the same sums in the same order
          unsigned done = first;  // rows before it are written, or batched for flush()
          unsigned batched = 0, batchTaps = 0;
          auto flush = [&]() {
            if (batched)
              runSingles(batched, singleIn, singleW, batchTaps * groups, chans, width, width, singleOut);
            batched = 0;
          };
          for (const TapRun &run : taps.runs) {
            if (run.end == run.begin)
              continue;  // no entry reaches these rows: zeroed with the next gap
            std::fill(o + std::size_t(done) * width, o + std::size_t(run.first) * width, AccumType(0));
            done = run.first + run.rows;
            if (batchSingles && run.rows == 1) {
              const unsigned count = run.end - run.begin;
              if (batched != 0 && (count != batchTaps || batched == MAX_SINGLES))
                flush();
              batchTaps = count;
              const float **in = singleIn + std::size_t(batched) * count * groups,
                          **w = singleW + std::size_t(batched) * count * groups;
              for (unsigned t = run.begin; t < run.end; ++t)
                for (unsigned ig = 0; ig < groups; ++ig) {
                  *in++ = inBase[ig] + std::size_t(tapRow[t]) * chans;
                  *w++ = wBase[ig] + std::size_t(tapPos[t]) * chans * width;
                }
              singleOut[batched++] = reinterpret_cast<float *>(o + std::size_t(run.first) * width);
              continue;
            }
            unsigned n = 0;
            for (unsigned t = run.begin; t < run.end; ++t) {
              const unsigned k = tapPos[t];
              for (unsigned ig = 0; ig < groups; ++ig, ++n) {
                tapIn[n] = inBase[ig] + std::size_t(tapRow[t]) * chans;
                tapW[n] = wBase[ig] + std::size_t(k) * chans * width;
                tapTail[n] = tailStore.data() + (std::size_t(ig) * kernelPositions + k) * chans * COLS;
              }
            }
            const Operands op{tapIn, tapW, n, chans, unsigned(inStride) * chans, width};
            const Operands tail{tapIn, tapTail, n, chans, unsigned(inStride) * chans, COLS};
            runPositions<false, AccumType>(op, tail, 0, run.rows, o + std::size_t(run.first) * width, width, width);
          }
          flush();
          std::fill(o + std::size_t(done) * width, o + std::size_t(last) * width, AccumType(0));
          continue;
        }
        for (unsigned k = 0; k < kernelPositions; ++k) {
          const unsigned begin = lists.begin(k), end = lists.end(k);
          for (unsigned ig = 0; ig < groups; ++ig) {
            wRows[ig] = wBase[ig] + std::size_t(k) * chans * width;
            tailRows[ig] = tailStore.data() + (std::size_t(ig) * kernelPositions + k) * chans * COLS;
          }
          for (unsigned e = begin; e < end; ++e) {
            const unsigned *entry = lists.entry(e);
            for (unsigned ig = 0; ig < groups; ++ig)
              inRows[ig] = inBase[ig] + std::size_t(entry[2]) * chans;
            const Operands op{inRows.data(), wRows.data(), groups, chans, unsigned(inStride) * chans, width};
            const Operands tail{inRows.data(), tailRows.data(), groups, chans, unsigned(inStride) * chans, COLS};
            runPositions<true, AccumType>(op, tail, 0, entry[1], o + std::size_t(entry[0]) * width,
                                          unsigned(outStride) * width, width);
          }
        }
      }
    }
    return true;
  }
};

#define POPLIN_NX1(IN, ACC, UNITS)                                                                              \
  template class ConvPartialnx1<IN, ACC, true, false, UNITS>;                                                   \
  template class ConvPartialnx1<IN, ACC, false, false, UNITS>;                                                  \
  template class ConvPartialnx1<IN, ACC, true, true, UNITS>;                                                    \
  template class ConvPartialnx1<IN, ACC, false, true, UNITS>;

POPLIN_NX1(float, float, 8)
POPLIN_NX1(half, half, 8)
POPLIN_NX1(half, float, 8)
POPLIN_NX1(float, float, 16)
POPLIN_NX1(half, half, 16)

}  // namespace poplin
