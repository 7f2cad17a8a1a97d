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
  PyMachine(int64_t arena_bytes, const I64Array &instrs, const I64Array &entries, const I64Array &segs,
            const I64Array &table_begin, const U8Array &table_overlaps, const I64Array &cases,
            const I64Array &switch_begin, const I64Array &switch_default, const I64Array &stream_transfer_bytes,
            const F64Array &step_costs, int64_t num_loop_slots)
      : machine_(make_executable(instrs, entries, segs, table_begin, table_overlaps, cases, switch_begin,
                                 switch_default, stream_transfer_bytes, step_costs, num_loop_slots),
                 arena_bytes),
        stream_callbacks_(static_cast<size_t>(stream_transfer_bytes.size())),
        stream_buffers_(static_cast<size_t>(stream_transfer_bytes.size())),
        stream_dtypes_(static_cast<size_t>(stream_transfer_bytes.size())) {}

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
  int run(int64_t program, py::object host_callback) {
    host_callback_ = std::move(host_callback);
    HostInterface host;
    host.ctx = this;
    host.call = &PyMachine::host_call;
    Status status;
    {
      py::gil_scoped_release release;
      status = machine_.run(program, host);
    }
    host_callback_ = py::none();
    if (status == Status::HostError && pending_) {
      py::error_already_set error = std::move(*pending_);
      pending_.reset();
      throw error;
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
    return d;
  }

  py::array_t<uint64_t> step_counts() const {
    const auto &c = machine_.step_counts();
    py::array_t<uint64_t> out(static_cast<py::ssize_t>(c.size()));
    if (!c.empty()) std::memcpy(out.mutable_data(), c.data(), c.size() * sizeof(uint64_t));
    return out;
  }
  py::array_t<double> step_cycles() const {
    const Executable &exe = machine_.executable();
    const auto &c = machine_.step_cycles();
    py::array_t<double> out({static_cast<py::ssize_t>(exe.num_steps), static_cast<py::ssize_t>(exe.num_categories)});
    if (!c.empty()) std::memcpy(out.mutable_data(), c.data(), c.size() * sizeof(double));
    return out;
  }
  void reset_counters() { machine_.reset_counters(); }
  int64_t arena_bytes() const { return machine_.arena_bytes(); }

 private:
  static Executable make_executable(const I64Array &instrs, const I64Array &entries, const I64Array &segs,
                                    const I64Array &table_begin, const U8Array &table_overlaps,
                                    const I64Array &cases, const I64Array &switch_begin,
                                    const I64Array &switch_default, const I64Array &stream_transfer_bytes,
                                    const F64Array &step_costs, int64_t num_loop_slots) {
    Executable exe;
    exe.instrs = rows_of<Instr>(instrs, 6, "instrs");
    exe.entries = vec_of(entries);
    exe.segs = rows_of<CopySeg>(segs, 3, "segs");
    exe.table_begin = vec_of(table_begin);
    exe.table_overlaps.assign(table_overlaps.data(), table_overlaps.data() + table_overlaps.size());
    exe.cases = rows_of<SwitchCase>(cases, 2, "cases");
    exe.switch_begin = vec_of(switch_begin);
    exe.switch_default = vec_of(switch_default);
    exe.stream_transfer_bytes = vec_of(stream_transfer_bytes);
    if (step_costs.ndim() != 2) throw std::invalid_argument("step_costs must be 2-D");
    exe.num_steps = step_costs.shape(0);
    exe.num_categories = step_costs.shape(1);
    exe.step_costs.assign(step_costs.data(), step_costs.data() + step_costs.size());
    exe.num_loop_slots = num_loop_slots;
    validate(exe);
    return exe;
  }

  // The lowering is ours, but a malformed table must never become a wild write.
  static void validate(const Executable &exe) {
    const int64_t n = static_cast<int64_t>(exe.instrs.size());
    const int64_t ntables = static_cast<int64_t>(exe.table_begin.size()) - 1;
    if (ntables < 0 || static_cast<int64_t>(exe.table_overlaps.size()) != ntables)
      throw std::invalid_argument("copy tables: bad table_begin / table_overlaps");
    for (int64_t e : exe.entries)
      if (e < 0 || e >= n) throw std::invalid_argument("entry point out of range");
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
    }
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
  std::optional<py::error_already_set> pending_;
};

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "popsim native core: tile memory, the BSP instruction VM and host streams";
  py::class_<PyMachine>(m, "Machine")
      .def(py::init<int64_t, const I64Array &, const I64Array &, const I64Array &, const I64Array &, const U8Array &,
                    const I64Array &, const I64Array &, const I64Array &, const I64Array &, const F64Array &, int64_t>(),
           py::arg("arena_bytes"), py::arg("instrs"), py::arg("entries"), py::arg("segs"), py::arg("table_begin"),
           py::arg("table_overlaps"), py::arg("cases"), py::arg("switch_begin"), py::arg("switch_default"),
           py::arg("stream_transfer_bytes"), py::arg("step_costs"), py::arg("num_loop_slots"))
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
      .def("reset_counters", &PyMachine::reset_counters)
      .def_property_readonly("arena_bytes", &PyMachine::arena_bytes);
  m.attr("STATUS_OK") = static_cast<int>(Status::Ok);
}
