// Vector edges used as pointers to their vectors, as Graphcore's prefetch example writes
// them (x->size(), (*x)[i]). Checked by test_poplar_vertex_header.py.
#include <poplar/Vertex.hpp>

using namespace poplar;

class AddOne : public Vertex {
public:
  Input<Vector<float>> x;
  Output<Vector<float>> y;

  bool compute() {
    if (x->size() != y->size())
      return false;
    for (unsigned i = 0; i < x->size(); i++)
      y[i] = (*x)[i] + 1;
    return true;
  }
};

class RowLengths : public Vertex {
public:
  Input<VectorList<int>> rows;
  Output<Vector<unsigned>> lengths;

  bool compute() {
    for (unsigned r = 0; r < rows->size(); ++r)
      (*lengths)[r] = rows[r]->size() + (*rows)[r].size();
    for (auto &row : *rows)
      lengths->data()[0] += row.empty() ? 100u : 0u;
    return true;
  }
};
