#include "runtime/status_files.h"

#include <algorithm>

#include "common/log.h"
#include "runtime/checkpoint.h"

namespace tarn::runtime {

StatusFiles::StatusFiles(Clock::duration min_interval)
    : min_interval_(min_interval), thread_([this] { Loop(); }) {}

StatusFiles::~StatusFiles() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void StatusFiles::Put(const std::string& path, std::string contents) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = queued_.find(path);
    if (it == queued_.end()) {
      order_.push_back(path);
      queued_.emplace(path, std::move(contents));
    } else {
      it->second = std::move(contents);
      ++done_;  // the older content is never written
    }
    ++put_;
  }
  changed_.notify_all();
}

void StatusFiles::Flush() {
  std::unique_lock<std::mutex> lock(mu_);
  const uint64_t target = put_;
  ++flushing_;
  changed_.notify_all();
  changed_.wait(lock, [&] { return done_ >= target; });
  --flushing_;
}

void StatusFiles::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    changed_.wait(lock, [&] { return stopping_ || !order_.empty(); });
    if (order_.empty()) return;  // stopping, and nothing left to write
    // The oldest path whose interval has passed; when none, wait for the first due.
    const auto now = Clock::now();
    auto due = [&](const std::string& p) {
      auto it = last_write_.find(p);
      return it == last_write_.end() || stopping_ || flushing_ > 0 ? Clock::time_point::min()
                                                                   : it->second + min_interval_;
    };
    auto next = std::find_if(order_.begin(), order_.end(),
                             [&](const std::string& p) { return due(p) <= now; });
    if (next == order_.end()) {
      Clock::time_point first = Clock::time_point::max();
      for (const auto& p : order_) first = std::min(first, due(p));
      changed_.wait_until(lock, first);
      continue;
    }
    const std::string path = std::move(*next);
    order_.erase(next);
    auto node = queued_.extract(path);
    last_write_[path] = now;
    lock.unlock();
    Status st = WriteWhole(path, node.mapped());
    if (!st.ok()) {
      TARN_LOG(kWarn) << "cannot write " << path << ": " << st.message();
    }
    lock.lock();
    ++done_;
    changed_.notify_all();
  }
}

}  // namespace tarn::runtime
