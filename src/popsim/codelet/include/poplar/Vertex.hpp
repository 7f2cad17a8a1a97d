// popsim's host implementation of Poplar's codelet API (<poplar/Vertex.hpp>), so that
// Poplar C++ codelet files compile unmodified with the host C++ compiler.
//
// Every field object (Input<...>, Output<...>, InOut<...>, Vector<...>) is laid out
// exactly like the ABI's popsim_span {void *data; uint64_t size} (popsim_codelet.h), so
// the engine's field block can be bound without copying: a Vector of edges points
// straight at the engine's array of spans. Differences from the IPU:
//  - MultiVertex::numWorkers() is Poplar's constant 6 (every IPU has 6 worker contexts),
//    and compute(workerId) runs for every workerId in [0, 6) whatever the target: on one
//    with fewer contexts (the CPU target has 1) its last context also runs the missing ids
//    (codelet_glue.hpp), on one with more the extra contexts have nothing to do.
//  - SupervisorVertex is an ordinary single-worker vertex (no assembly supervisor).
//  - Layout and alignment template arguments are accepted and ignored: a field always
//    holds a full pointer and a 64-bit element count.
//  - Indexing is not bounds-checked, as on the IPU, unless the codelet is compiled in
//    checked mode (POPSIM_CHECKED_CODELETS=1, see popsim/config.py): then an index out of
//    range stops the vertex before the access and the engine raises popsim.IndexError
//    naming the vertex type, field, index and size. Accesses through raw pointers
//    (data(), &x[0], iterators) are never checked.
//  - Vector edges also act as pointers to their vector (x->size(), (*x)[i]), as Poplar's do.
//  - Input vectors hand out non-const element references (shipped codelets rely on it).
//  - __IPU__ is not defined; __POPC__ and __POPSIM__ are (popsim plays popc's role).
#ifndef POPSIM_POPLAR_VERTEX_HPP
#define POPSIM_POPLAR_VERTEX_HPP

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <type_traits>

#include <poplar/HalfFloat.hpp>
#include <poplar/VectorLayout.hpp>

// Poplar attributes ([[poplar::constraint("...")]]) mean nothing to the host compiler;
// keep its "attribute ignored" warnings quiet so -Werror codelets still build.
#if defined(__clang__)
#pragma clang diagnostic ignored "-Wunknown-attributes"
#pragma clang diagnostic ignored "-Wattributes"
#elif defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wattributes"
#endif

// PopLibs marks vertices that have an assembly implementation on the IPU; on the host
// the C++ compute() always runs.
#ifndef IS_EXTERNAL_CODELET
#define IS_EXTERNAL_CODELET(...) static constexpr bool isExternalCodelet = false
#endif

#ifndef POPSIM_CHECKED_CODELETS
#define POPSIM_CHECKED_CODELETS 0
#endif

namespace popsim {
namespace detail {

struct access;

// Checked mode: an index out of range throws this (the glue turns it into the engine's
// index error) or, built without exceptions, reports it and aborts.
struct IndexFault {
  const void *field;  // the field object (or sub-edge) that was indexed
  std::uint64_t index, size;
};

[[noreturn]] inline void index_fault(const void *field, std::uint64_t index, std::uint64_t size) {
#if defined(__cpp_exceptions) || defined(__EXCEPTIONS)
  throw IndexFault{field, index, size};
#else
  std::fprintf(stderr, "popsim: checked codelet: index %lld is out of range for a field of size %llu\n",
               static_cast<long long>(index), static_cast<unsigned long long>(size));
  std::abort();
#endif
}

template <class Size> inline void check_index(const void *field, std::size_t i, Size size) {
  if (POPSIM_CHECKED_CODELETS && static_cast<std::uint64_t>(i) >= static_cast<std::uint64_t>(size))
    index_fault(field, i, size);
}

// The one field layout: a pointer and an element count, as popsim_span.
template <class P> class Span {
protected:
  P *ptr_;
  std::uint64_t size_;
  friend struct access;
};

template <class T> struct is_field : std::false_type {};

// What the bind code relies on: every field type is a standard-layout {pointer, count}
// pair, the same size and alignment as popsim_span, so an array of spans can be used
// as an array of edges.
template <class F> constexpr bool span_compatible() {
  return std::is_standard_layout<F>::value && sizeof(F) == sizeof(void *) + sizeof(std::uint64_t) &&
         alignof(F) == alignof(std::uint64_t) && alignof(F) == alignof(void *);
}

}  // namespace detail
}  // namespace popsim

namespace poplar {

class Vertex {};

class MultiVertex {
public:
  // IPU tiles have 6 worker contexts; see the note at the top of this file.
  static constexpr unsigned numWorkers() { return 6; }
};

class SupervisorVertex {};

// Early Poplar's simulator-only state field: plain state on the host.
template <typename T> using SimOnlyField = T;

template <bool UseSupervisor>
using SupervisorVertexIf = typename std::conditional<UseSupervisor, SupervisorVertex, Vertex>::type;

template <typename T, VectorLayout L = VectorLayout::SPAN, unsigned MinAlign = alignof(T),
          bool Interleaved = false>
class Vector;
template <typename T, VectorListLayout L = VectorListLayout::DELTANELEMENTS,
          unsigned MinAlign = alignof(T), bool Interleaved = false>
class VectorList;

// ---- scalar edges ----------------------------------------------------------------

template <typename T> class Input : public popsim::detail::Span<const T> {
public:
  using value_type = T;
  const T &operator*() const { return *this->ptr_; }
  const T *operator->() const { return this->ptr_; }
  operator const T &() const { return *this->ptr_; }
};

// Output and InOut share the writable scalar interface; assigning one edge to another
// assigns the value, as `*out = *other` would.
#define POPSIM_WRITABLE_SCALAR_EDGE(NAME)                                                       \
  template <typename T> class NAME : public popsim::detail::Span<T> {                           \
  public:                                                                                       \
    using value_type = T;                                                                       \
    NAME() = default;                                                                           \
    NAME(const NAME &) = default;                                                               \
    T &operator*() const { return *this->ptr_; }                                                \
    T *operator->() const { return this->ptr_; }                                                \
    operator T &() const { return *this->ptr_; }                                                \
    NAME &operator=(const T &value) { *this->ptr_ = value; return *this; }                      \
    NAME &operator=(const NAME &other) { *this->ptr_ = *other.ptr_; return *this; }             \
    template <class U> NAME &operator+=(const U &v) { *this->ptr_ += v; return *this; }         \
    template <class U> NAME &operator-=(const U &v) { *this->ptr_ -= v; return *this; }         \
    template <class U> NAME &operator*=(const U &v) { *this->ptr_ *= v; return *this; }         \
    template <class U> NAME &operator/=(const U &v) { *this->ptr_ /= v; return *this; }         \
    template <class U> NAME &operator%=(const U &v) { *this->ptr_ %= v; return *this; }         \
    template <class U> NAME &operator&=(const U &v) { *this->ptr_ &= v; return *this; }         \
    template <class U> NAME &operator|=(const U &v) { *this->ptr_ |= v; return *this; }         \
    template <class U> NAME &operator^=(const U &v) { *this->ptr_ ^= v; return *this; }         \
    template <class U> NAME &operator<<=(const U &v) { *this->ptr_ <<= v; return *this; }       \
    template <class U> NAME &operator>>=(const U &v) { *this->ptr_ >>= v; return *this; }       \
    NAME &operator++() { ++*this->ptr_; return *this; }                                         \
    NAME &operator--() { --*this->ptr_; return *this; }                                         \
    T operator++(int) { return (*this->ptr_)++; }                                               \
    T operator--(int) { return (*this->ptr_)--; }                                               \
  };
POPSIM_WRITABLE_SCALAR_EDGE(Output)
POPSIM_WRITABLE_SCALAR_EDGE(InOut)
#undef POPSIM_WRITABLE_SCALAR_EDGE

}  // namespace poplar

namespace popsim {
namespace detail {

// A contiguous run of E (elements, or sub-edges laid out as popsim_span).
template <class E> class SpanOf : public Span<E> {
public:
  using value_type = typename std::remove_const<E>::type;
  using iterator = E *;
  using const_iterator = E *;
  unsigned size() const { return unsigned(this->size_); }
  bool empty() const { return this->size_ == 0; }
  E &operator[](std::size_t i) const {
    check_index(this, i, this->size_);
    return this->ptr_[i];
  }
  E *data() const { return this->ptr_; }
  E *begin() const { return this->ptr_; }
  E *end() const { return this->ptr_ + this->size_; }
};

// An edge to a vector is also a pointer to it, as in Poplar: x->size(), (*x)[i].
template <class E> class VectorEdge : public SpanOf<E> {
public:
  const VectorEdge *operator->() const { return this; }
  const VectorEdge &operator*() const { return *this; }
};

}  // namespace detail
}  // namespace popsim

namespace poplar {

// ---- vector edges: Input<Vector<T, ...>> and friends ------------------------------

// Element access through an Input vector is not const-qualified: shipped Poplar codelets
// pass `&in[0]` of an Input vector to functions taking `T *`. Do not write through it.
template <typename T, VectorLayout L, unsigned A, bool I>
class Input<Vector<T, L, A, I>> : public popsim::detail::VectorEdge<T> {};
template <typename T, VectorLayout L, unsigned A, bool I>
class Output<Vector<T, L, A, I>> : public popsim::detail::VectorEdge<T> {};
template <typename T, VectorLayout L, unsigned A, bool I>
class InOut<Vector<T, L, A, I>> : public popsim::detail::VectorEdge<T> {};

// ---- VectorList edges: a list of sub-vectors, each indexable ----------------------

template <typename T, VectorListLayout L, unsigned A, bool I>
class Input<VectorList<T, L, A, I>> : public popsim::detail::VectorEdge<const Input<Vector<T>>> {};
template <typename T, VectorListLayout L, unsigned A, bool I>
class Output<VectorList<T, L, A, I>> : public popsim::detail::VectorEdge<const Output<Vector<T>>> {};
template <typename T, VectorListLayout L, unsigned A, bool I>
class InOut<VectorList<T, L, A, I>> : public popsim::detail::VectorEdge<const InOut<Vector<T>>> {};

// ---- Vector: plain state (Vector<unsigned>) or a vector of edges -------------------

template <typename T, VectorLayout L, unsigned MinAlign, bool Interleaved>
class Vector : public popsim::detail::SpanOf<T> {
  static_assert(!popsim::detail::is_field<T>::value || popsim::detail::span_compatible<T>(),
                "a Vector of edges is bound to the engine's array of popsim_span");

public:
  const T &operator[](std::size_t i) const {
    popsim::detail::check_index(this, i, this->size_);
    return this->ptr_[i];
  }
  T &operator[](std::size_t i) {
    popsim::detail::check_index(this, i, this->size_);
    return this->ptr_[i];
  }
};

}  // namespace poplar

namespace popsim {
namespace detail {

template <class T> struct is_field<poplar::Input<T>> : std::true_type {};
template <class T> struct is_field<poplar::Output<T>> : std::true_type {};
template <class T> struct is_field<poplar::InOut<T>> : std::true_type {};

static_assert(span_compatible<poplar::Input<float>>(), "scalar edges must be laid out as popsim_span");
static_assert(span_compatible<poplar::Output<poplar::Vector<float>>>(), "vector edges must be laid out as popsim_span");
static_assert(span_compatible<poplar::Input<poplar::VectorList<half>>>(), "VectorList edges must be laid out as popsim_span");
static_assert(span_compatible<poplar::Vector<unsigned>>(), "Vector state must be laid out as popsim_span");

}  // namespace detail
}  // namespace popsim

#endif  // POPSIM_POPLAR_VERTEX_HPP
