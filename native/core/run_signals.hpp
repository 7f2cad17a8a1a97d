// Signals while the core runs a program.
//
// Ctrl-C: the GIL is released while the core runs, so Python's SIGINT handler cannot run
// until the run returns. While a run is in progress (a RunSignals scope is open), a SIGINT
// handler sets the interrupt flag and every running machine's stop flag (compiled vertex
// code polls it on loop back-edges through popsim_exec::interrupt; the compute engine
// checks it between vertices, the machine every so many instructions; C++ codelets,
// which poll nothing, are stopped by a signal: vertex_guard.hpp); it
// always forwards the signal to the handler it replaced (Python's), so KeyboardInterrupt
// is raised as soon as Python runs again. The binding asks interrupted() after the run.
//
// Faults in vertex code (SIGSEGV, SIGBUS, SIGFPE, SIGILL) end only the vertex: the
// handler jumps back to the compute engine (vertex_guard.hpp), and the run fails with the
// vertex's error. Fatal signals it cannot recover from (SIGABRT, e.g. a codelet's failed
// assert; a fault on a thread with no recovery point) end the process, as on Poplar's
// IPUModel, but first say which vertex was running: its type, tile and compute set,
// written with write(2) from what the compute engine recorded for the crashing thread
// (RunningVertex). The signal then goes to the disposition the handler
// replaced (faulthandler, if enabled, still prints its traceback; the default action ends
// the process). Outside vertex code the handler only passes signals on.
//
// The handlers (and the one for vertex_guard.hpp's kStopSignal) are installed by the
// first run and stay (sigaction costs a system call,
// and runs can be microseconds); each run re-checks only the SIGINT handler, once.
#pragma once
#include <cstdint>

namespace popsim {

class ComputeEngine;

// Non-zero once SIGINT arrived during a run.
const volatile int32_t *interrupt_flag();

// One run's signal handling; scopes nest and may overlap across threads. `stop` is the
// run's own stop flag (what its vertex code polls): SIGINT sets it too, in every run in
// progress, on whichever thread each runs.
class RunSignals {
 public:
  explicit RunSignals(volatile int32_t *stop = nullptr);
  ~RunSignals();
  RunSignals(const RunSignals &) = delete;
  RunSignals &operator=(const RunSignals &) = delete;

  // Whether SIGINT arrived while this scope was open (or the flag is still set).
  bool interrupted() const;

 private:
  uint64_t sigints_at_start_;
  int slot_ = -1;  // where `stop` is registered, or -1
};

// What the current thread is running, for the fatal-signal report. The compute engine
// sets it around each vertex; engine == nullptr means no vertex.
struct RunningVertex {
  const ComputeEngine *engine = nullptr;
  int64_t compute_set = -1;
  int64_t vertex = -1;
};
RunningVertex &running_vertex();

}  // namespace popsim
