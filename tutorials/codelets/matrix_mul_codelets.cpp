// Codelets for the matrix-vector multiplication tutorials (5 and 6), in Poplar's C++
// codelet dialect: popsim's own, not Graphcore's file.
#include <poplar/Vertex.hpp>

using namespace poplar;

// One row of the matrix times the vector: out = sum over i of a[i] * b[i].
class DotProductVertex : public Vertex {
public:
  Input<Vector<float>> a;
  Input<Vector<float>> b;
  Output<float> out;

  bool compute() {
    float sum = 0.0f;
    for (unsigned i = 0; i < a.size(); ++i) {
      sum += a[i] * b[i];
    }
    *out = sum;
    return true;
  }
};

// Adds up the partial dot products of one row (tutorial 6 splits each row into
// column segments).
class ReduceVertex : public Vertex {
public:
  Input<Vector<float>> in;
  Output<float> out;

  bool compute() {
    float sum = 0.0f;
    for (unsigned i = 0; i < in.size(); ++i) {
      sum += in[i];
    }
    *out = sum;
    return true;
  }
};
