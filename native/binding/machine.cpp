// The Machine class: a core Machine built from a Description, run with the GIL released;
// host calls become Python calls, and use from another thread while it runs is refused.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "binding/binding.hpp"
#include "binding/convert.hpp"
#include "core/machine.hpp"
#include "core/run_signals.hpp"

namespace popsim_binding {

using namespace popsim;

namespace {

// Calls `expire` once `seconds` pass (if > 0), unless the scope ends first.
class Watchdog {
 public:
  template <typename F>
  Watchdog(double seconds, F expire) {
    if (!(seconds > 0)) return;
    thread_ = std::thread([this, seconds, expire] {
      std::unique_lock<std::mutex> lock(mutex_);
      if (!done_cv_.wait_for(lock, std::chrono::duration<double>(seconds), [this] { return done_; })) expire();
    });
  }
  ~Watchdog() {
    if (!thread_.joinable()) return;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
    }
    done_cv_.notify_all();
    thread_.join();
  }
  Watchdog(const Watchdog &) = delete;
  Watchdog &operator=(const Watchdog &) = delete;

 private:
  std::mutex mutex_;
  std::condition_variable done_cv_;
  bool done_ = false;
  std::thread thread_;
};

class PyMachine {
 public:
  // first_replica, local_replicas: the block of replicas this process holds (-1: all).
  PyMachine(Description &desc, unsigned num_threads, int64_t trace_capacity, int64_t streaming_bytes,
            int64_t first_replica, int64_t local_replicas)
      : lent_(std::move(desc.lent)),
        machine_(desc.take(), num_threads, trace_capacity, streaming_bytes, first_replica, local_replicas) {
    buffers_.resize(static_cast<size_t>(machine_.num_streams() * machine_.local_replicas()));
  }

  // The graph's initial values through `table`, then the vertex state values through
  // `vertex_table` (-1: none; `vertex_image` is then not read).
  void load(int64_t table, const py::buffer &image, int64_t vertex_table, const py::object &vertex_image) {
    enter("load", false);
    py::buffer_info info = image.request();
    if (table >= 0) check_table(table, info, true, "load");
    py::buffer_info vertex_info;
    if (vertex_table >= 0) {
      if (!py::isinstance<py::buffer>(vertex_image)) throw py::type_error("load: vertex_image must be a buffer");
      vertex_info = vertex_image.cast<py::buffer>().request();
      check_table(vertex_table, vertex_info, true, "load");
    }
    machine_.load(table, static_cast<const uint8_t *>(info.ptr), vertex_table,
                  static_cast<const uint8_t *>(vertex_info.ptr));
  }
  bool loaded() const { return machine_.loaded(); }

  // replica -1 writes every replica.
  void write(int64_t table, const py::buffer &host, int64_t replica) {
    enter("write", true);
    check_replica(replica, true);
    py::buffer_info info = host.request();
    check_table(table, info, true, "write");
    machine_.write(table, static_cast<const uint8_t *>(info.ptr), replica);
  }
  void read(int64_t table, const py::buffer &host, int64_t replica) {
    enter("read", true);
    check_replica(replica, false);
    py::buffer_info info = host.request(true);
    check_table(table, info, false, "read");
    machine_.read(table, static_cast<uint8_t *>(info.ptr), replica);
  }

  // The host memory a stream's endpoint for `replica` uses: the caller's array
  // (connect_buffer) or a staging buffer of one transfer (connect_callback). The binding
  // keeps it alive while the stream uses it, and until the end of a run it was replaced in.
  void connect_buffer(int64_t stream, int64_t replica, const py::array &array) { connect(stream, replica, array, false); }
  void connect_callback(int64_t stream, int64_t replica, const py::array &staging) {
    connect(stream, replica, staging, true);
  }
  void disconnect(int64_t stream, int64_t replica) {
    enter("disconnect", true);
    check_endpoint(stream, replica);
    machine_.disconnect(stream, replica);
    retire(stream, replica);
  }
  bool connected(int64_t stream, int64_t replica) {
    check_endpoint(stream, replica);
    return machine_.connected(stream, replica);
  }
  // How many endpoints (replicas 0..n-1) a run of the stream reads or writes.
  int64_t stream_endpoints(int64_t stream) {
    check_endpoint(stream, 0);
    return machine_.stream_endpoints(stream);
  }

  // Returns the status code; a Python exception raised by a host call is re-raised.
  // host_callback(id) runs PrintTensor & co; vertex_callback(vertex, worker) runs an
  // interpreted vertex and returns (result, cycles); stream_callback(stream, staging)
  // fills or reads a callback stream's staging buffer; peer_callback(op, send,
  // send_bytes, recv, recv_bytes) moves bytes between processes (core/peers.hpp; for
  // PEER_COPY: (op, table, map, None, None); None when the machine holds every replica).
  // With `timeout` > 0 seconds a watchdog stops the run then (Status::Stopped, or a
  // vertex's INTERRUPTED error; `timed_out` says so afterwards).
  int run(int64_t program, py::object host_callback, py::object vertex_callback, py::object stream_callback,
          py::object peer_callback, double timeout) {
    enter("run", false);
    callbacks_ = {std::move(host_callback), std::move(vertex_callback), std::move(stream_callback),
                  std::move(peer_callback)};
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
    timed_out_ = false;
    machine_.clear_stop();
    {
      EndOfRun end{this};
      py::gil_scoped_release release;
      RunSignals signals(machine_.stop_flag());  // Ctrl-C reaches compiled vertices; a crashing vertex is named
      Watchdog watchdog(timeout, [this] {
        timed_out_ = true;
        machine_.request_stop();
      });
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
      // Cut short, though the handler did not raise (the run was on another thread).
      if (status == Status::Stopped ||
          (status == Status::VertexFailed && machine_.error().error_kind == POPSIM_INTERRUPTED)) {
        PyErr_SetNone(PyExc_KeyboardInterrupt);
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
    d["replica"] = e.replica;
    d["vertex_result"] = e.vertex_result;
    d["error_kind"] = e.error_kind;
    d["error_field"] = e.error_field;
    d["error_line"] = e.error_line;
    d["error_index"] = e.error_index;
    d["error_size"] = e.error_size;
    return d;
  }

  py::array_t<uint64_t> step_counts() { return vector_array(machine_.step_counts()); }
  // steps x IPUs of a replica x cost categories, summed over runs.
  py::array_t<double> step_cycles() {
    enter("step_cycles", true);
    return to_array(machine_.clocks().step_cycles().data(),
                    {machine_.executable().num_steps, machine_.executable().num_ipus, NUM_COST_CATEGORIES});
  }
  // Rows (step, IPU, start cycle, cycles) of the first steps run; whether it was cut.
  py::tuple trace() {
    enter("trace", true);
    const auto &t = machine_.clocks().trace();
    static_assert(sizeof(t[0]) == 4 * sizeof(double), "trace rows of four doubles");
    return py::make_tuple(to_array(reinterpret_cast<const double *>(t.data()), {static_cast<py::ssize_t>(t.size()), 4}),
                          machine_.clocks().trace_truncated());
  }
  // Per IPU: its clock, and the cycles it waited at the end of runs for the last IPU.
  py::array_t<double> ipu_clocks() { return vector_array(machine_.clocks().clocks()); }
  py::array_t<double> ipu_idle() { return vector_array(machine_.clocks().idle()); }
  py::array_t<double> vertex_cycles() { return vector_array(machine_.compute().vertex_cycles()); }
  py::array_t<double> group_cycles() { return vector_array(machine_.compute().group_cycles()); }
  void reset_counters() {
    enter("reset_counters", false);
    machine_.reset_counters();
  }
  int64_t arena_bytes() const { return machine_.arena_bytes(); }
  int64_t arena_stride() const { return machine_.arena_stride(); }
  int64_t local_replicas() const { return machine_.local_replicas(); }
  unsigned num_threads() const { return machine_.num_threads(); }
  // How copy table `table` runs (for tests): {"pieces": run in parallel in this many
  // pieces between host and tile memory (1: on one thread), "pieces_in_arena": the same
  // from tile memory to tile memory, "streams": with non-temporal stores, "runs": how many
  // run rows its segments became}.
  py::dict copy_plan(int64_t table) const {
    if (table < 0 || table >= static_cast<int64_t>(machine_.executable().table_overlaps.size()))
      throw py::index_error("copy table index out of range");
    py::dict d;
    d["pieces"] = machine_.copies().pieces(table, false);
    d["pieces_in_arena"] = machine_.copies().pieces(table, true);
    d["streams"] = machine_.copies().streams(table);
    d["runs"] = machine_.copies().runs(table);
    return d;
  }
  uint8_t *arena_data() { return machine_.arena(); }
  bool running() const { return running_; }
  bool timed_out() const { return timed_out_; }

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

  void check_endpoint(int64_t stream, int64_t replica) const {
    if (stream < 0 || stream >= machine_.num_streams()) throw py::index_error("stream index out of range");
    check_replica(replica, false);
  }
  void check_replica(int64_t replica, bool all_allowed) const {
    if (replica < (all_allowed ? -1 : 0) || replica >= machine_.local_replicas())
      throw py::index_error("replica index out of range");
  }
  size_t endpoint_index(int64_t stream, int64_t replica) const {
    return static_cast<size_t>(stream * machine_.local_replicas() + replica);
  }

  void check_table(int64_t table, const py::buffer_info &info, bool to_device, const char *what) const {
    const int64_t bytes = static_cast<int64_t>(info.size * info.itemsize);
    if (!machine_.host_table_fits(table, bytes, to_device))
      throw py::value_error(std::string(what) + ": copy table " + std::to_string(table) +
                            " does not exist or does not fit a host buffer of " + std::to_string(bytes) + " bytes");
  }

  void connect(int64_t stream, int64_t replica, const py::array &array, bool callback) {
    enter("connect", true);
    check_endpoint(stream, replica);
    if (!(array.flags() & py::array::c_style) || !array.writeable())
      throw py::value_error("a stream buffer must be a writable C-contiguous array");
    const int64_t transfer = machine_.transfer_bytes(stream), bytes = static_cast<int64_t>(array.nbytes());
    if (callback ? bytes < transfer : (transfer > 0 && (bytes < transfer || bytes % transfer != 0)))
      throw py::value_error("stream " + std::to_string(stream) + ": a buffer of " + std::to_string(bytes) +
                            " bytes does not hold whole transfers of " + std::to_string(transfer) + " bytes");
    uint8_t *data = static_cast<uint8_t *>(const_cast<void *>(array.data()));
    retire(stream, replica);
    if (callback) machine_.connect_callback(stream, replica, data);
    else machine_.connect_buffer(stream, replica, data, bytes);
    buffers_[endpoint_index(stream, replica)] = array;
  }

  // The staging array at `data` of a callback stream's endpoint: its own, or, when a
  // callback disconnected the stream during the transfer under way, the retired one.
  py::object staging_of(int64_t stream, int64_t replica, const uint8_t *data) const {
    const py::object &current = buffers_[endpoint_index(stream, replica)];
    if (current && py::reinterpret_borrow<py::array>(current).data() == data) return current;
    for (const py::object &old : retired_)
      if (py::reinterpret_borrow<py::array>(old).data() == data) return old;
    throw std::runtime_error("stream " + std::to_string(stream) + ": no staging buffer for replica " +
                             std::to_string(replica));
  }

  // The stream's old buffer may still be in use by the transfer under way.
  void retire(int64_t stream, int64_t replica) {
    py::object &old = buffers_[endpoint_index(stream, replica)];
    if (running_ && old) retired_.push_back(old);
    old = py::object();
  }

  static int host_call(void *ctx, int kind, int64_t id, uint8_t *data, int64_t nbytes, int64_t replica) {
    auto *self = static_cast<PyMachine *>(ctx);
    py::gil_scoped_acquire gil;
    try {
      if (kind == HOST_POLL) {
        if (PyErr_CheckSignals() != 0) throw py::error_already_set();
      } else if (kind == HOST_CALLBACK) {
        self->callbacks_.host(id, replica);
      } else if (kind == HOST_PEERS) {
        self->peers(*reinterpret_cast<const PeerCall *>(data));
      } else if (kind == HOST_VERTEX) {
        auto *call = reinterpret_cast<HostVertexCall *>(data);
        py::tuple r = self->callbacks_.vertex(id, nbytes, replica);
        call->result = r[0].cast<int32_t>();
        call->ctx.cycles = r[1].cast<uint64_t>();
      } else {
        self->callbacks_.stream(id, replica, self->staging_of(id, replica, data));
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

  // The bytes of a PeerCall, as views of the core's buffers (no copies).
  void peers(const PeerCall &call) const {
    const int64_t n = machine_.block().instances();
    auto view = [](const uint8_t *p, int64_t bytes, bool readonly) {
      return py::memoryview::from_memory(const_cast<uint8_t *>(p), static_cast<py::ssize_t>(bytes), readonly);
    };
    if (call.op == PEER_COPY) {
      callbacks_.peers(static_cast<int>(PEER_COPY), call.table, call.map, py::none(), py::none());
      return;
    }
    if (call.op == PEER_GATHER) {
      const int64_t bytes = call.send_bytes[0];
      callbacks_.peers(static_cast<int>(PEER_GATHER), view(call.send, bytes, true), py::none(),
                       view(call.recv, bytes * n, false), py::none());
      return;
    }
    py::list sends, recvs;
    int64_t total_send = 0, total_recv = 0;
    for (int64_t p = 0; p < n; ++p) {
      sends.append(call.send_bytes[p]);
      recvs.append(call.recv_bytes[p]);
      total_send += call.send_bytes[p];
      total_recv += call.recv_bytes[p];
    }
    callbacks_.peers(static_cast<int>(PEER_EXCHANGE), view(call.send, total_send, true), sends,
                     view(call.recv, total_recv, false), recvs);
  }

  struct Callbacks {
    py::object host, vertex, stream, peers;
  };

  std::vector<py::object> lent_;  // arrays whose memory the executable's tables borrow: they outlive machine_
  Machine machine_;
  std::vector<py::object> buffers_;  // per stream: the array the core reads or writes
  std::vector<py::object> retired_;  // buffers replaced during the current run
  Callbacks callbacks_;              // only during run()
  bool running_ = false;             // guarded by the GIL
  std::atomic<bool> timed_out_{false};  // the last run's watchdog stopped it
  std::thread::id runner_;
  int64_t running_program_ = -1;
  std::optional<py::error_already_set> pending_;
};

}  // namespace

void bind_machine(py::module_ &m) {
  py::class_<PyMachine>(m, "Machine")
      .def(py::init<Description &, unsigned, int64_t, int64_t, int64_t, int64_t>(), py::arg("description"),
           py::arg("num_threads"), py::arg("trace_capacity"), py::arg("streaming_bytes") = 0,
           py::arg("first_replica") = 0, py::arg("local_replicas") = -1)
      .def("load", &PyMachine::load, py::arg("table"), py::arg("image"), py::arg("vertex_table") = -1,
           py::arg("vertex_image") = py::none())
      .def_property_readonly("loaded", &PyMachine::loaded)
      .def_property_readonly("running", &PyMachine::running)
      .def_property_readonly("timed_out", &PyMachine::timed_out)
      .def("write", &PyMachine::write, py::arg("table"), py::arg("host"), py::arg("replica") = -1)
      .def("read", &PyMachine::read, py::arg("table"), py::arg("host"), py::arg("replica") = 0)
      .def("connect_buffer", &PyMachine::connect_buffer)
      .def("connect_callback", &PyMachine::connect_callback)
      .def("disconnect", &PyMachine::disconnect)
      .def("connected", &PyMachine::connected)
      .def("stream_endpoints", &PyMachine::stream_endpoints)
      .def("ipu_clocks", &PyMachine::ipu_clocks)
      .def("ipu_idle", &PyMachine::ipu_idle)
      .def_property_readonly("arena_stride", &PyMachine::arena_stride)
      .def_property_readonly("local_replicas", &PyMachine::local_replicas)
      .def("run", &PyMachine::run, py::arg("program"), py::arg("host_callback"), py::arg("vertex_callback"),
           py::arg("stream_callback"), py::arg("peer_callback") = py::none(), py::arg("timeout") = 0.0)
      .def("error", &PyMachine::error)
      .def("step_counts", &PyMachine::step_counts)
      .def("step_cycles", &PyMachine::step_cycles)
      .def("vertex_cycles", &PyMachine::vertex_cycles)
      .def("trace", &PyMachine::trace)
      .def("group_cycles", &PyMachine::group_cycles)
      .def("reset_counters", &PyMachine::reset_counters)
      .def_property_readonly("arena_bytes", &PyMachine::arena_bytes)
      .def_property_readonly("num_threads", &PyMachine::num_threads)
      .def("copy_plan", &PyMachine::copy_plan)
      // Every replica's tile memory as one writable uint8 array of shape (replicas,
      // arena_bytes), replica r's row r (for interpreted vertices). The rows are
      // arena_stride apart, with inaccessible guard regions between them.
      .def("arena", [](py::object self) {
        auto &m = self.cast<PyMachine &>();
        return py::array_t<uint8_t>({static_cast<py::ssize_t>(m.local_replicas()), static_cast<py::ssize_t>(m.arena_bytes())},
                                    {static_cast<py::ssize_t>(m.arena_stride()), py::ssize_t{1}}, m.arena_data(), self);
      });
}

}  // namespace popsim_binding
