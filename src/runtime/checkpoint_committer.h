// Commits the checkpoints whose slices the parameter servers write in the
// background (runtime/parameter_server.cpp): a checkpoint's manifest is
// written once every slice file is in place with the size its server gave,
// then older checkpoints are pruned (a best file that a kept manifest names
// stays). The manifest stays the commit point
// (runtime/checkpoint.h): what a roll back or a resume reads is always
// complete. On YARN each of these files is several WebHDFS requests and
// often 0.4 s; written on the epoch's path they held up every epoch.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "runtime/checkpoint.h"

namespace tarn::runtime {

class CheckpointCommitter {
 public:
  // Manifests go to `dir`; `keep` checkpoints survive each commit.
  // before_manifest (optional) runs on the committer's thread before each
  // manifest is written: the coordinator flushes its status files there, so
  // the epochs' history is in place up to every committed checkpoint.
  CheckpointCommitter(std::string dir, int keep, std::function<void()> before_manifest = {});
  ~CheckpointCommitter();  // drops what is not committed (Drain first to keep it)
  CheckpointCommitter(const CheckpointCommitter&) = delete;
  CheckpointCommitter& operator=(const CheckpointCommitter&) = delete;

  // Queues `m` (its table shares already written) for commit once slice i's
  // file has slice_bytes[i] bytes. best_bytes: m.best's file contents when
  // m is the first checkpoint to name it (empty when an earlier one did),
  // written before the manifest.
  void Submit(Manifest m, std::vector<uint64_t> slice_bytes, std::string best_bytes = {});
  // A manifest committed before this committer started (the one a job
  // resumes from): its best file is kept while it is one of the `keep`.
  void Resumed(const Manifest& m);
  // Blocks until everything submitted is committed. Fails when a manifest
  // could not be written, or a slice is still missing after `timeout`
  // (naming it); what is pending then stays queued.
  Status Drain(std::chrono::milliseconds timeout);
  // Before a roll back: commits the queued checkpoints that are complete
  // now and drops the others (a lost server's slice never comes).
  void Settle();
  // Checkpoints committed so far (for tests and the log).
  int committed() const;

 private:
  struct Pending {
    Manifest manifest;
    std::vector<uint64_t> slice_bytes;
    std::string best_bytes;
  };
  // The name of m's best file ("" without one).
  static std::string BestName(const Manifest& m);
  // The first slice of p not (yet) in place with its size, or "".
  static std::string MissingSlice(const Pending& p);
  Status Commit(const Pending& p);
  void Loop();

  const std::string dir_;
  const int keep_;
  const std::function<void()> before_manifest_;
  mutable std::mutex mu_;
  std::condition_variable changed_;
  std::deque<Pending> queue_;
  std::string missing_;  // what the front checkpoint waits for
  Status failure_;       // the first failed manifest write, until Drain reports it
  bool settle_ = false, stopping_ = false;
  int committed_ = 0;
  std::deque<std::string> recent_best_;  // BestName of the newest `keep_` commits
  std::thread thread_;
};

}  // namespace tarn::runtime
