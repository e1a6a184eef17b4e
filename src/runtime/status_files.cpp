#include "runtime/status_files.h"

#include "common/log.h"
#include "runtime/checkpoint.h"

namespace tarn::runtime {

StatusFiles::StatusFiles() : thread_([this] { Loop(); }) {}

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
  changed_.wait(lock, [&] { return done_ >= target; });
}

void StatusFiles::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    changed_.wait(lock, [&] { return stopping_ || !order_.empty(); });
    if (order_.empty()) return;  // stopping, and nothing left to write
    const std::string path = std::move(order_.front());
    order_.pop_front();
    auto node = queued_.extract(path);
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
