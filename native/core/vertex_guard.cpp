#include "core/vertex_guard.hpp"

#include <pthread.h>
#include <semaphore.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <mutex>
#include <new>
#include <thread>
#include <type_traits>

namespace popsim {

namespace {

// One per thread that runs vertex code: the stop flag of the run whose vertex code it is
// inside (nullptr: outside vertex code), and the thread, for the stopper to signal.
struct alignas(64) Slot {  // a cache line each: threads write their own on every vertex
  std::atomic<const volatile int32_t *> inside{nullptr};
  pthread_t thread{};
  bool used = false;  // guarded by g_slots_mutex
};
constexpr int kMaxSlots = 1024;
Slot g_slots[kMaxSlots];
std::mutex g_slots_mutex;  // claiming and releasing slots; held by the stopper while it signals

// The stopper: a thread that waits on g_wake (posted from signal handlers too).
sem_t g_wake;
std::atomic<bool> g_started{false};
std::mutex g_start_mutex;

thread_local VertexGuard t_guard
#if defined(__GNUC__)
    __attribute__((tls_model("initial-exec")))  // read in signal handlers: never allocates
#endif
    ;
static_assert(std::is_trivially_destructible<VertexGuard>::value, "a thread's guard is read by signal handlers");

// Frees what prepare() set up when its thread ends: the slot, and the alternate signal
// stack if popsim installed it.
struct ThreadResources {
  Slot *slot = nullptr;
  void *alt_stack = nullptr;
  size_t alt_bytes = 0;
  ~ThreadResources() {
    if (alt_stack) {
      stack_t current;
      if (sigaltstack(nullptr, &current) == 0 && current.ss_sp == alt_stack) {
        stack_t off{};
        off.ss_flags = SS_DISABLE;
        sigaltstack(&off, nullptr);
      }
      munmap(alt_stack, alt_bytes);
    }
    if (slot) {
      std::lock_guard<std::mutex> lock(g_slots_mutex);
      slot->inside.store(nullptr);
      slot->used = false;
    }
  }
};
thread_local ThreadResources t_resources;

void sleep_ms(long ms) {
  timespec t{0, ms * 1000000L};
  while (nanosleep(&t, &t) != 0) {
  }
}

// Signals every thread inside vertex code of a stopped run, until none is left (a thread
// can enter a vertex just after its run was stopped, before it looks at the flag).
void stopper_loop() {
  for (;;) {
    while (sem_wait(&g_wake) != 0) {
    }
    for (bool any = true; any;) {
      any = false;
      {
        std::lock_guard<std::mutex> lock(g_slots_mutex);  // a registered thread has not exited
        for (Slot &s : g_slots) {
          const volatile int32_t *stop = s.inside.load();
          if (s.used && stop && *stop) {
            pthread_kill(s.thread, kStopSignal);
            any = true;
          }
        }
      }
      if (any) sleep_ms(5);
    }
  }
}

void start_stopper() {
  sem_init(&g_wake, 0, 0);
  std::thread(stopper_loop).detach();
}

// fork(): the child has only the thread that forked, so it forgets the others' slots and
// starts a stopper of its own at its first run.
void before_fork() { g_slots_mutex.lock(); }
void after_fork_parent() { g_slots_mutex.unlock(); }
void after_fork_child() {
  new (&g_slots_mutex) std::mutex;
  new (&g_start_mutex) std::mutex;
  const pthread_t self = pthread_self();
  for (Slot &s : g_slots) {
    if (s.used && pthread_equal(s.thread, self)) continue;
    s.used = false;
    s.inside.store(nullptr);
  }
  g_started.store(false);
}

}  // namespace

VertexGuard &vertex_guard() { return t_guard; }

bool VertexGuard::prepare() {
  if (prepared_) return slot_ != nullptr;
  prepared_ = true;
  ThreadResources &res = t_resources;
  // An alternate signal stack, unless the thread has one (Python's faulthandler installs
  // one): the fault handler must run when the fault is a stack overflow.
  stack_t current;
  if (sigaltstack(nullptr, &current) == 0 && (current.ss_flags & SS_DISABLE)) {
    const size_t bytes = 64 * 1024 + static_cast<size_t>(sysconf(_SC_SIGSTKSZ) > 0 ? sysconf(_SC_SIGSTKSZ) : 0);
    void *p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p != MAP_FAILED) {
      stack_t ss{};
      ss.ss_sp = p;
      ss.ss_size = bytes;
      if (sigaltstack(&ss, nullptr) == 0) {
        res.alt_stack = p;
        res.alt_bytes = bytes;
      } else {
        munmap(p, bytes);
      }
    }
  }
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) == 0) {
    void *low = nullptr;
    size_t size = 0;
    if (pthread_attr_getstack(&attr, &low, &size) == 0) stack_low_ = reinterpret_cast<uintptr_t>(low);
    pthread_attr_destroy(&attr);
  }
  std::lock_guard<std::mutex> lock(g_slots_mutex);
  for (Slot &s : g_slots) {
    if (s.used) continue;
    s.used = true;
    s.thread = pthread_self();
    s.inside.store(nullptr);
    res.slot = &s;
    slot_ = &s.inside;
    break;
  }
  return slot_ != nullptr;
}

void VertexGuard::recover(int sig, const siginfo_t *info) {
  if (!armed || !slot_) return;
  const volatile int32_t *stop = slot_->load(std::memory_order_relaxed);
  if (!stop) return;  // not inside vertex code: not ours to handle
  if (sig == kStopSignal) {
    if (!*stop) return;
    fault = VertexFault{};
  } else {
    if (info == nullptr || info->si_code <= 0) return;  // sent by someone, not a fault
    const uintptr_t address = sig == SIGSEGV || sig == SIGBUS ? reinterpret_cast<uintptr_t>(info->si_addr) : 0;
    // A stack overflow faults just below the stack (in its guard page, or further down
    // for a big frame).
    const bool overflow = address && stack_low_ && address < stack_low_ + 4096 && address + (1u << 20) >= stack_low_;
    fault = VertexFault{sig, address, overflow};
  }
  slot_->store(nullptr, std::memory_order_relaxed);
  armed = 0;
  // The jump skips the handler's return, which would unblock the signal.
  sigset_t handled;
  sigemptyset(&handled);
  sigaddset(&handled, sig);
  pthread_sigmask(SIG_UNBLOCK, &handled, nullptr);
  siglongjmp(recovery, 1);
}

void stop_vertex_code() {
  if (!g_started.load(std::memory_order_acquire)) return;  // no run has started: no vertex code to stop
  int waiting = 0;
  // One wake-up is enough: the stopper keeps signalling until no thread is left inside.
  if (sem_getvalue(&g_wake, &waiting) == 0 && waiting == 0) sem_post(&g_wake);
}

void install_vertex_stopper() {
  if (g_started.load(std::memory_order_acquire)) return;
  std::lock_guard<std::mutex> lock(g_start_mutex);
  if (g_started.load()) return;
  static bool fork_handlers = false;
  if (!fork_handlers) fork_handlers = pthread_atfork(before_fork, after_fork_parent, after_fork_child) == 0;
  start_stopper();
  g_started.store(true, std::memory_order_release);
}

}  // namespace popsim
