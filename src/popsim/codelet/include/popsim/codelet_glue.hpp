// Support for the glue popsim generates around a Poplar C++ codelet file
// (popsim/codelet/cpp.py): the ABI entry points of popsim_codelet.h for each vertex
// class, built from these templates. Not for codelets to include.
#ifndef POPSIM_CODELET_GLUE_HPP
#define POPSIM_CODELET_GLUE_HPP

#if defined(__GNUC__)
#pragma GCC system_header
#endif

#if __cplusplus < 201703L
#error "popsim compiles codelets as C++17 or later: drop the -std= flag from the compile flags"
#endif

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <type_traits>
#include <utility>

#include <poplar/Vertex.hpp>
#include <popsim_codelet.h>

#if defined(_WIN32)
#define POPSIM_EXPORT extern "C" __declspec(dllexport)
#else
#define POPSIM_EXPORT extern "C" __attribute__((visibility("default")))
#endif

namespace popsim {
namespace detail {

struct access {
  template <class P> static void set(Span<P> &field, const popsim_span &span) {
    field.ptr_ = static_cast<P *>(span.data);
    field.size_ = span.size;
  }
  // Whether `p` is one of the sub-edges a vector of edges / VectorList points at.
  template <class P> static bool holds_sub_edge(const Span<P> &field, const void *p) {
    if constexpr (is_field<typename std::remove_const<P>::type>::value) {
      const auto first = reinterpret_cast<std::uintptr_t>(field.ptr_), at = reinterpret_cast<std::uintptr_t>(p);
      return at >= first && at < first + field.size_ * sizeof(P);
    } else {
      (void)field;
      (void)p;
      return false;
    }
  }
};

}  // namespace detail

namespace glue {

// Field kinds, directions, element types and layouts, numbered as cpp.py numbers them.
enum { SCALAR_EDGE = 0, VECTOR_EDGE = 1, EDGE_VECTOR = 2, VECTOR_LIST = 3, STATE = 4, STATE_VECTOR = 5,
       UNSUPPORTED = -1 };
enum { NONE = 0, INPUT = 1, OUTPUT = 2, INOUT = 3 };
// Element types: BOOL 0, CHAR 1, SIGNED_CHAR 2, UNSIGNED_CHAR 3, SHORT 4, UNSIGNED_SHORT 5,
// INT 6, UNSIGNED_INT 7, LONGLONG 8, UNSIGNED_LONGLONG 9, HALF 10, FLOAT 11; -1: none.
template <class T> constexpr int dtype_code() {
  using U = typename std::remove_cv<T>::type;
  if (std::is_same<U, bool>::value)
    return 0;
  if (std::is_same<U, popsim::half>::value)
    return 10;
  if (std::is_same<U, float>::value)
    return 11;
  if (std::is_same<U, char>::value)
    return 1;
  if (std::is_integral<U>::value) {
    const bool s = std::is_signed<U>::value;
    switch (sizeof(U)) {
    case 1: return s ? 2 : 3;
    case 2: return s ? 4 : 5;
    case 4: return s ? 6 : 7;
    case 8: return s ? 8 : 9;
    default: return -1;
    }
  }
  return -1;
}
// Layouts: VectorLayout values, VectorListLayout values + 100; -1: none.
constexpr int layout_code(poplar::VectorLayout l) { return int(l); }
constexpr int layout_code(poplar::VectorListLayout l) { return 100 + int(l); }

template <int Kind, int Dir, int DType, int Elem, int Layout> struct info {
  static constexpr int kind = DType < 0 ? UNSUPPORTED : Kind, dir = Dir, dtype = DType, element_kind = Elem,
                       layout = Layout;
};

template <class M> struct field_info : info<STATE, NONE, dtype_code<M>(), -1, -1> {};

template <class T> struct field_info<poplar::Input<T>> : info<SCALAR_EDGE, INPUT, dtype_code<T>(), -1, -1> {};
template <class T> struct field_info<poplar::Output<T>> : info<SCALAR_EDGE, OUTPUT, dtype_code<T>(), -1, -1> {};
template <class T> struct field_info<poplar::InOut<T>> : info<SCALAR_EDGE, INOUT, dtype_code<T>(), -1, -1> {};

#define POPSIM_VECTOR_INFO(EDGE, DIR)                                                                         \
  template <class T, poplar::VectorLayout L, unsigned A, bool I>                                              \
  struct field_info<poplar::EDGE<poplar::Vector<T, L, A, I>>>                                                 \
      : info<VECTOR_EDGE, DIR, dtype_code<T>(), -1, layout_code(L)> {};                                       \
  template <class T, poplar::VectorListLayout L, unsigned A, bool I>                                          \
  struct field_info<poplar::EDGE<poplar::VectorList<T, L, A, I>>>                                             \
      : info<VECTOR_LIST, DIR, dtype_code<T>(), -1, layout_code(L)> {};
POPSIM_VECTOR_INFO(Input, INPUT)
POPSIM_VECTOR_INFO(Output, OUTPUT)
POPSIM_VECTOR_INFO(InOut, INOUT)
#undef POPSIM_VECTOR_INFO

template <class T, poplar::VectorLayout L, unsigned A, bool I> struct field_info<poplar::Vector<T, L, A, I>> {
  using E = field_info<T>;
  static constexpr bool edges = detail::is_field<T>::value;
  static constexpr int kind = edges ? (E::kind == SCALAR_EDGE || E::kind == VECTOR_EDGE ? EDGE_VECTOR : UNSUPPORTED)
                                    : (E::kind == STATE ? STATE_VECTOR : UNSUPPORTED);
  static constexpr int dir = edges ? E::dir : NONE;
  static constexpr int dtype = E::dtype;
  static constexpr int element_kind = edges ? E::kind : -1;
  static constexpr int layout = layout_code(L);
};

template <class PM> struct member_type;
template <class C, class M> struct member_type<M C::*> { using type = M; };
template <class PM>
using field_of = field_info<typename std::remove_cv<
    typename member_type<typename std::remove_cv<PM>::type>::type>::type>;

// Does the member behind pointer-to-member PM have the kind, direction, element type
// and sub-edge kind that cpp.py read from the source?
template <class PM> constexpr bool matches(int kind, int dir, int dtype, int element_kind) {
  using F = field_of<PM>;
  return F::kind == kind && F::dir == dir && F::dtype == dtype && F::element_kind == element_kind;
}
template <class PM> constexpr bool supported() { return field_of<PM>::kind != UNSUPPORTED; }

// What the compiler sees, for fields whose type cpp.py could not resolve itself.
template <class PM> void describe(PM, std::int32_t *out) {
  using F = field_of<PM>;
  out[0] = F::kind;
  out[1] = F::dir;
  out[2] = F::dtype;
  out[3] = F::element_kind;
  out[4] = F::layout;
}

template <class U> struct is_span_field {
  template <class P> static std::true_type test(const detail::Span<P> *);
  static std::false_type test(...);
  static constexpr bool value = decltype(test(static_cast<U *>(nullptr)))::value;
};

// Connect one field. Edges and Vector state point at the engine's data; plain state is
// copied in (also into const members: the object has just been created and nothing has
// read it yet).
template <class M> void bind(M &member, const popsim_span &span) {
  using U = typename std::remove_cv<M>::type;
  U &field = const_cast<U &>(member);
  if constexpr (is_span_field<U>::value) {
    detail::access::set(field, span);
  } else {
    static_assert(std::is_trivially_copyable<U>::value, "plain state members must be trivially copyable");
    std::memcpy(static_cast<void *>(&field), span.data, sizeof(U));
  }
}

// Reach private members: names in an explicit instantiation are not access-checked
// (C++17 [temp.explicit]), so instantiating `steal` with a pointer to a private member
// defines a friend function that hands the pointer back.
template <class Tag, auto Member> struct steal {
  friend constexpr auto stolen(Tag) { return Member; }
};

// An aggregate with const members has no default constructor but can be list-initialised;
// returning V{} from a function sidesteps GCC's refusal of `new (p) V{}` for such classes.
template <class V> V aggregate_value() { return V{}; }

template <class V> void construct(void *obj, std::integral_constant<bool, true>) {
  if constexpr (std::is_default_constructible<V>::value)
    ::new (obj) V();
  else if constexpr (std::is_aggregate<V>::value)
    ::new (obj) V(aggregate_value<V>());
  // else: no usable default constructor (const members in a class with private ones);
  // the zeroed state memory is the object, as on the IPU where no constructor runs.
}
// A default constructor declared but never defined (a PopLibs habit): nothing to run.
template <class V> void construct(void *, std::integral_constant<bool, false>) {}

template <class V, class = void> struct has_compute0 : std::false_type {};
template <class V> struct has_compute0<V, std::void_t<decltype(std::declval<V &>().compute())>> : std::true_type {};
template <class V, class = void> struct has_compute1 : std::false_type {};
template <class V>
struct has_compute1<V, std::void_t<decltype(std::declval<V &>().compute(0u))>> : std::true_type {};

template <class V> struct always_false : std::false_type {};

template <class F> int result_of_call(F &&f) {
  using R = decltype(f());
  if constexpr (std::is_void<R>::value) {
    f();
    return 1;
  } else {
    return f() ? 1 : 0;
  }
}

// compute() or compute(workerId), returning bool or void, reached by name.
template <class V> int call(V &v, unsigned worker) {
  constexpr bool multi = std::is_base_of<poplar::MultiVertex, V>::value;
  if constexpr (has_compute1<V>::value && (multi || !has_compute0<V>::value)) {
    return result_of_call([&] { return v.compute(worker); });
  } else if constexpr (has_compute0<V>::value) {
    (void)worker;
    return result_of_call([&] { return v.compute(); });
  } else {
    static_assert(always_false<V>::value,
                  "popsim: this vertex class has no compute() (MultiVertex: compute(unsigned workerId)) that "
                  "can be called; declare one (bool or void)");
    return -1;
  }
}

// The same through a pointer to a private compute member.
template <class V, class PM> int call_member(V &v, unsigned worker, PM pm) {
  if constexpr (std::is_invocable<PM, V &, unsigned>::value) {
    return result_of_call([&] { return (v.*pm)(worker); });
  } else {
    (void)worker;
    return result_of_call([&] { return (v.*pm)(); });
  }
}

// Which field (declaration order) the object at `p` is, or belongs to as a sub-edge;
// -1 if none. `members` are the vertex's pointers to members, in declaration order.
template <class M> bool holds(const M &member, const void *p) {
  if (static_cast<const void *>(&member) == p)
    return true;
  if constexpr (is_span_field<typename std::remove_cv<M>::type>::value)
    return detail::access::holds_sub_edge(member, p);
  return false;
}
template <class V, class... PM> int field_at(const V &v, const void *p, PM... members) {
  int index = 0, found = -1;
  ((found < 0 && holds(v.*members, p) ? (found = index) : 0, ++index), ...);
  return found;
}

// Runs context `worker` of a vertex. A MultiVertex's numWorkers() is Poplar's constant, so
// every id in [0, numWorkers()) must run once: on a target with fewer contexts the last one
// also runs the missing ids; on one with more, the extra contexts run nothing.
template <class V, class Call>
int call_workers(Call &call, V &v, std::uint32_t worker, std::uint32_t contexts) {
  if constexpr (std::is_base_of<poplar::MultiVertex, V>::value) {
    constexpr unsigned ids = poplar::MultiVertex::numWorkers();
    if (worker >= ids) return 1;
    int result = call(v, unsigned(worker));
    for (unsigned w = worker + 1; worker + 1 == contexts && w < ids && result == 1; ++w) result = call(v, w);
    return result;
  } else {
    (void)contexts;
    return call(v, unsigned(worker));
  }
}

// A codelet must not throw through the C ABI: an exception counts as the vertex failing;
// an index out of range in a checked build (poplar/Vertex.hpp) is the engine's index
// error, located by `locate(v, field object) -> field index`.
template <class V, class Call, class Locate>
int compute_entry(void *obj, std::uint32_t worker, popsim_exec *ctx, const char *name, Call call, Locate locate) {
#if defined(__cpp_exceptions) || defined(__EXCEPTIONS)
  try {
    return call_workers<V>(call, *static_cast<V *>(obj), worker, ctx->num_workers);
  } catch (const detail::IndexFault &fault) {
    ctx->error = POPSIM_INDEX_ERROR;
    ctx->error_field = locate(*static_cast<const V *>(obj), fault.field);
    ctx->error_line = 0;
    ctx->error_index = static_cast<std::int64_t>(fault.index);
    ctx->error_size = static_cast<std::int64_t>(fault.size);
    return -1;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "popsim: vertex %s threw an exception: %s\n", name, e.what());
  } catch (...) {
    std::fprintf(stderr, "popsim: vertex %s threw an exception\n", name);
  }
  ctx->error = POPSIM_EXCEPTION;
  return -1;
#else
  (void)name;
  (void)ctx;
  (void)locate;
  return call_workers<V>(call, *static_cast<V *>(obj), worker, ctx->num_workers);
#endif
}

}  // namespace glue
}  // namespace popsim

#endif  // POPSIM_CODELET_GLUE_HPP
