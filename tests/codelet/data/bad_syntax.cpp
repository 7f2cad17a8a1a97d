// A codelet with a syntax error (an incomplete expression) on line 13.
#include <poplar/Vertex.hpp>

using namespace poplar;

class Broken : public Vertex {
public:
  Input<Vector<float>> in;
  Output<float> out;
  bool compute() {
    float total = 0.0f;
    for (auto x : in)
      total += x *;
    *out = total;
    return true;
  }
};
