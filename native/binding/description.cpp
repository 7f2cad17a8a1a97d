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
#define POPSIM_FIELD_NAME(KIND, NAME, MEMBER) #NAME,
  static const std::vector<std::string> names = {POPSIM_DESCRIPTION_FIELDS(POPSIM_FIELD_NAME)};
#undef POPSIM_FIELD_NAME
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

// One checked read/write property of Description over MEMBER per kind of field of
// POPSIM_DESCRIPTION_FIELDS (binding.hpp); setting it records NAME as set.
#define POPSIM_ROWS(NAME, MEMBER) \
  d.def_property(NAME, [](const Description &s) { return rows_array(s.MEMBER); }, \
                 [](Description &s, py::handle v) { s.MEMBER = rows_of<std::decay_t<decltype(s.MEMBER)>::value_type>(v, NAME); s.set_fields.insert(NAME); })
#define POPSIM_LENT_ROWS(NAME, MEMBER) \
  d.def_property(NAME, [](const Description &s) { return rows_array(s.MEMBER); }, \
                 [](Description &s, py::handle v) { s.MEMBER = lent_rows_of<std::decay_t<decltype(s.MEMBER)>::value_type>(v, NAME, s.lent); s.set_fields.insert(NAME); })
#define POPSIM_VALUES(NAME, MEMBER, T, DTYPE) \
  d.def_property(NAME, [](const Description &s) { return to_array<T>(s.MEMBER.data(), {static_cast<py::ssize_t>(s.MEMBER.size())}); }, \
                 [](Description &s, py::handle v) { s.MEMBER = values_of<T>(v, NAME, DTYPE); s.set_fields.insert(NAME); })
#define POPSIM_I64S(NAME, MEMBER) POPSIM_VALUES(NAME, MEMBER, int64_t, "int64")
#define POPSIM_U8S(NAME, MEMBER) POPSIM_VALUES(NAME, MEMBER, uint8_t, "uint8")
#define POPSIM_INT(NAME, MEMBER) \
  d.def_property(NAME, [](const Description &s) { return s.MEMBER; }, \
                 [](Description &s, py::handle v) { s.MEMBER = as_int64(v, NAME); s.set_fields.insert(NAME); })
#define POPSIM_DOUBLE(NAME, MEMBER) \
  d.def_property(NAME, [](const Description &s) { return s.MEMBER; }, \
                 [](Description &s, py::handle v) { s.MEMBER = as_double(v, NAME); s.set_fields.insert(NAME); })
// Names for messages the core writes itself (a crashing vertex): a list of str.
#define POPSIM_STRINGS(NAME, MEMBER) \
  d.def_property(NAME, [](const Description &s) { return s.MEMBER; }, \
                 [](Description &s, py::handle v) { s.MEMBER = strings_of(v, NAME); s.set_fields.insert(NAME); })
#define POPSIM_CODELETS(NAME, MEMBER) \
  d.def_property(NAME, &Description::codelets, [](Description &s, py::handle v) { \
    s.set_codelets(v); \
    s.set_fields.insert(NAME); \
  })
// step_costs: steps x num_ipus x categories (num_ipus must be set first).
#define POPSIM_STEP_COSTS(NAME, MEMBER) \
  d.def_property( \
      NAME, \
      [](const Description &s) { \
        return to_array(s.MEMBER.data(), {s.exe.num_steps, s.exe.num_ipus, NUM_COST_CATEGORIES}); \
      }, \
      [](Description &s, py::handle v) { \
        if (!s.set_fields.count("num_ipus")) throw py::value_error("Description." NAME ": set num_ipus first"); \
        auto a = as_array<double>(v, NAME, {s.exe.num_ipus, NUM_COST_CATEGORIES}, "float64"); \
        s.MEMBER.assign(a.data(), a.data() + a.size()); \
        s.exe.num_steps = a.shape(0); \
        s.set_fields.insert(NAME); \
      })
// exchange_costs: compute sets x 2 (in, out) x num_ipus x categories.
#define POPSIM_EXCHANGE_COSTS(NAME, MEMBER) \
  d.def_property( \
      NAME, \
      [](const Description &s) { \
        const py::ssize_t per = 2 * s.exe.num_ipus * NUM_COST_CATEGORIES; \
        return to_array(s.MEMBER.data(), \
                        {static_cast<py::ssize_t>(s.MEMBER.size()) / per, 2, s.exe.num_ipus, NUM_COST_CATEGORIES}); \
      }, \
      [](Description &s, py::handle v) { \
        if (!s.set_fields.count("num_ipus")) throw py::value_error("Description." NAME ": set num_ipus first"); \
        auto a = as_array<double>(v, NAME, {2, s.exe.num_ipus, NUM_COST_CATEGORIES}, "float64"); \
        s.MEMBER.assign(a.data(), a.data() + a.size()); \
        s.set_fields.insert(NAME); \
      })
#define POPSIM_BIND_FIELD(KIND, NAME, MEMBER) POPSIM_##KIND(#NAME, MEMBER);

void bind_description(py::module_ &m) {
  py::class_<Description> d(m, "Description",
                            "The executable description a Machine runs, set field by field; each field is checked "
                            "as it is set (dtype, shape, type) and the whole when the Machine is built.");
  d.def(py::init<>());
  POPSIM_DESCRIPTION_FIELDS(POPSIM_BIND_FIELD)
  d.def_property_readonly_static("FIELDS", [](py::handle) { return Description::required(); },
                                 "Every field's name (each must be set before a Machine is built)");
  d.def_property_readonly("num_lent", [](const Description &s) { return s.lent.size(); },
                          "How many tables borrow a read-only array's memory instead of copying it");
}
#undef POPSIM_BIND_FIELD
#undef POPSIM_ROWS
#undef POPSIM_LENT_ROWS
#undef POPSIM_VALUES
#undef POPSIM_I64S
#undef POPSIM_U8S
#undef POPSIM_INT
#undef POPSIM_DOUBLE
#undef POPSIM_STRINGS
#undef POPSIM_CODELETS
#undef POPSIM_STEP_COSTS
#undef POPSIM_EXCHANGE_COSTS

}  // namespace popsim_binding
