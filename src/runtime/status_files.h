// The coordinator's status files (cluster.json, the epoch history, the
// TensorBoard event files' copy in HDFS), written on a thread of their own.
// On YARN they live in HDFS, where one small file costs several WebHDFS
// requests and often 0.4 s (the NameNode's completeFile retry). Written on
// the coordinator's thread, under its lock, that time held up the workers'
// reports and every epoch. Files are written atomically, in the order they
// were first put; a file put again before its write began is written once,
// with the newest content, so a slow file system never falls behind. A file
// is rewritten at most once per `min_interval` (Flush and the end excepted):
// short epochs would otherwise keep the NameNode and DataNode busy, which on
// a small cluster share the CPUs that train.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <thread>

namespace tarn::runtime {

class StatusFiles {
 public:
  using Clock = std::chrono::steady_clock;

  explicit StatusFiles(Clock::duration min_interval = Clock::duration::zero());
  ~StatusFiles();  // writes what is pending first
  StatusFiles(const StatusFiles&) = delete;
  StatusFiles& operator=(const StatusFiles&) = delete;

  // Queues `contents` for `path` (any file system), replacing a queued
  // content of the same path. A failed write is logged as a warning: these
  // files report on the job, they do not steer it.
  void Put(const std::string& path, std::string contents);
  // Blocks until everything put so far is written (or has failed).
  void Flush();

 private:
  void Loop();

  const Clock::duration min_interval_;
  std::mutex mu_;
  std::condition_variable changed_;
  std::deque<std::string> order_;              // paths waiting, oldest first
  std::map<std::string, std::string> queued_;  // their newest contents
  std::map<std::string, Clock::time_point> last_write_;
  uint64_t put_ = 0, done_ = 0;  // puts made, puts written or replaced
  int flushing_ = 0;             // Flush calls waiting: no interval holds
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace tarn::runtime
