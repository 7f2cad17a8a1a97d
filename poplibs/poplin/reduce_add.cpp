// poplin's reduction of convolution partials across tiles (PopLibs' lib/poplin/codelets/
// ReduceAdd.cpp, assembler on the IPU), the multi-input form:
//   poplin::ReduceAdd<OutType, PartialsType, singleInput, partialsMemConstraints>
//   out[i] = sum over j < numPartials of partials[j][i], for i < numElems,
// accumulated in float from 0, partials in order, rounded once to OutType.
// Fields as PopLibs': partials (a Vector of input edges, numElems each), out, numPartials,
// numElems (PopLibs' unsigned shorts; plain unsigned here). singleInput (PopLibs' form with
// the on-tile partial in its own edge) is not instantiated; partialsMemConstraints only
// changes alignment on the IPU.
// A MultiVertex: worker w adds elements [w·n/6, (w+1)·n/6) of whole fours.
#include <algorithm>

#include <ipudef.h>
#include <poplar/HalfFloat.hpp>
#include <poplar/Vertex.hpp>

using namespace poplar;

namespace poplin {

template <typename OutType, typename PartialsType, bool singleInput, bool partialsMemConstraints>
class ReduceAdd : public MultiVertex {
public:
  Vector<Input<Vector<PartialsType>>> partials;
  Output<Vector<OutType>> out;
  unsigned numPartials;
  unsigned numElems;

  bool compute(unsigned wid) {
    const unsigned quads = (numElems + 3) / 4;
    const unsigned first = 4 * (wid * quads / numWorkers());
    const unsigned last = std::min(numElems, 4 * ((wid + 1) * quads / numWorkers()));
    // A block of outputs at a time, each partial added to all of it before the next: the
    // partials are read front to back (one per tile, far apart), where adding every partial
    // to one output before the next jumps between them at each element. Each output still
    // adds its partials in order from 0, so the sums are the same.
    constexpr unsigned BLOCK = 256;
    float acc[BLOCK];
    for (unsigned i = first; i < last; i += BLOCK) {
      const unsigned size = std::min(BLOCK, last - i);
      std::fill(acc, acc + size, 0.0f);
      for (unsigned j = 0; j < numPartials; ++j) {
        const PartialsType *src = &partials[j][i];
        for (unsigned e = 0; e < size; ++e)
          acc[e] += float(src[e]);
      }
      for (unsigned e = 0; e < size; ++e)
        out[i + e] = acc[e];
    }
    return true;
  }
};

#define POPLIN_REDUCE_ADD(OUT, PARTIALS)                        \
  template class ReduceAdd<OUT, PARTIALS, false, false>;       \
  template class ReduceAdd<OUT, PARTIALS, false, true>;

POPLIN_REDUCE_ADD(float, float)
POPLIN_REDUCE_ADD(half, float)
POPLIN_REDUCE_ADD(float, half)
POPLIN_REDUCE_ADD(half, half)

}  // namespace poplin
