// Replicas spread over processes (docs/scale_out.md). Under MPI, process k of N holds
// the block of replicas [first, first + local) of a graph replicated R times; the rest
// live in other processes. What must cross processes goes through the host
// (HOST_PEERS), as bytes only: a cross-replica copy's fragments point to point, and
// small gathers of what every process must agree on (a control-flow decision, an abort,
// the cycles of a compute set whose vertices count their own). The arithmetic stays in
// the receiving replica's vertices, so N processes compute what one does, bit for bit.
#pragma once
#include <cstdint>
#include <vector>

#include "core/host.hpp"

namespace popsim {

// What a HOST_PEERS call asks of the host, in `data`.
enum PeerOp : int64_t {
  // Process p gets send[offset(p) .. + send_bytes[p]) of ours (offsets: the sizes before
  // it, in process order) and we get its part for us into recv the same way.
  PEER_EXCHANGE = 0,
  // Every process sends the same send_bytes[0] bytes; recv gets them all, in process order.
  PEER_GATHER = 1,
  // Cross-replica copy `table` with replica map `map` between this process's replicas
  // and the others', straight from and into tile memory (the host knows both tables);
  // only for a table whose source and destination do not overlap.
  PEER_COPY = 2,
};

struct PeerCall {
  int64_t op;
  const uint8_t *send;
  const int64_t *send_bytes;  // PEER_EXCHANGE: one per process
  uint8_t *recv;
  const int64_t *recv_bytes;  // PEER_EXCHANGE: one per process
  int64_t table = -1, map = -1;  // PEER_COPY
};

class ReplicaBlock {
 public:
  ReplicaBlock(int64_t total = 1, int64_t first = 0, int64_t local = -1)
      : total_(total), first_(first), local_(local < 0 ? total : local) {}
  int64_t total() const { return total_; }
  int64_t first() const { return first_; }
  int64_t local() const { return local_; }
  int64_t instances() const { return total_ / local_; }
  int64_t instance() const { return first_ / local_; }
  bool distributed() const { return local_ < total_; }
  bool holds(int64_t replica) const { return replica >= first_ && replica < first_ + local_; }
  int64_t owner(int64_t replica) const { return replica / local_; }
  // Whether the block is one a process can hold: `local` divides `total` and the block
  // starts at a multiple of it.
  bool valid() const { return local_ >= 1 && total_ % local_ == 0 && first_ >= 0 && first_ % local_ == 0 && first_ < total_; }

  // Every process's `bytes` bytes at `mine`, in process order, into `all` (instances x
  // bytes). False if the host failed (a peer failed, or Ctrl-C).
  bool gather(const HostInterface &host, const void *mine, int64_t bytes, void *all) const {
    PeerCall call{PEER_GATHER, static_cast<const uint8_t *>(mine), &bytes, static_cast<uint8_t *>(all), nullptr};
    return host.call(host.ctx, HOST_PEERS, PEER_GATHER, reinterpret_cast<uint8_t *>(&call), 0, 0) == 0;
  }
  bool copy(const HostInterface &host, int64_t table, int64_t map) const {
    PeerCall call{PEER_COPY, nullptr, nullptr, nullptr, nullptr, table, map};
    return host.call(host.ctx, HOST_PEERS, PEER_COPY, reinterpret_cast<uint8_t *>(&call), 0, 0) == 0;
  }
  bool exchange(const HostInterface &host, const std::vector<uint8_t> &send, const std::vector<int64_t> &send_bytes,
                std::vector<uint8_t> &recv, const std::vector<int64_t> &recv_bytes) const {
    PeerCall call{PEER_EXCHANGE, send.data(), send_bytes.data(), recv.data(), recv_bytes.data()};
    return host.call(host.ctx, HOST_PEERS, PEER_EXCHANGE, reinterpret_cast<uint8_t *>(&call), 0, 0) == 0;
  }

 private:
  int64_t total_, first_, local_;
};

}  // namespace popsim
