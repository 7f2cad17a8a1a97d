// popsim._first_fit: variable liveness's block placement (popsim/lower/liveness.py's
// first_fit) in C, against the CPython C API like the other accelerators here.
//
// place(size, start, end, out): blocks k = 0..n-1 of size[k] bytes, live over points
// [start[k], end[k]], are placed in that order (largest first, as liveness sorts them),
// each at the lowest offset free over its whole range: the lowest gap, between the earlier
// blocks live at some point of its range taken by offset (ties in placement order), that
// holds it, else above them all. The offsets go to out[k]. All four are C-contiguous int64
// buffers of one length (numpy arrays); out is written.
//
// The blocks placed so far are kept in offset order, so each new block scans them once from
// the bottom, skipping those not live with it, and stops at the first gap that holds it: no
// sort per block, as the numpy formulation needs. tests/lower/test_liveness.py checks it
// against that formulation.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

namespace {

// A buffer held for the duration of a call, released at scope exit.
class Buffer {
 public:
  Buffer() { std::memset(&view_, 0, sizeof view_); }
  ~Buffer() {
    if (held_) PyBuffer_Release(&view_);
  }
  Buffer(const Buffer &) = delete;
  Buffer &operator=(const Buffer &) = delete;

  // A C-contiguous 1-D buffer of int64 ('q' or 'l' of 8 bytes); sets a TypeError naming it otherwise.
  bool get(PyObject *o, const char *name, bool writable) {
    if (PyObject_GetBuffer(o, &view_, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0)) != 0) {
      PyErr_Format(PyExc_TypeError, "first_fit: %s must be a C-contiguous%s int64 array, found %s", name,
                   writable ? " writable" : "", Py_TYPE(o)->tp_name);
      return false;
    }
    held_ = true;
    const char *f = view_.format ? view_.format : "B";
    if (*f == '<' || *f == '=' || *f == '@') ++f;
    if (view_.ndim != 1 || view_.itemsize != 8 || (std::strcmp(f, "q") != 0 && std::strcmp(f, "l") != 0)) {
      PyErr_Format(PyExc_TypeError, "first_fit: %s must be a 1-D int64 array, found format '%s' of %zd-byte items "
                   "in %d dimensions", name, view_.format ? view_.format : "B", view_.itemsize, view_.ndim);
      return false;
    }
    return true;
  }
  int64_t *data() const { return static_cast<int64_t *>(view_.buf); }
  Py_ssize_t size() const { return view_.shape ? view_.shape[0] : view_.len / 8; }

 private:
  Py_buffer view_;
  bool held_ = false;
};

void first_fit(Py_ssize_t n, const int64_t *size, const int64_t *start, const int64_t *end, int64_t *off) {
  std::vector<Py_ssize_t> order;  // placed blocks by (offset, placement)
  order.reserve(static_cast<size_t>(n));
  for (Py_ssize_t k = 0; k < n; ++k) {
    const int64_t sz = size[k], st = start[k], en = end[k];
    int64_t reach = 0;  // where the current gap begins: the top of every live block below it
    for (const Py_ssize_t j : order) {
      if (start[j] > en || end[j] < st) continue;  // not live together
      if (off[j] - reach >= sz) break;             // the gap below block j holds block k
      reach = std::max(reach, off[j] + size[j]);
    }
    off[k] = reach;
    // after every placed block at an offset up to this one's: ties stay in placement order
    auto at = std::upper_bound(order.begin(), order.end(), reach,
                               [off](int64_t value, Py_ssize_t j) { return value < off[j]; });
    order.insert(at, k);
  }
}

PyObject *place(PyObject *, PyObject *const *args, Py_ssize_t nargs) {
  if (nargs != 4) {
    PyErr_Format(PyExc_TypeError, "place(size, start, end, out) takes 4 arguments, found %zd", nargs);
    return nullptr;
  }
  Buffer size, start, end, out;
  if (!size.get(args[0], "size", false) || !start.get(args[1], "start", false) || !end.get(args[2], "end", false) ||
      !out.get(args[3], "out", true))
    return nullptr;
  const Py_ssize_t n = size.size();
  if (start.size() != n || end.size() != n || out.size() != n) {
    PyErr_Format(PyExc_ValueError, "first_fit: size, start, end and out must have one length, found %zd, %zd, %zd "
                 "and %zd", n, start.size(), end.size(), out.size());
    return nullptr;
  }
  Py_BEGIN_ALLOW_THREADS
  first_fit(n, size.data(), start.data(), end.data(), out.data());
  Py_END_ALLOW_THREADS
  Py_RETURN_NONE;
}

PyMethodDef methods[] = {
    {"place", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(place)), METH_FASTCALL,
     "place(size, start, end, out): first-fit offsets of blocks live over [start, end], in order, into out."},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef module = {PyModuleDef_HEAD_INIT, "_first_fit",
                      "Variable liveness's first-fit placement in C (see native/accel/first_fit.cpp).", -1, methods,
                      nullptr, nullptr, nullptr, nullptr};

}  // namespace

PyMODINIT_FUNC PyInit__first_fit() { return PyModule_Create(&module); }
