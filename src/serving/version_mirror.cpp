#include "serving/version_mirror.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "common/files.h"
#include "common/log.h"
#include "common/strings.h"
#include "data/file_system.h"
#include "model/serving_version.h"

namespace tarn::serving {

namespace {

constexpr const char* kFetchPrefix = ".fetch-";

}  // namespace

VersionMirror::VersionMirror(std::string remote, std::string cache_dir, VersionPolicy policy)
    : remote_(std::move(remote)), cache_dir_(std::move(cache_dir)), policy_(std::move(policy)) {}

void VersionMirror::Warn(const std::string& key, const std::string& message) {
  auto it = warned_.find(key);
  if (it != warned_.end() && it->second == message) return;
  warned_[key] = message;
  TARN_LOG(kWarn) << "serve: " << message;
}

bool VersionMirror::Fetch(int64_t v, const std::string& sig) {
  const std::string name = std::to_string(v), marker = model::kServingReadyMarker;
  const std::string from = data::ChildPath(remote_, name);
  const std::string partial = JoinPath(cache_dir_, kFetchPrefix + name);
  (void)RemoveAll(partial);
  // The marker last: files copied after it could belong to a rewrite it does not describe.
  Status s = model::CopyServingVersion(from, partial);
  if (!s.ok()) {
    (void)RemoveAll(partial);
    Warn("fetch " + name,
         "cannot fetch version " + name + " from " + remote_ + ": " + s.message() + " (retrying)");
    return false;
  }
  warned_.erase("fetch " + name);
  auto manifest = model::ReadServingVersion(partial);
  if (!manifest.ok()) {
    (void)RemoveAll(partial);
    mismatched_[v] = sig;
    TARN_LOG(kError) << "serve: version " << name << " of " << remote_
                     << " does not match its marker and is not served (fetched again when "
                     << "its marker changes): " << manifest.status().message();
    return false;
  }
  const std::string to = JoinPath(cache_dir_, name);
  (void)RemoveAll(to);  // an incomplete folder of that number
  s = RenamePath(partial, to);
  if (s.ok()) s = SyncDirectory(cache_dir_);
  if (!s.ok()) {
    (void)RemoveAll(partial);
    Warn("fetch " + name,
         "cannot place version " + name + " in " + cache_dir_ + ": " + s.message() + " (retrying)");
    return false;
  }
  mismatched_.erase(v);
  TARN_LOG(kInfo) << "serve: fetched version " << name << " of " << remote_ << " into " << to;
  return true;
}

void VersionMirror::Sync(const std::set<int64_t>& loaded) {
  auto fs = data::FileSystemFor(remote_);
  Result<std::vector<data::FileStatus>> entries =
      fs.ok() ? (*fs)->List(remote_) : Result<std::vector<data::FileStatus>>(fs.status());
  if (!entries.ok()) {
    Warn("list", "cannot list " + remote_ + ": " + entries.status().message() +
                     " (retrying; still serving what is loaded)");
    return;
  }
  if (warned_.erase("list")) {
    TARN_LOG(kInfo) << "serve: " << remote_ << " can be listed again";
  }
  if (Status made = MakeDirs(cache_dir_); !made.ok()) {
    Warn("cache", made.message());
    return;
  }
  std::vector<int64_t> remote_versions;
  for (const auto& e : *entries) {
    if (int64_t v = model::ServingVersionOfName(e.name); e.is_dir && v > 0)
      remote_versions.push_back(v);
  }
  std::sort(remote_versions.rbegin(), remote_versions.rend());
  auto cached = model::ListServingVersions(cache_dir_);
  if (!cached.ok()) {
    Warn("cache", cached.status().message());
    return;
  }
  std::set<int64_t> cached_complete;
  for (const auto& c : *cached) {
    if (c.complete) cached_complete.insert(c.version);
  }

  // Whether version v is in the cache, fetching it when it is complete remotely.
  auto have = [&](int64_t v) {
    if (cached_complete.count(v)) return true;
    const std::string marker =
        data::ChildPath(data::ChildPath(remote_, std::to_string(v)), model::kServingReadyMarker);
    auto st = (*fs)->Stat(marker);
    if (!st.ok()) {
      // No marker: the version is being written. Anything else is retried.
      if (st.status().code() != StatusCode::kNotFound) {
        Warn("stat " + std::to_string(v),
             "cannot read " + marker + ": " + st.status().message() + " (retrying)");
      }
      return false;
    }
    const std::string sig =
        std::to_string(st->length) + ":" + std::to_string(st->modification_time_ms);
    auto failed = mismatched_.find(v);
    if (failed != mismatched_.end() && failed->second == sig) return false;
    return Fetch(v, sig);
  };
  std::set<int64_t> wanted;
  if (policy_.kind == VersionPolicy::Kind::kLatest) {
    const size_t n = static_cast<size_t>(policy_.latest);
    for (int64_t v : remote_versions) {
      if (wanted.size() >= n) break;
      if (have(v)) wanted.insert(v);
    }
    // Fewer complete versions remotely (some removed there): keep the newest cached ones.
    for (auto it = cached_complete.rbegin(); it != cached_complete.rend() && wanted.size() < n;
         ++it) {
      if (!std::count(remote_versions.begin(), remote_versions.end(), *it)) wanted.insert(*it);
    }
  } else {
    for (int64_t v : policy_.specific) {
      const bool remote = std::count(remote_versions.begin(), remote_versions.end(), v) > 0;
      if ((remote && have(v)) || cached_complete.count(v)) wanted.insert(v);
    }
  }
  // Prune what the policy no longer serves (a loaded version's folder stays until unloaded),
  // and what an interrupted fetch left.
  for (const auto& c : *cached) {
    if (wanted.count(c.version) || loaded.count(c.version)) continue;
    if (RemoveAll(c.dir).ok()) {
      TARN_LOG(kInfo) << "serve: removed cached version " << c.version << " (" << c.dir << ")";
    }
  }
  if (auto names = ListDirectory(cache_dir_); names.ok()) {
    for (const auto& name : *names) {
      if (StartsWith(name, kFetchPrefix)) (void)RemoveAll(JoinPath(cache_dir_, name));
    }
  }
}

}  // namespace tarn::serving
