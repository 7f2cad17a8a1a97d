// The one file that knows both Python and the core: builds a Machine from the
// numpy arrays the lowering produces, runs it with the GIL released, and turns
// host calls (PrintTensor, stream callbacks, Ctrl-C polls) into Python calls.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/machine.hpp"
#include "core/run_signals.hpp"

namespace py = pybind11;
using namespace popsim;

namespace {

using I64Array = py::array_t<int64_t, py::array::c_style | py::array::forcecast>;
using F64Array = py::array_t<double, py::array::c_style | py::array::forcecast>;
using U8Array = py::array_t<uint8_t, py::array::c_style | py::array::forcecast>;

template <typename T>
std::vector<T> rows_of(const I64Array &a, size_t width, const char *what) {
  if (a.size() % width != 0) throw std::invalid_argument(std::string(what) + ": bad array size");
  std::vector<T> out(a.size() / width);
  static_assert(std::is_trivially_copyable<T>::value, "POD rows");
  if (!out.empty()) std::memcpy(out.data(), a.data(), a.size() * sizeof(int64_t));
  return out;
}

std::vector<int64_t> vec_of(const I64Array &a) { return std::vector<int64_t>(a.data(), a.data() + a.size()); }

class PyMachine {
 public:
  // `desc` holds the executable description's arrays (see popsim/engine.py: _machine_description).
  PyMachine(const py::dict &desc, unsigned num_threads, int64_t trace_capacity)
      : machine_(make_executable(desc), desc["arena_bytes"].cast<int64_t>(), num_threads, trace_capacity) {
    const size_t n = static_cast<size_t>(machine_.num_streams());
    stream_callbacks_.resize(n);
    stream_buffers_.resize(n);
    stream_dtypes_.resize(n);
  }

  void load(int64_t table, const U8Array &image) { machine_.load(table, image.data()); }
  bool loaded() const { return machine_.loaded(); }

  void write(int64_t table, const py::buffer &host) {
    py::buffer_info info = host.request();
    machine_.write(table, static_cast<const uint8_t *>(info.ptr));
  }
  void read(int64_t table, const py::buffer &host) {
    py::buffer_info info = host.request(true);
    machine_.read(table, static_cast<uint8_t *>(info.ptr));
  }

  // `array` must be C-contiguous and stay alive while connected: we keep a reference.
  void connect_buffer(int64_t stream, py::array array) {
    check_stream(stream);
    machine_.connect_buffer(stream, static_cast<uint8_t *>(array.mutable_data()), array.nbytes());
    stream_buffers_[stream] = array;
    stream_callbacks_[stream] = py::none();
  }
  void connect_callback(int64_t stream, py::object callback, py::dtype dtype) {
    check_stream(stream);
    machine_.connect_callback(stream);
    stream_callbacks_[stream] = std::move(callback);
    stream_dtypes_[stream] = std::move(dtype);
    stream_buffers_[stream] = py::none();
  }
  void disconnect(int64_t stream) {
    check_stream(stream);
    machine_.disconnect(stream);
    stream_callbacks_[stream] = py::none();
    stream_buffers_[stream] = py::none();
  }
  bool connected(int64_t stream) const { return machine_.connected(stream); }

  // Returns the status code; a Python exception raised by a host call is re-raised.
  // host_callback(id) runs PrintTensor & co; vertex_callback(vertex, worker) runs an
  // interpreted vertex and returns (result, cycles).
  int run(int64_t program, py::object host_callback, py::object vertex_callback) {
    host_callback_ = std::move(host_callback);
    vertex_callback_ = std::move(vertex_callback);
    HostInterface host;
    host.ctx = this;
    host.call = &PyMachine::host_call;
    Status status;
    bool interrupted;
    {
      py::gil_scoped_release release;
      RunSignals signals;  // Ctrl-C reaches compiled vertices; a crashing vertex is named
      status = machine_.run(program, host);
      interrupted = signals.interrupted();
    }
    host_callback_ = py::none();
    vertex_callback_ = py::none();
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

  py::array_t<uint64_t> step_counts() const { return copy_out(machine_.step_counts()); }
  py::array_t<double> step_cycles() const {
    const Executable &exe = machine_.executable();
    py::array_t<double> out = copy_out(machine_.step_cycles());
    return out.reshape({static_cast<py::ssize_t>(exe.num_steps), static_cast<py::ssize_t>(exe.num_categories)});
  }
  py::tuple trace() const {
    const auto &t = machine_.trace();
    py::array_t<double> out({static_cast<py::ssize_t>(t.size()), static_cast<py::ssize_t>(3)});
    if (!t.empty()) std::memcpy(out.mutable_data(), t.data(), t.size() * sizeof(t[0]));
    return py::make_tuple(out, machine_.trace_truncated());
  }
  py::array_t<double> vertex_cycles() const { return copy_out(machine_.compute().vertex_cycles()); }
  py::array_t<double> group_cycles() const { return copy_out(machine_.compute().group_cycles()); }
  void reset_counters() { machine_.reset_counters(); }
  int64_t arena_bytes() const { return machine_.arena_bytes(); }
  unsigned num_threads() const { return machine_.compute().num_threads(); }
  uint8_t *arena_data() { return machine_.arena(); }

 private:
  template <typename T>
  static py::array_t<T> copy_out(const std::vector<T> &v) {
    py::array_t<T> out(static_cast<py::ssize_t>(v.size()));
    if (!v.empty()) std::memcpy(out.mutable_data(), v.data(), v.size() * sizeof(T));
    return out;
  }

  static I64Array array(const py::dict &d, const char *key) { return d[key].cast<I64Array>(); }

  static Executable make_executable(const py::dict &d) {
    Executable exe;
    exe.instrs = rows_of<Instr>(array(d, "instrs"), 6, "instrs");
    exe.entries = vec_of(array(d, "entries"));
    exe.segs = rows_of<CopySeg>(array(d, "segs"), 3, "segs");
    exe.table_begin = vec_of(array(d, "table_begin"));
    const U8Array overlaps = d["table_overlaps"].cast<U8Array>();
    exe.table_overlaps.assign(overlaps.data(), overlaps.data() + overlaps.size());
    exe.cases = rows_of<SwitchCase>(array(d, "cases"), 2, "cases");
    exe.switch_begin = vec_of(array(d, "switch_begin"));
    exe.switch_default = vec_of(array(d, "switch_default"));
    exe.stream_transfer_bytes = vec_of(array(d, "stream_transfer_bytes"));
    const F64Array costs = d["step_costs"].cast<F64Array>();
    if (costs.ndim() != 2) throw std::invalid_argument("step_costs must be 2-D");
    exe.num_steps = costs.shape(0);
    exe.num_categories = costs.shape(1);
    if (exe.num_categories <= CAT_SYNC) throw std::invalid_argument("step_costs has too few categories");
    exe.step_costs.assign(costs.data(), costs.data() + costs.size());
    exe.num_loop_slots = d["num_loop_slots"].cast<int64_t>();
    VertexTables &v = exe.vertex;
    v.vertices = rows_of<VertexRow>(array(d, "vertices"), 8, "vertices");
    v.fields = rows_of<FieldRow>(array(d, "fields"), 3, "fields");
    v.spans = rows_of<SpanRow>(array(d, "spans"), 2, "spans");
    v.groups = rows_of<GroupRow>(array(d, "groups"), 3, "groups");
    v.compute_sets = rows_of<ComputeSetRow>(array(d, "compute_sets"), 4, "compute_sets");
    for (const auto &c : d["codelets"].cast<py::list>()) {
      auto pair = c.cast<std::pair<std::string, std::string>>();
      v.codelet_paths.push_back(pair.first);
      v.codelet_symbols.push_back(pair.second);
    }
    if (d.contains("codelet_names"))
      for (const auto &n : d["codelet_names"].cast<py::list>()) v.codelet_names.push_back(n.cast<std::string>());
    if (d.contains("compute_set_names"))
      for (const auto &n : d["compute_set_names"].cast<py::list>()) v.compute_set_names.push_back(n.cast<std::string>());
    v.state_bytes = d["state_bytes"].cast<int64_t>();
    v.num_workers = d["num_workers"].cast<int64_t>();
    v.num_tiles = d["num_tiles"].cast<int64_t>();
    validate(exe, d["arena_bytes"].cast<int64_t>());
    return exe;
  }

  // The lowering is ours, but a malformed table must never become a wild write.
  static void validate(const Executable &exe, int64_t arena_bytes) {
    const int64_t n = static_cast<int64_t>(exe.instrs.size());
    const int64_t ntables = static_cast<int64_t>(exe.table_begin.size()) - 1;
    if (ntables < 0 || static_cast<int64_t>(exe.table_overlaps.size()) != ntables)
      throw std::invalid_argument("copy tables: bad table_begin / table_overlaps");
    for (int64_t e : exe.entries)
      if (e < 0 || e >= n) throw std::invalid_argument("entry point out of range");
    const VertexTables &v = exe.vertex;
    const int64_t ncs = static_cast<int64_t>(v.compute_sets.size());
    for (const Instr &in : exe.instrs) {
      if (in.step >= exe.num_steps) throw std::invalid_argument("instruction step out of range");
      const bool jumps = in.op == OP_JUMP || in.op == OP_BRANCH_IF_FALSE || in.op == OP_BRANCH_IF_TRUE || in.op == OP_CALL;
      if (jumps && (in.a < 0 || in.a >= n)) throw std::invalid_argument("jump target out of range");
      if ((in.op == OP_LOOP_BEGIN || in.op == OP_LOOP_END) && (in.a < 0 || in.a >= exe.num_loop_slots))
        throw std::invalid_argument("loop slot out of range");
      if (in.op == OP_COPY && (in.a < 0 || in.a >= ntables)) throw std::invalid_argument("copy table out of range");
      if ((in.op == OP_STREAM_TO_DEVICE || in.op == OP_STREAM_FROM_DEVICE) &&
          (in.a < 0 || in.a >= static_cast<int64_t>(exe.stream_transfer_bytes.size()) || in.b < 0 || in.b >= ntables))
        throw std::invalid_argument("stream or table out of range");
      if (in.op == OP_SWITCH && (in.a < 0 || in.a + 1 >= static_cast<int64_t>(exe.switch_begin.size())))
        throw std::invalid_argument("switch table out of range");
      if (in.op == OP_EXECUTE && (in.a < 0 || in.a >= ncs)) throw std::invalid_argument("compute set out of range");
    }
    for (const CopySeg &s : exe.segs)
      if (s.len < 0 || s.src < 0 || s.dst < 0) throw std::invalid_argument("negative copy segment");
    for (const ComputeSetRow &cs : v.compute_sets) {
      if (cs.first_group < 0 || cs.first_group + cs.num_groups > static_cast<int64_t>(v.groups.size()) ||
          cs.exchange_in >= ntables || cs.exchange_out >= ntables)
        throw std::invalid_argument("compute set row out of range");
    }
    for (const GroupRow &g : v.groups)
      if (g.first_vertex < 0 || g.first_vertex + g.num_vertices > static_cast<int64_t>(v.vertices.size()))
        throw std::invalid_argument("tile group out of range");
    for (const FieldRow &f : v.fields) {
      if (f.base == FIELD_ARENA && (f.offset < 0 || f.offset > arena_bytes)) throw std::invalid_argument("field offset");
      if (f.base == FIELD_SPANS && (f.offset < 0 || f.offset + f.size > static_cast<int64_t>(v.spans.size())))
        throw std::invalid_argument("field spans out of range");
    }
    for (const SpanRow &sp : v.spans)
      if (sp.offset < 0 || sp.offset > arena_bytes) throw std::invalid_argument("span offset out of range");
  }

  void check_stream(int64_t stream) const {
    if (stream < 0 || stream >= machine_.num_streams()) throw std::out_of_range("stream index out of range");
  }

  static int host_call(void *ctx, int kind, int64_t id, uint8_t *data, int64_t nbytes) {
    auto *self = static_cast<PyMachine *>(ctx);
    py::gil_scoped_acquire gil;
    try {
      if (kind == HOST_POLL) {
        if (PyErr_CheckSignals() != 0) throw py::error_already_set();
      } else if (kind == HOST_CALLBACK) {
        self->host_callback_(id);
      } else if (kind == HOST_VERTEX) {
        auto *call = reinterpret_cast<HostVertexCall *>(data);
        py::tuple r = self->vertex_callback_(id, nbytes);
        call->result = r[0].cast<int32_t>();
        call->ctx.cycles = r[1].cast<uint64_t>();
      } else {
        // The staging buffer lives as long as the machine; the view is valid during the call.
        py::dtype dtype = self->stream_dtypes_[id];
        const py::ssize_t count = nbytes / dtype.itemsize();
        py::array view(dtype, {count}, {dtype.itemsize()}, data, py::capsule(data, [](void *) {}));
        self->stream_callbacks_[id](view);
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

  Machine machine_;
  std::vector<py::object> stream_callbacks_;
  std::vector<py::object> stream_buffers_;
  std::vector<py::dtype> stream_dtypes_;
  py::object host_callback_ = py::none();
  py::object vertex_callback_ = py::none();
  std::optional<py::error_already_set> pending_;
};

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "popsim native core: tile memory, the BSP instruction VM, compute sets and host streams";
  py::class_<PyMachine>(m, "Machine")
      .def(py::init<const py::dict &, unsigned, int64_t>(), py::arg("description"), py::arg("num_threads"),
           py::arg("trace_capacity"))
      .def("load", &PyMachine::load)
      .def_property_readonly("loaded", &PyMachine::loaded)
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
