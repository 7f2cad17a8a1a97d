#include "core/copy_tables.hpp"

#include "core/copy_overlap.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <utility>

#if defined(__SSE2__)
#include <emmintrin.h>
#include <xmmintrin.h>
#endif

namespace popsim {

namespace {

// Shorter copies than this are plain ones (a non-temporal store pays for whole lines).
constexpr int64_t kStreamMin = 256;

// memcpy with non-temporal stores: whole 64-byte lines go straight to memory, without
// first reading them into the cache. The caller ends with store_fence().
inline void stream_bytes(uint8_t *dst, const uint8_t *src, int64_t len) {
#if defined(__SSE2__)
  if (len < kStreamMin) return copy_bytes(dst, src, len);
  const int64_t head = static_cast<int64_t>((64 - reinterpret_cast<uintptr_t>(dst) % 64) % 64);
  std::memcpy(dst, src, static_cast<size_t>(head));
  dst += head, src += head, len -= head;
  for (; len >= 64; dst += 64, src += 64, len -= 64) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i *>(src));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i *>(src + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i *>(src + 32));
    const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i *>(src + 48));
    _mm_stream_si128(reinterpret_cast<__m128i *>(dst), a);
    _mm_stream_si128(reinterpret_cast<__m128i *>(dst + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i *>(dst + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i *>(dst + 48), d);
  }
  std::memcpy(dst, src, static_cast<size_t>(len));
#else
  std::memcpy(dst, src, static_cast<size_t>(len));
#endif
}

// Non-temporal stores are weakly ordered: make them visible before anyone reads them.
inline void store_fence() {
#if defined(__SSE2__)
  _mm_sfence();
#endif
}

inline void move(uint8_t *dst, const uint8_t *src, int64_t len, bool streaming) {
  if (streaming) stream_bytes(dst, src, len);
  else copy_bytes(dst, src, len);
}

// a + b for a, b >= 0, saturating (validate() bounds each table's elements, not its cost).
int64_t saturating_add(int64_t a, int64_t b) {
  return b > std::numeric_limits<int64_t>::max() - a ? std::numeric_limits<int64_t>::max() : a + b;
}

// a * b for a, b >= 0, saturating.
int64_t saturating_mul(int64_t a, int64_t b) {
  return a != 0 && b > std::numeric_limits<int64_t>::max() / a ? std::numeric_limits<int64_t>::max() : a * b;
}

// Appends the sub-runs that copy bytes [from, to) of run `r`'s bytes (counted in its
// copying order) to `out`: at most a part of one element, the rest of its row, whole rows,
// the start of a row and a part of an element.
void slice_run(const CopyRun &r, int64_t from, int64_t to, std::vector<CopyRun> &out) {
  if (from >= to) return;
  const int64_t len = r.len;
  auto element = [&](int64_t e, int64_t b0, int64_t b1) {
    const int64_t o = e / r.count, i = e % r.count;
    const int64_t s = r.src + o * r.outer_src + i * r.src_stride, d = r.dst + o * r.outer_dst + i * r.dst_stride;
    out.push_back(CopyRun{s + b0, d + b0, b1 - b0, 1, 0, 0, 1, 0, 0});
  };
  int64_t e0 = from / len, e1 = to / len;
  const int64_t b0 = from % len, b1 = to % len;
  if (e0 == e1) return element(e0, b0, b1);
  if (b0 > 0) element(e0++, b0, len);
  while (e0 < e1) {  // whole elements [e0, e1)
    const int64_t o = e0 / r.count, i = e0 % r.count;
    const int64_t s = r.src + o * r.outer_src + i * r.src_stride, d = r.dst + o * r.outer_dst + i * r.dst_stride;
    if (i > 0 || e1 - e0 < r.count) {  // part of a row
      const int64_t n = std::min(r.count - i, e1 - e0);
      out.push_back(CopyRun{s, d, len, n, n > 1 ? r.src_stride : 0, n > 1 ? r.dst_stride : 0, 1, 0, 0});
      e0 += n;
    } else {  // whole rows
      const int64_t rows = (e1 - e0) / r.count;
      out.push_back(CopyRun{s, d, len, r.count, r.src_stride, r.dst_stride, rows, rows > 1 ? r.outer_src : 0,
                            rows > 1 ? r.outer_dst : 0});
      e0 += rows * r.count;
    }
  }
  if (b1 > 0) element(e1, 0, b1);
}

}  // namespace

int64_t last_level_cache_bytes() {
  // Hypervisors often report the whole socket's cache (or nothing): bound it to what one
  // program can expect to keep.
  long bytes = -1;
#ifdef _SC_LEVEL3_CACHE_SIZE
  bytes = sysconf(_SC_LEVEL3_CACHE_SIZE);
#endif
  const int64_t mib = int64_t{1} << 20;
  if (bytes <= 0) return 16 * mib;
  return std::min<int64_t>(std::max<int64_t>(bytes, 8 * mib), 64 * mib);
}

CopyTables::CopyTables(const Executable &exe, ThreadPool &pool, int64_t streaming_bytes) : exe_(exe), pool_(pool) {
  if (streaming_bytes <= 0) streaming_bytes = last_level_cache_bytes() / 2;
  const size_t ntables = exe_.table_begin.size() - 1;
  const CopyRun *rows = exe_.copy_runs.data();
  for (size_t t = 0; t < ntables; ++t)
    tables_.push_back(Table{rows + exe_.table_begin[t], rows + exe_.table_begin[t + 1], false});
  plans_.resize(ntables);
  order_free_.assign(ntables, -1);
  int64_t scratch = 0;
  for (size_t t = 0; t < ntables; ++t) {
    Plan &p = plans_[t];
    p = plan(static_cast<int64_t>(t), streaming_bytes);
    tables_[t].plain = !exe_.table_overlaps[t] && p.pieces.empty() && !p.streaming;
    if (exe_.table_overlaps[t]) scratch = std::max(scratch, p.bytes);
  }
  scratch_.resize(static_cast<size_t>(scratch));
}

uint8_t *gather_runs(const CopyRun *first, const CopyRun *last, const uint8_t *src, uint8_t *tmp) {
  for (const CopyRun *r = first; r != last; ++r) {
    for (int64_t o = 0; o < r->outer; ++o) {
      const uint8_t *s = src + r->src + o * r->outer_src;
      for (int64_t i = 0; i < r->count; ++i, s += r->src_stride, tmp += r->len) copy_bytes(tmp, s, r->len);
    }
  }
  return tmp;
}

const uint8_t *scatter_runs(const CopyRun *first, const CopyRun *last, const uint8_t *tmp, uint8_t *dst,
                            bool streaming) {
  for (const CopyRun *r = first; r != last; ++r) {
    for (int64_t o = 0; o < r->outer; ++o) {
      uint8_t *d = dst + r->dst + o * r->outer_dst;
      for (int64_t i = 0; i < r->count; ++i, d += r->dst_stride, tmp += r->len) move(d, tmp, r->len, streaming);
    }
  }
  return tmp;
}

#if defined(__SSE2__)
// The 4 x 4 blocks of a blocked run (copy_blocked): 4 loads `sp` apart, a register
// transpose, 4 stores `dp` apart.
template <bool Stream>
inline void transpose_blocks(const uint8_t *s0, uint8_t *d0, int64_t os, int64_t od, int64_t is, int64_t id,
                             int64_t o4, int64_t i4, int64_t sp, int64_t dp) {
  for (int64_t o = 0; o < o4; o += 4) {
    for (int64_t i = 0; i < i4; i += 4) {
      const uint8_t *s = s0 + o * os + i * is;
      uint8_t *d = d0 + o * od + i * id;
      __m128 a = _mm_loadu_ps(reinterpret_cast<const float *>(s));
      __m128 b = _mm_loadu_ps(reinterpret_cast<const float *>(s + sp));
      __m128 c = _mm_loadu_ps(reinterpret_cast<const float *>(s + 2 * sp));
      __m128 e = _mm_loadu_ps(reinterpret_cast<const float *>(s + 3 * sp));
      _MM_TRANSPOSE4_PS(a, b, c, e);
      if (Stream) {
        _mm_stream_ps(reinterpret_cast<float *>(d), a);
        _mm_stream_ps(reinterpret_cast<float *>(d + dp), b);
        _mm_stream_ps(reinterpret_cast<float *>(d + 2 * dp), c);
        _mm_stream_ps(reinterpret_cast<float *>(d + 3 * dp), e);
      } else {
        _mm_storeu_ps(reinterpret_cast<float *>(d), a);
        _mm_storeu_ps(reinterpret_cast<float *>(d + dp), b);
        _mm_storeu_ps(reinterpret_cast<float *>(d + 2 * dp), c);
        _mm_storeu_ps(reinterpret_cast<float *>(d + 3 * dp), e);
      }
    }
  }
}
#endif

void copy_blocked(const CopyRun &r, int direction, const uint8_t *src, uint8_t *dst, bool streaming) {
  const uint8_t *s0 = src + r.src;
  uint8_t *d0 = dst + r.dst;
  const int64_t os = r.outer_src, od = r.outer_dst, is = r.src_stride, id = r.dst_stride;
  const int64_t o4 = r.outer & ~int64_t{3}, i4 = r.count & ~int64_t{3};
#if defined(__SSE2__)
  // Rows in (outer_src 4): 4 rows' element i are one load, stored as element i's column.
  // Rows out (outer_dst 4): the mirror image. Either way a 4 x 4 register transpose.
  const bool rows_in = direction == 1;
  const int64_t sp = rows_in ? is : os, dp = rows_in ? od : id;
  // Non-temporal stores where every 16-byte store is aligned (the caller fences).
  if (streaming && reinterpret_cast<uintptr_t>(d0) % 16 == 0 && dp % 16 == 0) {
    transpose_blocks<true>(s0, d0, os, od, is, id, o4, i4, sp, dp);
  } else {
    transpose_blocks<false>(s0, d0, os, od, is, id, o4, i4, sp, dp);
  }
#else
  (void)streaming, (void)direction;
  for (int64_t o = 0; o < o4; ++o)
    for (int64_t i = 0; i < i4; ++i) std::memcpy(d0 + o * od + i * id, s0 + o * os + i * is, 4);
#endif
  // The edges: columns past the last block of 4 in every row, then rows past the last block.
  for (int64_t o = 0; o < r.outer; ++o)
    for (int64_t i = o < o4 ? i4 : 0; i < r.count; ++i) std::memcpy(d0 + o * od + i * id, s0 + o * os + i * is, 4);
}

CopyTables::Piece CopyTables::whole(int64_t table) const {
  Piece piece;
  piece.first = tables_[static_cast<size_t>(table)].first;
  piece.last = tables_[static_cast<size_t>(table)].end;
  return piece;
}

CopyTables::Plan CopyTables::plan(int64_t table, int64_t streaming_bytes) const {
  Plan p;
  const Table &t = tables_[static_cast<size_t>(table)];
  int64_t cost = 0;
  for (const CopyRun *r = t.first; r != t.end; ++r) {
    const int64_t elements = r->count * r->outer;  // validate() bounds each factor by 2^31
    p.bytes = saturating_add(p.bytes, saturating_mul(elements, r->len));
    cost = saturating_add(cost, saturating_mul(elements, r->len + kSegmentCost));
  }
  // A table runs once per replica, back to back (copies, exchanges, cross-replica copies):
  // what passes through the cache is the replicas' bytes together.
  p.streaming = p.bytes >= streaming_bytes / std::max<int64_t>(1, exe_.num_replicas);
  const int64_t pieces = std::min(kMaxPieces, cost / kPieceCost);
  if (pool_.size() < 2 || cost < kParallelCost || cost == std::numeric_limits<int64_t>::max() || pieces < 2)
    return p;
  // A byte written twice: the last write must win, so run in order.
  if (!destinations_apart(t.first, t.end, kMaxCheckedElements)) return p;
  // Sources may overlap each other (a broadcast); only a source meeting a destination
  // matters (a table not marked overlapping but copying within one memory).
  if (!exe_.table_overlaps[static_cast<size_t>(table)])
    p.disjoint_from_source = sources_apart(t.first, t.end, kMaxCheckedElements);
  // Cut the table into `pieces` of about equal cost; a cut may fall inside a row, or an
  // element, whose parts then go to the pieces on either side of it as sub-runs.
  struct Cut {
    const CopyRun *row;
    int64_t offset, scratch;  // bytes into the row, and into the table
  };
  std::vector<Cut> cuts{Cut{t.first, 0, 0}};
  const int64_t share = cost / pieces;
  int64_t k = 1, done = 0, scratch = 0;
  for (const CopyRun *r = t.first; r != t.end; ++r) {
    const int64_t each = r->len + kSegmentCost, elements = r->count * r->outer;
    const int64_t row_cost = elements * each;  // no overflow: the sum did not saturate
    for (; k < pieces && done + row_cost >= share * k; ++k) {
      const int64_t into = std::max<int64_t>(0, share * k - done);
      const int64_t e = std::min(elements - 1, into / each);
      const int64_t offset = e * r->len + std::min(r->len, std::max<int64_t>(0, into - e * each - kSegmentCost));
      cuts.push_back(Cut{r, offset, scratch + offset});
    }
    done += row_cost;
    scratch += run_bytes(*r);
  }
  for (; k <= pieces; ++k) cuts.push_back(Cut{t.end, 0, scratch});
  for (size_t c = 0; c + 1 < cuts.size(); ++c) {
    const Cut &a = cuts[c], &b = cuts[c + 1];
    Piece piece;
    piece.scratch = a.scratch;
    if (a.row == b.row) {
      if (a.row != t.end) slice_run(*a.row, a.offset, b.offset, piece.head);
    } else {
      piece.first = a.row;
      if (a.offset > 0) slice_run(*piece.first++, a.offset, run_bytes(*a.row), piece.head);
      piece.last = b.row;
      if (b.row != t.end) slice_run(*b.row, 0, b.offset, piece.tail);
    }
    p.pieces.push_back(std::move(piece));
  }
  return p;
}

bool CopyTables::order_free(int64_t table) {
  int8_t &known = order_free_[static_cast<size_t>(table)];
  if (known < 0) {
    const Table &t = tables_[static_cast<size_t>(table)];
    known = !exe_.table_overlaps[static_cast<size_t>(table)] &&
            destinations_apart(t.first, t.end, kMaxCheckedElements) && sources_apart(t.first, t.end, kMaxCheckedElements);
  }
  return known != 0;
}

int64_t CopyTables::pieces(int64_t table, bool within_one_memory) const {
  const Plan &p = plans_[static_cast<size_t>(table)];
  const bool parallel = !p.pieces.empty() && (exe_.table_overlaps[static_cast<size_t>(table)] ||
                                              !within_one_memory || p.disjoint_from_source);
  return parallel ? static_cast<int64_t>(p.pieces.size()) : 1;
}

bool CopyTables::streams(int64_t table) const { return plans_[static_cast<size_t>(table)].streaming; }

int64_t CopyTables::runs(int64_t table) const {
  const Table &t = tables_[static_cast<size_t>(table)];
  return t.end - t.first;
}

void CopyTables::copy_range(const Piece &piece, const uint8_t *src, uint8_t *dst, bool streaming) const {
  auto rows = [&](const CopyRun *r, const CopyRun *end) {
    if (!streaming) {
      for (; r != end; ++r) copy_run(*r, src, dst);
      return;
    }
    for (; r != end; ++r) {
      if (r->len < kStreamMin) {  // stream_bytes would copy each element plainly: copy_run's loops do
        const int direction = r->outer > 1 ? blocked_direction(*r) : 0;
        if (direction) copy_blocked(*r, direction, src, dst, true);
        else copy_run(*r, src, dst);
        continue;
      }
      for (int64_t o = 0; o < r->outer; ++o) {
        const uint8_t *s = src + r->src + o * r->outer_src;
        uint8_t *d = dst + r->dst + o * r->outer_dst;
        for (int64_t i = 0; i < r->count; ++i, s += r->src_stride, d += r->dst_stride) stream_bytes(d, s, r->len);
      }
    }
  };
  rows(piece.head.data(), piece.head.data() + piece.head.size());
  rows(piece.first, piece.last);
  rows(piece.tail.data(), piece.tail.data() + piece.tail.size());
  if (streaming) store_fence();
}

void CopyTables::gather_range(const Piece &piece, const uint8_t *src, uint8_t *tmp) const {
  tmp += piece.scratch;
  tmp = gather_runs(piece.head.data(), piece.head.data() + piece.head.size(), src, tmp);
  tmp = gather_runs(piece.first, piece.last, src, tmp);
  gather_runs(piece.tail.data(), piece.tail.data() + piece.tail.size(), src, tmp);
}

void CopyTables::scatter_range(const Piece &piece, const uint8_t *tmp, uint8_t *dst, bool streaming) const {
  tmp += piece.scratch;
  tmp = scatter_runs(piece.head.data(), piece.head.data() + piece.head.size(), tmp, dst, streaming);
  tmp = scatter_runs(piece.first, piece.last, tmp, dst, streaming);
  scatter_runs(piece.tail.data(), piece.tail.data() + piece.tail.size(), tmp, dst, streaming);
  if (streaming) store_fence();
}

void CopyTables::run_planned(int64_t table, const uint8_t *src, uint8_t *dst) {
  const Plan &p = plans_[static_cast<size_t>(table)];
  const bool overlaps = exe_.table_overlaps[static_cast<size_t>(table)] != 0;
  const int64_t n = static_cast<int64_t>(p.pieces.size());
  if (pieces(table, src == dst) > 1) {
    if (!overlaps) {
      pool_.parallel_for(n, [&](int64_t k) { copy_range(p.pieces[k], src, dst, p.streaming); });
      return;
    }
    // Source and destination overlap: read everything first, as the hardware's
    // exchange does, then write.
    uint8_t *tmp = scratch_.data();
    pool_.parallel_for(n, [&](int64_t k) { gather_range(p.pieces[k], src, tmp); });
    pool_.parallel_for(n, [&](int64_t k) { scatter_range(p.pieces[k], tmp, dst, p.streaming); });
    return;
  }
  // On this thread, in the rows' order.
  const Piece all = whole(table);
  if (!overlaps) return copy_range(all, src, dst, p.streaming);
  gather_range(all, src, scratch_.data());
  scatter_range(all, scratch_.data(), dst, p.streaming);
}

}  // namespace popsim
