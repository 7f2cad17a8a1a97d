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
// A table is a list of runs (CopyRun, executable.hpp): consecutive segments of one length
// whose sources and destinations each step by a constant stride, and runs repeating one run
// at constant offsets, made by the lowering (src/popsim/lower/copy_runs.py). The core runs
// the executable's rows in place, in order: every table copies exactly what its segments
// say, in the same order. A parallel piece is a stretch of whole rows plus, where a cut
// falls inside a row, a few sub-runs of it held by the piece. A transpose of 4-byte
// elements (NCHW to NHWC) moves 4 x 4 blocks through registers, where the result cannot
// depend on the order (blocked_direction).
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/executable.hpp"
#include "core/thread_pool.hpp"

namespace popsim {

// `n` elements of N bytes, `ss` and `ds` bytes apart: a copy of a size known here, which
// the compiler makes a few moves, not a call.
template <size_t N>
inline void copy_strided(uint8_t *d, const uint8_t *s, int64_t n, int64_t ds, int64_t ss) {
  for (int64_t i = 0; i < n; ++i, s += ss, d += ds) std::memcpy(d, s, N);
}

// `n` elements of `len` bytes, with fast paths for the element sizes of scattered views
// and of convolutions' channel groups (8 and 16 floats: what they gather most).
inline void copy_elements(uint8_t *d, const uint8_t *s, int64_t len, int64_t n, int64_t ds, int64_t ss) {
  switch (len) {
    case 1: return copy_strided<1>(d, s, n, ds, ss);
    case 2: return copy_strided<2>(d, s, n, ds, ss);
    case 4: return copy_strided<4>(d, s, n, ds, ss);
    case 8: return copy_strided<8>(d, s, n, ds, ss);
    case 16: return copy_strided<16>(d, s, n, ds, ss);
    case 32: return copy_strided<32>(d, s, n, ds, ss);
    case 64: return copy_strided<64>(d, s, n, ds, ss);
    default:
      for (int64_t i = 0; i < n; ++i, s += ss, d += ds) std::memcpy(d, s, static_cast<size_t>(len));
  }
}

// memcpy of one element.
inline void copy_bytes(uint8_t *dst, const uint8_t *src, int64_t len) { copy_elements(dst, src, len, 1, 0, 0); }

// Whether run `r` may move its elements 4 x 4 at a time, and how: 0 no; 1 rows in (its
// sources' rows, outer_src 4, are read 4 elements at a time and stored as columns of
// destination rows, dst_stride 4); 2 rows out (the mirror image). Only 4-byte elements, at
// least 4 x 4, every destination element apart from the others and no source byte among
// the destination's (offsets apart): then no element's value depends on the copying order.
// Decided here, from the run's numbers alone, so no flag in the executable can claim it.
inline int blocked_direction(const CopyRun &r) {
  if (r.len != 4 || r.outer < 4 || r.count < 4) return 0;
  const bool rows_in = r.outer_src == 4 && r.dst_stride == 4 && r.outer_dst >= 4 * r.count;
  const bool rows_out = r.src_stride == 4 && r.outer_dst == 4 && r.dst_stride >= 4 * r.outer;
  if (!rows_in && !rows_out) return 0;
  auto low = [&](int64_t base, int64_t outer_stride, int64_t stride) {
    return base + std::min<int64_t>((r.outer - 1) * outer_stride, 0) + std::min<int64_t>((r.count - 1) * stride, 0);
  };
  auto high = [&](int64_t base, int64_t outer_stride, int64_t stride) {
    return base + std::max<int64_t>((r.outer - 1) * outer_stride, 0) + std::max<int64_t>((r.count - 1) * stride, 0) + 4;
  };
  const bool apart = high(r.src, r.outer_src, r.src_stride) <= low(r.dst, r.outer_dst, r.dst_stride) ||
                     high(r.dst, r.outer_dst, r.dst_stride) <= low(r.src, r.outer_src, r.src_stride);
  return apart ? (rows_in ? 1 : 2) : 0;
}

// Copies a row of a run's elements in order.
inline void copy_row(const CopyRun &r, const uint8_t *s, uint8_t *d) {
  copy_elements(d, s, r.len, r.count, r.dst_stride, r.src_stride);
}

// A blocked run's elements (blocked_direction(r) = `direction`, not 0), 4 x 4 at a time
// through a register transpose (copy_tables.cpp); `streaming`: with non-temporal stores
// where they are aligned (the caller then fences).
void copy_blocked(const CopyRun &r, int direction, const uint8_t *src, uint8_t *dst, bool streaming = false);

// Copies a run's elements (the same bytes as in the segments' order).
inline void copy_run(const CopyRun &r, const uint8_t *src, uint8_t *dst) {
  if (r.outer == 1) return copy_row(r, src + r.src, dst + r.dst);
  if (const int direction = blocked_direction(r)) return copy_blocked(r, direction, src, dst);
  const uint8_t *s = src + r.src;
  uint8_t *d = dst + r.dst;
  for (int64_t o = 0; o < r.outer; ++o, s += r.outer_src, d += r.outer_dst) copy_row(r, s, d);
}

// The bytes a run copies.
inline int64_t run_bytes(const CopyRun &r) { return r.len * r.count * r.outer; }

// Runs [first, last) through a buffer: gather_runs reads their sources one after another
// into `tmp`, scatter_runs writes them from there (with non-temporal stores when
// `streaming`; the caller then fences). Each returns the end of what it used of `tmp`.
uint8_t *gather_runs(const CopyRun *first, const CopyRun *last, const uint8_t *src, uint8_t *tmp);
const uint8_t *scatter_runs(const CopyRun *first, const CopyRun *last, const uint8_t *tmp, uint8_t *dst,
                            bool streaming = false);

class CopyTables {
 public:
  // Work of a table's element: its bytes plus this much for its own overhead.
  static constexpr int64_t kSegmentCost = 32;
  // Tables of at least this much work run in parallel pieces of at least kPieceCost.
  static constexpr int64_t kParallelCost = int64_t{1} << 20;
  static constexpr int64_t kPieceCost = int64_t{256} << 10;
  static constexpr int64_t kMaxPieces = 64;
  // Deciding whether a table's pieces may run in parallel looks at each row's extent; where
  // extents interleave, at the elements, up to this many per table (past it, the table
  // runs in order on one thread).
  static constexpr int64_t kMaxCheckedElements = int64_t{1} << 22;

  // `exe` must have been validated (runs inside their tables' memory); it must outlive
  // this object, which runs its rows in place. `streaming_bytes`: tables of at least
  // this many bytes use non-temporal stores (0: the host's last-level cache size).
  CopyTables(const Executable &exe, ThreadPool &pool, int64_t streaming_bytes = 0);

  // Copies table `table` from `src` to `dst` (which may be the same memory). Small
  // tables (most control-flow steps copy a few bytes) run here, inline.
  void run(int64_t table, const uint8_t *src, uint8_t *dst) {
    const Table &t = tables_[static_cast<size_t>(table)];
    if (!t.plain) return run_planned(table, src, dst);
    for (const CopyRun *r = t.first, *end = t.end; r != end; ++r) copy_run(*r, src, dst);
  }

  // Whether table `table`'s rows may run in any order, and any of them side by side, with
  // the same result: no byte written twice, none both read and written (what a compute set
  // needs to run its gathers tile by tile, ComputeSetRow::gathers_by_group). Looked at once.
  bool order_free(int64_t table);

  // Table `table`'s run rows, and the bytes it copies.
  const CopyRun *first(int64_t table) const { return tables_[static_cast<size_t>(table)].first; }
  const CopyRun *end(int64_t table) const { return tables_[static_cast<size_t>(table)].end; }
  int64_t bytes(int64_t table) const { return plans_[static_cast<size_t>(table)].bytes; }

  // For tests: how many run rows table `table` has.
  int64_t runs(int64_t table) const;

  // For tests: how table `table` runs: in how many pieces (1: on the calling thread)
  // between two memories and within one (source and destination in the arena), and
  // whether it uses non-temporal stores.
  int64_t pieces(int64_t table, bool within_one_memory) const;
  bool streams(int64_t table) const;

 private:
  // A piece of a table: sub-runs `head` (the end of a row a cut falls inside), the rows
  // [first, last), sub-runs `tail` (the start of the row the next cut falls inside); its
  // bytes from `scratch` on in the scratch buffer of an overlapping table.
  struct Piece {
    std::vector<CopyRun> head;
    const CopyRun *first = nullptr, *last = nullptr;
    std::vector<CopyRun> tail;
    int64_t scratch = 0;
  };
  struct Plan {
    std::vector<Piece> pieces;  // empty: the table runs whole, on the calling thread
    int64_t bytes = 0;
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
  Piece whole(int64_t table) const;
  Plan plan(int64_t table, int64_t streaming_bytes) const;

  const Executable &exe_;
  ThreadPool &pool_;
  std::vector<Table> tables_;
  std::vector<Plan> plans_;
  std::vector<uint8_t> scratch_;  // for tables whose source and destination overlap
  std::vector<int8_t> order_free_;  // per table: -1 not looked at yet, else order_free()
};

// Bytes of the host's last-level data cache (a default when the host does not say).
int64_t last_level_cache_bytes();

}  // namespace popsim
