// Tile memory: each replica's in its own mapping, with inaccessible guard regions before,
// between and after them. Vertex code that reaches past the tile memory it was given
// (x[-1] of a field at its start, a loop that runs on past its end) then faults in a guard
// instead of corrupting the host's heap, and the fault becomes the vertex's error
// (vertex_guard.hpp). Accesses that stay inside tile memory are not caught here, as on
// the hardware; checked codelets (POPSIM_CHECKED_CODELETS) catch those outside a field.
#pragma once
#include <cstdint>

namespace popsim {

class TileMemory {
 public:
  // `replicas` blocks of `bytes` each, zeroed (lazily: the pages come from the OS on first
  // touch). Throws std::bad_alloc.
  TileMemory(int64_t bytes, int64_t replicas);
  ~TileMemory();
  TileMemory(const TileMemory &) = delete;
  TileMemory &operator=(const TileMemory &) = delete;

  uint8_t *base() const { return base_; }   // replica 0's
  int64_t stride() const { return stride_; }  // from one replica's to the next's
  void zero();

  // Where `address` lies in a guard region: next to which replica's memory, and how far
  // from its start (negative: before it; at least `bytes`: past its end). False if the
  // address is in no guard region.
  bool locate(uintptr_t address, int64_t &replica, int64_t &offset) const;

 private:
  uint8_t *mapping_ = nullptr;  // guard, replica 0, guard, replica 1, ..., guard
  int64_t mapping_bytes_ = 0;
  uint8_t *base_ = nullptr;
  int64_t bytes_, replicas_, stride_ = 0, guard_ = 0;
};

}  // namespace popsim
