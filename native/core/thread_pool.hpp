// A fixed pool of threads running parallel-for loops over independent items (tiles,
// pieces of a copy table). The calling thread takes part; items are claimed in chunks
// from an atomic counter, so the work split varies from run to run but every item runs
// exactly once.
//
// Chunks shrink as the work runs out (guided scheduling: a claim takes a share of what
// is left), which balances uneven items without a claim per item. The caller returns as
// soon as every item is done: a worker the host has not scheduled yet (other load on
// the machine) does not hold it up, and finds nothing left when it wakes. A worker that
// finished a loop watches for the next one for a moment (kSpin) before it sleeps: a
// program runs compute sets back to back, and waking a sleeping thread takes longer than
// a small compute set. (Only while there are no more threads than cores: otherwise a
// watching worker would take the core from one with work to do.)
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
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
  // One parallel_for. Shared with the workers, so that one waking up after the loop
  // returned sees a finished job (next >= n) instead of a new job's counter.
  struct Job {
    const std::function<void(int64_t)> *fn;
    int64_t n;
    int64_t divisor;  // a claim takes (items left) / divisor, at least one
    std::atomic<int64_t> next{0};
    std::atomic<int64_t> done{0};
  };

  void stop();
  void worker_loop();
  void run_items(Job &job);

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable start_cv_, done_cv_;
  std::shared_ptr<Job> job_;            // the latest job, guarded by mutex_
  std::atomic<uint64_t> generation_{0};  // written under mutex_; read without it while spinning
  unsigned sleeping_ = 0;               // workers waiting on start_cv_, guarded by mutex_
  std::atomic<bool> stop_{false};
  bool spin_ = false;  // workers watch for the next loop before sleeping
};

}  // namespace popsim
