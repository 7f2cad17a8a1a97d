// The typed hand-over: Description's checked properties, one per field of the core's
// Executable (popsim/native.py sets them from a Lowered).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <utility>
#include <vector>

#include "binding/binding.hpp"
#include "binding/convert.hpp"

namespace popsim_binding {

using namespace popsim;

const std::vector<std::string> &Description::required() {
  static const std::vector<std::string> names = {
      "arena_bytes", "instrs", "entries", "copy_runs", "table_begin", "table_overlaps", "cases", "switch_begin",
      "switch_default", "stream_transfer_bytes", "step_costs", "num_loop_slots", "num_host_calls",
      "num_messages", "vertices", "fields", "spans", "groups", "compute_sets", "exchange_costs", "codelets",
      "codelet_names", "compute_set_names", "state_bytes", "num_workers", "num_tiles", "sync_cycles",
      "num_replicas", "num_ipus", "tiles_per_ipu", "step_ipus", "replica_maps", "replication_index_offsets",
      "stream_broadcast"};
  return names;
}

void Description::set_codelets(const py::handle &v) {
  const char *field = "codelets";
  if (!py::isinstance<py::list>(v) && !py::isinstance<py::tuple>(v)) wrong(field, "a list of (path, symbol, fields)", v);
  std::vector<CodeletInfo> out;
  for (py::handle item : v) {
    py::sequence t = py::reinterpret_borrow<py::sequence>(item);
    if (!py::isinstance<py::tuple>(item) || py::len(t) != 3 || !py::isinstance<py::str>(t[0]) ||
        !py::isinstance<py::str>(t[1]))
      wrong(field, "(path: str, symbol: str, fields: list of (base, itemsize, elements)) items", item);
    CodeletInfo info{t[0].cast<std::string>(), t[1].cast<std::string>(), {}};
    for (py::handle f : py::reinterpret_borrow<py::sequence>(t[2])) {
      py::sequence layout = py::reinterpret_borrow<py::sequence>(f);
      if (!py::isinstance<py::tuple>(f) || py::len(layout) != 3)
        wrong(field, "(base, itemsize, elements) field layouts", f);
      info.fields.push_back(
          FieldLayout{as_int64(layout[0], field), as_int64(layout[1], field), as_int64(layout[2], field)});
    }
    out.push_back(std::move(info));
  }
  exe.vertex.codelets = std::move(out);
}

py::list Description::codelets() const {
  py::list out;
  for (const CodeletInfo &c : exe.vertex.codelets) {
    py::list fields;
    for (const FieldLayout &f : c.fields) fields.append(py::make_tuple(f.base, f.itemsize, f.elements));
    out.append(py::make_tuple(c.path, c.symbol, fields));
  }
  return out;
}

Executable Description::take() {
  if (consumed) throw py::value_error("this Description was already used to build a Machine; make a new one");
  for (const std::string &name : required())
    if (!set_fields.count(name)) throw py::value_error("Description." + name + " was never set");
  consumed = true;
  return std::move(exe);
}

// Defines a checked read/write property of Description over `member`.
#define POPSIM_ROWS(NAME, MEMBER) \
  d.def_property(NAME, [](const Description &s) { return rows_array(s.MEMBER); }, \
                 [](Description &s, py::handle v) { s.MEMBER = rows_of<std::decay_t<decltype(s.MEMBER)>::value_type>(v, NAME); s.set_fields.insert(NAME); })
#define POPSIM_LENT_ROWS(NAME, MEMBER) \
  d.def_property(NAME, [](const Description &s) { return rows_array(s.MEMBER); }, \
                 [](Description &s, py::handle v) { s.MEMBER = lent_rows_of<std::decay_t<decltype(s.MEMBER)>::value_type>(v, NAME, s.lent); s.set_fields.insert(NAME); })
#define POPSIM_VALUES(NAME, MEMBER, T, DTYPE) \
  d.def_property(NAME, [](const Description &s) { return to_array<T>(s.MEMBER.data(), {static_cast<py::ssize_t>(s.MEMBER.size())}); }, \
                 [](Description &s, py::handle v) { s.MEMBER = values_of<T>(v, NAME, DTYPE); s.set_fields.insert(NAME); })
#define POPSIM_INT(NAME, MEMBER) \
  d.def_property(NAME, [](const Description &s) { return s.MEMBER; }, \
                 [](Description &s, py::handle v) { s.MEMBER = as_int64(v, NAME); s.set_fields.insert(NAME); })

// Names for messages the core writes itself (a crashing vertex): a list of str.
#define POPSIM_STRINGS(NAME, MEMBER) \
  d.def_property(NAME, [](const Description &s) { return s.MEMBER; }, \
                 [](Description &s, py::handle v) { s.MEMBER = strings_of(v, NAME); s.set_fields.insert(NAME); })

void bind_description(py::module_ &m) {
  py::class_<Description> d(m, "Description",
                            "The executable description a Machine runs, set field by field; each field is checked "
                            "as it is set (dtype, shape, type) and the whole when the Machine is built.");
  d.def(py::init<>());
  POPSIM_INT("arena_bytes", exe.arena_bytes);
  POPSIM_ROWS("instrs", exe.instrs);
  POPSIM_VALUES("entries", exe.entries, int64_t, "int64");
  POPSIM_LENT_ROWS("copy_runs", exe.copy_runs);
  POPSIM_VALUES("table_begin", exe.table_begin, int64_t, "int64");
  POPSIM_VALUES("table_overlaps", exe.table_overlaps, uint8_t, "uint8");
  POPSIM_ROWS("cases", exe.cases);
  POPSIM_VALUES("switch_begin", exe.switch_begin, int64_t, "int64");
  POPSIM_VALUES("switch_default", exe.switch_default, int64_t, "int64");
  POPSIM_VALUES("stream_transfer_bytes", exe.stream_transfer_bytes, int64_t, "int64");
  // step_costs: steps x num_ipus x categories (num_ipus must be set first).
  d.def_property(
      "step_costs",
      [](const Description &s) {
        return to_array(s.exe.step_costs.data(), {s.exe.num_steps, s.exe.num_ipus, NUM_COST_CATEGORIES});
      },
      [](Description &s, py::handle v) {
        if (!s.set_fields.count("num_ipus")) throw py::value_error("Description.step_costs: set num_ipus first");
        auto a = as_array<double>(v, "step_costs", {s.exe.num_ipus, NUM_COST_CATEGORIES}, "float64");
        s.exe.step_costs.assign(a.data(), a.data() + a.size());
        s.exe.num_steps = a.shape(0);
        s.set_fields.insert("step_costs");
      });
  POPSIM_ROWS("step_ipus", exe.step_ipus);
  POPSIM_INT("num_replicas", exe.num_replicas);
  POPSIM_INT("num_ipus", exe.num_ipus);
  POPSIM_VALUES("replica_maps", exe.replica_maps, int64_t, "int64");
  POPSIM_VALUES("replication_index_offsets", exe.replication_index_offsets, int64_t, "int64");
  POPSIM_VALUES("stream_broadcast", exe.stream_broadcast, uint8_t, "uint8");
  POPSIM_INT("num_loop_slots", exe.num_loop_slots);
  POPSIM_INT("num_host_calls", exe.num_host_calls);
  POPSIM_INT("num_messages", exe.num_messages);
  POPSIM_LENT_ROWS("vertices", exe.vertex.vertices);
  POPSIM_LENT_ROWS("fields", exe.vertex.fields);
  POPSIM_LENT_ROWS("spans", exe.vertex.spans);
  POPSIM_ROWS("groups", exe.vertex.groups);
  POPSIM_ROWS("compute_sets", exe.vertex.compute_sets);
  // exchange_costs: compute sets x 2 (in, out) x num_ipus x categories.
  d.def_property(
      "exchange_costs",
      [](const Description &s) {
        const py::ssize_t per = 2 * s.exe.num_ipus * NUM_COST_CATEGORIES;
        return to_array(s.exe.vertex.exchange_costs.data(),
                        {static_cast<py::ssize_t>(s.exe.vertex.exchange_costs.size()) / per, 2, s.exe.num_ipus,
                         NUM_COST_CATEGORIES});
      },
      [](Description &s, py::handle v) {
        if (!s.set_fields.count("num_ipus")) throw py::value_error("Description.exchange_costs: set num_ipus first");
        auto a = as_array<double>(v, "exchange_costs", {2, s.exe.num_ipus, NUM_COST_CATEGORIES}, "float64");
        s.exe.vertex.exchange_costs.assign(a.data(), a.data() + a.size());
        s.set_fields.insert("exchange_costs");
      });
  d.def_property("codelets", &Description::codelets, [](Description &s, py::handle v) {
    s.set_codelets(v);
    s.set_fields.insert("codelets");
  });
  POPSIM_STRINGS("codelet_names", exe.vertex.codelet_names);
  POPSIM_STRINGS("compute_set_names", exe.vertex.compute_set_names);
  POPSIM_INT("state_bytes", exe.vertex.state_bytes);
  POPSIM_INT("num_workers", exe.vertex.num_workers);
  POPSIM_INT("num_tiles", exe.vertex.num_tiles);
  POPSIM_INT("tiles_per_ipu", exe.vertex.tiles_per_ipu);
  d.def_property("sync_cycles", [](const Description &s) { return s.exe.vertex.sync_cycles; },
                 [](Description &s, py::handle v) {
                   s.exe.vertex.sync_cycles = as_double(v, "sync_cycles");
                   s.set_fields.insert("sync_cycles");
                 });
  d.def_property_readonly_static("FIELDS", [](py::handle) { return Description::required(); });
  d.def_property_readonly("num_lent", [](const Description &s) { return s.lent.size(); },
                          "How many tables borrow a read-only array's memory instead of copying it");
}
#undef POPSIM_ROWS
#undef POPSIM_LENT_ROWS
#undef POPSIM_VALUES
#undef POPSIM_INT
#undef POPSIM_STRINGS

}  // namespace popsim_binding
