// Running copy tables (Copy programs, exchanges, host reads and writes, stream
// transfers): byte segments from a source to a destination.
//
// A table whose source and destination overlap is read whole before anything is
// written (through a scratch buffer), as the hardware's exchange does. Big tables
// (CopyTables::kParallelCost) are split into pieces of about equal work run on the
// thread pool, when their destination segments are disjoint (and, for a table that is
// not marked overlapping, do not meet its source): the bytes each piece writes then do
// not depend on the order the pieces run in, so the result is the same for any thread
// count. Tables bigger than the last-level cache (counting every replica's run of them)
// are written with non-temporal stores (the destination would not stay in the cache
// anyway, and they save reading each destination line before overwriting it).
//
// A table runs from runs, not segments: consecutive segments of one length whose sources
// and destinations each step by a constant stride (a transpose or a strided view moves
// one 4-byte element per segment) become one run row, copied by a tight loop. The runs
// keep the segments' order, so every table copies exactly what its segments say, in the
// same order. Consecutive runs that repeat one run at constant offsets become one
// two-dimensional run; a transpose of 4-byte elements (NCHW to NHWC) then moves 4 x 4
// blocks through registers, where the result cannot depend on the order.
#pragma once
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/executable.hpp"
#include "core/thread_pool.hpp"

namespace popsim {

// memcpy with fast paths for the element-sized moves of scattered views.
inline void copy_bytes(uint8_t *dst, const uint8_t *src, int64_t len) {
  switch (len) {
    case 1: *dst = *src; return;
    case 2: std::memcpy(dst, src, 2); return;
    case 4: std::memcpy(dst, src, 4); return;
    case 8: std::memcpy(dst, src, 8); return;
    default: std::memcpy(dst, src, static_cast<size_t>(len));
  }
}

// `outer` rows of `count` elements of `len` bytes: element i of row o from
// src + o * outer_src + i * src_stride to dst + o * outer_dst + i * dst_stride (one
// segment: outer and count 1, strides 0). Rows run in order, each row's elements in order:
// the segments' order. `blocked`: 4-byte elements whose rows or columns are contiguous on
// one side (a transpose), every destination written once and no source byte among the
// destination's (offsets apart): copy_run may move them 4 x 4 at a time.
struct CopyRun {
  int64_t src, dst;
  int32_t len, count, src_stride, dst_stride;
  int32_t outer, outer_src, outer_dst, blocked;
};

// Copies a row of a run's elements in order.
inline void copy_row(const CopyRun &r, const uint8_t *s, uint8_t *d) {
  if (r.count == 1) return copy_bytes(d, s, r.len);
  const int64_t ss = r.src_stride, ds = r.dst_stride;
  switch (r.len) {
    case 4:
      for (int32_t i = 0; i < r.count; ++i, s += ss, d += ds) std::memcpy(d, s, 4);
      return;
    case 8:
      for (int32_t i = 0; i < r.count; ++i, s += ss, d += ds) std::memcpy(d, s, 8);
      return;
    case 2:
      for (int32_t i = 0; i < r.count; ++i, s += ss, d += ds) std::memcpy(d, s, 2);
      return;
    case 1:
      for (int32_t i = 0; i < r.count; ++i, s += ss, d += ds) *d = *s;
      return;
    default:
      for (int32_t i = 0; i < r.count; ++i, s += ss, d += ds) std::memcpy(d, s, static_cast<size_t>(r.len));
  }
}

// A blocked run's elements, 4 x 4 at a time through a register transpose (copy_tables.cpp);
// `streaming`: with non-temporal stores where they are aligned (the caller then fences).
void copy_blocked(const CopyRun &r, const uint8_t *src, uint8_t *dst, bool streaming = false);

// Copies a run's elements (the same bytes as in the segments' order).
inline void copy_run(const CopyRun &r, const uint8_t *src, uint8_t *dst) {
  if (r.outer == 1) return copy_row(r, src + r.src, dst + r.dst);
  if (r.blocked) return copy_blocked(r, src, dst);
  const uint8_t *s = src + r.src;
  uint8_t *d = dst + r.dst;
  for (int32_t o = 0; o < r.outer; ++o, s += r.outer_src, d += r.outer_dst) copy_row(r, s, d);
}

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

  // Copies table `table` from `src` to `dst` (which may be the same memory). Small
  // tables (most control-flow steps copy a few bytes) run here, inline.
  void run(int64_t table, const uint8_t *src, uint8_t *dst) {
    const Table &t = tables_[static_cast<size_t>(table)];
    if (!t.plain) return run_planned(table, src, dst);
    for (const CopyRun *r = t.first, *end = t.end; r != end; ++r) copy_run(*r, src, dst);
  }

  // For tests: how many run rows table `table` has (the segments it merges into runs).
  int64_t runs(int64_t table) const;

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
  // A piece of a table: runs [first, last) of runs_, its bytes from `scratch` on in the
  // scratch buffer of an overlapping table.
  struct Piece {
    int64_t first, last, scratch;
  };
  struct Plan {
    std::vector<Cut> cuts;  // pieces + 1 positions, from the table's start to its end
    std::vector<Piece> pieces;  // one per piece (one for a table run whole)
    Piece whole{0, 0, 0};       // the table's runs in one piece, for running it on one thread
    bool streaming = false;
    bool disjoint_from_source = false;  // no destination byte is a source byte (arena -> arena)
  };
  // Where a table's runs are, and whether it is plain: not overlapping, on one thread,
  // without non-temporal stores.
  struct Table {
    const CopyRun *first, *end;
    bool plain;
  };
  void run_planned(int64_t table, const uint8_t *src, uint8_t *dst);
  void copy_range(const Piece &piece, const uint8_t *src, uint8_t *dst, bool streaming) const;
  void gather_range(const Piece &piece, const uint8_t *src, uint8_t *tmp) const;
  void scatter_range(const Piece &piece, const uint8_t *tmp, uint8_t *dst, bool streaming) const;
  Plan plan(int64_t table, int64_t streaming_bytes) const;
  // Appends the runs of the segment parts between two cuts to runs_.
  void add_runs(const Cut &from, const Cut &to);
  // Joins runs_[start:] that repeat one run at constant offsets into two-dimensional runs.
  void join_rows(size_t start);

  const Executable &exe_;
  ThreadPool &pool_;
  std::vector<CopyRun> runs_;     // every table's, piece by piece
  std::vector<Table> tables_;
  std::vector<Plan> plans_;       // per table; empty cuts: run whole, on the calling thread
  std::vector<uint8_t> scratch_;  // for tables whose source and destination overlap
};

// Bytes of the host's last-level data cache (a default when the host does not say).
int64_t last_level_cache_bytes();

}  // namespace popsim
