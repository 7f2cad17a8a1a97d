#include "core/thread_pool.hpp"

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>
#include <system_error>

namespace popsim {

namespace {
// How long a worker watches for the next loop before it sleeps.
constexpr auto kSpin = std::chrono::microseconds(50);

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}
}  // namespace

ThreadPool::ThreadPool(unsigned num_threads) {
  spin_ = num_threads <= std::max(1u, std::thread::hardware_concurrency());
  try {
    for (unsigned i = 1; i < std::max(1u, num_threads); ++i) workers_.emplace_back([this] { worker_loop(); });
  } catch (const std::system_error &e) {
    // The host refused a thread: stop the ones already started (a destructor does not
    // run for a constructor that throws) and say so, rather than hang or terminate.
    const size_t started = workers_.size() + 1;
    stop();
    throw std::runtime_error("cannot start " + std::to_string(num_threads) + " threads (the host refused thread " +
                             std::to_string(started + 1) + ": " + e.what() + ")");
  }
}

ThreadPool::~ThreadPool() { stop(); }

void ThreadPool::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  start_cv_.notify_all();
  for (auto &t : workers_) t.join();
  workers_.clear();
}

void ThreadPool::run_items(Job &job) {
  for (;;) {
    int64_t begin = job.next.load(std::memory_order_relaxed), count;
    do {
      if (begin >= job.n) return;
      count = std::max<int64_t>(1, (job.n - begin) / job.divisor);
    } while (!job.next.compare_exchange_weak(begin, begin + count, std::memory_order_relaxed));
    const int64_t end = std::min(job.n, begin + count);
    for (int64_t i = begin; i < end; ++i) (*job.fn)(i);
    // The last chunk done wakes the caller (under the lock, so the wake-up is not lost
    // between its check and its wait); acq_rel publishes what fn wrote.
    if (job.done.fetch_add(end - begin, std::memory_order_acq_rel) + (end - begin) == job.n) {
      std::lock_guard<std::mutex> lock(mutex_);
      done_cv_.notify_all();
    }
  }
}

void ThreadPool::worker_loop() {
  uint64_t seen = 0;
  for (;;) {
    const auto until = std::chrono::steady_clock::now() + kSpin;
    for (unsigned k = 1; spin_ && generation_.load(std::memory_order_acquire) == seen && !stop_.load(); ++k) {
      cpu_relax();
      if (k % 64 == 0 && std::chrono::steady_clock::now() > until) break;
    }
    std::shared_ptr<Job> job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      ++sleeping_;
      start_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
      --sleeping_;
      if (stop_) return;
      seen = generation_;
      job = job_;
    }
    run_items(*job);
  }
}

void ThreadPool::parallel_for(int64_t n, const std::function<void(int64_t)> &fn) {
  if (n <= 0) return;
  if (workers_.empty() || n == 1) {
    for (int64_t i = 0; i < n; ++i) fn(i);
    return;
  }
  auto job = std::make_shared<Job>();
  job->fn = &fn;
  job->n = n;
  job->divisor = 2 * static_cast<int64_t>(size());
  bool wake;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = job;
    ++generation_;
    wake = sleeping_ > 0;
  }
  if (wake) start_cv_.notify_all();  // the others are watching generation_
  run_items(*job);
  std::unique_lock<std::mutex> lock(mutex_);
  done_cv_.wait(lock, [&] { return job->done.load(std::memory_order_acquire) == n; });
}

}  // namespace popsim
