// A fixed pool of worker threads and a parallel-for over an index range.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <queue>
#include <thread>
#include <vector>

namespace tarn {

// Number of threads tarn uses by default: the cores this process may run on
// (its CPU affinity), at least 1.
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

// A fixed team of threads that runs one function on every member, many
// times a second (e.g. once per training mini-batch): members spin briefly and
// then yield while they wait, so a round costs a few hundred nanoseconds rather
// than a thread start. The calling thread is member 0.
class SpinTeam {
 public:
  explicit SpinTeam(int threads);
  ~SpinTeam();
  SpinTeam(const SpinTeam&) = delete;
  SpinTeam& operator=(const SpinTeam&) = delete;

  int size() const { return static_cast<int>(members_.size()) + 1; }
  // Runs fn(member) on every member and returns when all have finished.
  void Run(const std::function<void(int member)>& fn);

 private:
  void Loop(int member);

  std::vector<std::thread> members_;
  const std::function<void(int)>* fn_ = nullptr;
  std::atomic<uint64_t> round_{0};
  std::atomic<int> running_{0};
  std::atomic<bool> stop_{false};
};

// Runs fn(worker, i) for i in [0, n) on `threads` threads (the calling thread
// among them); `worker` in [0, threads) lets callers keep per-thread state
// without locks. Indexes are handed out dynamically, in increasing order.
void ParallelFor(int threads, size_t n, const std::function<void(int worker, size_t i)>& fn);

}  // namespace tarn
