// The machine: tile memory (one arena holding every variable and constant,
// row-major), the instruction-list VM that walks control programs, host stream
// endpoints, and per-step cycle counters.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "core/compute_set.hpp"
#include "core/copy_tables.hpp"
#include "core/executable.hpp"
#include "core/host.hpp"
#include "core/status.hpp"
#include "core/streams.hpp"
#include "core/validate.hpp"

namespace popsim {

class Machine {
 public:
  // Validates `exe` first (throws MalformedExecutable), then allocates tile memory
  // (std::bad_alloc) and starts the thread pool (std::runtime_error). Copy tables of at
  // least `streaming_bytes` use non-temporal stores (0: from the host's cache size).
  Machine(Executable exe, unsigned num_threads, int64_t trace_capacity, int64_t streaming_bytes = 0);
  ~Machine();
  Machine(const Machine &) = delete;
  Machine &operator=(const Machine &) = delete;

  uint8_t *arena() { return arena_; }
  int64_t arena_bytes() const { return arena_bytes_; }
  const Executable &executable() const { return exe_; }

  // Whether copy table `table` exists and, between a host buffer of `host_bytes` and
  // tile memory, stays inside both (to_device: host -> arena).
  bool host_table_fits(int64_t table, int64_t host_bytes, bool to_device) const;
  // Zero the arena, then copy `image` in through copy table `table` and `vertex_image`
  // through `vertex_table` (either none if -1): the graph's initial values and the
  // vertex state values (popsim/lower/initial_image.py), before the vertices are bound.
  // Host buffers must pass host_table_fits first.
  void load(int64_t table, const uint8_t *image, int64_t vertex_table = -1, const uint8_t *vertex_image = nullptr);
  bool loaded() const { return loaded_; }
  // Host <-> arena through a copy table whose host side is a contiguous buffer.
  void write(int64_t table, const uint8_t *host);
  void read(int64_t table, uint8_t *host);

  // `bytes` must be a positive multiple of the stream's transfer size; `staging` holds
  // one transfer. Both stay owned by the caller, who keeps them alive while connected.
  void connect_buffer(int64_t stream, uint8_t *data, int64_t bytes);
  void connect_callback(int64_t stream, uint8_t *staging);
  int64_t transfer_bytes(int64_t stream) const { return streams_[static_cast<size_t>(stream)].transfer_bytes; }
  void disconnect(int64_t stream);
  bool connected(int64_t stream) const;
  int64_t num_streams() const { return static_cast<int64_t>(streams_.size()); }

  Status run(int64_t program, const HostInterface &host);
  const ErrorRecord &error() const { return error_; }

  const std::vector<uint64_t> &step_counts() const { return step_counts_; }
  const std::vector<double> &step_cycles() const { return step_cycles_; }
  // The first steps run since the counters were reset: (step, start cycle, cycles).
  struct TraceEntry {
    double step, start, cycles;
  };
  const std::vector<TraceEntry> &trace() const { return trace_; }
  bool trace_truncated() const { return trace_truncated_; }
  void reset_counters();
  const ComputeEngine &compute() const { return *compute_; }
  const CopyTables &copies() const { return *copies_; }
  unsigned num_threads() const { return pool_.size(); }

 private:
  void run_table(int64_t table, const uint8_t *src, uint8_t *dst) { copies_->run(table, src, dst); }
  Status fail(Status status, int64_t pc, int64_t id);

  Executable exe_;
  TableExtents extents_;
  uint8_t *arena_ = nullptr;
  int64_t arena_bytes_ = 0;
  bool loaded_ = false;
  bool fresh_ = true;  // the arena is still all zeros from calloc
  std::vector<StreamEndpoint> streams_;
  std::vector<int64_t> loop_counters_;
  std::vector<int64_t> call_stack_;
  std::vector<uint64_t> step_counts_;
  std::vector<double> step_cycles_;
  std::vector<TraceEntry> trace_;
  size_t trace_capacity_ = 0;
  bool trace_truncated_ = false;
  double clock_ = 0;  // cycles since the counters were reset
  ThreadPool pool_;  // shared by compute sets and big copies (never both at once)
  std::unique_ptr<CopyTables> copies_;
  std::unique_ptr<ComputeEngine> compute_;
  ErrorRecord error_;
};

}  // namespace popsim
