#include "common/thread_pool.h"

#include <sched.h>

#include <algorithm>
#include <atomic>

namespace tarn {

int DefaultThreadCount() {
  // The cores this process may run on (taskset, a container's cpuset), not
  // every core of the machine.
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  if (sched_getaffinity(0, sizeof(cpus), &cpus) == 0 && CPU_COUNT(&cpus) > 0) {
    return CPU_COUNT(&cpus);
  }
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

ThreadPool::ThreadPool(int threads) {
  threads = std::max(1, threads);
  workers_.reserve(threads);
  for (int i = 0; i < threads; ++i) workers_.emplace_back([this] { Loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  task_ready_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::Submit(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    tasks_.push(std::move(task));
    ++pending_;
  }
  task_ready_.notify_one();
}

void ThreadPool::Wait() {
  std::unique_lock<std::mutex> lock(mutex_);
  all_done_.wait(lock, [this] { return pending_ == 0; });
}

void ThreadPool::Loop() {
  while (true) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      task_ready_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
      if (tasks_.empty()) return;
      task = std::move(tasks_.front());
      tasks_.pop();
    }
    task();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (--pending_ == 0) all_done_.notify_all();
    }
  }
}

namespace {
// Spins for a while, then yields the core: members must not starve the
// thread that is doing the serial part of a round on a small machine.
template <typename Ready>
void WaitUntil(Ready ready) {
  for (int i = 0; !ready(); ++i) {
    if (i > 2000) std::this_thread::yield();
  }
}
}  // namespace

SpinTeam::SpinTeam(int threads) {
  for (int m = 1; m < std::max(1, threads); ++m) members_.emplace_back([this, m] { Loop(m); });
}

SpinTeam::~SpinTeam() {
  stop_ = true;
  round_.fetch_add(1, std::memory_order_release);
  for (auto& t : members_) t.join();
}

void SpinTeam::Run(const std::function<void(int)>& fn) {
  fn_ = &fn;
  running_.store(static_cast<int>(members_.size()), std::memory_order_relaxed);
  round_.fetch_add(1, std::memory_order_release);
  fn(0);
  WaitUntil([&] { return running_.load(std::memory_order_acquire) == 0; });
}

void SpinTeam::Loop(int member) {
  uint64_t seen = 0;
  while (true) {
    WaitUntil([&] { return round_.load(std::memory_order_acquire) != seen; });
    seen = round_.load(std::memory_order_acquire);
    if (stop_) return;
    (*fn_)(member);
    running_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

void ParallelFor(int threads, size_t n, const std::function<void(int, size_t)>& fn) {
  threads = std::max(1, std::min<int>(threads, static_cast<int>(std::max<size_t>(n, 1))));
  std::atomic<size_t> next{0};
  auto run = [&](int worker) {
    for (size_t i = next.fetch_add(1); i < n; i = next.fetch_add(1)) fn(worker, i);
  };
  std::vector<std::thread> helpers;
  for (int w = 1; w < threads; ++w) helpers.emplace_back(run, w);
  run(0);
  for (auto& t : helpers) t.join();
}

}  // namespace tarn
