// Guarding vertex code: a fault in it, or a stop while it runs, ends the vertex, not the
// process.
//
// Vertex code is native code that popsim cannot check as it runs (C++ codelets, compiled
// Python codelets). Each thread that runs it keeps a recovery point (a sigjmp_buf, set by
// the compute engine around a group of vertices) and says when it is inside vertex code.
// Then:
//  - a synchronous fault there (SIGSEGV: an access outside tile memory, which lies between
//    guard regions (tile_memory.hpp), or past the thread's stack; SIGBUS; SIGFPE: integer
//    division by zero; SIGILL) jumps back to the recovery point, which reports the vertex
//    as failed with POPSIM_FAULT; run_signals.cpp's fatal handler asks first;
//  - a stop (Ctrl-C, the run-time limit) of a run whose vertex code does not poll its stop
//    flag (C++ codelets) is delivered as a signal (kStopSignal) to the threads inside
//    vertex code of that run, which jump back and report POPSIM_INTERRUPTED. A helper
//    thread sends it, and sends it again every few milliseconds while such a thread is
//    still inside vertex code, so a stop that raced a vertex's start is not lost.
// The handlers run on an alternate signal stack, installed for every thread that runs
// vertex code, so that a stack overflow can be handled too.
//
// What jumping out cannot undo: whatever the vertex wrote before the fault (tile memory
// it reached, its own state object). Vertex code that holds a lock or allocates when it
// is stopped (Poplar codelets do neither) could leave those held.
#pragma once
#include <setjmp.h>
#include <signal.h>

#include <atomic>
#include <cstdint>

namespace popsim {

// The signal that stops vertex code: ignored by default and used by no Python library
// (Go's runtime preempts goroutines with it for the same reason).
constexpr int kStopSignal = SIGURG;

// What a fault recorded, for the error message.
struct VertexFault {
  int signal = 0;          // the signal, or 0 for a stop
  uintptr_t address = 0;   // the faulting address (SIGSEGV, SIGBUS), else 0
  bool stack_overflow = false;
};

class VertexGuard {
 public:
  // Prepares the calling thread (its alternate signal stack and its slot in the table the
  // stopper scans); cheap after the first call. False if it could not (too many threads):
  // vertex code then runs unguarded, as before.
  bool prepare();

  // Where the thread says it is inside vertex code: it stores its run's stop flag
  // (non-null) there before the code runs, and nullptr after. (A slot of its own, or a
  // dummy if prepare() failed: the caller stores without a test.) The compute engine marks
  // a whole group of compiled vertices at once (its own code between them holds no lock
  // and allocates nothing, so it may be jumped out of too, and marking costs nothing per
  // vertex); in a group with host-run (Python) vertices, each compiled vertex alone.
  std::atomic<const volatile int32_t *> *inside() { return slot_ ? slot_ : &unguarded_; }

  // The recovery point: sigsetjmp(guard.recovery, 0) returns non-zero after a jump back.
  // Armed while `armed` is set.
  sigjmp_buf recovery;
  volatile sig_atomic_t armed = 0;
  VertexFault fault;

  // For the signal handlers: jumps to the recovery point if the thread is inside vertex
  // code and armed (for kStopSignal: only if its run's stop flag is set); returns otherwise.
  void recover(int sig, const siginfo_t *info);

 private:
  std::atomic<const volatile int32_t *> *slot_ = nullptr;
  std::atomic<const volatile int32_t *> unguarded_{nullptr};
  uintptr_t stack_low_ = 0;  // the lowest address of the thread's stack (overflow goes below it)
  bool prepared_ = false;
};

// The calling thread's guard (thread-local, readable in signal handlers).
VertexGuard &vertex_guard();

// Wakes the stopper (async-signal-safe): threads inside vertex code of a run whose stop
// flag is set get kStopSignal until they leave it.
void stop_vertex_code();

// Starts the stopper thread, once (not async-signal-safe: RunSignals calls it at the start
// of a run, and installs the kStopSignal handler, which calls VertexGuard::recover).
void install_vertex_stopper();

}  // namespace popsim
