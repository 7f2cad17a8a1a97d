// Vertex templates written the way PopLibs writes them (an op enum in a nested
// namespace, element-type and bool parameters, explicit instantiations); registered
// under the names poputil::templateVertex builds. Checked by test_templates.py.
#include <poplar/HalfFloat.hpp>
#include <poplar/Vertex.hpp>

using namespace poplar;

namespace popops {
namespace expr {
enum class BinaryOpType { ADD, MULTIPLY, SUBTRACT };
} // namespace expr

template <expr::BinaryOpType op, typename T> struct BinaryOpFn;
template <typename T> struct BinaryOpFn<expr::BinaryOpType::ADD, T> {
  static T fn(T a, T b) { return a + b; }
};
template <typename T> struct BinaryOpFn<expr::BinaryOpType::MULTIPLY, T> {
  static T fn(T a, T b) { return a * b; }
};

// out = in1 op in2, the elements dealt to the tile's workers.
template <expr::BinaryOpType op, typename T> class BinaryOp1D : public MultiVertex {
public:
  Input<Vector<T, VectorLayout::ONE_PTR>> in1;
  Input<Vector<T, VectorLayout::ONE_PTR>> in2;
  Output<Vector<T>> out;

  bool compute(unsigned wid) {
    for (unsigned i = wid; i < out.size(); i += numWorkers())
      out[i] = BinaryOpFn<op, T>::fn(in1[i], in2[i]);
    return true;
  }
};

template class BinaryOp1D<expr::BinaryOpType::ADD, float>;
template class BinaryOp1D<expr::BinaryOpType::MULTIPLY, float>;
template class BinaryOp1D<expr::BinaryOpType::ADD, int>;

// data += K * deltas
template <typename T, bool isConstrained> class ScaledAdd : public Vertex {
public:
  InOut<Vector<T>> data;
  Input<Vector<T>> deltas;
  float K;

  bool compute() {
    for (unsigned i = 0; i < data.size(); ++i)
      data[i] = T(float(data[i]) + K * float(deltas[i]));
    return true;
  }
};

template class ScaledAdd<float, true>;
template class ScaledAdd<half, true>;
template class ScaledAdd<unsigned, false>;

} // namespace popops
