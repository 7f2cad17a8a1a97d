// The one file that knows both Python and the core. It exports the contract (opcodes,
// codes, row layouts: native/core/executable.hpp is their one copy), takes the typed
// hand-over from the lowering (Description, checked field by field), builds a Machine
// from it, runs it with the GIL released, and turns host calls (PrintTensor, stream
// callbacks, interpreted vertices, Ctrl-C polls) into Python calls.
//
// The binding holds no Python object that could refer back to an engine: callbacks are
// passed to run() and dropped when it returns, so the garbage collector sees every
// cycle through an engine's callbacks (popsim/engine.py holds them).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstddef>
#include <cstring>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "core/layouts.hpp"
#include "core/machine.hpp"
#include "core/run_signals.hpp"

namespace py = pybind11;
using namespace popsim;

namespace {

// -- checked conversions: a wrong value names the field, what it expected and what it found --
std::string describe_value(const py::handle &v) {
  if (py::isinstance<py::array>(v)) {
    py::array a = py::reinterpret_borrow<py::array>(v);
    std::string shape;
    for (py::ssize_t i = 0; i < a.ndim(); ++i) shape += (i ? ", " : "") + std::to_string(a.shape(i));
    if (a.ndim() == 1) shape += ",";
    return std::string(py::str(a.dtype())) + " array of shape (" + shape + ")";
  }
  return std::string(py::str(py::type::of(v).attr("__name__")));
}

[[noreturn]] void wrong(const char *field, const std::string &expected, const py::handle &found) {
  throw py::type_error(std::string("Description.") + field + ": expected " + expected + ", found " + describe_value(found));
}

int64_t as_int64(const py::handle &v, const char *field) {
  if (PyBool_Check(v.ptr()) || !PyIndex_Check(v.ptr())) wrong(field, "an integer", v);
  py::object index = py::reinterpret_steal<py::object>(PyNumber_Index(v.ptr()));
  if (!index) throw py::error_already_set();
  int overflow = 0;
  const long long value = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
  if (overflow) throw py::value_error(std::string("Description.") + field + ": " + std::string(py::str(v)) +
                                      " does not fit a signed 64-bit integer");
  return value;
}

double as_double(const py::handle &v, const char *field) {
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

template <typename Row>
py::array_t<int64_t> rows_array(const std::vector<Row> &rows) {
  return to_array(reinterpret_cast<const int64_t *>(rows.data()),
                  {static_cast<py::ssize_t>(rows.size()), static_cast<py::ssize_t>(sizeof(Row) / sizeof(int64_t))});
}

// -- the typed hand-over -----------------------------------------------------------------------
// What the lowering gives the core, one checked field at a time (popsim/native.py fills
// it from a Lowered). A Machine takes it over; every field must have been set.
class Description {
 public:
  Executable exe;
  std::set<std::string> set_fields;
  bool consumed = false;

  static const std::vector<std::string> &required() {
    static const std::vector<std::string> names = {
        "arena_bytes", "instrs", "entries", "segs", "table_begin", "table_overlaps", "cases", "switch_begin",
        "switch_default", "stream_transfer_bytes", "step_costs", "num_loop_slots", "num_host_calls",
        "num_messages", "vertices", "fields", "spans", "groups", "compute_sets", "exchange_costs", "codelets",
        "codelet_names", "compute_set_names", "state_bytes", "num_workers", "num_tiles", "sync_cycles"};
    return names;
  }

  void set_codelets(const py::handle &v) {
    const char *field = "codelets";
    if (!py::isinstance<py::list>(v) && !py::isinstance<py::tuple>(v)) wrong(field, "a list of (path, symbol, fields)", v);
    std::vector<CodeletInfo> out;
    for (py::handle item : v) {
      py::sequence t = py::reinterpret_borrow<py::sequence>(item);
      if (!py::isinstance<py::tuple>(item) || py::len(t) != 3 || !py::isinstance<py::str>(t[0]) ||
          !py::isinstance<py::str>(t[1]))
        wrong(field, "(path: str, symbol: str, fields: list of (base, itemsize)) items", item);
      CodeletInfo info{t[0].cast<std::string>(), t[1].cast<std::string>(), {}};
      for (py::handle f : py::reinterpret_borrow<py::sequence>(t[2])) {
        py::sequence pair = py::reinterpret_borrow<py::sequence>(f);
        if (!py::isinstance<py::tuple>(f) || py::len(pair) != 2) wrong(field, "(base, itemsize) field layouts", f);
        info.fields.push_back(FieldLayout{as_int64(pair[0], field), as_int64(pair[1], field)});
      }
      out.push_back(std::move(info));
    }
    exe.vertex.codelets = std::move(out);
  }

  py::list codelets() const {
    py::list out;
    for (const CodeletInfo &c : exe.vertex.codelets) {
      py::list fields;
      for (const FieldLayout &f : c.fields) fields.append(py::make_tuple(f.base, f.itemsize));
      out.append(py::make_tuple(c.path, c.symbol, fields));
    }
    return out;
  }

  Executable take() {
    if (consumed) throw py::value_error("this Description was already used to build a Machine; make a new one");
    for (const std::string &name : required())
      if (!set_fields.count(name)) throw py::value_error("Description." + name + " was never set");
    consumed = true;
    return std::move(exe);
  }
};

// Defines a checked read/write property of Description over `member`.
#define POPSIM_ROWS(NAME, MEMBER) \
  d.def_property(NAME, [](const Description &s) { return rows_array(s.MEMBER); }, \
                 [](Description &s, py::handle v) { s.MEMBER = rows_of<std::decay_t<decltype(s.MEMBER)>::value_type>(v, NAME); s.set_fields.insert(NAME); })
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

std::vector<std::string> strings_of(const py::handle &v, const char *field) {
  if (!py::isinstance<py::list>(v) && !py::isinstance<py::tuple>(v)) wrong(field, "a list of str", v);
  std::vector<std::string> out;
  for (py::handle item : v) {
    if (!py::isinstance<py::str>(item)) wrong(field, "a list of str", item);
    out.push_back(item.cast<std::string>());
  }
  return out;
}

void bind_description(py::module_ &m) {
  py::class_<Description> d(m, "Description",
                            "The executable description a Machine runs, set field by field; each field is checked "
                            "as it is set (dtype, shape, type) and the whole when the Machine is built.");
  d.def(py::init<>());
  POPSIM_INT("arena_bytes", exe.arena_bytes);
  POPSIM_ROWS("instrs", exe.instrs);
  POPSIM_VALUES("entries", exe.entries, int64_t, "int64");
  POPSIM_ROWS("segs", exe.segs);
  POPSIM_VALUES("table_begin", exe.table_begin, int64_t, "int64");
  POPSIM_VALUES("table_overlaps", exe.table_overlaps, uint8_t, "uint8");
  POPSIM_ROWS("cases", exe.cases);
  POPSIM_VALUES("switch_begin", exe.switch_begin, int64_t, "int64");
  POPSIM_VALUES("switch_default", exe.switch_default, int64_t, "int64");
  POPSIM_VALUES("stream_transfer_bytes", exe.stream_transfer_bytes, int64_t, "int64");
  d.def_property(
      "step_costs",
      [](const Description &s) { return to_array(s.exe.step_costs.data(), {s.exe.num_steps, NUM_COST_CATEGORIES}); },
      [](Description &s, py::handle v) {
        auto a = as_array<double>(v, "step_costs", {NUM_COST_CATEGORIES}, "float64");
        s.exe.step_costs.assign(a.data(), a.data() + a.size());
        s.exe.num_steps = a.shape(0);
        s.set_fields.insert("step_costs");
      });
  POPSIM_INT("num_loop_slots", exe.num_loop_slots);
  POPSIM_INT("num_host_calls", exe.num_host_calls);
  POPSIM_INT("num_messages", exe.num_messages);
  POPSIM_ROWS("vertices", exe.vertex.vertices);
  POPSIM_ROWS("fields", exe.vertex.fields);
  POPSIM_ROWS("spans", exe.vertex.spans);
  POPSIM_ROWS("groups", exe.vertex.groups);
  POPSIM_ROWS("compute_sets", exe.vertex.compute_sets);
  d.def_property(
      "exchange_costs",
      [](const Description &s) {
        return to_array(s.exe.vertex.exchange_costs.data(),
                        {static_cast<py::ssize_t>(s.exe.vertex.exchange_costs.size() / (2 * NUM_COST_CATEGORIES)), 2,
                         NUM_COST_CATEGORIES});
      },
      [](Description &s, py::handle v) {
        auto a = as_array<double>(v, "exchange_costs", {2, NUM_COST_CATEGORIES}, "float64");
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
  d.def_property("sync_cycles", [](const Description &s) { return s.exe.vertex.sync_cycles; },
                 [](Description &s, py::handle v) {
                   s.exe.vertex.sync_cycles = as_double(v, "sync_cycles");
                   s.set_fields.insert("sync_cycles");
                 });
  d.def_property_readonly_static("FIELDS", [](py::handle) { return Description::required(); });
}
#undef POPSIM_ROWS
#undef POPSIM_VALUES
#undef POPSIM_INT
#undef POPSIM_STRINGS

// Raised when a machine is used from another thread while it runs, or re-entered from
// one of its own callbacks in a way that is not safe (popsim/engine.py guards first).
struct BusyError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class PyMachine {
 public:
  PyMachine(Description &desc, unsigned num_threads, int64_t trace_capacity)
      : machine_(desc.take(), num_threads, trace_capacity) {
    buffers_.resize(static_cast<size_t>(machine_.num_streams()));
  }

  void load(int64_t table, const py::buffer &image) {
    enter("load", false);
    py::buffer_info info = image.request();
    if (table >= 0) check_table(table, info, true, "load");
    machine_.load(table, static_cast<const uint8_t *>(info.ptr));
  }
  bool loaded() const { return machine_.loaded(); }

  void write(int64_t table, const py::buffer &host) {
    enter("write", true);
    py::buffer_info info = host.request();
    check_table(table, info, true, "write");
    machine_.write(table, static_cast<const uint8_t *>(info.ptr));
  }
  void read(int64_t table, const py::buffer &host) {
    enter("read", true);
    py::buffer_info info = host.request(true);
    check_table(table, info, false, "read");
    machine_.read(table, static_cast<uint8_t *>(info.ptr));
  }

  // The host memory a stream uses: the caller's array (connect_buffer) or a staging
  // buffer of one transfer (connect_callback). The binding keeps it alive while the
  // stream uses it, and until the end of a run it was replaced in.
  void connect_buffer(int64_t stream, const py::array &array) { connect(stream, array, false); }
  void connect_callback(int64_t stream, const py::array &staging) { connect(stream, staging, true); }
  void disconnect(int64_t stream) {
    enter("disconnect", true);
    check_stream(stream);
    machine_.disconnect(stream);
    retire(stream);
  }
  bool connected(int64_t stream) {
    check_stream(stream);
    return machine_.connected(stream);
  }

  // Returns the status code; a Python exception raised by a host call is re-raised.
  // host_callback(id) runs PrintTensor & co; vertex_callback(vertex, worker) runs an
  // interpreted vertex and returns (result, cycles); stream_callback(stream, staging)
  // fills or reads a callback stream's staging buffer.
  int run(int64_t program, py::object host_callback, py::object vertex_callback, py::object stream_callback) {
    enter("run", false);
    callbacks_ = {std::move(host_callback), std::move(vertex_callback), std::move(stream_callback)};
    runner_ = std::this_thread::get_id();
    running_program_ = program;
    running_ = true;
    struct EndOfRun {  // whatever happens, the machine is idle again afterwards
      PyMachine *self;
      ~EndOfRun() {
        self->running_ = false;
        self->callbacks_ = {};
        self->retired_.clear();
      }
    };
    HostInterface host;
    host.ctx = this;
    host.call = &PyMachine::host_call;
    Status status;
    bool interrupted;
    {
      EndOfRun end{this};
      py::gil_scoped_release release;
      RunSignals signals;  // Ctrl-C reaches compiled vertices; a crashing vertex is named
      status = machine_.run(program, host);
      interrupted = signals.interrupted();
    }
    if (status == Status::HostError && pending_) {
      py::error_already_set error = std::move(*pending_);
      pending_.reset();
      throw error;
    }
    if (interrupted) {
      // SIGINT also reached Python's handler: run it now (KeyboardInterrupt by default).
      if (PyErr_CheckSignals() != 0) throw py::error_already_set();
      if (status == Status::VertexFailed && machine_.error().error_kind == POPSIM_INTERRUPTED) {
        PyErr_SetNone(PyExc_KeyboardInterrupt);  // cut short, though the handler did not raise
        throw py::error_already_set();
      }
    }
    return static_cast<int>(status);
  }

  py::dict error() const {
    const ErrorRecord &e = machine_.error();
    py::dict d;
    d["status"] = static_cast<int>(e.status);
    d["id"] = e.id;
    d["a"] = e.a;
    d["pc"] = e.pc;
    d["step"] = e.step;
    d["vertex_result"] = e.vertex_result;
    d["error_kind"] = e.error_kind;
    d["error_field"] = e.error_field;
    d["error_line"] = e.error_line;
    d["error_index"] = e.error_index;
    d["error_size"] = e.error_size;
    return d;
  }

  py::array_t<uint64_t> step_counts() { return vector_array(machine_.step_counts()); }
  py::array_t<double> step_cycles() {
    enter("step_cycles", true);
    return to_array(machine_.step_cycles().data(), {machine_.executable().num_steps, NUM_COST_CATEGORIES});
  }
  py::tuple trace() {
    enter("trace", true);
    const auto &t = machine_.trace();
    static_assert(sizeof(t[0]) == 3 * sizeof(double), "trace rows of three doubles");
    return py::make_tuple(to_array(reinterpret_cast<const double *>(t.data()), {static_cast<py::ssize_t>(t.size()), 3}),
                          machine_.trace_truncated());
  }
  py::array_t<double> vertex_cycles() { return vector_array(machine_.compute().vertex_cycles()); }
  py::array_t<double> group_cycles() { return vector_array(machine_.compute().group_cycles()); }
  void reset_counters() {
    enter("reset_counters", false);
    machine_.reset_counters();
  }
  int64_t arena_bytes() const { return machine_.arena_bytes(); }
  unsigned num_threads() const { return machine_.compute().num_threads(); }
  uint8_t *arena_data() { return machine_.arena(); }
  bool running() const { return running_; }

 private:
  template <typename T>
  py::array_t<T> vector_array(const std::vector<T> &v) {
    enter("counters", true);
    return to_array(v.data(), {static_cast<py::ssize_t>(v.size())});
  }

  // Refuses use from another thread while running, and, from the running thread (its
  // own callbacks), what would pull the ground from under the run.
  void enter(const char *what, bool allowed_in_callback) const {
    if (!running_) return;
    if (std::this_thread::get_id() != runner_)
      throw BusyError(std::string("the machine is running program ") + std::to_string(running_program_) +
                      " in another thread; " + what + " must wait until run() returns");
    if (!allowed_in_callback)
      throw BusyError(std::string(what) + " is not allowed while the machine runs program " +
                      std::to_string(running_program_) + " (called from one of its callbacks)");
  }

  void check_stream(int64_t stream) const {
    if (stream < 0 || stream >= machine_.num_streams()) throw py::index_error("stream index out of range");
  }

  void check_table(int64_t table, const py::buffer_info &info, bool to_device, const char *what) const {
    const int64_t bytes = static_cast<int64_t>(info.size * info.itemsize);
    if (!machine_.host_table_fits(table, bytes, to_device))
      throw py::value_error(std::string(what) + ": copy table " + std::to_string(table) +
                            " does not exist or does not fit a host buffer of " + std::to_string(bytes) + " bytes");
  }

  void connect(int64_t stream, const py::array &array, bool callback) {
    enter("connect", true);
    check_stream(stream);
    if (!(array.flags() & py::array::c_style) || !array.writeable())
      throw py::value_error("a stream buffer must be a writable C-contiguous array");
    const int64_t transfer = machine_.transfer_bytes(stream), bytes = static_cast<int64_t>(array.nbytes());
    if (callback ? bytes < transfer : (transfer > 0 && (bytes < transfer || bytes % transfer != 0)))
      throw py::value_error("stream " + std::to_string(stream) + ": a buffer of " + std::to_string(bytes) +
                            " bytes does not hold whole transfers of " + std::to_string(transfer) + " bytes");
    uint8_t *data = static_cast<uint8_t *>(const_cast<void *>(array.data()));
    retire(stream);
    if (callback) machine_.connect_callback(stream, data);
    else machine_.connect_buffer(stream, data, bytes);
    buffers_[static_cast<size_t>(stream)] = array;
  }

  // The stream's old buffer may still be in use by the transfer under way.
  void retire(int64_t stream) {
    py::object &old = buffers_[static_cast<size_t>(stream)];
    if (running_ && old) retired_.push_back(old);
    old = py::object();
  }

  static int host_call(void *ctx, int kind, int64_t id, uint8_t *data, int64_t nbytes) {
    auto *self = static_cast<PyMachine *>(ctx);
    py::gil_scoped_acquire gil;
    try {
      if (kind == HOST_POLL) {
        if (PyErr_CheckSignals() != 0) throw py::error_already_set();
      } else if (kind == HOST_CALLBACK) {
        self->callbacks_.host(id);
      } else if (kind == HOST_VERTEX) {
        auto *call = reinterpret_cast<HostVertexCall *>(data);
        py::tuple r = self->callbacks_.vertex(id, nbytes);
        call->result = r[0].cast<int32_t>();
        call->ctx.cycles = r[1].cast<uint64_t>();
      } else {
        self->callbacks_.stream(id, self->buffers_[static_cast<size_t>(id)]);
      }
    } catch (py::error_already_set &e) {
      self->pending_.emplace(std::move(e));
      return 1;
    } catch (const std::exception &e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
      self->pending_.emplace(py::error_already_set());
      return 1;
    }
    return 0;
  }

  struct Callbacks {
    py::object host, vertex, stream;
  };

  Machine machine_;
  std::vector<py::object> buffers_;  // per stream: the array the core reads or writes
  std::vector<py::object> retired_;  // buffers replaced during the current run
  Callbacks callbacks_;              // only during run()
  bool running_ = false;             // guarded by the GIL
  std::thread::id runner_;
  int64_t running_program_ = -1;
  std::optional<py::error_already_set> pending_;
};

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

  m.attr("STATE_ALIGNMENT") = STATE_ALIGNMENT;
  m.attr("MAX_CALL_DEPTH") = MAX_CALL_DEPTH;
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
  py::class_<PyMachine>(m, "Machine")
      .def(py::init<Description &, unsigned, int64_t>(), py::arg("description"), py::arg("num_threads"),
           py::arg("trace_capacity"))
      .def("load", &PyMachine::load)
      .def_property_readonly("loaded", &PyMachine::loaded)
      .def_property_readonly("running", &PyMachine::running)
      .def("write", &PyMachine::write)
      .def("read", &PyMachine::read)
      .def("connect_buffer", &PyMachine::connect_buffer)
      .def("connect_callback", &PyMachine::connect_callback)
      .def("disconnect", &PyMachine::disconnect)
      .def("connected", &PyMachine::connected)
      .def("run", &PyMachine::run)
      .def("error", &PyMachine::error)
      .def("step_counts", &PyMachine::step_counts)
      .def("step_cycles", &PyMachine::step_cycles)
      .def("vertex_cycles", &PyMachine::vertex_cycles)
      .def("trace", &PyMachine::trace)
      .def("group_cycles", &PyMachine::group_cycles)
      .def("reset_counters", &PyMachine::reset_counters)
      .def_property_readonly("arena_bytes", &PyMachine::arena_bytes)
      .def_property_readonly("num_threads", &PyMachine::num_threads)
      // The whole tile memory as a writable uint8 array (for interpreted vertices).
      .def("arena", [](py::object self) {
        auto &m = self.cast<PyMachine &>();
        return py::array_t<uint8_t>({static_cast<py::ssize_t>(m.arena_bytes())}, {1}, m.arena_data(), self);
      });
}
