// Whether the bytes a copy table's runs touch meet: what decides whether its pieces may
// run in parallel (copy_tables.cpp). Each run's extent is looked at first; only where
// extents interleave are elements looked at, up to a bound, so that deciding never costs
// more than a table's rows and that bound.
#pragma once
#include <cstdint>

#include "core/executable.hpp"

namespace popsim {

// Whether no byte is written by two elements of runs [first, last). False also when
// telling would take looking at more than `budget` elements.
bool destinations_apart(const CopyRun *first, const CopyRun *last, int64_t budget);

// Whether no destination byte of runs [first, last) is a source byte of any of them
// (sources may overlap each other). False also past `budget` elements, as above.
bool sources_apart(const CopyRun *first, const CopyRun *last, int64_t budget);

}  // namespace popsim
