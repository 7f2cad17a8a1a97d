// The runs of output rows of one ConvPartialnx1 worker (conv_nx1.cpp) that every kernel
// position treats alike, for summing a row over all its kernel positions in one pass.
//
// The vertex's lists give, per kernel position k, entries (outOffset, numFieldElems,
// inOffset): output rows outOffset + i read input rows inOffset + i * inStride (unit output
// steps). Cutting the worker's rows at every entry's ends leaves runs in which each kernel
// position reads either no row or consecutive rows of one entry. A run's taps are those
// kernel positions, in increasing order, with the input row of the run's first output row.
//
// Summing a run's taps in one register pass adds the same products, in the same order (k,
// then in-channel group, then channel), as adding kernel position after kernel position
// to the output in memory does, when the partials are float: storing a float and loading it
// back changes nothing. Half partials round between kernel positions; they keep the
// position-by-position loop, as do lists whose entries are out of order or overlap.
#ifndef POPSIM_POPLIN_CONV_NX1_TAPS_HPP
#define POPSIM_POPLIN_CONV_NX1_TAPS_HPP

#include <algorithm>
#include <vector>

namespace poplin {
namespace detail {

struct TapRun {
  unsigned first, rows;  // output rows [first, first + rows)
  unsigned begin, end;   // its taps: [begin, end) of Taps::kernelPos / inRow
};

struct Taps {
  bool usable = false;
  unsigned maxTaps = 0;
  std::vector<TapRun> runs;  // (runs with no taps have begin == end)
  std::vector<unsigned> kernelPos, inRow;
  std::vector<unsigned> runOf;  // scratch; all kept between builds (no allocation)

  // lists / entries: the vertex's worklists (conv_nx1.cpp's layout), for worker `wid`, whose
  // output rows are [first, last). Two passes over the worker's entries: one marks where
  // runs start, one places the taps; run r's taps are at r * kernelPositions on.
  void build(const unsigned *lists, const unsigned *entries, unsigned kernelPositions, unsigned workers,
             unsigned wid, unsigned first, unsigned last, unsigned inStride) {
    usable = false;
    maxTaps = 0;
    runs.clear();
    const unsigned rows = last - first;
    runOf.assign(rows + 1, 0);  // first 1 where a run starts, then each row's run
    runOf[0] = 1;
    for (unsigned k = 0; k < kernelPositions; ++k) {
      unsigned end = first;
      const unsigned *entry = entries + 3 * std::size_t(lists[k * workers + wid]);
      const unsigned *stop = entries + 3 * std::size_t(lists[k * workers + wid + 1]);
      for (; entry != stop; entry += 3) {
        if (entry[1] == 0)
          continue;
        if (entry[0] < end || entry[0] + entry[1] > last)
          return;  // out of order, overlapping or outside the worker's rows: not usable
        end = entry[0] + entry[1];
        runOf[entry[0] - first] = runOf[end - first] = 1;
      }
    }
    unsigned run = 0;
    for (unsigned i = 0; i < rows; ++i) {
      if (runOf[i]) {
        run = unsigned(runs.size());
        runs.push_back(TapRun{first + i, 0, run * kernelPositions, run * kernelPositions});
      }
      runOf[i] = run;
      ++runs.back().rows;
    }
    kernelPos.resize(runs.size() * std::size_t(kernelPositions));
    inRow.resize(kernelPos.size());
    unsigned *pos = kernelPos.data(), *in = inRow.data();
    TapRun *r0 = runs.data();
    for (unsigned k = 0; k < kernelPositions; ++k) {
      const unsigned *entry = entries + 3 * std::size_t(lists[k * workers + wid]);
      const unsigned *stop = entries + 3 * std::size_t(lists[k * workers + wid + 1]);
      for (; entry != stop; entry += 3) {
        if (entry[1] == 0)
          continue;
        TapRun *r = r0 + runOf[entry[0] - first], *rEnd = r0 + runOf[entry[0] + entry[1] - 1 - first] + 1;
        for (; r != rEnd; ++r) {
          pos[r->end] = k;
          in[r->end++] = entry[2] + (r->first - entry[0]) * inStride;
        }
      }
    }
    for (const TapRun &r : runs)
      maxTaps = std::max(maxTaps, r.end - r.begin);
    usable = true;
  }
};

}  // namespace detail
}  // namespace poplin

#endif
