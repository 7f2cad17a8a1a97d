#include "core/run_signals.hpp"

#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <mutex>

#include "core/compute_set.hpp"

namespace popsim {

namespace {

volatile int32_t g_interrupt = 0;              // read by vertex code, set by on_sigint
std::atomic<uint64_t> g_sigints{0};            // lock-free, so the handler may touch it
static_assert(std::atomic<uint64_t>::is_always_lock_free, "the SIGINT handler needs a lock-free counter");

constexpr int kFatal[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
constexpr int kNumFatal = sizeof(kFatal) / sizeof(kFatal[0]);

std::mutex g_mutex;        // guards the fields below (never taken in a handler)
int g_active = 0;          // runs in progress
struct sigaction g_prev_int;
bool g_int_installed = false;
struct sigaction g_prev_fatal[kNumFatal];
bool g_fatal_installed[kNumFatal] = {};

thread_local RunningVertex t_running
#if defined(__GNUC__)
    // Initial-exec: reading it in a signal handler never allocates.
    __attribute__((tls_model("initial-exec")))
#endif
    ;

bool is_handler(const struct sigaction &a, void (*fn)(int, siginfo_t *, void *)) {
  return (a.sa_flags & SA_SIGINFO) && a.sa_sigaction == fn;
}

void on_sigint(int sig, siginfo_t *info, void *context) {
  g_interrupt = 1;
  g_sigints.fetch_add(1, std::memory_order_relaxed);
  // Forward to the handler we replaced: Python's only sets its own flag (async-signal-safe),
  // and raises KeyboardInterrupt once the interpreter runs again.
  const struct sigaction &prev = g_prev_int;
  if (prev.sa_flags & SA_SIGINFO) {
    if (prev.sa_sigaction) prev.sa_sigaction(sig, info, context);
  } else if (prev.sa_handler != SIG_DFL && prev.sa_handler != SIG_IGN && prev.sa_handler) {
    prev.sa_handler(sig);
  }
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

void on_fatal(int sig, siginfo_t *info, void *) {
  const int saved_errno = errno;
  report_running_vertex(sig);
  for (int k = 0; k < kNumFatal; ++k)
    if (kFatal[k] == sig) sigaction(sig, &g_prev_fatal[k], nullptr);
  // A fault re-occurs when the instruction runs again under the previous disposition, with
  // its own siginfo; a signal that was sent (abort, kill) has to be sent again.
  if (sig == SIGABRT || info == nullptr || info->si_code <= 0) raise(sig);
  errno = saved_errno;
}

void install() {
  struct sigaction current;
  if (sigaction(SIGINT, nullptr, &current) == 0 && current.sa_handler != SIG_IGN && current.sa_handler != SIG_DFL &&
      !is_handler(current, on_sigint)) {
    // Only where someone (Python) handles SIGINT: ignored stays ignored, default stays fatal.
    struct sigaction mine;
    memset(&mine, 0, sizeof mine);
    mine.sa_sigaction = on_sigint;
    mine.sa_flags = SA_SIGINFO | SA_ONSTACK | (current.sa_flags & SA_RESTART);
    sigemptyset(&mine.sa_mask);
    g_prev_int = current;
    g_int_installed = sigaction(SIGINT, &mine, nullptr) == 0;
  }
  for (int k = 0; k < kNumFatal; ++k) {
    if (sigaction(kFatal[k], nullptr, &current) != 0 || current.sa_handler == SIG_IGN ||
        is_handler(current, on_fatal))
      continue;
    struct sigaction mine;
    memset(&mine, 0, sizeof mine);
    mine.sa_sigaction = on_fatal;
    mine.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&mine.sa_mask);
    g_prev_fatal[k] = current;
    g_fatal_installed[k] = sigaction(kFatal[k], &mine, nullptr) == 0;
  }
}

// Put back what install() replaced, unless someone has installed their own since.
void uninstall() {
  struct sigaction current;
  if (g_int_installed && sigaction(SIGINT, nullptr, &current) == 0 && is_handler(current, on_sigint))
    sigaction(SIGINT, &g_prev_int, nullptr);
  g_int_installed = false;
  for (int k = 0; k < kNumFatal; ++k) {
    if (g_fatal_installed[k] && sigaction(kFatal[k], nullptr, &current) == 0 && is_handler(current, on_fatal))
      sigaction(kFatal[k], &g_prev_fatal[k], nullptr);
    g_fatal_installed[k] = false;
  }
}

}  // namespace

const volatile int32_t *interrupt_flag() { return &g_interrupt; }

RunningVertex &running_vertex() { return t_running; }

RunSignals::RunSignals() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_active++ == 0) install();
  sigints_at_start_ = g_sigints.load(std::memory_order_relaxed);
}

RunSignals::~RunSignals() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (--g_active == 0) {
    uninstall();
    g_interrupt = 0;  // the next run starts afresh
  }
}

bool RunSignals::interrupted() const {
  return g_interrupt != 0 || g_sigints.load(std::memory_order_relaxed) != sigints_at_start_;
}

}  // namespace popsim
