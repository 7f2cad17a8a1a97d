// How the core calls back into its host (the Python binding) while it runs:
// PrintTensor, stream callbacks, a periodic poll so Ctrl-C can stop a run, and the
// bytes that cross processes (peers.hpp).
#pragma once
#include <cstdint>

#include "popsim_codelet.h"

namespace popsim {

enum HostCallKind : int {
  HOST_CALLBACK = 0,         // id = host callback id (once per replica)
  HOST_STREAM_FETCH = 1,     // id = stream; fill data[0..nbytes)
  HOST_STREAM_COMPLETE = 2,  // id = stream; data[0..nbytes) holds the transfer
  HOST_POLL = 3,             // periodic: return non-zero to stop the run
  HOST_VERTEX = 4,           // id = vertex; data = HostVertexCall; nbytes = worker
  HOST_PEERS = 5,            // id = PeerOp; data = PeerCall (peers.hpp): bytes to or from other processes
};

// A vertex the host runs (interpreted mode): it fills ctx and result (1, 0 or -1, as
// the compute function of the codelet ABI returns).
struct HostVertexCall {
  popsim_exec ctx;
  int32_t result;
};

struct HostInterface {
  void *ctx = nullptr;
  // Returns 0 on success; non-zero stops the run with Status::HostError.
  // `replica`: the replica the call is about (streams, vertices, PrintTensor), else 0;
  // an index into this process's block of replicas (peers.hpp).
  int (*call)(void *ctx, int kind, int64_t id, uint8_t *data, int64_t nbytes, int64_t replica) = nullptr;
};

}  // namespace popsim
