#include "core/run_signals.hpp"

#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <mutex>

#include "core/compute_set.hpp"
#include "core/vertex_guard.hpp"

namespace popsim {

namespace {

volatile int32_t g_interrupt = 0;              // read by vertex code, set by on_sigint
std::atomic<uint64_t> g_sigints{0};            // SIGINTs that arrived during runs
std::atomic<int> g_active{0};                  // runs in progress
constexpr int kMaxStopFlags = 256;             // runs at once whose stop flag SIGINT sets
std::atomic<volatile int32_t *> g_stop_flags[kMaxStopFlags];
static_assert(std::atomic<uint64_t>::is_always_lock_free && std::atomic<int>::is_always_lock_free,
              "the signal handlers need lock-free atomics");

constexpr int kFatal[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
constexpr int kNumFatal = sizeof(kFatal) / sizeof(kFatal[0]);

// What the handlers replaced; written (under g_mutex) before a handler is installed.
std::mutex g_mutex;
struct sigaction g_prev_int;
struct sigaction g_prev_fatal[kNumFatal];
struct sigaction g_prev_stop;
bool g_fatal_installed = false;

thread_local RunningVertex t_running
#if defined(__GNUC__)
    // Initial-exec: reading it in a signal handler never allocates.
    __attribute__((tls_model("initial-exec")))
#endif
    ;

bool is_handler(const struct sigaction &a, void (*fn)(int, siginfo_t *, void *)) {
  return (a.sa_flags & SA_SIGINFO) && a.sa_sigaction == fn;
}

// Call the disposition a handler replaced, as if it had received the signal itself.
// Returns false for the default action (the caller restores and re-delivers it).
bool forward(const struct sigaction &prev, int sig, siginfo_t *info, void *context) {
  if (prev.sa_flags & SA_SIGINFO) {
    if (prev.sa_sigaction == nullptr) return false;
    prev.sa_sigaction(sig, info, context);
    return true;
  }
  if (prev.sa_handler == SIG_DFL) return false;
  if (prev.sa_handler != SIG_IGN && prev.sa_handler != nullptr) prev.sa_handler(sig);
  return true;
}

void on_sigint(int sig, siginfo_t *info, void *context) {
  if (g_active.load(std::memory_order_relaxed) > 0) {
    g_interrupt = 1;
    g_sigints.fetch_add(1, std::memory_order_relaxed);
    for (auto &slot : g_stop_flags) {
      volatile int32_t *flag = slot.load(std::memory_order_relaxed);
      if (flag) *flag = 1;
    }
    stop_vertex_code();  // and vertex code that does not poll them
  }
  // Python's handler only sets its own flag (async-signal-safe) and raises
  // KeyboardInterrupt once the interpreter runs again.
  forward(g_prev_int, sig, info, context);
}

// Appends to a fixed buffer: nothing here may allocate or lock.
struct Text {
  char buf[1024];
  size_t n = 0;
  void add(const char *s) {
    while (*s && n < sizeof(buf) - 1) buf[n++] = *s++;
  }
  void add(int64_t v) {
    char digits[24];
    int k = 0;
    const bool negative = v < 0;
    uint64_t u = negative ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
    do {
      digits[k++] = static_cast<char>('0' + u % 10);
      u /= 10;
    } while (u);
    if (negative) add("-");
    while (k && n < sizeof(buf) - 1) buf[n++] = digits[--k];
  }
};

const char *signal_name(int sig) {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV (invalid memory access)";
    case SIGBUS: return "SIGBUS (bus error)";
    case SIGFPE: return "SIGFPE (arithmetic error, e.g. integer division by zero)";
    case SIGILL: return "SIGILL (illegal instruction)";
    case SIGABRT: return "SIGABRT (abort)";
    default: return "a fatal signal";
  }
}

void report_running_vertex(int sig) {
  const RunningVertex &r = t_running;
  if (r.engine == nullptr) return;  // not in vertex code: nothing to add
  Text t;
  t.add("\npopsim: ");
  t.add(signal_name(sig));
  t.add(" in vertex '");
  t.add(r.engine->vertex_type_name(r.vertex));
  t.add("' on tile ");
  t.add(r.engine->vertex_tile(r.vertex));
  t.add(" in compute set '");
  t.add(r.engine->compute_set_name(r.compute_set));
  t.add("': the vertex's code crashed and the process stops, as on Poplar's IPUModel. Out-of-range "
        "field indices are caught with POPSIM_CHECKED_CODELETS=1.\n");
  ssize_t ignored = write(STDERR_FILENO, t.buf, t.n);
  (void)ignored;
}

void on_fatal(int sig, siginfo_t *info, void *context) {
  const int saved_errno = errno;
  // A fault in guarded vertex code ends the vertex (a jump, no return). Not abort(): it
  // holds glibc's abort lock, and a codelet's failed assert() ends the process as before.
  if (sig != SIGABRT) vertex_guard().recover(sig, info);
  report_running_vertex(sig);
  for (int k = 0; k < kNumFatal; ++k) {
    if (kFatal[k] != sig || forward(g_prev_fatal[k], sig, info, context)) continue;
    // The default action: restore it and deliver the signal again. A fault recurs when the
    // instruction runs again, with its own siginfo; a sent signal (abort, kill) is resent.
    sigaction(sig, &g_prev_fatal[k], nullptr);
    if (sig == SIGABRT || info == nullptr || info->si_code <= 0) raise(sig);
  }
  errno = saved_errno;
}

// kStopSignal: jumps out of vertex code of a stopped run (vertex_guard.hpp); any other
// delivery goes to the disposition it replaced.
void on_stop_signal(int sig, siginfo_t *info, void *context) {
  vertex_guard().recover(sig, info);
  forward(g_prev_stop, sig, info, context);  // (the default action of SIGURG is to ignore it)
}

struct sigaction handler_action(void (*fn)(int, siginfo_t *, void *), int extra_flags) {
  struct sigaction a;
  memset(&a, 0, sizeof a);
  a.sa_sigaction = fn;
  a.sa_flags = SA_SIGINFO | SA_ONSTACK | extra_flags;
  sigemptyset(&a.sa_mask);
  return a;
}

// Called at the start of every run, under g_mutex. The fatal-signal reporters are
// installed once (they pass signals on untouched while no vertex runs). The SIGINT
// handler is checked each run, since Python code may have replaced it since: it is
// (re)installed over a handler someone installed, never over "ignore" or "default".
void install() {
  install_vertex_stopper();
  struct sigaction current;
  if (sigaction(SIGINT, nullptr, &current) == 0 && !is_handler(current, on_sigint) &&
      (current.sa_flags & SA_SIGINFO ? current.sa_sigaction != nullptr
                                     : current.sa_handler != SIG_IGN && current.sa_handler != SIG_DFL)) {
    g_prev_int = current;
    const struct sigaction mine = handler_action(on_sigint, current.sa_flags & SA_RESTART);
    sigaction(SIGINT, &mine, nullptr);
  }
  if (g_fatal_installed) return;
  g_fatal_installed = true;
  if (sigaction(kStopSignal, nullptr, &g_prev_stop) == 0 && !is_handler(g_prev_stop, on_stop_signal)) {
    const struct sigaction mine = handler_action(on_stop_signal, SA_RESTART);
    sigaction(kStopSignal, &mine, nullptr);
  }
  for (int k = 0; k < kNumFatal; ++k) {
    if (sigaction(kFatal[k], nullptr, &g_prev_fatal[k]) != 0 || is_handler(g_prev_fatal[k], on_fatal)) continue;
    const struct sigaction mine = handler_action(on_fatal, 0);
    sigaction(kFatal[k], &mine, nullptr);
  }
}

}  // namespace

const volatile int32_t *interrupt_flag() { return &g_interrupt; }

RunningVertex &running_vertex() { return t_running; }

RunSignals::RunSignals(volatile int32_t *stop) {
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    install();
  }
  for (int i = 0; stop && i < kMaxStopFlags && slot_ < 0; ++i) {
    volatile int32_t *empty = nullptr;
    if (g_stop_flags[i].compare_exchange_strong(empty, stop)) slot_ = i;
  }
  if (g_active.fetch_add(1, std::memory_order_acq_rel) == 0) g_interrupt = 0;  // a fresh start
  sigints_at_start_ = g_sigints.load(std::memory_order_relaxed);
}

RunSignals::~RunSignals() {
  if (slot_ >= 0) g_stop_flags[slot_].store(nullptr);
  if (g_active.fetch_sub(1, std::memory_order_acq_rel) == 1) g_interrupt = 0;
}

bool RunSignals::interrupted() const {
  return g_interrupt != 0 || g_sigints.load(std::memory_order_relaxed) != sigints_at_start_;
}

}  // namespace popsim
