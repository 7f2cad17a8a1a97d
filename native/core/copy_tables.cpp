#include "core/copy_tables.hpp"

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

// Sum of lengths plus per-segment cost; saturates (validate() bounds each segment, not their sum).
int64_t saturating_add(int64_t a, int64_t b) {
  return b > std::numeric_limits<int64_t>::max() - a ? std::numeric_limits<int64_t>::max() : a + b;
}

// Whether the intervals [start, start + len) (len > 0) are pairwise disjoint.
bool disjoint(std::vector<std::pair<int64_t, int64_t>> &intervals) {
  std::sort(intervals.begin(), intervals.end());
  for (size_t i = 1; i < intervals.size(); ++i)
    if (intervals[i].first < intervals[i - 1].first + intervals[i - 1].second) return false;
  return true;
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
  plans_.resize(ntables);
  int64_t scratch = 0;
  for (size_t t = 0; t < ntables; ++t) {
    Plan &p = plans_[t];
    p = plan(static_cast<int64_t>(t), streaming_bytes);
    const int64_t first = exe_.table_begin[t], last = exe_.table_begin[t + 1];
    const std::vector<Cut> whole{Cut{first, 0, 0}, Cut{last, 0, 0}};
    const std::vector<Cut> &cuts = p.cuts.empty() ? whole : p.cuts;
    for (size_t k = 0; k + 1 < cuts.size(); ++k) {
      const int64_t begin = static_cast<int64_t>(runs_.size());
      add_runs(cuts[k], cuts[k + 1]);
      p.pieces.push_back(Piece{begin, static_cast<int64_t>(runs_.size()), cuts[k].scratch});
    }
    // A cut may fall inside a segment; on one thread the table runs segment by segment
    // (a segment whose source meets its destination is one move), so it has runs of its own.
    if (p.pieces.size() == 1) {
      p.whole = p.pieces.front();
    } else {
      const int64_t begin = static_cast<int64_t>(runs_.size());
      add_runs(whole.front(), whole.back());
      p.whole = Piece{begin, static_cast<int64_t>(runs_.size()), 0};
    }
    if (!exe_.table_overlaps[t]) continue;
    int64_t total = 0;
    for (int64_t i = first; i < last; ++i) total = saturating_add(total, exe_.segs[static_cast<size_t>(i)].len);
    scratch = std::max(scratch, total);
  }
  runs_.shrink_to_fit();
  for (size_t t = 0; t < ntables; ++t) {  // runs_ is complete: point into it
    const Plan &p = plans_[t];
    tables_.push_back(Table{runs_.data() + p.whole.first, runs_.data() + p.whole.last,
                            !exe_.table_overlaps[t] && p.cuts.empty() && !p.streaming});
  }
  scratch_.resize(static_cast<size_t>(scratch));
}

void CopyTables::add_runs(const Cut &from, const Cut &to) {
  constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
  const size_t start = runs_.size();  // runs of this piece only: a piece is copied on its own
  auto fits = [](int64_t v) { return v >= std::numeric_limits<int32_t>::min() && v <= kMax; };
  auto add = [&](int64_t src, int64_t dst, int64_t len) {
    for (; len > kMax; src += kMax, dst += kMax, len -= kMax)  // a run's length is 32-bit
      runs_.push_back(CopyRun{src, dst, static_cast<int32_t>(kMax), 1, 0, 0, 1, 0, 0, 0});
    if (runs_.size() > start) {
      CopyRun &r = runs_.back();
      if (r.len == len && r.count < kMax) {
        if (r.count == 1 && fits(src - r.src) && fits(dst - r.dst)) {
          r.src_stride = static_cast<int32_t>(src - r.src);
          r.dst_stride = static_cast<int32_t>(dst - r.dst);
          r.count = 2;
          return;
        }
        const int64_t n = r.count;
        if (r.count > 1 && src == r.src + n * r.src_stride && dst == r.dst + n * r.dst_stride) {
          ++r.count;
          return;
        }
      }
    }
    runs_.push_back(CopyRun{src, dst, static_cast<int32_t>(len), 1, 0, 0, 1, 0, 0, 0});
  };
  for (int64_t i = from.seg; i < to.seg || (i == to.seg && to.offset > 0); ++i) {
    const CopySeg &s = exe_.segs[static_cast<size_t>(i)];
    const int64_t begin = i == from.seg ? from.offset : 0;
    const int64_t end = i == to.seg ? to.offset : s.len;
    if (end > begin) add(s.src + begin, s.dst + begin, end - begin);
  }
  join_rows(start);
}

void CopyTables::join_rows(size_t start) {
  auto fits = [](int64_t v) { return v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max(); };
  size_t out = start;
  for (size_t i = start; i < runs_.size(); ++i) {
    const CopyRun &r = runs_[i];
    if (out > start) {
      CopyRun &p = runs_[out - 1];
      const bool same = p.len == r.len && p.count == r.count && p.count > 1 && p.src_stride == r.src_stride &&
                        p.dst_stride == r.dst_stride && p.outer < std::numeric_limits<int32_t>::max();
      if (same && p.outer == 1 && fits(r.src - p.src) && fits(r.dst - p.dst)) {
        p.outer_src = static_cast<int32_t>(r.src - p.src);
        p.outer_dst = static_cast<int32_t>(r.dst - p.dst);
        p.outer = 2;
        continue;
      }
      if (same && p.outer > 1 && r.src == p.src + int64_t{p.outer} * p.outer_src &&
          r.dst == p.dst + int64_t{p.outer} * p.outer_dst) {
        ++p.outer;
        continue;
      }
    }
    runs_[out++] = r;
  }
  runs_.resize(out);
  for (size_t i = start; i < runs_.size(); ++i) {
    CopyRun &r = runs_[i];
    if (r.outer < 4 || r.count < 4 || r.len != 4) continue;
    // Rows contiguous on one side, columns on the other, every destination element apart
    // (rows of 4-byte columns, the rows far enough apart), and the source's offsets clear
    // of the destination's: then no element's value depends on the copying order.
    const bool rows_in = r.outer_src == 4 && r.dst_stride == 4 && r.outer_dst >= 4 * int64_t{r.count};
    const bool rows_out = r.src_stride == 4 && r.outer_dst == 4 && r.dst_stride >= 4 * int64_t{r.outer};
    if (!rows_in && !rows_out) continue;
    auto span = [&](int64_t base, int64_t outer_stride, int64_t stride) {
      const int64_t a = (r.outer - 1) * outer_stride, b = (r.count - 1) * stride;
      return std::make_pair(base + std::min<int64_t>(a, 0) + std::min<int64_t>(b, 0),
                            base + std::max<int64_t>(a, 0) + std::max<int64_t>(b, 0) + 4);
    };
    const auto s = span(r.src, r.outer_src, r.src_stride), d = span(r.dst, r.outer_dst, r.dst_stride);
    r.blocked = s.second <= d.first || d.second <= s.first;
  }
}

#if defined(__SSE2__)
// The 4 x 4 blocks of a blocked run (copy_blocked): 4 loads `sp` apart, a register
// transpose, 4 stores `dp` apart.
template <bool Stream>
inline void transpose_blocks(const uint8_t *s0, uint8_t *d0, int64_t os, int64_t od, int64_t is, int64_t id,
                             int32_t o4, int32_t i4, int64_t sp, int64_t dp) {
  for (int32_t o = 0; o < o4; o += 4) {
    for (int32_t i = 0; i < i4; i += 4) {
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

void copy_blocked(const CopyRun &r, const uint8_t *src, uint8_t *dst, bool streaming) {
  const uint8_t *s0 = src + r.src;
  uint8_t *d0 = dst + r.dst;
  const int64_t os = r.outer_src, od = r.outer_dst, is = r.src_stride, id = r.dst_stride;
  const int32_t o4 = r.outer & ~3, i4 = r.count & ~3;
#if defined(__SSE2__)
  // Rows in (outer_src 4): 4 rows' element i are one load, stored as element i's column.
  // Rows out (outer_dst 4): the mirror image. Either way a 4 x 4 register transpose.
  const bool rows_in = os == 4;
  const int64_t sp = rows_in ? is : os, dp = rows_in ? od : id;
  // Non-temporal stores where every 16-byte store is aligned (the caller fences).
  if (streaming && reinterpret_cast<uintptr_t>(d0) % 16 == 0 && dp % 16 == 0) {
    transpose_blocks<true>(s0, d0, os, od, is, id, o4, i4, sp, dp);
  } else {
    transpose_blocks<false>(s0, d0, os, od, is, id, o4, i4, sp, dp);
  }
#else
  (void)streaming;
  for (int32_t o = 0; o < o4; ++o)
    for (int32_t i = 0; i < i4; ++i) std::memcpy(d0 + o * od + i * id, s0 + o * os + i * is, 4);
#endif
  // The edges: columns past the last block of 4 in every row, then rows past the last block.
  for (int32_t o = 0; o < r.outer; ++o)
    for (int32_t i = o < o4 ? i4 : 0; i < r.count; ++i) std::memcpy(d0 + o * od + i * id, s0 + o * os + i * is, 4);
}

CopyTables::Plan CopyTables::plan(int64_t table, int64_t streaming_bytes) const {
  Plan p;
  const int64_t first = exe_.table_begin[static_cast<size_t>(table)];
  const int64_t last = exe_.table_begin[static_cast<size_t>(table) + 1];
  int64_t bytes = 0, cost = 0;
  for (int64_t i = first; i < last; ++i) {
    bytes = saturating_add(bytes, exe_.segs[static_cast<size_t>(i)].len);
    cost = saturating_add(cost, saturating_add(exe_.segs[static_cast<size_t>(i)].len, kSegmentCost));
  }
  // A table runs once per replica, back to back (copies, exchanges, cross-replica copies):
  // what passes through the cache is the replicas' bytes together.
  p.streaming = bytes >= streaming_bytes / std::max<int64_t>(1, exe_.num_replicas);
  const int64_t pieces = std::min(kMaxPieces, cost / kPieceCost);
  if (pool_.size() < 2 || cost < kParallelCost || cost == std::numeric_limits<int64_t>::max() || pieces < 2)
    return p;
  std::vector<std::pair<int64_t, int64_t>> dst, src;
  for (int64_t i = first; i < last; ++i) {
    const CopySeg &s = exe_.segs[static_cast<size_t>(i)];
    if (s.len > 0) dst.emplace_back(s.dst, s.len), src.emplace_back(s.src, s.len);
  }
  if (!disjoint(dst)) return p;  // a byte written twice: the last write must win, so run in order
  if (!exe_.table_overlaps[static_cast<size_t>(table)]) {
    // Sources may overlap each other (a broadcast); only a source meeting a destination
    // matters (a table not marked overlapping but copying within one memory).
    std::sort(src.begin(), src.end());
    p.disjoint_from_source = true;
    size_t k = 0;
    for (const auto &d : dst) {  // sorted by disjoint()
      while (k < src.size() && src[k].first + src[k].second <= d.first) ++k;
      for (size_t j = k; j < src.size() && src[j].first < d.first + d.second && p.disjoint_from_source; ++j)
        p.disjoint_from_source = src[j].first + src[j].second <= d.first;
      if (!p.disjoint_from_source) break;
    }
  }
  // Cut the table into `pieces` runs of about equal cost; a cut may fall inside a segment.
  const int64_t share = cost / pieces;
  p.cuts.push_back(Cut{first, 0, 0});
  int64_t k = 1, done = 0, scratch = 0;
  for (int64_t i = first; i < last; ++i) {
    const int64_t len = exe_.segs[static_cast<size_t>(i)].len;
    done += kSegmentCost;
    for (; k < pieces && done + len >= share * k; ++k) {
      const int64_t offset = std::min(len, std::max<int64_t>(0, share * k - done));
      p.cuts.push_back(Cut{i, offset, scratch + offset});
    }
    done += len;
    scratch += len;
  }
  for (; k < pieces; ++k) p.cuts.push_back(Cut{last, 0, scratch});
  p.cuts.push_back(Cut{last, 0, scratch});
  return p;
}

int64_t CopyTables::pieces(int64_t table, bool within_one_memory) const {
  const Plan &p = plans_[static_cast<size_t>(table)];
  const bool parallel = !p.cuts.empty() && (exe_.table_overlaps[static_cast<size_t>(table)] || !within_one_memory ||
                                            p.disjoint_from_source);
  return parallel ? static_cast<int64_t>(p.cuts.size()) - 1 : 1;
}

bool CopyTables::streams(int64_t table) const { return plans_[static_cast<size_t>(table)].streaming; }

int64_t CopyTables::runs(int64_t table) const {
  const Plan &p = plans_[static_cast<size_t>(table)];
  return p.whole.last - p.whole.first;
}

void CopyTables::copy_range(const Piece &piece, const uint8_t *src, uint8_t *dst, bool streaming) const {
  const CopyRun *r = runs_.data() + piece.first, *end = runs_.data() + piece.last;
  if (!streaming) {
    for (; r != end; ++r) copy_run(*r, src, dst);
    return;
  }
  for (; r != end; ++r) {
    if (r->len < kStreamMin) {  // stream_bytes would copy each element plainly: copy_run's loops do
      if (r->outer > 1 && r->blocked) copy_blocked(*r, src, dst, true);
      else copy_run(*r, src, dst);
      continue;
    }
    for (int32_t o = 0; o < r->outer; ++o) {
      const uint8_t *s = src + r->src + int64_t{o} * r->outer_src;
      uint8_t *d = dst + r->dst + int64_t{o} * r->outer_dst;
      for (int32_t i = 0; i < r->count; ++i, s += r->src_stride, d += r->dst_stride) stream_bytes(d, s, r->len);
    }
  }
  store_fence();
}

void CopyTables::gather_range(const Piece &piece, const uint8_t *src, uint8_t *tmp) const {
  tmp += piece.scratch;
  for (const CopyRun *r = runs_.data() + piece.first, *end = runs_.data() + piece.last; r != end; ++r) {
    for (int32_t o = 0; o < r->outer; ++o) {
      const uint8_t *s = src + r->src + int64_t{o} * r->outer_src;
      for (int32_t i = 0; i < r->count; ++i, s += r->src_stride, tmp += r->len) copy_bytes(tmp, s, r->len);
    }
  }
}

void CopyTables::scatter_range(const Piece &piece, const uint8_t *tmp, uint8_t *dst, bool streaming) const {
  tmp += piece.scratch;
  for (const CopyRun *r = runs_.data() + piece.first, *end = runs_.data() + piece.last; r != end; ++r) {
    for (int32_t o = 0; o < r->outer; ++o) {
      uint8_t *d = dst + r->dst + int64_t{o} * r->outer_dst;
      for (int32_t i = 0; i < r->count; ++i, d += r->dst_stride, tmp += r->len) move(d, tmp, r->len, streaming);
    }
  }
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
  // On this thread, in the segments' order.
  if (!overlaps) return copy_range(p.whole, src, dst, p.streaming);
  gather_range(p.whole, src, scratch_.data());
  scatter_range(p.whole, scratch_.data(), dst, p.streaming);
}

}  // namespace popsim
