#include "core/thread_pool.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <system_error>

namespace popsim {

ThreadPool::ThreadPool(unsigned num_threads) {
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

void ThreadPool::run_items() {
  for (;;) {
    const int64_t begin = next_.fetch_add(chunk_, std::memory_order_relaxed);
    if (begin >= job_size_) return;
    const int64_t end = std::min(job_size_, begin + chunk_);
    for (int64_t i = begin; i < end; ++i) (*job_)(i);
  }
}

void ThreadPool::worker_loop() {
  uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      start_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
    }
    run_items();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (--busy_ == 0) done_cv_.notify_one();
    }
  }
}

void ThreadPool::parallel_for(int64_t n, const std::function<void(int64_t)> &fn) {
  if (n <= 0) return;
  if (workers_.empty() || n == 1) {
    for (int64_t i = 0; i < n; ++i) fn(i);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = &fn;
    job_size_ = n;
    // Small chunks balance uneven tiles; enough of them keeps the counter cool.
    chunk_ = std::max<int64_t>(1, n / (static_cast<int64_t>(size()) * 16));
    next_.store(0, std::memory_order_relaxed);
    busy_ = static_cast<unsigned>(workers_.size());
    ++generation_;
  }
  start_cv_.notify_all();
  run_items();
  std::unique_lock<std::mutex> lock(mutex_);
  done_cv_.wait(lock, [&] { return busy_ == 0; });
  job_ = nullptr;
}

}  // namespace popsim
