// Codelets for tutorial 3 (writing vertex code), in Poplar's C++ codelet dialect.
// Written for popsim: this is not Graphcore's tutorial file (popsim compiles Graphcore's
// codelet files unmodified too; this one is ours).
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
