// A fixed pool of threads running parallel-for loops over independent items (tiles).
// The calling thread takes part; items are claimed in chunks from an atomic counter,
// so the work split varies from run to run but every item runs exactly once.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace popsim {

class ThreadPool {
 public:
  // Throws std::runtime_error, with no thread left running, if the host cannot start them.
  explicit ThreadPool(unsigned num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool &) = delete;
  ThreadPool &operator=(const ThreadPool &) = delete;

  unsigned size() const { return static_cast<unsigned>(workers_.size()) + 1; }
  // Runs fn(i) for every i in [0, n); returns when all are done.
  void parallel_for(int64_t n, const std::function<void(int64_t)> &fn);

 private:
  void stop();
  void worker_loop();
  void run_items();

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable start_cv_, done_cv_;
  const std::function<void(int64_t)> *job_ = nullptr;
  int64_t job_size_ = 0;
  int64_t chunk_ = 1;
  std::atomic<int64_t> next_{0};
  uint64_t generation_ = 0;
  unsigned busy_ = 0;
  bool stop_ = false;
};

}  // namespace popsim
