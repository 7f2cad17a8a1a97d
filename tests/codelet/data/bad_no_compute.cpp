// A vertex class without compute() (line 6).
#include <poplar/Vertex.hpp>

using namespace poplar;

class Idle : public Vertex {
public:
  Input<float> in;
};
