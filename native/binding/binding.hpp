// The binding: the only files that include Python headers (native/binding/*). It exports
// the contract (module.cpp; native/core/executable.hpp is its one copy), takes the typed
// hand-over from the lowering (Description, checked field by field: description.cpp),
// builds a Machine from it and runs it with the GIL released, turning host calls
// (PrintTensor, stream callbacks, interpreted vertices, Ctrl-C polls) into Python calls
// (machine.cpp); and keys integer records for the executable-cache digest (content_key.cpp).
//
// The binding holds no Python object that could refer back to an engine: callbacks are
// passed to run() and dropped when it returns, so the garbage collector sees every
// cycle through an engine's callbacks (popsim/engine.py holds them).
#pragma once
#include <pybind11/pybind11.h>

#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/executable.hpp"

namespace popsim_binding {

namespace py = pybind11;

// What the lowering gives the core, one checked field at a time (popsim/native.py fills
// it from a Lowered). A Machine takes it over; every field must have been set.
class Description {
 public:
  popsim::Executable exe;
  std::set<std::string> set_fields;
  bool consumed = false;
  // The read-only arrays whose memory exe's Rows borrow (convert.hpp, lent_rows_of): the
  // Machine built from this takes them over and keeps them alive.
  std::vector<py::object> lent;

  static const std::vector<std::string> &required();
  void set_codelets(const py::handle &v);
  py::list codelets() const;
  // The executable, once: every field must have been set.
  popsim::Executable take();
};

// Raised when a machine is used from another thread while it runs, or re-entered from
// one of its own callbacks in a way that is not safe (popsim/engine.py guards first).
struct BusyError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void bind_description(py::module_ &m);  // description.cpp
void bind_machine(py::module_ &m);      // machine.cpp
void bind_content_key(py::module_ &m);  // content_key.cpp

}  // namespace popsim_binding
