#include "core/copy_overlap.hpp"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <vector>

namespace popsim {

namespace {

enum Side { SRC = 0, DST = 1 };

// The bytes a run touches on one side lie in [low, high).
struct Span {
  int64_t low, high;
  const CopyRun *run;
  Side side;
};

Span span_of(const CopyRun &r, Side side) {
  const int64_t base = side == DST ? r.dst : r.src;
  const int64_t a = (r.outer - 1) * (side == DST ? r.outer_dst : r.outer_src);
  const int64_t b = (r.count - 1) * (side == DST ? r.dst_stride : r.src_stride);
  return Span{base + std::min<int64_t>(a, 0) + std::min<int64_t>(b, 0),
              base + std::max<int64_t>(a, 0) + std::max<int64_t>(b, 0) + r.len, &r, side};
}

// Whether a run's elements on `side` are apart from each other, from its numbers alone:
// 1 yes, 0 no, -1 cannot tell. Elements at o * A + i * B (|A|, |B| their steps) of `len`
// bytes are apart when each row's elements are and the rows' extents do not meet, or
// the same with rows and columns swapped (a transpose's columns interleave its rows).
int apart_by_shape(const CopyRun &r, Side side) {
  const int64_t a = std::llabs(side == DST ? r.outer_dst : r.outer_src);
  const int64_t b = std::llabs(side == DST ? r.dst_stride : r.src_stride);
  if (r.outer == 1) return r.count == 1 || b >= r.len;
  if (r.count == 1) return a >= r.len;
  if (b >= r.len && a >= (r.count - 1) * b + r.len) return 1;
  if (a >= r.len && b >= (r.outer - 1) * a + r.len) return 1;
  return (a == 0 || b == 0) ? 0 : -1;
}

struct Interval {  // 16 bytes: the elements of interleaving runs may be millions
  int64_t start;
  int32_t len;  // at most COPY_RUN_LIMIT
  int32_t side;
};

// Appends the byte interval of each element of a span's run; false past `budget`.
bool add_elements(const Span &s, std::vector<Interval> &out, int64_t &budget) {
  const CopyRun &r = *s.run;
  const int64_t n = r.count * r.outer;
  if (n > budget) return false;
  budget -= n;
  const int64_t base = s.side == DST ? r.dst : r.src;
  const int64_t outer = s.side == DST ? r.outer_dst : r.outer_src;
  const int64_t stride = s.side == DST ? r.dst_stride : r.src_stride;
  for (int64_t o = 0; o < r.outer; ++o)
    for (int64_t i = 0; i < r.count; ++i) {
      const int64_t start = base + o * outer + i * stride;
      out.push_back(Interval{start, static_cast<int32_t>(r.len), s.side});
    }
  return true;
}

// Whether two intervals meet: any two when `cross` is false (all destinations), else a
// source one and a destination one. Sorted by start, an interval meets an earlier one
// exactly when it starts before the furthest end of those.
bool meet(std::vector<Interval> &v, bool cross) {
  std::sort(v.begin(), v.end(), [](const Interval &x, const Interval &y) { return x.start < y.start; });
  int64_t end[2] = {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::min()};
  for (const Interval &x : v) {
    if (x.start < end[cross ? 1 - x.side : x.side]) return true;
    end[x.side] = std::max(end[x.side], x.start + x.len);
  }
  return false;
}

// Groups spans whose extents meet; a group of one destination run (not `cross`) is
// decided by its shape where it can be, every other group that could clash by its elements.
bool apart(std::vector<Span> spans, bool cross, int64_t budget) {
  std::sort(spans.begin(), spans.end(), [](const Span &x, const Span &y) { return x.low < y.low; });
  std::vector<Interval> elements;
  for (size_t i = 0; i < spans.size();) {
    size_t j = i + 1;
    int64_t high = spans[i].high;
    bool sides[2] = {false, false};
    sides[spans[i].side] = true;
    for (; j < spans.size() && spans[j].low < high; ++j) {
      high = std::max(high, spans[j].high);
      sides[spans[j].side] = true;
    }
    const size_t group = i;
    i = j;
    if (cross && !(sides[SRC] && sides[DST])) continue;
    if (!cross && j == group + 1) {
      const int shape = apart_by_shape(*spans[group].run, DST);
      if (shape == 0) return false;
      if (shape == 1) continue;
    }
    elements.clear();
    for (size_t k = group; k < j; ++k)
      if (!add_elements(spans[k], elements, budget)) return false;
    if (meet(elements, cross)) return false;
  }
  return true;
}

}  // namespace

bool destinations_apart(const CopyRun *first, const CopyRun *last, int64_t budget) {
  std::vector<Span> spans;
  spans.reserve(static_cast<size_t>(last - first));
  for (const CopyRun *r = first; r != last; ++r) spans.push_back(span_of(*r, DST));
  return apart(std::move(spans), false, budget);
}

bool sources_apart(const CopyRun *first, const CopyRun *last, int64_t budget) {
  std::vector<Span> spans;
  spans.reserve(2 * static_cast<size_t>(last - first));
  for (const CopyRun *r = first; r != last; ++r) spans.push_back(span_of(*r, SRC)), spans.push_back(span_of(*r, DST));
  return apart(std::move(spans), true, budget);
}

}  // namespace popsim
