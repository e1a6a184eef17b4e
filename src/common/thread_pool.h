// A fixed pool of worker threads and a parallel-for over an index range.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <queue>
#include <thread>
#include <vector>

namespace tarn {

// Number of threads tarn uses by default: the machine's cores, at least 1.
int DefaultThreadCount();

class ThreadPool {
 public:
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()); }
  void Submit(std::function<void()> task);
  // Blocks until every submitted task has finished.
  void Wait();

 private:
  void Loop();

  std::vector<std::thread> workers_;
  std::queue<std::function<void()>> tasks_;
  std::mutex mutex_;
  std::condition_variable task_ready_;
  std::condition_variable all_done_;
  size_t pending_ = 0;
  bool stopping_ = false;
};

// Runs fn(worker, i) for i in [0, n) on `threads` threads (the calling thread
// among them); `worker` in [0, threads) lets callers keep per-thread state
// without locks. Indexes are handed out dynamically, in increasing order.
void ParallelFor(int threads, size_t n, const std::function<void(int worker, size_t i)>& fn);

}  // namespace tarn
