// What poplin's worklist vertices share (ConvPartialnx1 in conv_nx1.cpp,
// ConvPartialHorizontalMac in conv_hmac.cpp, ConvPartialVerticalMac in conv_vmac.cpp): the
// fields all three declare first, and a worker's view of their worklists. conv_nx1.cpp's
// header comment says what each field holds and how the worklists are laid out; the three
// vertices read them alike, so the reading is written once here.
#ifndef POPSIM_POPLIN_CONV_PARTIAL_WORKLISTS_HPP
#define POPSIM_POPLIN_CONV_PARTIAL_WORKLISTS_HPP

#include <algorithm>
#include <cstddef>
#include <type_traits>

// The fields the worklist vertices declare first, in this order; each adds its own after
// them. A macro and not a base class: popsim reads a vertex's fields from the members of
// the class that derives from MultiVertex itself (src/popsim/codelet/cpp.py), after the
// preprocessor, so the expanded members are the vertex's own, in the order written here.
#define POPLIN_CONV_WORKLIST_FIELDS(FPType, AccumType)                                                          \
  Vector<Input<Vector<FPType>>> in;                                                                             \
  Vector<Input<Vector<FPType>>> weights;                                                                        \
  Vector<Output<Vector<AccumType>>> out;                                                                        \
  Input<Vector<unsigned>> worklists;                                                                            \
  unsigned zerosInfo;                                                                                           \
  int inStride;                                                                                                 \
  int outStride;                                                                                                \
  unsigned numOutGroupsM1;                                                                                      \
  unsigned numInGroups;                                                                                         \
  unsigned kernelOuterSizeM1;                                                                                   \
  unsigned kernelInnerElementsM1;                                                                               \
  unsigned numConvGroupsM1;                                                                                     \
  unsigned outChansPerGroup;                                                                                    \
  unsigned inChansPerGroup;                                                                                     \
  unsigned outFieldRowSize;

namespace poplin {
namespace detail {

// Worker `wid`'s part of worklist vertex `v` whose output positions are `width` elements
// (zerosInfo / width of them per out edge): the positions [first, last) it zeroes and
// owns, as partitionConvPartialByWorker cuts them, and its list of each kernel position,
// entries [begin(k), end(k)), each entry(e) a triple (outOffset, numFieldElems, inOffset).
struct WorkerLists {
  unsigned workers, wid, first, last, kernelPositions;
  const unsigned *offsets;  // (kernelPositions x workers + 1) offsets, in entries
  const unsigned *entries;  // the triples, after the offsets

  template <class V>
  WorkerLists(const V &v, unsigned wid, unsigned width)
      : workers(V::numWorkers()), wid(wid), first(wid * (v.zerosInfo / width) / workers),
        last((wid + 1) * (v.zerosInfo / width) / workers),
        kernelPositions((v.kernelOuterSizeM1 + 1) * (v.kernelInnerElementsM1 + 1)), offsets(v.worklists.data()),
        entries(offsets + kernelPositions * workers + 1) {}

  unsigned begin(unsigned k) const { return offsets[k * workers + wid]; }
  unsigned end(unsigned k) const { return offsets[k * workers + wid + 1]; }
  const unsigned *entry(unsigned e) const { return entries + 3 * std::size_t(e); }

  // The worker's positions of out edges [0, edges) set to zero, before its entries add to them.
  template <class Out> void zero(Out &out, unsigned edges, unsigned width) const {
    for (unsigned e = 0; e < edges; ++e) {
      auto *o = out[e].data();
      std::fill(o + std::size_t(first) * width, o + std::size_t(last) * width,
                typename std::remove_pointer<decltype(o)>::type(0));
    }
  }
};

}  // namespace detail
}  // namespace poplin

#endif  // POPSIM_POPLIN_CONV_PARTIAL_WORKLISTS_HPP
