// A local copy of a remote model base (hdfs://NN/path, webhdfs://, hdfs:/// on the
// configuration's default NameNode): the numbered serving versions that the version policy
// would serve are copied into a local cache folder, which the VersionManager then polls as a
// local base. Used by `tarn serve --model-base hdfs://...` and by the serving nodes of a YARN
// job (`tarn node --role serving`).
//
// A version is copied only when its READY marker is present remotely. Its files are read into
// CACHE/.fetch-N (a name the VersionManager ignores), the marker last, checked against the
// marker (ReadServingVersion: every named file present with its recorded size) and only then
// renamed to CACHE/N, so a half-copied or half-written version is never in the served folder.
// A copy that fails (NameNode or DataNode unreachable) is logged and retried at the next sync;
// a version whose files do not match its marker is not fetched again until the marker
// changes. Cached versions the policy no longer wants are removed, except those still loaded.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>

#include "common/status.h"
#include "serving/version_manager.h"

namespace tarn::serving {

class VersionMirror {
 public:
  VersionMirror(std::string remote, std::string cache_dir, VersionPolicy policy);

  // One pass: lists the remote base, copies the wanted versions the cache lacks and prunes
  // the cache. `loaded` are versions in memory now; their folders stay. Never fails: what
  // goes wrong is logged (once per distinct message) and retried at the next call.
  void Sync(const std::set<int64_t>& loaded);

  const std::string& remote() const { return remote_; }
  const std::string& cache_dir() const { return cache_dir_; }

 private:
  // Copies remote version `v` (marker signature `sig`) into the cache; true when it is there.
  bool Fetch(int64_t v, const std::string& sig);
  void Warn(const std::string& key, const std::string& message);

  std::string remote_, cache_dir_;
  VersionPolicy policy_;
  std::map<int64_t, std::string> mismatched_;  // version -> marker signature it failed with
  std::map<std::string, std::string> warned_;  // what -> the last message logged for it
};

}  // namespace tarn::serving
