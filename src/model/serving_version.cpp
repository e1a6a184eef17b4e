#include "model/serving_version.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <ctime>
#include <functional>

#include "common/files.h"
#include "common/log.h"
#include "common/strings.h"
#include "data/file_system.h"
#include "data/json_fields.h"

namespace tarn::model {

namespace {

using data::Json;

// A positive decimal version folder name ("1", "42"); 0 otherwise.

std::string UtcNow() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// Creates BASE/N: the given version, or the next free one after the newest.
Result<int64_t> CreateVersionDir(const std::string& base_dir, int64_t version) {
  TARN_RETURN_IF_ERROR(MakeDirs(base_dir));
  if (version > 0) {
    std::string dir = JoinPath(base_dir, std::to_string(version));
    if (::mkdir(dir.c_str(), 0755) != 0) {
      if (errno == EEXIST) {
        return FailedPrecondition("serving version " + dir +
                                  " already exists; versions are never overwritten (omit "
                                  "--version to write the next one)");
      }
      return ErrnoError("mkdir " + dir, errno);
    }
    return version;
  }
  TARN_ASSIGN_OR_RETURN(auto existing, ListServingVersions(base_dir));
  int64_t next = existing.empty() ? 1 : existing.back().version + 1;
  for (int attempt = 0; attempt < 1000; ++attempt, ++next) {
    std::string dir = JoinPath(base_dir, std::to_string(next));
    if (::mkdir(dir.c_str(), 0755) == 0) return next;
    if (errno != EEXIST) return ErrnoError("mkdir " + dir, errno);
    // Another writer took this number: try the next.
  }
  return Internal("no free serving version number under " + base_dir);
}

// Writes the marker last: after it exists the version may be served.
Status WriteMarker(const std::string& dir, int64_t version, const std::vector<std::string>& names,
                   const std::vector<long long>& sizes) {
  Json marker = {{"format", kServingVersionFormat},
                 {"version", version},
                 {"models", names},
                 {"bytes", sizes},
                 {"created", UtcNow()}};
  TARN_RETURN_IF_ERROR(WriteFileAtomic(JoinPath(dir, kServingReadyMarker), marker.dump(2) + "\n"));
  return SyncDirectory(dir);
}

// Runs `fill` into a fresh version folder; removes the folder when it fails.
template <typename Fill>
Result<int64_t> WriteVersion(const std::string& base_dir, int64_t version, size_t count,
                             Fill fill) {
  if (count == 0) return InvalidArgument("a serving version needs at least one model");
  TARN_ASSIGN_OR_RETURN(int64_t v, CreateVersionDir(base_dir, version));
  std::string dir = JoinPath(base_dir, std::to_string(v));
  std::vector<std::string> names;
  std::vector<long long> sizes;
  Status s;
  for (size_t i = 0; i < count && s.ok(); ++i) {
    std::string name = "model" + std::to_string(i) + ".tarn";
    std::string path = JoinPath(dir, name);
    s = fill(i, path);
    if (!s.ok()) break;
    auto size = FileSize(path);
    if (!size.ok()) {
      s = size.status();
      break;
    }
    names.push_back(name);
    sizes.push_back(*size);
  }
  if (s.ok()) s = WriteMarker(dir, v, names, sizes);
  if (s.ok()) s = SyncDirectory(base_dir);
  if (!s.ok()) {
    (void)RemoveAll(dir);
    return s.WithContext("writing serving version " + dir);
  }
  return v;
}

}  // namespace

Result<int64_t> WriteServingVersion(const std::vector<const ModelFile*>& models,
                                    const std::string& base_dir, int64_t version) {
  return WriteVersion(base_dir, version, models.size(),
                      [&](size_t i, const std::string& path) -> Status {
                        const ModelFile& m = *models[i];
                        if (!m.is_checkpoint) return m.Save(path);
                        ModelFile plain = m;  // a served model carries no optimizer state
                        plain.is_checkpoint = false;
                        plain.optimizer_state.clear();
                        plain.checkpoint = Json::object();
                        plain.epoch = 0;
                        return plain.Save(path);
                      });
}

Result<int64_t> WriteServingVersion(const ModelFile& model, const std::string& base_dir,
                                    int64_t version) {
  return WriteServingVersion(std::vector<const ModelFile*>{&model}, base_dir, version);
}

Result<int64_t> WriteServingVersionFromFiles(const std::vector<std::string>& model_paths,
                                             const std::string& base_dir, int64_t version) {
  // Check every file before creating the folder.
  std::vector<std::string> contents;
  for (const auto& p : model_paths) {
    auto loaded = ModelFile::Load(p);
    if (!loaded.ok()) return loaded.status();
    if (loaded->is_checkpoint) {
      return InvalidArgument(p + " is a training checkpoint, not a model");
    }
    TARN_ASSIGN_OR_RETURN(auto bytes, ReadFile(p));
    contents.push_back(std::move(bytes));
  }
  return WriteVersion(base_dir, version, contents.size(),
                      [&](size_t i, const std::string& path) -> Status {
                        return WriteFileAtomic(path, contents[i]);
                      });
}

namespace {

// A version for a remote base: written by `write` (into a local staging base, as version N)
// and copied into BASE/N with its marker last.
Result<int64_t> PublishRemote(
    const std::string& base, int64_t version,
    const std::function<Result<int64_t>(const std::string&, int64_t)>& write) {
  TARN_ASSIGN_OR_RETURN(auto fs, data::FileSystemFor(base));
  TARN_RETURN_IF_ERROR(fs->MakeDirs(base));
  TARN_ASSIGN_OR_RETURN(auto entries, fs->List(base));
  int64_t next = 1;
  for (const auto& e : entries) {
    if (!e.is_dir || ServingVersionOfName(e.name) <= 0) continue;
    if (version > 0 && ServingVersionOfName(e.name) == version) {
      return FailedPrecondition("serving version " + data::ChildPath(base, e.name) +
                                " already exists; versions are never overwritten (omit "
                                "--version to write the next one)");
    }
    next = std::max(next, ServingVersionOfName(e.name) + 1);
  }
  if (version > 0) next = version;
  const char* tmp = std::getenv("TMPDIR");
  static std::atomic<int> counter{0};
  const std::string staging =
      JoinPath(tmp && *tmp ? tmp : "/tmp", "tarn-serving-export-" + std::to_string(::getpid()) +
                                               "-" + std::to_string(counter++));
  TARN_RETURN_IF_ERROR(
      MakePrivateDir(staging).WithContext("staging serving version " + std::to_string(next)));
  Status s = write(staging, next).status();
  const std::string to = data::ChildPath(base, std::to_string(next));
  if (s.ok()) {
    const std::string from = JoinPath(staging, std::to_string(next));
    s = CopyServingVersion(from, to);
  }
  (void)RemoveAll(staging);
  if (!s.ok()) {
    (void)fs->Delete(to, /*recursive=*/true);  // without its marker it would never be served
    return s.WithContext("writing serving version " + to);
  }
  return next;
}

}  // namespace

Result<int64_t> PublishServingVersion(const std::vector<const ModelFile*>& models,
                                      const std::string& base) {
  if (!data::IsHdfsPath(base)) return WriteServingVersion(models, base);
  return PublishRemote(base, 0, [&](const std::string& staging, int64_t v) {
    return WriteServingVersion(models, staging, v);
  });
}

Result<int64_t> PublishServingVersionFromFiles(const std::vector<std::string>& model_paths,
                                               const std::string& base, int64_t version) {
  if (!data::IsHdfsPath(base)) return WriteServingVersionFromFiles(model_paths, base, version);
  return PublishRemote(base, version, [&](const std::string& staging, int64_t v) {
    return WriteServingVersionFromFiles(model_paths, staging, v);
  });
}

Result<std::vector<ServingVersionEntry>> ListServingVersions(const std::string& base_dir) {
  std::vector<ServingVersionEntry> out;
  if (!IsDirectory(base_dir)) {
    if (PathExists(base_dir)) return InvalidArgument(base_dir + " is not a folder");
    return out;
  }
  TARN_ASSIGN_OR_RETURN(auto names, ListDirectory(base_dir));
  for (const auto& name : names) {
    int64_t v = ServingVersionOfName(name);
    if (v <= 0) continue;
    std::string dir = JoinPath(base_dir, name);
    if (!IsDirectory(dir)) continue;
    out.push_back({v, dir, PathExists(JoinPath(dir, kServingReadyMarker))});
  }
  std::sort(out.begin(), out.end(), [](const ServingVersionEntry& a, const ServingVersionEntry& b) {
    return a.version < b.version || (a.version == b.version && a.dir < b.dir);
  });
  // "7" and "007" are the same version: keep the first.
  out.erase(std::unique(out.begin(), out.end(),
                        [](const ServingVersionEntry& a, const ServingVersionEntry& b) {
                          return a.version == b.version;
                        }),
            out.end());
  return out;
}

Result<ServingVersionManifest> ReadServingVersion(const std::string& dir) {
  const std::string marker_path = JoinPath(dir, kServingReadyMarker);
  TARN_ASSIGN_OR_RETURN(auto text, ReadFile(marker_path));
  Json marker = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (marker.is_discarded() || !marker.is_object()) {
    return Corrupt(marker_path + ": not a JSON object");
  }
  auto format = marker.find("format");
  if (format == marker.end() || !format->is_number_integer() ||
      format->get<int>() != kServingVersionFormat) {
    return Corrupt(marker_path + ": unknown \"format\" (this tarn reads format " +
                   std::to_string(kServingVersionFormat) + ")");
  }
  auto models = marker.find("models");
  auto bytes = marker.find("bytes");
  if (models == marker.end() || !models->is_array() || models->empty()) {
    return Corrupt(marker_path + ": \"models\" must be a non-empty list of file names");
  }
  if (bytes == marker.end() || !bytes->is_array() || bytes->size() != models->size()) {
    return Corrupt(marker_path + ": \"bytes\" must list one size per model");
  }
  ServingVersionManifest m;
  auto v = marker.find("version");
  m.version = (v != marker.end() && v->is_number_integer()) ? v->get<int64_t>() : 0;
  for (size_t i = 0; i < models->size(); ++i) {
    const Json& name = (*models)[i];
    const Json& size = (*bytes)[i];
    if (!name.is_string() || !size.is_number_integer()) {
      return Corrupt(marker_path + ": models[" + std::to_string(i) + "] is not a file name");
    }
    std::string n = name.get<std::string>();
    // Only plain names: a marker cannot point outside its folder.
    if (n.empty() || n == "." || n == ".." || n.find('/') != std::string::npos ||
        n.find('\0') != std::string::npos) {
      return Corrupt(marker_path + ": model file name '" + n + "' is not a plain file name");
    }
    std::string path = JoinPath(dir, n);
    auto actual = FileSize(path);
    if (!actual.ok()) return Corrupt(marker_path + ": model file " + path + " is missing");
    if (*actual != size.get<long long>()) {
      return Corrupt(path + " has " + std::to_string(*actual) + " bytes, " + marker_path +
                     " says " + std::to_string(size.get<long long>()));
    }
    m.model_paths.push_back(path);
  }
  return m;
}

Status ServingExportHook::Write(const std::vector<const ModelFile*>& models, const char* what) {
  TARN_ASSIGN_OR_RETURN(last_version_, PublishServingVersion(models, dir_));
  TARN_LOG(kInfo) << "train: serving version "
                  << data::ChildPath(dir_, std::to_string(last_version_)) << " (" << what << ")";
  return Status::Ok();
}

Status ServingExportHook::ExportDuringTraining(int bag, ModelFile current) {
  if (!enabled()) return Status::Ok();
  std::lock_guard<std::mutex> lock(mutex_);
  training_[bag] = std::move(current);
  std::map<int, const ModelFile*> by_bag;
  for (const auto& [b, f] : finished_) by_bag[b] = &f;
  for (const auto& [b, f] : training_) by_bag.emplace(b, &f);
  std::vector<const ModelFile*> models;
  for (const auto& [b, f] : by_bag) models.push_back(f);
  return Write(models, "during training");
}

void ServingExportHook::BagDone(int bag, ModelFile final_model) {
  if (!enabled()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  training_.erase(bag);
  auto at = std::find_if(finished_.begin(), finished_.end(),
                         [bag](const auto& f) { return f.first > bag; });
  finished_.emplace(at, bag, std::move(final_model));
}

Status ServingExportHook::ExportFinal() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!enabled() || finished_.empty()) return Status::Ok();
  std::vector<const ModelFile*> models;
  for (const auto& [bag, f] : finished_) models.push_back(&f);
  return Write(models, "the trained models");
}

Result<std::vector<std::string>> ListModelFiles(const std::string& models_dir) {
  std::vector<std::pair<int64_t, std::string>> found;
  if (IsDirectory(models_dir)) {
    TARN_ASSIGN_OR_RETURN(auto names, ListDirectory(models_dir));
    for (const auto& n : names) {
      if (!StartsWith(n, "model") || !EndsWith(n, ".tarn") || n.size() <= 10) continue;
      int64_t idx = ServingVersionOfName(n.substr(5, n.size() - 10));
      if (idx <= 0 && n != "model0.tarn") continue;
      found.emplace_back(idx, JoinPath(models_dir, n));
    }
  }
  if (found.empty()) {
    return FailedPrecondition("no models/model*.tarn in " + models_dir +
                              "; run 'tarn train' first");
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> out;
  for (auto& [i, p] : found) out.push_back(std::move(p));
  return out;
}

int64_t ServingVersionOfName(const std::string& name) {
  if (name.empty() || name.size() > 18) return 0;
  int64_t v = 0;
  for (char c : name) {
    if (c < '0' || c > '9') return 0;
    v = v * 10 + (c - '0');
  }
  return v;
}

Status CopyServingVersion(const std::string& from, const std::string& to) {
  TARN_RETURN_IF_ERROR(
      data::CopyTree(from, to, [](const std::string& rel) { return rel != kServingReadyMarker; }));
  return data::CopyTree(data::ChildPath(from, kServingReadyMarker),
                        data::ChildPath(to, kServingReadyMarker));
}

}  // namespace tarn::model
