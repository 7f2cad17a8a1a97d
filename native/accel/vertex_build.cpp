// popsim._vertex_build: the common call of Graph.add_vertex in C, written against the
// CPython C API (METH_FASTCALL) because pybind11's own cost per call is most of what it saves.
//
// lean_add_vertex(state, compute_set, vertex_type, connections) does what vertices.py's
// Python path (VertexBuilding._add_vertex_in_python) does when that path would take its lean
// branch for every connection: a registered type name whose build plan exists, a compute set
// of this graph, and a dict whose every entry connects a scalar or vector edge to one strided
// view of a variable, of the field's element type, with the element count the field's kind
// needs, never a constant the vertex would write. It appends the vertex's columns and slots
// (vertex_store.py) and returns its VertexRef. For anything else it checks first and changes
// nothing: it returns None and Python does it all, and raises the errors. It never calls Python
// code, so nothing can change the objects it looks at while it works.
// tests/test_vertex_build.py checks that both paths agree.
//
// The Python objects are read through their __slots__ (configure() finds each slot's offset
// once), so the classes must keep those slots; configure() raises if one is missing.
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include <utility>

namespace {

constexpr Py_ssize_t kMaxConnections = 32;  // a dict with more goes the Python way

// A strong reference, released at scope exit.
class Ref {
 public:
  explicit Ref(PyObject *o = nullptr) : o_(o) {}
  ~Ref() { Py_XDECREF(o_); }
  Ref(const Ref &) = delete;
  Ref &operator=(const Ref &) = delete;
  PyObject *get() const { return o_; }
  PyObject *release() {
    PyObject *o = o_;
    o_ = nullptr;
    return o;
  }
  explicit operator bool() const { return o_ != nullptr; }

 private:
  PyObject *o_;
};

// The classes of vertices.py's objects, and where each slot the lean path reads lives.
struct Layout {
  PyTypeObject *tensor = nullptr, *variable = nullptr, *compute_set = nullptr, *vertex_ref = nullptr;
  Py_ssize_t tensor_var, tensor_table, tensor_dtype, tensor_shape, tensor_offset, tensor_strides;
  Py_ssize_t variable_index, variable_is_constant;
  Py_ssize_t cs_state, cs_types, cs_tiles, cs_perf, cs_first, cs_slots, cs_default_tile;
  Py_ssize_t ref_compute_set, ref_index;
};
Layout layout;
bool configured = false;
PyObject *str_table, *str_codelets, *str_types, *str_extra, *str_build_plan;

// The slot at ``offset`` of ``o`` (a borrowed reference; nullptr while unset).
inline PyObject *&slot(PyObject *o, Py_ssize_t offset) {
  return *reinterpret_cast<PyObject **>(reinterpret_cast<char *>(o) + offset);
}

// Where __slots__ attribute ``name`` of ``type`` lives; false with TypeError if it is not one.
bool slot_offset(PyTypeObject *type, const char *name, Py_ssize_t *offset) {
  Ref descr(PyObject_GetAttrString(reinterpret_cast<PyObject *>(type), name));
  if (!descr || !PyObject_TypeCheck(descr.get(), &PyMemberDescr_Type) ||
      reinterpret_cast<PyMemberDescrObject *>(descr.get())->d_member->type != T_OBJECT_EX) {
    PyErr_Clear();
    PyErr_Format(PyExc_TypeError, "popsim._vertex_build: %s.%s is not a __slots__ attribute", type->tp_name, name);
    return false;
  }
  *offset = reinterpret_cast<PyMemberDescrObject *>(descr.get())->d_member->offset;
  return true;
}

bool exact_type(PyObject *o, const char *what, PyTypeObject **out) {
  if (!PyType_Check(o)) {
    PyErr_Format(PyExc_TypeError, "popsim._vertex_build.configure: %s must be a class", what);
    return false;
  }
  *out = reinterpret_cast<PyTypeObject *>(o);
  return true;
}

// configure(Tensor, Variable, ComputeSet, VertexRef): the classes and their slot offsets.
PyObject *configure(PyObject *, PyObject *const *args, Py_ssize_t nargs) {
  if (nargs != 4) {
    PyErr_SetString(PyExc_TypeError, "configure(Tensor, Variable, ComputeSet, VertexRef)");
    return nullptr;
  }
  Layout l;
  if (!exact_type(args[0], "Tensor", &l.tensor) || !exact_type(args[1], "Variable", &l.variable) ||
      !exact_type(args[2], "ComputeSet", &l.compute_set) || !exact_type(args[3], "VertexRef", &l.vertex_ref))
    return nullptr;
  if (!slot_offset(l.tensor, "_var", &l.tensor_var) || !slot_offset(l.tensor, "_table", &l.tensor_table) ||
      !slot_offset(l.tensor, "_dtype", &l.tensor_dtype) || !slot_offset(l.tensor, "_shape", &l.tensor_shape) ||
      !slot_offset(l.tensor, "_offset", &l.tensor_offset) || !slot_offset(l.tensor, "_strides", &l.tensor_strides) ||
      !slot_offset(l.variable, "index", &l.variable_index) ||
      !slot_offset(l.variable, "is_constant", &l.variable_is_constant) ||
      !slot_offset(l.compute_set, "_state", &l.cs_state) || !slot_offset(l.compute_set, "_types", &l.cs_types) ||
      !slot_offset(l.compute_set, "_tiles", &l.cs_tiles) || !slot_offset(l.compute_set, "_perf", &l.cs_perf) ||
      !slot_offset(l.compute_set, "_first", &l.cs_first) || !slot_offset(l.compute_set, "_slots", &l.cs_slots) ||
      !slot_offset(l.compute_set, "_default_tile", &l.cs_default_tile) ||
      !slot_offset(l.vertex_ref, "compute_set", &l.ref_compute_set) ||
      !slot_offset(l.vertex_ref, "index", &l.ref_index))
    return nullptr;
  for (PyTypeObject *t : {l.tensor, l.variable, l.compute_set, l.vertex_ref}) Py_INCREF(t);
  if (configured)
    for (PyTypeObject *t : {layout.tensor, layout.variable, layout.compute_set, layout.vertex_ref}) Py_DECREF(t);
  layout = l;
  configured = true;
  Py_RETURN_NONE;
}

// Python's ``shape == () or shape == (1,)`` for a tuple of exact ints; -1: not plain, ask Python.
int is_scalar_shape(PyObject *shape) {
  Py_ssize_t rank = PyTuple_GET_SIZE(shape);
  if (rank == 0) return 1;
  if (rank > 1) return 0;
  PyObject *n = PyTuple_GET_ITEM(shape, 0);
  if (!PyLong_CheckExact(n)) return -1;
  int overflow = 0;
  return PyLong_AsLongAndOverflow(n, &overflow) == 1 && !overflow;
}

// One lean connection found by check_connection.
struct Connection {
  Py_ssize_t position;  // the field's slot, from the vertex's first
  PyObject *view;       // the Tensor (borrowed from the connections dict)
  PyObject *var;        // its Variable (borrowed)
};

// Does ``view`` connect field ``entry`` (a build-plan entry: position, element type, is a
// vector, is written) the lean way? Fills ``out``; false for anything else.
bool check_connection(PyObject *entry, PyObject *view, PyObject *table, Py_ssize_t num_fields, Connection *out) {
  if (!PyTuple_CheckExact(entry) || PyTuple_GET_SIZE(entry) != 4 || !Py_IS_TYPE(view, layout.tensor)) return false;
  PyObject *position = PyTuple_GET_ITEM(entry, 0), *vector = PyTuple_GET_ITEM(entry, 2);
  PyObject *written = PyTuple_GET_ITEM(entry, 3);
  PyObject *var = slot(view, layout.tensor_var);
  if (var == nullptr || !Py_IS_TYPE(var, layout.variable) || slot(view, layout.tensor_table) != table ||
      slot(view, layout.tensor_dtype) != PyTuple_GET_ITEM(entry, 1))
    return false;
  PyObject *shape = slot(view, layout.tensor_shape);
  if (shape == nullptr || !PyTuple_CheckExact(shape) || slot(view, layout.tensor_offset) == nullptr ||
      slot(view, layout.tensor_strides) == nullptr || slot(var, layout.variable_index) == nullptr)
    return false;
  if (vector == Py_True) {
    if (PyTuple_GET_SIZE(shape) == 0) return false;
  } else if (vector != Py_False || is_scalar_shape(shape) != 1) {
    return false;
  }
  if (written == Py_True) {
    if (slot(var, layout.variable_is_constant) != Py_False) return false;
  } else if (written != Py_False) {
    return false;
  }
  if (!PyLong_CheckExact(position)) return false;
  Py_ssize_t pos = PyLong_AsSsize_t(position);
  if (pos < 0 || pos >= num_fields) {
    PyErr_Clear();
    return false;
  }
  *out = Connection{pos, view, var};
  return true;
}

// What a slot stores for a connection: the view when someone besides the dict holds it, else
// its edge record (vertex_store.edge_record), so that nothing is left per edge for the garbage
// collector (as vertices.py does it). A new reference.
PyObject *stored(const Connection &c) {
  if (Py_REFCNT(c.view) > 1) {
    Py_INCREF(c.view);
    return c.view;
  }
  return PyTuple_Pack(4, slot(c.var, layout.variable_index), slot(c.view, layout.tensor_offset),
                      slot(c.view, layout.tensor_shape), slot(c.view, layout.tensor_strides));
}

PyObject *none() { Py_RETURN_NONE; }

// The vertex's plan (vertex_store.build_plan, cached in vt.extra), or nullptr (no error set:
// not made yet, or not of the expected form; error set: a lookup failed).
PyObject *plan_of(PyObject *vt) {
  Ref extra(PyObject_GetAttr(vt, str_extra));
  if (!extra) return nullptr;
  if (!PyDict_CheckExact(extra.get())) return nullptr;
  PyObject *plan = PyDict_GetItemWithError(extra.get(), str_build_plan);  // borrowed; vt holds extra
  if (plan == nullptr || !PyTuple_CheckExact(plan) || PyTuple_GET_SIZE(plan) != 2 ||
      !PyTuple_CheckExact(PyTuple_GET_ITEM(plan, 0)) || !PyDict_CheckExact(PyTuple_GET_ITEM(plan, 1)))
    return nullptr;
  return plan;
}

// Truncates the lists to the lengths they had (undoing a partly made vertex after a failed append).
// The error that made it fail is kept aside meanwhile (no API call runs with an error set).
void truncate(PyObject *const *lists, const Py_ssize_t *lengths, int n) {
#if PY_VERSION_HEX >= 0x030C0000
  PyObject *error = PyErr_GetRaisedException();
#else
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
#endif
  for (int i = 0; i < n; ++i)
    if (PyList_GET_SIZE(lists[i]) > lengths[i]) PyList_SetSlice(lists[i], lengths[i], PY_SSIZE_T_MAX, nullptr);
#if PY_VERSION_HEX >= 0x030C0000
  PyErr_SetRaisedException(error);
#else
  PyErr_Restore(type, value, traceback);
#endif
}

PyObject *lean_add_vertex(PyObject *, PyObject *const *args, Py_ssize_t nargs) {
  if (nargs != 4) {
    PyErr_SetString(PyExc_TypeError, "lean_add_vertex(state, compute_set, vertex_type, connections)");
    return nullptr;
  }
  PyObject *state = args[0], *cs = args[1], *name = args[2], *connections = args[3];
  if (!configured || !Py_IS_TYPE(cs, layout.compute_set) || slot(cs, layout.cs_state) != state ||
      !PyUnicode_CheckExact(name))
    return none();
  if (connections != Py_None &&
      (!PyDict_CheckExact(connections) || PyDict_GET_SIZE(connections) > kMaxConnections))
    return none();

  // The vertex type (state.codelets.types[name]) and its build plan.
  Ref codelets(PyObject_GetAttr(state, str_codelets));
  if (!codelets) return nullptr;
  Ref types(PyObject_GetAttr(codelets.get(), str_types));
  if (!types) return nullptr;
  if (!PyDict_CheckExact(types.get())) return none();
  PyObject *vt = PyDict_GetItemWithError(types.get(), name);  // borrowed: the registry holds it
  if (vt == nullptr) return PyErr_Occurred() ? nullptr : none();
  PyObject *plan = plan_of(vt);
  if (plan == nullptr) return PyErr_Occurred() ? nullptr : none();
  PyObject *empty_slots = PyTuple_GET_ITEM(plan, 0), *fields = PyTuple_GET_ITEM(plan, 1);
  Py_ssize_t num_fields = PyTuple_GET_SIZE(empty_slots);

  // Check every connection before changing anything.
  Connection found[kMaxConnections];
  Py_ssize_t count = 0;
  if (connections != Py_None && PyDict_GET_SIZE(connections) > 0) {
    Ref table(PyObject_GetAttr(state, str_table));
    if (!table) return nullptr;
    Py_ssize_t it = 0;
    PyObject *key, *view;
    while (PyDict_Next(connections, &it, &key, &view)) {
      if (!PyUnicode_CheckExact(key)) return none();  // only str keys: their lookup runs no Python code
      PyObject *entry = PyDict_GetItemWithError(fields, key);
      if (entry == nullptr) return PyErr_Occurred() ? nullptr : none();
      if (!check_connection(entry, view, table.get(), num_fields, &found[count])) return none();
      ++count;
    }
  }
  PyObject *columns[5] = {slot(cs, layout.cs_types), slot(cs, layout.cs_tiles), slot(cs, layout.cs_perf),
                          slot(cs, layout.cs_first), slot(cs, layout.cs_slots)};
  for (PyObject *column : columns)
    if (column == nullptr || !PyList_CheckExact(column)) return none();
  PyObject *default_tile = slot(cs, layout.cs_default_tile);
  if (default_tile == nullptr) return none();

  // Make everything that can fail to allocate, then append the vertex's columns.
  PyObject *values[kMaxConnections];
  for (Py_ssize_t i = 0; i < count; ++i) {
    values[i] = stored(found[i]);
    if (values[i] == nullptr) {
      while (i > 0) Py_DECREF(values[--i]);
      return nullptr;
    }
  }
  auto release_values = [&]() {
    for (Py_ssize_t i = 0; i < count; ++i) Py_DECREF(values[i]);
  };
  Py_ssize_t lengths[5];
  for (int i = 0; i < 5; ++i) lengths[i] = PyList_GET_SIZE(columns[i]);
  Ref index(PyLong_FromSsize_t(lengths[0])), first(PyLong_FromSsize_t(lengths[4]));
  Ref vertex(index && first ? layout.vertex_ref->tp_alloc(layout.vertex_ref, 0) : nullptr);
  if (!vertex) {
    release_values();
    return nullptr;
  }
  Py_INCREF(cs);
  slot(vertex.get(), layout.ref_compute_set) = cs;  // the new object's slots are empty: nothing to release
  slot(vertex.get(), layout.ref_index) = index.release();
  if (PyList_Append(columns[0], vt) < 0 || PyList_Append(columns[1], default_tile) < 0 ||
      PyList_Append(columns[2], Py_None) < 0 || PyList_Append(columns[3], first.get()) < 0 ||
      PyList_SetSlice(columns[4], lengths[4], lengths[4], empty_slots) < 0) {
    truncate(columns, lengths, 5);
    release_values();
    return nullptr;
  }
  for (Py_ssize_t i = 0; i < count; ++i)  // steals values[i]; drops the None it replaces
    PyList_SetItem(columns[4], lengths[4] + found[i].position, values[i]);
  return vertex.release();
}

PyMethodDef methods[] = {
    {"configure", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(configure)), METH_FASTCALL,
     "configure(Tensor, Variable, ComputeSet, VertexRef): the classes whose slots lean_add_vertex reads."},
    {"lean_add_vertex", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(lean_add_vertex)), METH_FASTCALL,
     "lean_add_vertex(state, compute_set, vertex_type, connections) -> VertexRef, or None (nothing done) when "
     "the call is not add_vertex's common case."},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef module = {PyModuleDef_HEAD_INIT, "_vertex_build",
                      "Graph.add_vertex's common call in C (see native/accel/vertex_build.cpp).", -1, methods,
                      nullptr, nullptr, nullptr, nullptr};

}  // namespace

PyMODINIT_FUNC PyInit__vertex_build() {
  for (auto [target, text] : {std::pair<PyObject **, const char *>{&str_table, "table"},
                              {&str_codelets, "codelets"},
                              {&str_types, "types"},
                              {&str_extra, "extra"},
                              {&str_build_plan, "build_plan"}}) {
    *target = PyUnicode_InternFromString(text);
    if (*target == nullptr) return nullptr;
  }
  return PyModule_Create(&module);
}
