// A vertex with a member popsim cannot bind: the IPU has no double (line 11).
#include <poplar/Vertex.hpp>

using namespace poplar;

namespace app {
class Weighted : public Vertex {
public:
  Input<Vector<float>> in;
  Output<float> out;
  double weight;

  bool compute() {
    *out = float(in[0] * weight);
    return true;
  }
};
} // namespace app
