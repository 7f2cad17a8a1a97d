// A codelet calling a function it declares but never defines (line 4).
#include <poplar/Vertex.hpp>

float notDefinedAnywhere(float x);

class Caller : public poplar::Vertex {
public:
  poplar::Input<float> in;
  poplar::Output<float> out;
  bool compute() {
    *out = notDefinedAnywhere(in);
    return true;
  }
};
