// Codelets that index out of range, for checked mode (POPSIM_CHECKED_CODELETS).
// Checked by test_poplar_vertex_header.py.
#include <poplar/Vertex.hpp>

using namespace poplar;

// Writes one element past the end of `out`.
class OffByOne : public Vertex {
public:
  Input<Vector<float>> in;
  Output<Vector<float>> out;

  bool compute() {
    for (unsigned i = 0; i <= out.size(); ++i)
      out[i] = 2.0f * (i < in.size() ? in[i] : 0.0f);
    return true;
  }
};

// Reads past the end of a sub-edge of a vector of edges.
class RaggedRead : public Vertex {
public:
  Vector<Input<Vector<int>>> ins;
  Output<int> out;

  bool compute() {
    *out = ins[1][ins[1]->size()];
    return true;
  }
};

// Indexes a plain state vector with an index taken from the data.
class StateIndex : public Vertex {
public:
  Vector<unsigned> table;
  Input<unsigned> which;
  Output<unsigned> out;

  bool compute() {
    *out = table[which];
    return true;
  }
};
