// A vertex with an enum member (line 9): only the compiler can tell it is no element type.
#include <poplar/Vertex.hpp>

enum class Mode { Add, Multiply };

class Modal : public poplar::Vertex {
public:
  poplar::InOut<float> value;
  Mode mode;

  bool compute() {
    *value = mode == Mode::Add ? *value + 1 : *value * 2;
    return true;
  }
};
