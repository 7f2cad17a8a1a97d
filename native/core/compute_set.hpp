// Running compute sets: every vertex of the set once, tiles in parallel on the thread
// pool, each tile's vertices in order on one thread (so results never depend on the
// thread count). Vertices are dealt to workers; a tile's compute time is
// num_workers x its busiest worker.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "core/codelets.hpp"
#include "core/executable.hpp"
#include "core/host.hpp"
#include "core/status.hpp"
#include "core/thread_pool.hpp"

namespace popsim {

struct ComputeSetCycles {
  double compute_phase = 0;  // the slowest tile, including idle worker slots
  double avg_including_idle = 0;
  double avg_excluding_idle = 0;
};

class ComputeEngine {
 public:
  ComputeEngine(const VertexTables &tables, unsigned num_threads);

  // Construct every vertex's state object and bind its fields to tile memory.
  void bind_all(uint8_t *arena);
  Status run(int64_t compute_set, const HostInterface &host, ComputeSetCycles &cycles, ErrorRecord &error);

  // Accumulated over runs: cycles per vertex (all its workers) and per tile group.
  const std::vector<double> &vertex_cycles() const { return vertex_cycles_; }
  const std::vector<double> &group_cycles() const { return group_cycles_; }
  void reset_counters();
  unsigned num_threads() const { return pool_.size(); }

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
  void run_group(int64_t compute_set, int64_t group, const HostInterface *host, GroupResult &out);

  const VertexTables &t_;
  CodeletLibraries libraries_;
  std::vector<Codelet> codelets_;
  std::vector<uint8_t> has_host_;  // per compute set
  std::unique_ptr<uint8_t, void (*)(void *)> state_;
  std::vector<popsim_span> spans_;
  std::vector<double> vertex_cycles_, group_cycles_;
  std::vector<GroupResult> results_;
  const volatile int32_t *interrupt_;  // run_signals.hpp: set by Ctrl-C during a run
  ThreadPool pool_;
};

}  // namespace popsim
