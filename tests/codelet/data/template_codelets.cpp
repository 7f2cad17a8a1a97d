// Templated vertex classes, namespaces, specialisations, aliases and every element type.
// Checked by test_cpp_codelets.py.
#include <cstdint>
#include <type_traits>

#include <poplar/HalfFloat.hpp>
#include <poplar/Vertex.hpp>

using namespace poplar;

using Real = float;
static constexpr auto ONE_PTR = poplar::VectorLayout::ONE_PTR;

// out[i] = in[i] + offset, for any element type.
template <typename T> class Copy : public Vertex {
public:
  Input<Vector<T>> in;
  Output<Vector<T>> out;
  T offset;

  bool compute() {
    for (unsigned i = 0; i < in.size(); ++i)
      out[i] = in[i] + offset;
    return true;
  }
};

template class Copy<float>;
template class Copy<half>;
template class Copy<int>;
template class Copy<unsigned>;
template class Copy<short>;
template class Copy<unsigned short>;
template class Copy<char>;
template class Copy<signed char>;
template class Copy<unsigned char>;
template class Copy<bool>;
template class Copy<long long>;
template class Copy<unsigned long long>;

// Two parameters: a class-scope alias and a namespace-scope one.
template <typename FPType, typename IndexType> class Gather : public Vertex {
public:
  using Elem = FPType;
  Input<Vector<Elem, ONE_PTR>> in;
  Input<Vector<IndexType>> indices;
  Output<Vector<FPType>> out;
  Input<Real> scale;

  void compute() {
    for (unsigned i = 0; i < indices.size(); ++i)
      out[i] = FPType(float(in[indices[i]]) * scale);
  }
};

template class Gather<half, int>;
template class Gather<float, unsigned short>;

// <cstdint> element types.
class FixedWidth : public Vertex {
public:
  Input<std::int8_t> i8;
  Input<uint8_t> u8;
  Input<std::int16_t> i16;
  Input<uint16_t> u16;
  Input<std::int32_t> i32;
  Input<uint32_t> u32;
  Input<std::int64_t> i64;
  Output<std::uint64_t> total;

  bool compute() {
    *total = std::uint64_t(i8 + u8 + i16 + u16 + i32 + u32 + i64);
    return true;
  }
};

namespace ns {

// A MultiVertex template with a defaulted non-type parameter.
template <typename T, bool Negate = false> class Scale : public MultiVertex {
public:
  InOut<Vector<T>> data;
  const T factor;

  void compute(unsigned workerId) {
    for (unsigned i = workerId; i < data.size(); i += numWorkers())
      data[i] = Negate ? T(-(data[i] * factor)) : T(data[i] * factor);
  }
};

template class Scale<float>;
template class Scale<float, true>;

namespace inner {
class Plain : public Vertex {
public:
  Output<int> out;
  void compute() { *out = 42; }
};
} // namespace inner

} // namespace ns

template class ns::Scale<half>;

// A full specialisation with different fields, and a partial one.
template <typename T> class Special : public Vertex {
public:
  Input<T> in;
  Output<T> out;
  bool compute() {
    *out = in + 1;
    return true;
  }
};
template <> class Special<half> : public Vertex {
public:
  Input<half> in;
  Output<float> out;
  bool compute() {
    *out = float(*in) * 2.0f;
    return true;
  }
};
template class Special<int>;
template class Special<half>;

template <typename T, bool Twice> class Part : public Vertex {
public:
  Input<T> in;
  Output<T> out;
  bool compute() {
    *out = in;
    return true;
  }
};
template <typename T> class Part<T, true> : public Vertex {
public:
  Input<T> in;
  Output<T> out;
  Output<T> again;
  bool compute() {
    *out = in;
    *again = in;
    return true;
  }
};
template class Part<float, false>;
template class Part<int, true>;

// Field types only the compiler can resolve: an alias template over std::conditional,
// and decltype. popsim asks the compiled library what they are.
template <typename T, bool InPlace>
using ListOut = typename std::conditional<InPlace, InOut<VectorList<T, poplar::VectorListLayout::DELTAN>>,
                                          Output<VectorList<T>>>::type;

template <typename T, bool InPlace> class Accumulate : public Vertex {
public:
  Input<VectorList<T>> in;
  ListOut<T, InPlace> out;
  decltype(T() * 2) scale;

  bool compute() {
    for (unsigned i = 0; i < in.size(); ++i)
      for (unsigned j = 0; j < in[i].size(); ++j)
        out[i][j] = (InPlace ? T(out[i][j]) : T(0)) + in[i][j] * scale;
    return true;
  }
};
template class Accumulate<float, true>;
template class Accumulate<half, false>;

// Templates that are not vertices, and vertex templates never instantiated, are not types.
template <typename T> struct Helper {
  T value;
};
template struct Helper<int>;
template <typename T> class Unused : public Vertex {
public:
  Input<T> in;
  bool compute() { return true; }
};
