// Running copy tables (Copy programs, exchanges, host reads and writes, stream
// transfers): byte segments from a source to a destination.
//
// A table whose source and destination overlap is read whole before anything is
// written (through a scratch buffer), as the hardware's exchange does. Big tables
// (CopyTables::kParallelCost) are split into pieces of about equal work run on the
// thread pool, when their destination segments are disjoint (and, for a table that is
// not marked overlapping, do not meet its source): the bytes each piece writes then do
// not depend on the order the pieces run in, so the result is the same for any thread
// count. Tables bigger than the last-level cache are written with non-temporal stores
// (the destination would not stay in the cache anyway, and they save reading each
// destination line before overwriting it).
#pragma once
#include <cstdint>
#include <vector>

#include "core/executable.hpp"
#include "core/thread_pool.hpp"

namespace popsim {

class CopyTables {
 public:
  // Work of a segment: its bytes plus this much for its own overhead.
  static constexpr int64_t kSegmentCost = 32;
  // Tables of at least this much work run in parallel pieces of at least kPieceCost.
  static constexpr int64_t kParallelCost = int64_t{1} << 20;
  static constexpr int64_t kPieceCost = int64_t{256} << 10;
  static constexpr int64_t kMaxPieces = 64;

  // `exe` must have been validated (segments inside their tables' memory); it must
  // outlive this object. `streaming_bytes`: tables of at least this many bytes use
  // non-temporal stores (0: the host's last-level cache size).
  CopyTables(const Executable &exe, ThreadPool &pool, int64_t streaming_bytes = 0);

  // Copies table `table` from `src` to `dst` (which may be the same memory).
  void run(int64_t table, const uint8_t *src, uint8_t *dst);

  // For tests: how table `table` runs: in how many pieces (1: on the calling thread)
  // between two memories and within one (source and destination in the arena), and
  // whether it uses non-temporal stores.
  int64_t pieces(int64_t table, bool within_one_memory) const;
  bool streams(int64_t table) const;

 private:
  // A position in a table: segment `seg` (absolute index), `offset` bytes into it;
  // `scratch`: where that byte lies in the scratch buffer of an overlapping table.
  struct Cut {
    int64_t seg, offset, scratch;
  };
  struct Plan {
    std::vector<Cut> cuts;  // pieces + 1 positions, from the table's start to its end
    bool streaming = false;
    bool disjoint_from_source = false;  // no destination byte is a source byte (arena -> arena)
  };
  void copy_range(const Cut &from, const Cut &to, const uint8_t *src, uint8_t *dst, bool streaming) const;
  void gather_range(const Cut &from, const Cut &to, const uint8_t *src, uint8_t *tmp) const;
  void scatter_range(const Cut &from, const Cut &to, const uint8_t *tmp, uint8_t *dst, bool streaming) const;
  Plan plan(int64_t table, int64_t streaming_bytes) const;

  const Executable &exe_;
  ThreadPool &pool_;
  std::vector<Plan> plans_;       // per table; empty cuts: run whole, on the calling thread
  std::vector<uint8_t> scratch_;  // for tables whose source and destination overlap
};

// Bytes of the host's last-level data cache (a default when the host does not say).
int64_t last_level_cache_bytes();

}  // namespace popsim
