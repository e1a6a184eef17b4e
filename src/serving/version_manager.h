// Finds, loads and swaps serving versions.
//
// Numbered mode (--model-base DIR): DIR/N/ folders written by
// model::WriteServingVersion. A folder is a candidate once its READY marker
// exists; the policy picks which candidates to serve. Loading happens on the
// manager's own thread; the new set of versions is published only when every
// chosen version has loaded, so requests keep going to the old ones until
// then, and an old version is freed when its last in-flight request ends. A
// version that fails to load is logged and skipped (and retried only when
// its marker changes); the versions already served stay.
//
// Flat mode (-m MODELSET): the model set's models/model*.tarn are one
// version. When their sizes or modification times change and then stay the
// same for one poll interval, they are loaded as the next version number
// (1, 2, ... within this server's life).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "serving/metrics.h"
#include "serving/servable.h"

namespace tarn::serving {

struct VersionPolicy {
  enum class Kind { kLatest, kSpecific };
  Kind kind = Kind::kLatest;
  int latest = 1;                 // kLatest: serve the newest N loadable versions
  std::vector<int64_t> specific;  // kSpecific: exactly these versions (when loadable)

  // "latest", "latest:N", "specific:3,5" (or just "3,5").
  static Result<VersionPolicy> Parse(const std::string& text);
  std::string ToString() const;
};

// The versions served at one moment, newest first. Immutable once published.
struct ServingState {
  std::vector<std::shared_ptr<const Servable>> versions;

  const Servable* newest() const { return versions.empty() ? nullptr : versions[0].get(); }
  const Servable* Find(int64_t version) const;
};

struct VersionStatus {
  int64_t version = 0;
  std::string state;  // "AVAILABLE", "LOADING", "END" (failed or unloaded)
  std::string error;  // why it failed, for "END"
};

class VersionMirror;

class VersionManager {
 public:
  struct Options {
    std::string base_dir;  // numbered mode: the base folder; flat mode: models/
    // Numbered mode from a remote base (hdfs://...): each poll first copies its wanted
    // versions into base_dir, the local cache (version_mirror.h).
    std::string remote_base;
    bool flat = false;
    VersionPolicy policy;
    int poll_interval_ms = 1000;
    BatchOptions batch;
    ServingMetrics* metrics = nullptr;  // may be null
  };

  explicit VersionManager(Options options);
  ~VersionManager();
  VersionManager(const VersionManager&) = delete;
  VersionManager& operator=(const VersionManager&) = delete;

  // One scan and load, on the calling thread.
  void PollOnce();
  // Polls every poll_interval_ms on a background thread until Stop().
  void Start();
  void Stop();

  // The current set (never null; may be empty).
  std::shared_ptr<const ServingState> state() const;
  // Loaded, loading and failed versions, newest first (for GET /v1/models/x).
  std::vector<VersionStatus> Statuses() const;
  const Options& options() const { return options_; }

 private:
  void PollNumbered();
  void PollFlat();
  void WarnAboutLayout();
  void Publish(std::vector<std::shared_ptr<const Servable>> versions);
  Result<std::shared_ptr<Servable>> LoadVersion(int64_t version,
                                                const std::vector<std::string>& paths);

  Options options_;
  std::unique_ptr<VersionMirror> mirror_;  // with a remote base
  mutable std::mutex state_mutex_;
  std::shared_ptr<const ServingState> state_;
  // Versions that failed, with the marker signature they failed with.
  std::map<int64_t, std::pair<std::string, std::string>> failed_;  // version -> (sig, error)
  int64_t loading_ = 0;  // the version being loaded (0: none); guarded by state_mutex_
  std::string last_scan_error_;
  std::set<std::string> warned_names_;
  // Flat mode.
  std::string flat_loaded_sig_, flat_pending_sig_, flat_failed_sig_;
  int64_t flat_next_version_ = 1;

  std::thread thread_;
  std::mutex stop_mutex_;
  std::condition_variable stop_cv_;
  bool stop_ = false;
};

}  // namespace tarn::serving
