// Compiles with warnings (under -Wall -Wextra) before its one error, on line 21.
// Checked by test_cpp_compile_errors.py.
#include <poplar/Vertex.hpp>

using namespace poplar;

static int unusedHelper() {
  int unusedLocal;
  return 0;
}

class Broken : public Vertex {
public:
  Input<Vector<float>> in;
  Output<float> out;

  bool compute() {
    int unusedCounter = 0;
    float sum = 0;
    for (int i = 0; i < in.size(); ++i) sum += in[i];
    *out = sum + undeclaredValue;
    return true;
  }
};
