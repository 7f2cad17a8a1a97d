#include "core/tile_memory.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <initializer_list>
#include <new>

namespace popsim {

namespace {
int64_t round_up(int64_t n, int64_t to) { return (n + to - 1) / to * to; }
}  // namespace

TileMemory::TileMemory(int64_t bytes, int64_t replicas) : bytes_(bytes), replicas_(replicas) {
  const int64_t page = sysconf(_SC_PAGESIZE) > 0 ? sysconf(_SC_PAGESIZE) : 4096;
  const int64_t memory = round_up(bytes > 0 ? bytes : 1, page);
  // Big guards cost address space only (no memory, nothing committed): 1 GiB catches
  // computed indices far out of range, not just runs past an end. Where address space
  // is limited (ulimit -v), one page still catches every run past an end.
  for (int64_t guard : {int64_t(1) << 30, int64_t(1) << 20, page}) {
    const int64_t total = guard + replicas * (memory + guard);
    void *p = mmap(nullptr, static_cast<size_t>(total), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) continue;
    mapping_ = static_cast<uint8_t *>(p);
    mapping_bytes_ = total;
    guard_ = guard;
    stride_ = memory + guard;
    base_ = mapping_ + guard;
    break;
  }
  if (!mapping_) throw std::bad_alloc();
  // Tile memory itself is mapped over the reservation as ordinary memory, so that the host
  // refuses what it could never give (as it would refuse malloc) instead of failing later.
  for (int64_t r = 0; r < replicas; ++r) {
    void *block = mmap(base_ + r * stride_, static_cast<size_t>(memory), PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    if (block == MAP_FAILED) {
      munmap(mapping_, static_cast<size_t>(mapping_bytes_));
      throw std::bad_alloc();
    }
  }
}

TileMemory::~TileMemory() {
  if (mapping_) munmap(mapping_, static_cast<size_t>(mapping_bytes_));
}

void TileMemory::zero() {
  for (int64_t r = 0; r < replicas_; ++r) std::memset(base_ + r * stride_, 0, static_cast<size_t>(bytes_));
}

bool TileMemory::locate(uintptr_t address, int64_t &replica, int64_t &offset) const {
  const uintptr_t start = reinterpret_cast<uintptr_t>(mapping_);
  if (address < start || address >= start + static_cast<uintptr_t>(mapping_bytes_)) return false;
  const int64_t from_base = static_cast<int64_t>(address - reinterpret_cast<uintptr_t>(base_));  // may be < 0
  // The replica whose memory is nearest: the guard after replica r belongs to r up to its middle.
  int64_t r = from_base < 0 ? 0 : (from_base + guard_ / 2) / stride_;
  if (r >= replicas_) r = replicas_ - 1;
  offset = from_base - r * stride_;
  replica = r;
  return offset < 0 || offset >= bytes_;
}

}  // namespace popsim
