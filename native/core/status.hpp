// Status codes and the error record the core fills. Nothing throws across the
// C boundary: the binding turns a non-OK status into a Python exception.
#pragma once
#include <cstdint>

namespace popsim {

// X(name, meaning of ErrorRecord::id / a): every status, in code order. The binding
// exports them as popsim._core.Status.
#define POPSIM_STATUSES(X)                                                      \
  X(Ok, "success")                                                              \
  X(Aborted, "Abort / AbortOnCondition: id = message id")                       \
  X(StreamNotConnected, "id = stream index")                                    \
  X(HostError, "a host callback failed; the binding holds the exception")       \
  X(BadProgram, "malformed executable (a bug in lowering)")                     \
  X(CallStackOverflow, "Call nesting too deep")                                 \
  X(NotLoaded, "run before load()")                                             \
  X(VertexFailed, "a vertex returned false: id = compute set, a = vertex, replica = its replica") \
  X(ReplicasDiverge, "replicas disagree on a control-flow decision: replica = the first that differs from 0") \
  X(Stopped, "stopped from outside (Ctrl-C, or the run-time limit) between instructions")

#define POPSIM_ENUM_STATUS(name, doc) name,
enum class Status : int { POPSIM_STATUSES(POPSIM_ENUM_STATUS) };
#undef POPSIM_ENUM_STATUS

struct ErrorRecord {
  Status status = Status::Ok;
  int64_t id = -1;    // meaning depends on status
  int64_t a = -1;     // extra detail (vertex index, ...)
  int64_t pc = -1;    // instruction that failed
  int64_t step = -1;  // its step, for naming the program in messages
  int64_t replica = -1;  // the replica it concerns, where one does (streams, vertices, aborts)
  // VertexFailed: the codelet's popsim_exec error details and its return value.
  // For POPSIM_FAULT, error_field says where the fault was (FaultPlace) and error_size is
  // the faulting address (FAULT_ELSEWHERE) or its offset from the start of the replica's
  // tile memory (FAULT_BESIDE_TILE_MEMORY: negative before it, past its size after it).
  int64_t vertex_result = 0, error_kind = 0, error_field = -1, error_line = 0, error_index = 0, error_size = 0;
};

// X(name, value, meaning): where a vertex's fault was (the binding exports FaultPlace).
#define POPSIM_FAULT_PLACES(X)                                                      \
  X(FAULT_ELSEWHERE, 0, "an address outside tile memory and its guards (error_size)") \
  X(FAULT_BESIDE_TILE_MEMORY, 1, "a guard region beside the replica's tile memory")   \
  X(FAULT_STACK_OVERFLOW, 2, "below the thread's stack: the vertex recursed too deep")

#define POPSIM_ENUM_FAULT_PLACE(name, value, doc) name = value,
enum FaultPlace : int64_t { POPSIM_FAULT_PLACES(POPSIM_ENUM_FAULT_PLACE) };
#undef POPSIM_ENUM_FAULT_PLACE

}  // namespace popsim
