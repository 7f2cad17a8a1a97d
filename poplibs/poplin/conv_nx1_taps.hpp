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
    // Locals, not the vectors' members, in the loops: codelets build with
    // -fno-strict-aliasing, so every store through an unsigned pointer would otherwise
    // make the compiler load the vectors' data pointers again.
    runOf.assign(rows + 1, 0);  // first 1 where a run starts, then each row's run
    unsigned *const runOfRow = runOf.data();
    runOfRow[0] = 1;
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
        runOfRow[entry[0] - first] = runOfRow[end - first] = 1;
      }
    }
    unsigned run = 0;
    for (unsigned i = 0; i < rows; ++i) {
      if (runOfRow[i]) {
        run = unsigned(runs.size());
        runs.push_back(TapRun{first + i, 0, run * kernelPositions, run * kernelPositions});
      }
      runOfRow[i] = run;
    }
    TapRun *const r0 = runs.data();
    const std::size_t numRuns = runs.size();
    for (std::size_t r = 0; r < numRuns; ++r)
      r0[r].rows = (r + 1 < numRuns ? r0[r + 1].first : last) - r0[r].first;
    kernelPos.resize(numRuns * kernelPositions);
    inRow.resize(kernelPos.size());
    unsigned *const pos = kernelPos.data(), *const in = inRow.data();
    for (unsigned k = 0; k < kernelPositions; ++k) {
      const unsigned *entry = entries + 3 * std::size_t(lists[k * workers + wid]);
      const unsigned *stop = entries + 3 * std::size_t(lists[k * workers + wid + 1]);
      for (; entry != stop; entry += 3) {
        if (entry[1] == 0)
          continue;
        TapRun *r = r0 + runOfRow[entry[0] - first], *rEnd = r0 + runOfRow[entry[0] + entry[1] - 1 - first] + 1;
        for (; r != rEnd; ++r) {
          const unsigned at = r->end++;
          pos[at] = k;
          in[at] = entry[2] + (r->first - entry[0]) * inStride;
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
