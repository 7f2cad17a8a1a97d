// A vertex with a raw pointer member (line 9): fields must be edges or plain state.
#include <poplar/Vertex.hpp>

using namespace poplar;

template <typename T> class Pointer : public Vertex {
public:
  Output<T> out;
  const T *table;

  bool compute() {
    *out = table[0];
    return true;
  }
};
template class Pointer<float>;
