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

// Every field of Description, once: X(KIND, name, member of Description). description.cpp
// expands it twice, into required() (the names a Machine needs set) and into one checked
// property per field (POPSIM_<KIND> there says how each kind is checked and converted);
// Description.FIELDS gives the names to Python, and tests/test_native.py checks that
// popsim/native.py's describe() sets exactly these. A field is added here and nowhere else
// in C++. step_costs and exchange_costs are per IPU: num_ipus is set before them.
#define POPSIM_DESCRIPTION_FIELDS(X)                                        \
  X(INT, arena_bytes, exe.arena_bytes)                                      \
  X(ROWS, instrs, exe.instrs)                                               \
  X(I64S, entries, exe.entries)                                             \
  X(LENT_ROWS, copy_runs, exe.copy_runs)                                    \
  X(I64S, table_begin, exe.table_begin)                                     \
  X(U8S, table_overlaps, exe.table_overlaps)                                \
  X(ROWS, cases, exe.cases)                                                 \
  X(I64S, switch_begin, exe.switch_begin)                                   \
  X(I64S, switch_default, exe.switch_default)                               \
  X(I64S, stream_transfer_bytes, exe.stream_transfer_bytes)                 \
  X(U8S, stream_broadcast, exe.stream_broadcast)                            \
  X(STEP_COSTS, step_costs, exe.step_costs)                                 \
  X(ROWS, step_ipus, exe.step_ipus)                                         \
  X(INT, num_replicas, exe.num_replicas)                                    \
  X(INT, num_ipus, exe.num_ipus)                                            \
  X(I64S, replica_maps, exe.replica_maps)                                   \
  X(I64S, replication_index_offsets, exe.replication_index_offsets)         \
  X(INT, num_loop_slots, exe.num_loop_slots)                                \
  X(INT, num_host_calls, exe.num_host_calls)                                \
  X(INT, num_messages, exe.num_messages)                                    \
  X(LENT_ROWS, vertices, exe.vertex.vertices)                               \
  X(LENT_ROWS, fields, exe.vertex.fields)                                   \
  X(LENT_ROWS, spans, exe.vertex.spans)                                     \
  X(ROWS, groups, exe.vertex.groups)                                        \
  X(ROWS, compute_sets, exe.vertex.compute_sets)                            \
  X(EXCHANGE_COSTS, exchange_costs, exe.vertex.exchange_costs)              \
  X(CODELETS, codelets, exe.vertex.codelets)                                \
  X(STRINGS, codelet_names, exe.vertex.codelet_names)                       \
  X(STRINGS, compute_set_names, exe.vertex.compute_set_names)               \
  X(INT, state_bytes, exe.vertex.state_bytes)                               \
  X(INT, num_workers, exe.vertex.num_workers)                               \
  X(INT, num_tiles, exe.vertex.num_tiles)                                   \
  X(INT, tiles_per_ipu, exe.vertex.tiles_per_ipu)                           \
  X(DOUBLE, sync_cycles, exe.vertex.sync_cycles)

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

  // The names of POPSIM_DESCRIPTION_FIELDS, in its order.
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
