// The machine: tile memory (per replica, one arena holding every variable and
// constant, row-major), the instruction-list VM that walks control programs, host
// stream endpoints, and the IPUs' clocks (clocks.hpp).
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "core/clocks.hpp"
#include "core/compute_set.hpp"
#include "core/copy_tables.hpp"
#include "core/executable.hpp"
#include "core/host.hpp"
#include "core/peers.hpp"
#include "core/status.hpp"
#include "core/streams.hpp"
#include "core/tile_memory.hpp"
#include "core/validate.hpp"
#include "core/vertex_guard.hpp"

namespace popsim {

class Machine {
 public:
  // Validates `exe` first (throws MalformedExecutable), then allocates tile memory for
  // the replicas [first_replica, first_replica + local_replicas) (-1: all of them; fewer
  // when replicas are spread over processes; std::invalid_argument if that is not a
  // block a process can hold, peers.hpp; std::bad_alloc) and
  // starts the thread pool (std::runtime_error). Copy tables of at least
  // `streaming_bytes` use non-temporal stores (0: from the host's cache size).
  Machine(Executable exe, unsigned num_threads, int64_t trace_capacity, int64_t streaming_bytes = 0,
          int64_t first_replica = 0, int64_t local_replicas = -1);
  ~Machine();
  Machine(const Machine &) = delete;
  Machine &operator=(const Machine &) = delete;

  // Replica indices below are into this process's block (replica first() + r of the
  // graph): replica r's tile memory is arena() + r * arena_stride(), arena_bytes() long.
  uint8_t *arena() { return arena_; }
  uint8_t *arena(int64_t replica) { return arena_ + replica * arena_stride_; }
  int64_t arena_bytes() const { return arena_bytes_; }
  int64_t arena_stride() const { return arena_stride_; }
  int64_t local_replicas() const { return block_.local(); }
  const ReplicaBlock &block() const { return block_; }
  const Executable &executable() const { return exe_; }

  // Whether copy table `table` exists and, between a host buffer of `host_bytes` and
  // tile memory, stays inside both (to_device: host -> arena).
  bool host_table_fits(int64_t table, int64_t host_bytes, bool to_device) const;
  // Zero tile memory, then copy `image` in through copy table `table` and `vertex_image`
  // through `vertex_table` (either none if -1) on every replica: the graph's initial
  // values and the vertex state values (popsim/lower/initial_image.py), then each
  // replica's index into its replication-index constants, before the vertices are
  // bound. Host buffers must pass host_table_fits first.
  void load(int64_t table, const uint8_t *image, int64_t vertex_table = -1, const uint8_t *vertex_image = nullptr);
  bool loaded() const { return loaded_; }
  // Host <-> replica `replica`'s tile memory through a copy table whose host side is a
  // contiguous buffer; write with replica -1 writes every replica.
  void write(int64_t table, const uint8_t *host, int64_t replica = -1);
  void read(int64_t table, uint8_t *host, int64_t replica = 0);

  // The host side of stream `stream` for replica `replica` (a broadcast stream has one,
  // replica 0's). `bytes` must be a positive multiple of the stream's transfer size;
  // `staging` holds one transfer. Both stay owned by the caller, who keeps them alive
  // while connected.
  void connect_buffer(int64_t stream, int64_t replica, uint8_t *data, int64_t bytes);
  void connect_callback(int64_t stream, int64_t replica, uint8_t *staging);
  int64_t transfer_bytes(int64_t stream) const { return exe_.stream_transfer_bytes[static_cast<size_t>(stream)]; }
  void disconnect(int64_t stream, int64_t replica);
  bool connected(int64_t stream, int64_t replica) const;
  // The replicas whose endpoint of `stream` a run uses: all, or just 0 for a broadcast stream.
  int64_t stream_endpoints(int64_t stream) const {
    return exe_.stream_broadcast[static_cast<size_t>(stream)] ? 1 : block_.local();
  }
  int64_t num_streams() const { return static_cast<int64_t>(exe_.stream_transfer_bytes.size()); }

  Status run(int64_t program, const HostInterface &host);
  // The run's stop flag: set from any thread (a watchdog, the SIGINT handler), it ends the
  // run within about a poll interval (Status::Stopped) or its vertex code's next poll.
  volatile int32_t *stop_flag() { return &stop_; }
  void request_stop();
  void clear_stop() { stop_ = 0; }
  const ErrorRecord &error() const { return error_; }

  const std::vector<uint64_t> &step_counts() const { return step_counts_; }
  const IpuClocks &clocks() const { return clocks_; }
  void reset_counters();
  const ComputeEngine &compute() const { return *compute_; }
  const CopyTables &copies() const { return *copies_; }
  unsigned num_threads() const { return pool_.size(); }

 private:
  void run_table(int64_t table, const uint8_t *src, uint8_t *dst) { copies_->run(table, src, dst); }
  StreamEndpoint &endpoint(int64_t stream, int64_t replica) {
    return streams_[static_cast<size_t>(stream * block_.local() + replica)];
  }
  const StreamEndpoint &endpoint(int64_t stream, int64_t replica) const {
    return streams_[static_cast<size_t>(stream * block_.local() + replica)];
  }
  // A vertex's fault: whether its address lies in a guard beside a replica's tile memory.
  void locate_fault();
  // `replica`: of the graph (not the block's index), or -1.
  Status fail(Status status, int64_t pc, int64_t id, int64_t replica = -1);
  // A control-flow decision: replica 0's, once every replica makes the same.
  template <typename T, typename Read>
  bool uniform(const Instr &in, int64_t pc, Read read, T &value, const HostInterface &host);
  // The first replica of the graph whose condition at (offset, type) holds, or -1.
  bool first_aborting(const Instr &in, const HostInterface &host, int64_t &replica);
  bool begin_transfer(int64_t stream, int64_t pc);
  StreamEndpoint &transfer_endpoint(int64_t stream, int64_t replica);
  Status stream_to_device(const Instr &in, int64_t pc, const HostInterface &host);
  Status stream_from_device(const Instr &in, int64_t pc, const HostInterface &host);
  bool cross_replica_copy(int64_t table, int64_t map, const HostInterface &host);
  bool cross_process_copy(int64_t table, int64_t map, const HostInterface &host);

  Executable exe_;
  ReplicaBlock block_;
  TableExtents extents_;
  std::unique_ptr<TileMemory> memory_;  // arena_ and arena_stride_ are its base and stride
  uint8_t *arena_ = nullptr;
  int64_t arena_bytes_ = 0;
  int64_t arena_stride_ = 0;
  bool loaded_ = false;
  bool fresh_ = true;  // the arena is still all zeros from the OS
  volatile int32_t stop_ = 0;
  std::vector<StreamEndpoint> streams_;  // num_streams x num_replicas
  std::vector<StreamEndpoint> started_;  // the endpoints of the stream transfer under way
  std::vector<int64_t> loop_counters_;
  std::vector<int64_t> call_stack_;
  std::vector<uint64_t> step_counts_;
  IpuClocks clocks_;
  std::vector<double> superstep_;      // one Execute's cost vectors, num_ipus x categories
  std::vector<uint8_t> replica_scratch_;  // overlapping cross-replica copies: every source first
  std::vector<uint8_t> peer_send_, peer_recv_;  // cross-replica copy fragments to and from other processes
  std::vector<int64_t> peer_votes_;             // a gather's answers
  ThreadPool pool_;  // shared by compute sets and big copies (never both at once)
  std::unique_ptr<CopyTables> copies_;
  std::unique_ptr<ComputeEngine> compute_;
  ErrorRecord error_;
};

}  // namespace popsim
