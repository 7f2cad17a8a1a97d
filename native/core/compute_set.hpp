// Running compute sets: every vertex of the set once, tiles in parallel on the thread
// pool, each tile's vertices in order on one thread (so results never depend on the
// thread count). Vertices are dealt to workers; a tile's compute time is
// num_workers x its busiest worker.
//
// The per-vertex loop is memory-bound for small vertices, so it reads a compact run
// row per vertex (16 bytes, made once from the VertexRow) and does not touch a
// per-vertex counter for vertices with a fixed estimate: their cycles are counted by
// the runs of their compute set, and summed per vertex only when asked for.
#pragma once
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "core/codelets.hpp"
#include "core/executable.hpp"
#include "core/host.hpp"
#include "core/peers.hpp"
#include "core/status.hpp"
#include "core/thread_pool.hpp"

namespace popsim {

// Per IPU of a replica; replicas run in lockstep, so each figure is the slowest
// replica's (phase) or the mean over replicas (averages).
struct ComputeSetCycles {
  double compute_phase[MAX_IPUS_PER_REPLICA] = {};  // the slowest tile, including idle worker slots
  double avg_including_idle[MAX_IPUS_PER_REPLICA] = {};
  double avg_excluding_idle[MAX_IPUS_PER_REPLICA] = {};
};

class ComputeEngine {
 public:
  // `tables` must have been validated (validate.hpp); it and `pool` must outlive this.
  // Every vertex runs once per replica of `block` (this process's), on that replica's
  // tile memory and state.
  // `stop`: the flag vertex code polls (popsim_exec::interrupt), set to stop the run.
  ComputeEngine(const VertexTables &tables, ThreadPool &pool, const ReplicaBlock &block,
                const volatile int32_t *stop);

  // Construct every replica's vertex state objects and bind their fields to that
  // replica's tile memory (the block's replica r's at arena + r * arena_stride).
  void bind_all(uint8_t *arena, int64_t arena_stride);
  // `gathers`: the compute set's exchange_in rows, when each group copies its share
  // (GroupRow::first_gather to end_gather) just before its vertices; else null.
  Status run(int64_t compute_set, const HostInterface &host, ComputeSetCycles &cycles, ErrorRecord &error,
             const CopyRun *gathers = nullptr);

  // Accumulated over runs: cycles per vertex (all its workers; replica 0's) and per
  // tile group (the slowest replica's), whichever process holds them.
  std::vector<double> vertex_cycles() const;
  const std::vector<double> &group_cycles() const { return group_cycles_; }
  void reset_counters();

  // For the fatal-signal report (run_signals.cpp): plain reads, no allocation.
  const char *vertex_type_name(int64_t vertex) const;
  int64_t vertex_tile(int64_t vertex) const;
  const char *compute_set_name(int64_t compute_set) const;

 private:
  struct GroupResult {
    double including_idle = 0, excluding_idle = 0;
    int64_t failed_vertex = -1;
    int32_t result = 1;
    popsim_exec ctx{};
  };
  uint8_t *replica_state(int64_t replica) const { return state_.get() + replica * state_stride_; }
  // Copies group `group`'s share of `gathers` (if any) in replica `replica`'s memory.
  void gather(const CopyRun *gathers, int64_t group, int64_t replica) const;
  // What the loop over a group's vertices reads of each vertex.
  struct RunRow {
    double estimate;      // worker cycles per run, or -1: the codelet counts its own
    uint32_t state_slot;  // state object at state_slot * STATE_ALIGNMENT
    uint32_t code;        // codelet << 7 | multi << 6 | worker
  };
  static constexpr uint32_t kMulti = 1u << 6;
  static constexpr uint32_t kCodeletShift = 7;

  // Runs a group's vertices from a recovery point (vertex_guard.hpp): a fault in their
  // code, or a stop while it runs, fails the group at that vertex.
  template <bool kHost, bool kCounts>
  void run_guarded(int64_t compute_set, int64_t group, int64_t replica, const HostInterface *host, GroupResult &out);
  // Not inlined into run_guarded: a function that calls sigsetjmp keeps its variables in
  // memory, and this loop is the hot one.
  template <bool kHost, bool kCounts>
  __attribute__((noinline)) void run_group(int64_t compute_set, int64_t group, int64_t replica,
                                           const HostInterface *host, GroupResult &out);
  // Throws MalformedExecutable unless every vertex's state object (of its codelet's
  // size) is aligned, inside the state memory and overlaps no other.
  void check_state_objects(const std::vector<uint64_t> &sizes) const;
  std::vector<std::pair<int64_t, int64_t>> objects_in_order(const std::vector<uint64_t> &sizes) const;
  double fixed_cycles(const RunRow &row) const;  // per run, all its workers; 0 if counted
  // Across processes: each group's slowest replica and sums over replicas, and the
  // cycles replica 0's counting vertices counted (peers.hpp). False if the host failed.
  bool combine_with_peers(const ComputeSetRow &cs, const HostInterface &host, std::vector<int64_t> &groups);

  const VertexTables &t_;
  ReplicaBlock block_;
  int64_t num_replicas_;  // this process's
  int64_t state_stride_;  // bytes of one replica's vertex state (a multiple of 64)
  CodeletLibraries libraries_;
  std::vector<Codelet> codelets_;
  std::vector<uint8_t> has_host_;      // per compute set
  std::vector<uint8_t> group_counts_;  // per group: has a vertex that counts its own cycles
  std::unique_ptr<uint8_t, void (*)(void *)> state_;
  std::vector<popsim_span> spans_;  // num_replicas x spans
  uint8_t *arena_ = nullptr;        // replica 0's tile memory (bind_all)
  int64_t arena_stride_ = 0;
  std::vector<RunRow> runs_;          // per vertex
  std::vector<double> counted_cycles_;  // per vertex: what was not counted by compute set runs
  std::vector<double> counted_now_;     // per vertex, across processes: this run's, until combined
  std::vector<uint8_t> cs_counts_;      // per compute set: a group counts its own cycles
  // combine_with_peers: this process's figures, every process's, and the combination
  // (per group: slowest replica, sums including and excluding idle).
  std::vector<int64_t> peer_mine_, peer_all_, combined_;
  std::vector<uint64_t> cs_runs_;       // per compute set: runs completed without a failure
  std::vector<double> group_cycles_;
  std::vector<GroupResult> results_;  // num_replicas x groups
  const volatile int32_t *interrupt_;  // the machine's stop flag: Ctrl-C, the run-time limit
  ThreadPool &pool_;
};

}  // namespace popsim
