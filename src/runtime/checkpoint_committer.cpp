#include "runtime/checkpoint_committer.h"

#include <algorithm>
#include <utility>

#include "common/log.h"
#include "data/file_system.h"

namespace tarn::runtime {

namespace {
// Polling a slow file system for the front checkpoint's slices: quickly at
// first (a local disk or a fast NameNode), then no more than a few times a
// second, so the waiting does not load the NameNode that is writing them.
constexpr auto kFirstPoll = std::chrono::milliseconds(5);
constexpr auto kLongestPoll = std::chrono::milliseconds(250);
}  // namespace

CheckpointCommitter::CheckpointCommitter(std::string dir, int keep,
                                         std::function<void()> before_manifest)
    : dir_(std::move(dir)),
      keep_(keep),
      before_manifest_(std::move(before_manifest)),
      thread_([this] { Loop(); }) {}

CheckpointCommitter::~CheckpointCommitter() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void CheckpointCommitter::Submit(Manifest m, std::vector<uint64_t> slice_bytes,
                                 std::string best_bytes) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back({std::move(m), std::move(slice_bytes), std::move(best_bytes)});
  }
  changed_.notify_all();
}

void CheckpointCommitter::Resumed(const Manifest& m) {
  std::lock_guard<std::mutex> lock(mu_);
  recent_best_.push_back(BestName(m));
  while (recent_best_.size() > static_cast<size_t>(keep_)) recent_best_.pop_front();
}

std::string CheckpointCommitter::BestName(const Manifest& m) {
  if (!m.best) return "";
  const size_t slash = m.best->path.find_last_of('/');
  return slash == std::string::npos ? m.best->path : m.best->path.substr(slash + 1);
}

Status CheckpointCommitter::Drain(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  const bool done = changed_.wait_for(lock, timeout, [&] { return queue_.empty(); });
  Status failed = std::exchange(failure_, Status::Ok());
  if (!failed.ok()) return failed;
  if (!done) {
    return DeadlineExceeded(
        "the checkpoint after epoch " + std::to_string(queue_.front().manifest.epoch) +
        " is not complete: " + (missing_.empty() ? std::string("its slices") : missing_) +
        " did not appear within " + std::to_string(timeout.count() / 1000) + " s");
  }
  return Status::Ok();
}

void CheckpointCommitter::Settle() {
  std::unique_lock<std::mutex> lock(mu_);
  settle_ = true;
  changed_.notify_all();
  changed_.wait(lock, [&] { return !settle_; });
}

int CheckpointCommitter::committed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return committed_;
}

std::string CheckpointCommitter::MissingSlice(const Pending& p) {
  for (size_t i = 0; i < p.manifest.slices.size(); ++i) {
    const std::string& path = p.manifest.slices[i].path;
    auto fs = data::FileSystemFor(path);
    if (!fs.ok()) return path;
    auto st = (*fs)->Stat(path);
    if (!st.ok() || st->is_dir || st->length != p.slice_bytes[i]) return path;
  }
  return "";
}

Status CheckpointCommitter::Commit(const Pending& p) {
  if (p.manifest.best && !p.best_bytes.empty()) {
    TARN_RETURN_IF_ERROR(WriteWhole(p.manifest.best->path, p.best_bytes));
  }
  if (before_manifest_) before_manifest_();
  TARN_RETURN_IF_ERROR(WriteManifest(dir_, p.manifest));
  std::set<std::string> keep;
  {
    std::lock_guard<std::mutex> lock(mu_);
    recent_best_.push_back(BestName(p.manifest));
    while (recent_best_.size() > static_cast<size_t>(keep_)) recent_best_.pop_front();
    keep.insert(recent_best_.begin(), recent_best_.end());
  }
  PruneCheckpoints(dir_, p.manifest.bag, p.manifest.epoch, keep_, keep);
  return Status::Ok();
}

void CheckpointCommitter::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  auto poll = kFirstPoll;
  while (true) {
    changed_.wait(lock, [&] { return stopping_ || settle_ || !queue_.empty(); });
    if (stopping_) return;
    if (settle_) {
      std::deque<Pending> queued = std::move(queue_);
      queue_.clear();
      lock.unlock();
      for (size_t k = 0; k < queued.size(); ++k) {
        Pending& p = queued[k];
        const std::string missing = MissingSlice(p);
        if (!missing.empty()) {
          TARN_LOG(kInfo) << "dropped the checkpoint after epoch " << p.manifest.epoch << ": "
                          << missing << " was not written";
          // A later checkpoint naming the same best file writes it instead.
          for (size_t later = k + 1; later < queued.size() && !p.best_bytes.empty(); ++later) {
            if (BestName(queued[later].manifest) == BestName(p.manifest)) {
              queued[later].best_bytes = std::move(p.best_bytes);
              p.best_bytes.clear();
            }
          }
          continue;
        }
        Status st = Commit(p);
        std::lock_guard<std::mutex> g(mu_);
        if (st.ok()) ++committed_;
        if (!st.ok() && failure_.ok()) failure_ = st;
      }
      lock.lock();
      settle_ = false;
      missing_.clear();
      poll = kFirstPoll;
      changed_.notify_all();
      continue;
    }
    // The oldest checkpoint first: manifests are committed in order. Only
    // this thread takes from the queue, and a deque's push_back leaves
    // references to its elements valid: `front` stays put while unlocked.
    const Pending& front = queue_.front();
    lock.unlock();
    std::string missing = MissingSlice(front);
    Status st = missing.empty() ? Commit(front) : Status::Ok();
    lock.lock();
    if (missing.empty()) {
      queue_.pop_front();
      if (st.ok()) ++committed_;
      if (!st.ok() && failure_.ok()) failure_ = st;
      missing_.clear();
      poll = kFirstPoll;
      changed_.notify_all();
      continue;
    }
    if (settle_ || stopping_) continue;
    missing_ = missing;
    changed_.wait_for(lock, poll, [&] { return stopping_ || settle_; });
    poll = std::min<std::chrono::milliseconds>(poll * 2, kLongestPoll);
  }
}

}  // namespace tarn::runtime
