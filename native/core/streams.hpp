// Host-side endpoints of FIFO data streams. A stream is connected either to a
// host buffer used as a circular buffer of whole transfers, or to a callback
// that fills / consumes a staging buffer once per transfer. Both buffers belong to the
// host (the binding), which keeps them alive while the core may use them.
#pragma once
#include <cstdint>

namespace popsim {

struct StreamEndpoint {
  enum Kind { None, Buffer, Callback };
  Kind kind = None;
  int64_t transfer_bytes = 0;  // set at connection, from the executable
  uint8_t *buffer = nullptr;  // Buffer: host memory owned by the binding's caller
  int64_t buffer_bytes = 0;   // a multiple of transfer_bytes
  int64_t position = 0;       // byte offset of the next transfer in the buffer
  uint8_t *staging = nullptr;  // Callback: one transfer

  // Where the next transfer lives in host memory, advancing the circular position.
  uint8_t *next_buffer_transfer() {
    uint8_t *p = buffer + position;
    position += transfer_bytes;
    if (position >= buffer_bytes) position = 0;
    return p;
  }
};

}  // namespace popsim
