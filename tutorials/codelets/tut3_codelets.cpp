// Tutorial 3's codelets in Poplar's C++ codelet dialect: popsim's own, not Graphcore's file.
#include <poplar/Vertex.hpp>

using namespace poplar;

// Adds up every element of `in` and writes the total to `out`.
class SumVertex : public Vertex {
public:
  Input<Vector<float>> in;
  Output<float> out;

  bool compute() {
    float total = 0.0f;
    for (const auto &value : in) {
      total += value;
    }
    *out = total;
    return true;
  }
};
