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
    plans_[t] = plan(static_cast<int64_t>(t), streaming_bytes);
    const CopySeg *segs = exe_.segs.data();
    tables_.push_back(Table{segs + exe_.table_begin[t], segs + exe_.table_begin[t + 1],
                            !exe_.table_overlaps[t] && plans_[t].cuts.empty() && !plans_[t].streaming});
    if (!exe_.table_overlaps[t]) continue;
    int64_t total = 0;
    for (int64_t i = exe_.table_begin[t]; i < exe_.table_begin[t + 1]; ++i)
      total = saturating_add(total, exe_.segs[static_cast<size_t>(i)].len);
    scratch = std::max(scratch, total);
  }
  scratch_.resize(static_cast<size_t>(scratch));
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

// The parts of segments between two cuts: f(segment, first byte, bytes).
#define POPSIM_FOR_EACH_PART(FROM, TO, BODY)                                                 \
  for (int64_t i = (FROM).seg; i < (TO).seg || (i == (TO).seg && (TO).offset > 0); ++i) {  \
    const CopySeg &s = exe_.segs[static_cast<size_t>(i)];                                  \
    const int64_t begin = i == (FROM).seg ? (FROM).offset : 0;                             \
    const int64_t end = i == (TO).seg ? (TO).offset : s.len;                               \
    if (end > begin) { BODY }                                                              \
  }

void CopyTables::copy_range(const Cut &from, const Cut &to, const uint8_t *src, uint8_t *dst, bool streaming) const {
  POPSIM_FOR_EACH_PART(from, to, move(dst + s.dst + begin, src + s.src + begin, end - begin, streaming);)
  if (streaming) store_fence();
}

void CopyTables::gather_range(const Cut &from, const Cut &to, const uint8_t *src, uint8_t *tmp) const {
  tmp += from.scratch;
  POPSIM_FOR_EACH_PART(from, to, copy_bytes(tmp, src + s.src + begin, end - begin); tmp += end - begin;)
}

void CopyTables::scatter_range(const Cut &from, const Cut &to, const uint8_t *tmp, uint8_t *dst,
                               bool streaming) const {
  tmp += from.scratch;
  POPSIM_FOR_EACH_PART(from, to, move(dst + s.dst + begin, tmp, end - begin, streaming); tmp += end - begin;)
  if (streaming) store_fence();
}
#undef POPSIM_FOR_EACH_PART

void CopyTables::run_planned(int64_t table, const uint8_t *src, uint8_t *dst) {
  const Plan &p = plans_[static_cast<size_t>(table)];
  const bool overlaps = exe_.table_overlaps[static_cast<size_t>(table)] != 0;
  const bool parallel = pieces(table, src == dst) > 1;
  const CopySeg *seg = exe_.segs.data() + exe_.table_begin[static_cast<size_t>(table)];
  const CopySeg *end = exe_.segs.data() + exe_.table_begin[static_cast<size_t>(table) + 1];
  const int64_t pieces = static_cast<int64_t>(p.cuts.size()) - 1;
  if (!overlaps) {
    if (parallel) {
      pool_.parallel_for(pieces, [&](int64_t k) { copy_range(p.cuts[k], p.cuts[k + 1], src, dst, p.streaming); });
    } else if (p.streaming) {
      for (; seg != end; ++seg) stream_bytes(dst + seg->dst, src + seg->src, seg->len);
      store_fence();
    } else {
      for (; seg != end; ++seg) copy_bytes(dst + seg->dst, src + seg->src, seg->len);
    }
    return;
  }
  // Source and destination overlap: read everything first, as the hardware's exchange
  // does, then write.
  uint8_t *tmp = scratch_.data();
  if (parallel) {
    pool_.parallel_for(pieces, [&](int64_t k) { gather_range(p.cuts[k], p.cuts[k + 1], src, tmp); });
    pool_.parallel_for(pieces, [&](int64_t k) { scatter_range(p.cuts[k], p.cuts[k + 1], tmp, dst, p.streaming); });
    return;
  }
  for (const CopySeg *s = seg; s != end; ++s) { copy_bytes(tmp, src + s->src, s->len); tmp += s->len; }
  tmp = scratch_.data();
  for (const CopySeg *s = seg; s != end; ++s) { move(dst + s->dst, tmp, s->len, p.streaming); tmp += s->len; }
  if (p.streaming) store_fence();
}

}  // namespace popsim
