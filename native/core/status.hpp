// Status codes and the error record the core fills. Nothing throws across the
// C boundary: the binding turns a non-OK status into a Python exception.
#pragma once
#include <cstdint>

namespace popsim {

enum class Status : int {
  Ok = 0,
  Aborted = 1,            // Abort / AbortOnCondition: error.id = message id
  StreamNotConnected = 2, // error.id = stream index
  HostError = 3,          // a host callback failed; the binding holds the exception
  BadProgram = 4,         // malformed executable (a bug in lowering)
  CallStackOverflow = 5,  // Call nesting too deep
  NotLoaded = 6,          // run before load()
  VertexFailed = 7,       // a vertex returned false: id = compute set, a = vertex
};

struct ErrorRecord {
  Status status = Status::Ok;
  int64_t id = -1;    // meaning depends on status
  int64_t a = -1;     // extra detail (vertex index, ...)
  int64_t pc = -1;    // instruction that failed
  int64_t step = -1;  // its step, for naming the program in messages
  // VertexFailed: the codelet's popsim_exec error details and its return value.
  int64_t vertex_result = 0, error_kind = 0, error_field = -1, error_line = 0, error_index = 0, error_size = 0;
};

}  // namespace popsim
