#include "core/copy_tables.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <utility>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace popsim {

namespace {

// memcpy with non-temporal stores: whole 64-byte lines go straight to memory, without
// first reading them into the cache. The caller ends with store_fence().
inline void stream_bytes(uint8_t *dst, const uint8_t *src, int64_t len) {
#if defined(__SSE2__)
  if (len < 256) return copy_bytes(dst, src, len);
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
      runs_.push_back(CopyRun{src, dst, static_cast<int32_t>(kMax), 1, 0, 0});
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
    runs_.push_back(CopyRun{src, dst, static_cast<int32_t>(len), 1, 0, 0});
  };
  for (int64_t i = from.seg; i < to.seg || (i == to.seg && to.offset > 0); ++i) {
    const CopySeg &s = exe_.segs[static_cast<size_t>(i)];
    const int64_t begin = i == from.seg ? from.offset : 0;
    const int64_t end = i == to.seg ? to.offset : s.len;
    if (end > begin) add(s.src + begin, s.dst + begin, end - begin);
  }
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
    const uint8_t *s = src + r->src;
    uint8_t *d = dst + r->dst;
    for (int32_t i = 0; i < r->count; ++i, s += r->src_stride, d += r->dst_stride) stream_bytes(d, s, r->len);
  }
  store_fence();
}

void CopyTables::gather_range(const Piece &piece, const uint8_t *src, uint8_t *tmp) const {
  tmp += piece.scratch;
  for (const CopyRun *r = runs_.data() + piece.first, *end = runs_.data() + piece.last; r != end; ++r) {
    const uint8_t *s = src + r->src;
    for (int32_t i = 0; i < r->count; ++i, s += r->src_stride, tmp += r->len) copy_bytes(tmp, s, r->len);
  }
}

void CopyTables::scatter_range(const Piece &piece, const uint8_t *tmp, uint8_t *dst, bool streaming) const {
  tmp += piece.scratch;
  for (const CopyRun *r = runs_.data() + piece.first, *end = runs_.data() + piece.last; r != end; ++r) {
    uint8_t *d = dst + r->dst;
    for (int32_t i = 0; i < r->count; ++i, d += r->dst_stride, tmp += r->len) move(d, tmp, r->len, streaming);
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
