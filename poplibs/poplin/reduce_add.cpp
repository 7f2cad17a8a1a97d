// poplin's reduction of convolution partials across tiles (PopLibs' lib/poplin/codelets/
// ReduceAdd.cpp, assembler on the IPU), the multi-input form:
//   poplin::ReduceAdd<OutType, PartialsType, singleInput, partialsMemConstraints>
//   out[i] = sum over j < numPartials of partials[j][i], for i < numElems,
// accumulated in float from 0, partials in order, rounded once to OutType.
// Fields as PopLibs': partials (a Vector of input edges, numElems each), out, numPartials,
// numElems (PopLibs' unsigned shorts; plain unsigned here). singleInput (PopLibs' form with
// the on-tile partial in its own edge) is not instantiated; partialsMemConstraints only
// changes alignment on the IPU.
// A MultiVertex: worker w adds elements [w·n/6, (w+1)·n/6) in whole fours (float4 vectors).
#include <algorithm>
#include <cstring>
#include <type_traits>

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
    unsigned i = first;
    if constexpr (std::is_same<PartialsType, float>::value) {
      for (; i + 4 <= last; i += 4) {
        float4 sum = {0.0f, 0.0f, 0.0f, 0.0f};
        for (unsigned j = 0; j < numPartials; ++j) {
          float4 x;
          std::memcpy(&x, &partials[j][i], sizeof x);
          sum += x;
        }
        for (unsigned k = 0; k < 4; ++k)
          out[i + k] = sum[k];
      }
    }
    for (; i < last; ++i) {
      float sum = 0.0f;
      for (unsigned j = 0; j < numPartials; ++j)
        sum += float(partials[j][i]);
      out[i] = sum;
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
