// Time on the modelled machine, kept in one place: each IPU of a replica has its own
// cycle clock (docs/multi_ipu.md). A step charges only the IPUs it involves, so work on
// one IPU overlaps work on another; a step that crosses IPUs (an inter-IPU copy, a
// cross-replica copy, an external sync) joins the clocks of the IPUs it names: they meet
// at the latest (at the step's start, or, for a copy, once each has done its own local
// phases), and that wait counts as the step's sync on each of them. Replicas run in
// lockstep, so one replica's clocks stand for all.
//
// Per step and IPU, the cost categories are summed over the step's runs; the trace
// keeps the first steps run, one entry per IPU they charge.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/executable.hpp"

namespace popsim {

// acc += c over a cost vector, two categories per vector add (the compiler will not
// vectorize the plain loop: it cannot rule out that the two overlap). Every step a
// program runs goes through here.
inline void add_costs(double *acc, const double *c) {
  typedef double Pair __attribute__((vector_size(16)));
  static_assert(NUM_COST_CATEGORIES % 2 == 0, "cost vectors add two categories at a time");
  for (int64_t k = 0; k < NUM_COST_CATEGORIES; k += 2) {
    Pair a, b;
    std::memcpy(&a, acc + k, sizeof a);
    std::memcpy(&b, c + k, sizeof b);
    a += b;
    std::memcpy(acc + k, &a, sizeof a);
  }
}

class IpuClocks {
 public:
  struct TraceEntry {
    double step, ipu, start, cycles;
  };

  IpuClocks(int64_t num_steps, int64_t num_ipus, int64_t trace_capacity)
      : num_steps_(num_steps), num_ipus_(num_ipus),
        trace_capacity_(static_cast<size_t>(std::max<int64_t>(trace_capacity, 0))) {
    reset();
  }

  void reset() {
    clocks_.assign(static_cast<size_t>(num_ipus_), 0.0);
    idle_.assign(static_cast<size_t>(num_ipus_), 0.0);
    step_cycles_.assign(static_cast<size_t>(num_steps_ * num_ipus_ * NUM_COST_CATEGORIES), 0.0);
    trace_.clear();
    trace_.reserve(std::min<size_t>(trace_capacity_, 4096));
    trace_truncated_ = false;
  }

  // One run of `step`: `cost` holds num_ipus cost vectors (NUM_COST_CATEGORIES each),
  // read for the IPUs in `involved`. The IPUs in `join` meet before the last `tail`
  // cycles of their durations (tail < 0: before the step): each reaches the meeting
  // after its own first part, and waits there for the latest.
  void charge(int64_t step, const double *cost, uint64_t involved, uint64_t join, double tail = -1) {
    double *acc = step_cycles_.data() + step * num_ipus_ * NUM_COST_CATEGORIES;
    if (join & (join - 1)) {  // two IPUs or more
      auto arrival = [&](int64_t i) {
        const double before = tail < 0 ? 0.0 : cost[i * NUM_COST_CATEGORIES + CAT_CYCLES] - tail;
        return clocks_[static_cast<size_t>(i)] + before;
      };
      double latest = 0;
      for (int64_t i = 0; i < num_ipus_; ++i)
        if (join >> i & 1) latest = std::max(latest, arrival(i));
      for (int64_t i = 0; i < num_ipus_; ++i) {
        if (!(join >> i & 1)) continue;
        const double wait = latest - arrival(i);
        acc[i * NUM_COST_CATEGORIES + CAT_CYCLES] += wait;
        acc[i * NUM_COST_CATEGORIES + CAT_SYNC] += wait;
        clocks_[static_cast<size_t>(i)] += wait;  // waits at the meeting, then runs its whole duration
      }
    }
    for (int64_t i = 0; i < num_ipus_; ++i) {
      if (!(involved >> i & 1)) continue;
      const double *c = cost + i * NUM_COST_CATEGORIES;
      double *a = acc + i * NUM_COST_CATEGORIES;
      add_costs(a, c);
      double &clock = clocks_[static_cast<size_t>(i)];
      if (trace_.size() < trace_capacity_)
        trace_.push_back(TraceEntry{static_cast<double>(step), static_cast<double>(i), clock, c[CAT_CYCLES]});
      else
        trace_truncated_ = true;
      clock += c[CAT_CYCLES];
    }
  }

  // The end of a run: the program is over when its last IPU is; the others wait.
  void finish_run() {
    const double latest = *std::max_element(clocks_.begin(), clocks_.end());
    for (size_t i = 0; i < clocks_.size(); ++i) {
      idle_[i] += latest - clocks_[i];
      clocks_[i] = latest;
    }
  }

  int64_t num_ipus() const { return num_ipus_; }
  const std::vector<double> &clocks() const { return clocks_; }
  const std::vector<double> &idle() const { return idle_; }  // per IPU: waiting at the end of runs
  const std::vector<double> &step_cycles() const { return step_cycles_; }
  const std::vector<TraceEntry> &trace() const { return trace_; }
  bool trace_truncated() const { return trace_truncated_; }

 private:
  int64_t num_steps_, num_ipus_;
  size_t trace_capacity_;
  std::vector<double> clocks_, idle_, step_cycles_;
  std::vector<TraceEntry> trace_;
  bool trace_truncated_ = false;
};

}  // namespace popsim
