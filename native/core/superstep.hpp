// The cost of one BSP superstep (an Execute step), composed in this one place
// (docs/cost_model.md): the exchange-in phase, the compute phase, the sync that ends
// it, and the exchange-out phase. The lowering costs the two exchange phases (they
// depend only on the graph); the compute phase is measured as the vertices run
// (estimates can depend on data), so the sum is made here, each time the step runs.
#pragma once
#include <cstdint>

#include "core/compute_set.hpp"
#include "core/executable.hpp"

namespace popsim {

// Adds one run of a superstep to `acc` (a step's NUM_COST_CATEGORIES totals) and
// returns its duration in cycles. `exchange` holds the exchange-in then exchange-out
// phase's cost vectors. A tile that finishes computing early waits at the sync: that
// wait counts as sync, so the categories add up to the duration.
inline double account_superstep(const double *exchange, double sync_cycles, const ComputeSetCycles &compute,
                                 double *acc) {
  const double *in = exchange, *out = exchange + NUM_COST_CATEGORIES;
  for (int64_t k = 0; k < NUM_COST_CATEGORIES; ++k)
    acc[k] += in[k] + out[k] + (k == CAT_CYCLES || k == CAT_SYNC ? sync_cycles : 0.0);
  acc[CAT_CYCLES] += compute.compute_phase;
  acc[CAT_COMPUTE_INCL] += compute.avg_including_idle;
  acc[CAT_COMPUTE_EXCL] += compute.avg_excluding_idle;
  acc[CAT_SYNC] += compute.compute_phase - compute.avg_including_idle;
  return in[CAT_CYCLES] + out[CAT_CYCLES] + sync_cycles + compute.compute_phase;
}

}  // namespace popsim
