// The cost of one BSP superstep (an Execute step) on each IPU, composed in this one place
// (docs/cost_model.md): the exchange-in phase, the compute phase, the sync that ends
// it, and the exchange-out phase. The lowering costs the two exchange phases (they
// depend only on the graph); the compute phase is measured as the vertices run
// (estimates can depend on data), so the sum is made here, each time the step runs.
#pragma once
#include <algorithm>
#include <cstdint>

#include "core/compute_set.hpp"
#include "core/executable.hpp"

namespace popsim {

// Writes one run of a superstep's cost vector for each IPU in `involved` into `out`
// (num_ipus x NUM_COST_CATEGORIES). `exchange` holds the exchange-in phase's cost
// vectors (one per IPU), then the exchange-out phase's. A tile that finishes computing
// early waits at the sync: that wait counts as sync, so the categories add up to the
// duration. The IPUs in `join` exchange across IPU-Links in this superstep (their
// clocks met before it): the outputs one sends back are ready only when it has
// computed them, so they all end with the slowest of them, the others waiting (sync).
inline void compose_superstep(const double *exchange, int64_t num_ipus, uint64_t involved, uint64_t join,
                              double sync_cycles, const ComputeSetCycles &compute, double *out) {
  const double *in_all = exchange, *out_all = exchange + num_ipus * NUM_COST_CATEGORIES;
  for (int64_t i = 0; i < num_ipus; ++i) {
    if (!(involved >> i & 1)) continue;
    const double *in = in_all + i * NUM_COST_CATEGORIES, *xo = out_all + i * NUM_COST_CATEGORIES;
    double *acc = out + i * NUM_COST_CATEGORIES;
    for (int64_t k = 0; k < NUM_COST_CATEGORIES; ++k)
      acc[k] = in[k] + xo[k] + (k == CAT_CYCLES || k == CAT_SYNC ? sync_cycles : 0.0);
    acc[CAT_CYCLES] += compute.compute_phase[i];
    acc[CAT_COMPUTE_INCL] += compute.avg_including_idle[i];
    acc[CAT_COMPUTE_EXCL] += compute.avg_excluding_idle[i];
    acc[CAT_SYNC] += compute.compute_phase[i] - compute.avg_including_idle[i];
  }
  if (!(join & (join - 1))) return;
  double slowest = 0;
  for (int64_t i = 0; i < num_ipus; ++i)
    if (join >> i & 1) slowest = std::max(slowest, out[i * NUM_COST_CATEGORIES + CAT_CYCLES]);
  for (int64_t i = 0; i < num_ipus; ++i) {
    if (!(join >> i & 1)) continue;
    double *acc = out + i * NUM_COST_CATEGORIES;
    acc[CAT_SYNC] += slowest - acc[CAT_CYCLES];
    acc[CAT_CYCLES] = slowest;
  }
}

}  // namespace popsim
