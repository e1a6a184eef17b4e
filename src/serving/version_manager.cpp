#include "serving/version_manager.h"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>

#include "common/files.h"
#include "common/log.h"
#include "common/strings.h"
#include "model/serving_version.h"
#include "serving/version_mirror.h"

namespace tarn::serving {

namespace {

// Identifies one state of a file: inode, size and modification time.
std::string FileSignature(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "";
  return std::to_string(st.st_ino) + ":" + std::to_string(st.st_size) + ":" +
         std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec);
}

}  // namespace

Result<VersionPolicy> VersionPolicy::Parse(const std::string& text) {
  VersionPolicy p;
  std::string t = ToLower(std::string(Trim(text)));
  auto bad = [&]() {
    return InvalidArgument("version policy '" + text +
                           "': use latest, latest:N (N >= 1) or specific:V1,V2,...");
  };
  if (t == "latest") return p;
  std::string list;
  if (StartsWith(t, "latest:")) {
    auto n = ParseInt(t.substr(7));
    if (!n || *n < 1 || *n > 1000) return bad();
    p.latest = static_cast<int>(*n);
    return p;
  }
  list = StartsWith(t, "specific:") ? t.substr(9) : t;
  p.kind = Kind::kSpecific;
  for (const auto& part : Split(list, ",")) {
    auto v = ParseInt(Trim(part));
    if (!v || *v < 1) return bad();
    p.specific.push_back(*v);
  }
  if (p.specific.empty()) return bad();
  std::sort(p.specific.rbegin(), p.specific.rend());
  p.specific.erase(std::unique(p.specific.begin(), p.specific.end()), p.specific.end());
  return p;
}

std::string VersionPolicy::ToString() const {
  if (kind == Kind::kLatest) return "latest:" + std::to_string(latest);
  std::string s = "specific:";
  for (size_t i = 0; i < specific.size(); ++i) {
    if (i) s += ",";
    s += std::to_string(specific[i]);
  }
  return s;
}

const Servable* ServingState::Find(int64_t version) const {
  for (const auto& v : versions)
    if (v->version() == version) return v.get();
  return nullptr;
}

VersionManager::VersionManager(Options options)
    : options_(std::move(options)), state_(std::make_shared<ServingState>()) {
  if (!options_.remote_base.empty() && !options_.flat) {
    mirror_ =
        std::make_unique<VersionMirror>(options_.remote_base, options_.base_dir, options_.policy);
  }
}

VersionManager::~VersionManager() { Stop(); }

std::shared_ptr<const ServingState> VersionManager::state() const {
  std::lock_guard<std::mutex> lock(state_mutex_);
  return state_;
}

std::vector<VersionStatus> VersionManager::Statuses() const {
  std::vector<VersionStatus> out;
  std::lock_guard<std::mutex> lock(state_mutex_);
  for (const auto& v : state_->versions) out.push_back({v->version(), "AVAILABLE", ""});
  if (loading_ > 0 && !state_->Find(loading_)) out.push_back({loading_, "LOADING", ""});
  for (const auto& [version, failure] : failed_) {
    if (!state_->Find(version)) out.push_back({version, "END", failure.second});
  }
  std::sort(out.begin(), out.end(),
            [](const VersionStatus& a, const VersionStatus& b) { return a.version > b.version; });
  return out;
}

void VersionManager::Publish(std::vector<std::shared_ptr<const Servable>> versions) {
  std::sort(versions.begin(), versions.end(),
            [](const auto& a, const auto& b) { return a->version() > b->version(); });
  auto next = std::make_shared<ServingState>();
  next->versions = std::move(versions);
  std::shared_ptr<const ServingState> previous;
  {
    std::lock_guard<std::mutex> lock(state_mutex_);
    previous = state_;
    state_ = next;
  }
  for (const auto& v : next->versions) {
    if (!previous->Find(v->version())) {
      TARN_LOG(kInfo) << "serve: now serving version " << v->version() << " (" << v->bags()
                      << (v->bags() == 1 ? " model" : " models") << ")";
    }
  }
  for (const auto& v : previous->versions) {
    if (!next->Find(v->version())) {
      TARN_LOG(kInfo) << "serve: unloaded version " << v->version();
    }
  }
  // `previous` is released here; each old version is freed when its last
  // in-flight request drops it.
}

Result<std::shared_ptr<Servable>> VersionManager::LoadVersion(
    int64_t version, const std::vector<std::string>& paths) {
  {
    std::lock_guard<std::mutex> lock(state_mutex_);
    loading_ = version;
  }
  auto t0 = std::chrono::steady_clock::now();
  auto loaded = Servable::Load(version, paths, options_.batch);
  {
    std::lock_guard<std::mutex> lock(state_mutex_);
    loading_ = 0;
  }
  if (options_.metrics) options_.metrics->RecordLoad(loaded.ok());
  if (!loaded.ok()) return loaded.status();
  if (options_.metrics) (*loaded)->set_batch_histogram(options_.metrics->batch_sizes());
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  TARN_LOG(kDebug) << "serve: loaded version " << version << " in " << ms << " ms";
  return loaded;
}

void VersionManager::PollOnce() {
  if (options_.flat) {
    PollFlat();
  } else {
    PollNumbered();
  }
  if (options_.metrics) options_.metrics->RecordPoll();
}

void VersionManager::PollNumbered() {
  if (mirror_) {
    std::set<int64_t> loaded;
    for (const auto& v : state()->versions) loaded.insert(v->version());
    mirror_->Sync(loaded);
  }
  auto listed = model::ListServingVersions(options_.base_dir);
  if (!listed.ok()) {
    if (listed.status().message() != last_scan_error_) {
      last_scan_error_ = listed.status().message();
      TARN_LOG(kWarn) << "serve: cannot scan " << options_.base_dir << ": " << last_scan_error_
                      << " (still serving what is loaded)";
    }
    return;
  }
  last_scan_error_.clear();
  WarnAboutLayout();
  std::vector<model::ServingVersionEntry> complete;
  for (const auto& e : *listed)
    if (e.complete) complete.push_back(e);
  std::sort(complete.begin(), complete.end(),
            [](const auto& a, const auto& b) { return a.version > b.version; });

  auto current = state();
  std::vector<std::shared_ptr<const Servable>> chosen;
  bool changed = false;
  // Tries one complete version: keeps it when loaded or loadable.
  auto consider = [&](const model::ServingVersionEntry& e) {
    for (const auto& v : current->versions) {
      if (v->version() == e.version) {
        chosen.push_back(v);
        return;
      }
    }
    std::string sig = FileSignature(JoinPath(e.dir, model::kServingReadyMarker));
    auto failed = failed_.find(e.version);
    if (failed != failed_.end() && failed->second.first == sig) return;  // failed before
    Status s;
    auto manifest = model::ReadServingVersion(e.dir);
    if (manifest.ok()) {
      auto loaded = LoadVersion(e.version, manifest->model_paths);
      if (loaded.ok()) {
        chosen.push_back(std::move(*loaded));
        changed = true;
        std::lock_guard<std::mutex> lock(state_mutex_);
        failed_.erase(e.version);
        return;
      }
      s = loaded.status();
    } else {
      s = manifest.status();
    }
    TARN_LOG(kError) << "serve: version " << e.version << " (" << e.dir
                     << ") failed to load and is skipped: " << s.message();
    std::lock_guard<std::mutex> lock(state_mutex_);
    failed_[e.version] = {sig, s.message()};
  };
  if (options_.policy.kind == VersionPolicy::Kind::kLatest) {
    for (const auto& e : complete) {
      if (static_cast<int>(chosen.size()) >= options_.policy.latest) break;
      consider(e);
    }
  } else {
    for (int64_t want : options_.policy.specific) {
      for (const auto& e : complete)
        if (e.version == want) consider(e);
    }
  }
  // Forget failures of folders that are gone.
  {
    std::lock_guard<std::mutex> lock(state_mutex_);
    for (auto it = failed_.begin(); it != failed_.end();) {
      bool present = std::any_of(complete.begin(), complete.end(),
                                 [&](const auto& e) { return e.version == it->first; });
      it = present ? std::next(it) : failed_.erase(it);
    }
  }
  if (!changed && chosen.size() == current->versions.size()) return;
  if (chosen.empty() && !current->versions.empty()) {
    // Every served version disappeared from disk: keep serving them rather
    // than answering nothing (a base folder being replaced, an NFS hiccup).
    TARN_LOG(kWarn) << "serve: no loadable version under " << options_.base_dir
                    << "; still serving version " << current->versions[0]->version();
    return;
  }
  Publish(std::move(chosen));
}

void VersionManager::WarnAboutLayout() {
  // TF Serving's users most often point at a version folder itself, or name
  // versions "v1": say so once, instead of silently serving nothing.
  auto names = ListDirectory(options_.base_dir);
  if (!names.ok()) return;
  for (const auto& name : *names) {
    if (warned_names_.count(name)) continue;
    const std::string path = JoinPath(options_.base_dir, name);
    bool numeric = !name.empty() && name.find_first_not_of("0123456789") == std::string::npos;
    if (name == model::kServingReadyMarker || (EndsWith(name, ".tarn") && !IsDirectory(path))) {
      warned_names_.insert(name);
      TARN_LOG(kWarn) << "serve: " << path << " is a version's file: --model-base names the "
                      << "folder that holds the numbered version folders (e.g. the parent of "
                      << options_.base_dir << ")";
    } else if (IsDirectory(path) && !numeric && name[0] != '.') {
      warned_names_.insert(name);
      TARN_LOG(kWarn) << "serve: ignoring " << path
                      << ": version folders are named by positive integers (1, 2, ...)";
    }
  }
}

void VersionManager::PollFlat() {
  auto files = model::ListModelFiles(options_.base_dir);
  if (!files.ok()) {
    if (files.status().message() != last_scan_error_) {
      last_scan_error_ = files.status().message();
      TARN_LOG(kWarn) << "serve: " << last_scan_error_;
    }
    return;
  }
  last_scan_error_.clear();
  std::string sig;
  for (const auto& f : *files) sig += f + "=" + FileSignature(f) + ";";
  if (sig == flat_loaded_sig_ || sig == flat_failed_sig_) return;
  bool first = state()->versions.empty() && flat_loaded_sig_.empty();
  if (!first && sig != flat_pending_sig_) {
    // Changed since the last poll: wait one interval for the writer to finish.
    flat_pending_sig_ = sig;
    return;
  }
  int64_t version = flat_next_version_;
  auto loaded = LoadVersion(version, *files);
  std::string after;
  for (const auto& f : *files) after += f + "=" + FileSignature(f) + ";";
  if (after != sig) {
    flat_pending_sig_ = after;  // rewritten while loading: try again later
    return;
  }
  if (!loaded.ok()) {
    TARN_LOG(kError) << "serve: the models in " << options_.base_dir
                     << " failed to load and are skipped: " << loaded.status().message();
    flat_failed_sig_ = sig;
    std::lock_guard<std::mutex> lock(state_mutex_);
    failed_[version] = {sig, loaded.status().message()};
    ++flat_next_version_;
    return;
  }
  ++flat_next_version_;
  flat_loaded_sig_ = sig;
  {
    std::lock_guard<std::mutex> lock(state_mutex_);
    failed_.clear();
  }
  Publish({std::move(*loaded)});
}

void VersionManager::Start() {
  if (thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(stop_mutex_);
    stop_ = false;
  }
  thread_ = std::thread([this] {
    std::unique_lock<std::mutex> lock(stop_mutex_);
    while (!stop_) {
      if (stop_cv_.wait_for(lock, std::chrono::milliseconds(options_.poll_interval_ms),
                            [this] { return stop_; })) {
        break;
      }
      lock.unlock();
      PollOnce();
      lock.lock();
    }
  });
}

void VersionManager::Stop() {
  {
    std::lock_guard<std::mutex> lock(stop_mutex_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

}  // namespace tarn::serving
