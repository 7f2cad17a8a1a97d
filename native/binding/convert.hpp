// Checked conversions between Python values and the core's types, shared by the binding's
// files: a wrong value raises TypeError or ValueError naming the field, what it expected
// and what it found.
#pragma once
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <cstddef>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "core/rows.hpp"

namespace popsim_binding {

namespace py = pybind11;

inline std::string describe_value(const py::handle &v) {
  if (py::isinstance<py::array>(v)) {
    py::array a = py::reinterpret_borrow<py::array>(v);
    std::string shape;
    for (py::ssize_t i = 0; i < a.ndim(); ++i) shape += (i ? ", " : "") + std::to_string(a.shape(i));
    if (a.ndim() == 1) shape += ",";
    return std::string(py::str(a.dtype())) + " array of shape (" + shape + ")";
  }
  return std::string(py::str(py::type::of(v).attr("__name__")));
}

[[noreturn]] inline void wrong(const char *field, const std::string &expected, const py::handle &found) {
  throw py::type_error(std::string("Description.") + field + ": expected " + expected + ", found " + describe_value(found));
}

inline int64_t as_int64(const py::handle &v, const char *field) {
  if (PyBool_Check(v.ptr()) || !PyIndex_Check(v.ptr())) wrong(field, "an integer", v);
  py::object index = py::reinterpret_steal<py::object>(PyNumber_Index(v.ptr()));
  if (!index) throw py::error_already_set();
  int overflow = 0;
  const long long value = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
  if (overflow) throw py::value_error(std::string("Description.") + field + ": " + std::string(py::str(v)) +
                                      " does not fit a signed 64-bit integer");
  return value;
}

inline double as_double(const py::handle &v, const char *field) {
  if (PyBool_Check(v.ptr()) || !(PyFloat_Check(v.ptr()) || PyIndex_Check(v.ptr()))) wrong(field, "a number", v);
  return py::cast<double>(v);
}

// A C-contiguous numpy array of exactly dtype T and the given trailing dimensions
// (rows of `width` values: shape (n, width); width 0: a 1-D array).
template <typename T>
py::array_t<T> as_array(const py::handle &v, const char *field, std::vector<py::ssize_t> inner, const char *dtype) {
  std::string want = std::string("a C-contiguous ") + dtype + " array of shape (n";
  for (py::ssize_t d : inner) want += ", " + std::to_string(d);
  want += inner.empty() ? ",)" : ")";
  if (!py::isinstance<py::array>(v)) wrong(field, want, v);
  py::array a = py::reinterpret_borrow<py::array>(v);
  bool ok = a.dtype().is(py::dtype::of<T>()) && (a.flags() & py::array::c_style) &&
            a.ndim() == static_cast<py::ssize_t>(inner.size() + 1);
  for (size_t i = 0; ok && i < inner.size(); ++i) ok = a.shape(static_cast<py::ssize_t>(i + 1)) == inner[i];
  if (!ok) wrong(field, want, v);
  return py::reinterpret_borrow<py::array_t<T>>(v);
}

template <typename Row>
std::vector<Row> rows_of(const py::handle &v, const char *field) {
  static_assert(std::is_trivially_copyable<Row>::value && sizeof(Row) % sizeof(int64_t) == 0, "rows of int64");
  constexpr py::ssize_t width = sizeof(Row) / sizeof(int64_t);
  auto a = as_array<int64_t>(v, field, {width}, "int64");
  std::vector<Row> out(static_cast<size_t>(a.shape(0)));
  if (!out.empty()) std::memcpy(out.data(), a.data(), out.size() * sizeof(Row));
  return out;
}

// Rows of a table, borrowed from the array when it is read-only, owns its memory and is
// aligned for Row (an executable read from a file: popsim/executable_file.py makes its
// arrays so): nothing can change them then, and `lent` keeps the array alive. Any other
// array is copied, as rows_of does.
template <typename Row>
popsim::Rows<Row> lent_rows_of(const py::handle &v, const char *field, std::vector<py::object> &lent) {
  static_assert(std::is_trivially_copyable<Row>::value && sizeof(Row) % sizeof(int64_t) == 0, "rows of int64");
  constexpr py::ssize_t width = sizeof(Row) / sizeof(int64_t);
  auto a = as_array<int64_t>(v, field, {width}, "int64");
  const bool lendable = !a.writeable() && a.owndata() && reinterpret_cast<uintptr_t>(a.data()) % alignof(Row) == 0;
  if (!lendable || a.shape(0) == 0) return popsim::Rows<Row>(rows_of<Row>(v, field));
  lent.push_back(a);
  return popsim::Rows<Row>::lend(reinterpret_cast<const Row *>(a.data()), static_cast<size_t>(a.shape(0)));
}

template <typename T>
std::vector<T> values_of(const py::handle &v, const char *field, const char *dtype) {
  auto a = as_array<T>(v, field, {}, dtype);
  return std::vector<T>(a.data(), a.data() + a.size());
}

template <typename T>
py::array_t<T> to_array(const T *data, std::vector<py::ssize_t> shape) {
  py::array_t<T> out(shape);
  if (out.size()) std::memcpy(out.mutable_data(), data, static_cast<size_t>(out.size()) * sizeof(T));
  return out;
}

// A table (std::vector or popsim::Rows of int64 rows) as a new (n, width) int64 array.
template <typename Table>
py::array_t<int64_t> rows_array(const Table &rows) {
  using Row = typename Table::value_type;
  return to_array(reinterpret_cast<const int64_t *>(rows.data()),
                  {static_cast<py::ssize_t>(rows.size()), static_cast<py::ssize_t>(sizeof(Row) / sizeof(int64_t))});
}

inline std::vector<std::string> strings_of(const py::handle &v, const char *field) {
  if (!py::isinstance<py::list>(v) && !py::isinstance<py::tuple>(v)) wrong(field, "a list of str", v);
  std::vector<std::string> out;
  for (py::handle item : v) {
    if (!py::isinstance<py::str>(item)) wrong(field, "a list of str", item);
    out.push_back(item.cast<std::string>());
  }
  return out;
}

}  // namespace popsim_binding
