// Checking an executable description before anything runs it. The description may
// come from a file (Executable.deserialize), so every index, offset and length the
// run loop and the compute engine later trust without looking is checked here, once:
// a malformed description is an error, never a wild read or write. The hot loops then
// need no checks of their own.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/executable.hpp"

namespace popsim {

// What validate() throws: the first thing found wrong, in words.
class MalformedExecutable : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// The bytes each copy table reads from its source and writes to its destination
// (the largest offset + length of its segments), so that a host buffer given at run
// time can be checked against a table in O(1).
struct TableExtents {
  std::vector<int64_t> src, dst;
};

// Throws MalformedExecutable; on success returns the copy tables' extents.
TableExtents validate(const Executable &exe);

}  // namespace popsim
