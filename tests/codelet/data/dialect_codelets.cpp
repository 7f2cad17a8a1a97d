// Codelets exercising popsim's Poplar C++ dialect: edges, vectors, lists of edges,
// plain state, compute signatures, constructors, access. Checked by test_cpp_codelets.py.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <type_traits>

#include <ipudef.h>
#include <poplar/HalfFloat.hpp>
#include <poplar/Vertex.hpp>
#include <print.h>

#include "dialect_helpers.hpp"

using namespace poplar;

static constexpr auto ONE_PTR = poplar::VectorLayout::ONE_PTR;
static constexpr auto COMPACT_PTR = VectorLayout::COMPACT_PTR;
static constexpr auto DELTANELEMENTS = poplar::VectorListLayout::DELTANELEMENTS;

#ifndef OFFSET
#define OFFSET 0
#endif

// Scalar edges used as values.
class ScalarEdges : public Vertex {
public:
  Input<float> in;
  Input<int> count;
  Output<float> doubled;
  Output<float> viaStar;
  InOut<float> acc;
  InOut<int> counter;
  Output<float> implicit;

  bool compute() {
    doubled = in * 2;                 // out = value; edge arithmetic
    *viaStar = in + count + OFFSET;   // *out = value
    *acc += in;                       // *inout += value
    counter += count;                 // compound assignment on the edge itself
    float x = in;                     // implicit conversion
    const float &ref = in;
    *implicit = x + ref + std::sqrt(in) + squareOf<float>(in);
    return true;
  }
};

// Vector edges: size(), [], range-for, data(), begin()/end().
class VectorEdges : public Vertex {
public:
  Input<Vector<float>> in;
  Output<Vector<float>> out;
  InOut<Vector<int>> data;
  Output<float> sum;
  Output<float> largest;
  Output<unsigned> size;

  void compute() {
    for (unsigned i = 0; i < in.size(); ++i)
      out[i] = in[i] * float(i);
    int *p = data.data();
    for (unsigned i = 0; i < data.size(); ++i)
      p[i] += 1;
    float s = 0.0f;
    for (auto x : in)
      s += x;
    *sum = s;
    *largest = *std::max_element(in.begin(), in.end());
    *size = in.size();
  }
};

// Layout and alignment arguments are accepted and change nothing.
class Layouts : public Vertex {
public:
  Input<Vector<float, ONE_PTR, 8>> a;
  Input<Vector<float, poplar::VectorLayout::SPAN, 4, true>> b;
  Output<Vector<half, COMPACT_PTR, 4>> out;
  InOut<Vector<int, VectorLayout::SCALED_PTR64, 8>> c;
  unsigned n; // ONE_PTR fields have no size on the IPU: the count comes from state

  bool compute() {
    for (unsigned i = 0; i < n; ++i) {
      out[i] = a[i] + b[i];
      c[i] *= 2;
    }
    return true;
  }
};

// Vectors of edges: of vector edges (with layouts) and of scalar edges.
class EdgeVectors : public Vertex {
public:
  Vector<Input<Vector<float>>> rows;
  Vector<Input<Vector<float, ONE_PTR>>, ONE_PTR> firsts;
  Vector<Input<float>> scalars;
  Vector<Output<float>> rowSums;
  Vector<InOut<Vector<float>>> scaled;
  Output<float> total;
  Output<unsigned> count;

  bool compute() {
    for (unsigned i = 0; i < rows.size(); ++i) {
      float s = 0.0f;
      for (unsigned j = 0; j < rows[i].size(); ++j)
        s += rows[i][j];
      rowSums[i] = s;
    }
    for (unsigned i = 0; i < scaled.size(); ++i)
      for (auto &x : scaled[i])
        x *= float(i + 1);
    float t = 0.0f;
    unsigned n = 0;
    for (const auto &row : rows) {
      for (float x : row)
        t += x;
      n += row.size();
    }
    for (auto &s : scalars)
      t += s;
    for (unsigned i = 0; i < firsts.size(); ++i)
      t += firsts[i][0];
    *total = t;
    *count = n;
    return true;
  }
};

// VectorList edges.
class Lists : public Vertex {
public:
  Input<VectorList<float, DELTANELEMENTS>> in;
  InOut<VectorList<int, poplar::VectorListLayout::DELTAN>> io;
  Output<Vector<float>> sums;
  Output<unsigned> count;

  void compute() {
    *count = in.size();
    for (unsigned i = 0; i < in.size(); ++i) {
      float s = 0.0f;
      for (unsigned j = 0; j < in[i].size(); ++j)
        s += in[i][j];
      sums[i] = s;
    }
    for (auto &list : io)
      for (auto &x : list)
        x = -x;
  }
};

// Plain state: const and non-const members, Vector state.
class State : public Vertex {
public:
  unsigned n;
  const float k;
  bool flag;
  half h;
  Vector<unsigned> idx;
  const Vector<int> offsets;
  std::int16_t small;
  Input<Vector<float>> in;
  Output<Vector<float>> out;

  bool compute() {
    for (unsigned i = 0; i < n; ++i) {
      float v = in[idx[i]] * k + float(h) + offsets[i] + small;
      out[i] = flag ? -v : v;
    }
    return true;
  }
};

// MultiVertex: compute(workerId) runs on every worker.
class Multi : public MultiVertex {
public:
  InOut<Vector<float>> data;
  Output<Vector<unsigned>> seen;

  void compute(unsigned workerId) {
    for (unsigned i = workerId; i < data.size(); i += numWorkers())
      data[i] *= 2.0f;
    seen[workerId] = numWorkers() * 100 + workerId;
  }
};

// A SupervisorVertex is a single-worker vertex on the host.
class Supervisor : public SupervisorVertex {
public:
  Input<Vector<float>> in;
  Output<float> out;

  bool compute() {
    *out = std::accumulate(in.begin(), in.end(), 0.0f);
    return true;
  }
};

// compute() returning false.
class Checked : public Vertex {
public:
  Input<float> in;

  bool compute() { return in > 0.0f; }
};

// A default constructor declared here and defined out of line.
class CtorOutOfLine : public Vertex {
public:
  CtorOutOfLine();
  Output<int> out;
  static int constructed;

  bool compute() {
    *out = constructed;
    return true;
  }
};
int CtorOutOfLine::constructed = 0;
CtorOutOfLine::CtorOutOfLine() { ++constructed; }

// A defaulted constructor and default member initialisers.
class CtorDefaulted : public Vertex {
public:
  CtorDefaulted() = default;
  Input<float> in;
  Output<float> out;
  unsigned scale = 3;
  float bias{};

  bool compute() {
    *out = in * scale + bias;
    return true;
  }
};

// Declared and never defined, as PopLibs codelets do: no constructor runs.
class CtorDeclaredOnly : public Vertex {
public:
  CtorDeclaredOnly();
  Input<float> in;
  Output<float> out;

  bool compute() {
    *out = -in;
    return true;
  }
};

// Fields and compute may be private.
class PrivateFields : public Vertex {
  Input<Vector<float>> in;
  const float k;

public:
  Output<float> out;

private:
  bool compute() {
    float s = 0.0f;
    for (auto x : in)
      s += x;
    *out = s * k;
    return true;
  }
};

// A struct, fully qualified names (no using-directive needed), and everything that is
// not a field: attributes, macros, typedefs, nested types, static members, methods.
struct [[poplar::constraint("elem(*in) != elem(*out)")]] Mixed : public poplar::Vertex {
  IS_EXTERNAL_CODELET(true);
  typedef float Elem;
  using Index = unsigned;
  enum Mode { ADD, MUL };
  struct Nested {
    int a;
  };
  static constexpr unsigned kScale = 2;
  static const int kOther;

  /* a block comment, with a fake member: int notAField; */
  poplar::Input<poplar::Vector<Elem>> in; // a line comment
  [[maybe_unused]] poplar::Output<poplar::Vector<Elem>> out;
  poplar::Input<Index> mode;
  unsigned first = 0, second{0};

  Mixed() = default;
  float helper(float x) const { return x * kScale; }
  template <typename U> U twice(U u) const { return u + u; }
  bool operator<(const Mixed &) const { return false; }

  bool compute() {
    Nested nested{kOther};
    for (unsigned i = 0; i < in.size(); ++i)
      out[i] = mode == ADD ? in[i] + helper(in[i]) : twice(in[i]) * nested.a;
    out[0] += float(first + second);
    std::memset(&nested, 0, sizeof(nested));
    return std::numeric_limits<float>::max() > 0 && std::is_same<Elem, float>::value;
  }
};
const int Mixed::kOther = 5;

// printf from a codelet (print.h).
class Printer : public Vertex {
public:
  Input<int> value;

  void compute() {
    printf("Printer: value=%d\n", int(value));
    std::fflush(stdout);
  }
};

// Idioms from shipped codelets: a field type through a namespace-scope alias, &in[0] of an
// Input vector handed to a function taking T *, IPU vector types (ipudef.h), a trailing
// return type, an old-style SimOnlyField.
using RowsIn = poplar::Vector<poplar::Input<poplar::Vector<float, poplar::VectorLayout::SPAN, 8>>,
                              poplar::VectorLayout::SPAN, 8>;

static float sumPairs(float *p, unsigned n) {
  float2 acc = {0.0f, 0.0f};
  for (unsigned i = 0; i + 1 < n; i += 2)
    acc += *reinterpret_cast<float2 *>(p + i);
  return acc[0] + acc[1];
}

class Idioms : public Vertex {
public:
  RowsIn rows;
  Output<Vector<float>> sums;
  SimOnlyField<unsigned> ignored;

  auto compute() -> bool {
    for (unsigned i = 0; i < rows.size(); ++i)
      sums[i] = sumPairs(&rows[i][0], rows[i].size());
    return true;
  }
};

// An exception must not cross the C ABI: it counts as the vertex failing.
class Throws : public Vertex {
public:
  Input<int> in;

  bool compute() {
    if (in < 0)
      throw std::runtime_error("negative input");
    return true;
  }
};

// Not vertices: an unrelated base class, and a plain class.
class NotAVertexBase {};
class NotAVertex : public NotAVertexBase {
public:
  Input<float> in;
};
struct Plain {
  int x;
};
