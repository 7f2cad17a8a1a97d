// The module: the contract's exports (opcodes, codes, row and C-struct layouts, from
// native/core/executable.hpp, status.hpp and layouts.hpp: popsim/contract.py reads them),
// the exceptions, the classes of description.cpp and machine.cpp, and content_key.cpp's function.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "binding/binding.hpp"
#include "core/layouts.hpp"
#include "core/peers.hpp"
#include "core/status.hpp"
#include "core/validate.hpp"
#include "popsim_codelet.h"

namespace py = pybind11;
using namespace popsim;
using namespace popsim_binding;

namespace {

// -- the contract, exported (native/core/executable.hpp, layouts.hpp) ------------------------------
py::tuple c_fields(const std::vector<CField> &fields) {
  py::list out;
  for (const CField &f : fields) out.append(py::make_tuple(f.name, f.offset, f.size, f.kind));
  return py::tuple(out);
}

void bind_contract(py::module_ &m) {
  py::enum_<Op> op(m, "Op", "Opcodes of the instruction list (native/core/executable.hpp)");
#define POPSIM_EXPORT_OP(name, doc) op.value(#name, OP_##name, doc);
  POPSIM_OPS(POPSIM_EXPORT_OP)
#undef POPSIM_EXPORT_OP
  m.attr("NUM_OPS") = static_cast<int64_t>(OP_COUNT);

  py::enum_<ScalarType> st(m, "ScalarType", "Scalar type codes of control-flow predicates");
  py::list scalar_types;
#define POPSIM_EXPORT_ST(name, ctype, kind)                                                         \
  st.value(#name, ST_##name);                                                                       \
  scalar_types.append(py::make_tuple(#name, static_cast<int64_t>(ST_##name), sizeof(ctype), std::string(1, kind)));
  POPSIM_SCALAR_TYPES(POPSIM_EXPORT_ST)
#undef POPSIM_EXPORT_ST
  m.attr("NUM_SCALAR_TYPES") = static_cast<int64_t>(ST_COUNT);
  m.attr("SCALAR_TYPES") = py::tuple(scalar_types);  // (name, code, bytes, numpy kind)

  py::enum_<Status> status(m, "Status", "Status codes a run ends with (native/core/status.hpp)");
#define POPSIM_EXPORT_STATUS(name, doc) status.value(#name, Status::name, doc);
  POPSIM_STATUSES(POPSIM_EXPORT_STATUS)
#undef POPSIM_EXPORT_STATUS

  py::list categories;
#define POPSIM_EXPORT_CAT(name, key) categories.append(key);
  POPSIM_COST_CATEGORIES(POPSIM_EXPORT_CAT)
#undef POPSIM_EXPORT_CAT
  m.attr("CATEGORIES") = py::tuple(categories);

  py::enum_<FieldBase> base(m, "FieldBase", "Where a vertex field points (FieldRow::base)");
#define POPSIM_EXPORT_FIELD(name) base.value(#name, FIELD_##name);
  POPSIM_FIELD_BASES(POPSIM_EXPORT_FIELD)
#undef POPSIM_EXPORT_FIELD
  py::dict flags;
#define POPSIM_EXPORT_FLAG(name, bit) flags[#name] = static_cast<int64_t>(VERTEX_##name);
  POPSIM_VERTEX_FLAGS(POPSIM_EXPORT_FLAG)
#undef POPSIM_EXPORT_FLAG
  m.attr("VERTEX_FLAGS") = flags;

  py::enum_<popsim_error_kind> kinds(m, "ErrorKind", "What a codelet's popsim_exec.error may hold");
#define POPSIM_EXPORT_KIND(name, code, doc) kinds.value(#name, POPSIM_##name, doc);
  POPSIM_ERROR_KINDS(POPSIM_EXPORT_KIND)
#undef POPSIM_EXPORT_KIND

  py::enum_<FaultPlace>(m, "FaultPlace", "Where a vertex's code faulted (core/status.hpp)")
#define POPSIM_EXPORT_PLACE(name, code, doc) .value(#name + 6, name, doc)  // without "FAULT_"
      POPSIM_FAULT_PLACES(POPSIM_EXPORT_PLACE);
#undef POPSIM_EXPORT_PLACE

  py::enum_<PeerOp>(m, "PeerOp", "What a run asks of the other processes (native/core/peers.hpp)")
      .value("EXCHANGE", PEER_EXCHANGE)
      .value("GATHER", PEER_GATHER)
      .value("COPY", PEER_COPY);

  m.attr("STATE_ALIGNMENT") = STATE_ALIGNMENT;
  m.attr("MAX_CALL_DEPTH") = MAX_CALL_DEPTH;
  m.attr("COPY_RUN_LIMIT") = COPY_RUN_LIMIT;
  m.attr("MAX_TABLE_ELEMENTS") = MAX_TABLE_ELEMENTS;
  m.attr("MAX_TABLE_BYTES") = MAX_TABLE_BYTES;
  py::dict columns, widths;
  for (const RowLayout &row : row_layouts()) {
    py::list cols;
    for (const auto &c : row.columns) cols.append(py::make_tuple(c.first, c.second));
    columns[row.table] = py::tuple(cols);
    widths[row.table] = row.width;
  }
  m.attr("ROW_COLUMNS") = columns;  // table -> ((column, index), ...)
  m.attr("ROW_WIDTHS") = widths;    // table -> int64 columns per row
  m.attr("EXEC_FIELDS") = c_fields(exec_fields());  // (name, offset, size, kind)
  m.attr("EXEC_SIZE") = sizeof(popsim_exec);
  m.attr("SPAN_FIELDS") = c_fields(span_fields());
  m.attr("SPAN_SIZE") = sizeof(popsim_span);
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "popsim native core: tile memory, the BSP instruction VM, compute sets and host streams";
  py::register_exception<MalformedExecutable>(m, "MalformedExecutableError", PyExc_ValueError);
  py::register_exception<BusyError>(m, "BusyError", PyExc_RuntimeError);
  bind_contract(m);
  bind_description(m);
  bind_machine(m);
  bind_content_key(m);
}
