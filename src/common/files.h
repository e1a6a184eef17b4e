// Local file helpers. Everything that writes a user-visible file goes through
// AtomicFile so that a crash or a failed step never leaves a half-written file
// in place of a good one.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "common/status.h"

namespace tarn {

// Writes to "<path>.tmp.<pid>.<n>" in the same folder; Commit() flushes, fsyncs
// and renames over `path`. Destroying an uncommitted AtomicFile removes the
// temporary file and leaves `path` untouched.
class AtomicFile {
 public:
  static Result<AtomicFile> Open(const std::string& path);
  AtomicFile(AtomicFile&& other) noexcept;
  AtomicFile& operator=(AtomicFile&& other) noexcept;
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  ~AtomicFile();

  Status Write(const void* data, size_t size);
  Status Write(const std::string& s) { return Write(s.data(), s.size()); }
  // Overwrites bytes already written (e.g. a header patched at the end), then
  // continues appending at the end.
  Status WriteAt(uint64_t offset, const void* data, size_t size);
  Status Commit();
  const std::string& path() const { return path_; }
  const std::string& temp_path() const { return temp_path_; }

 private:
  AtomicFile() = default;
  void Abandon();

  std::string path_;
  std::string temp_path_;
  std::FILE* file_ = nullptr;
};

// Whole-file helpers.
Status WriteFileAtomic(const std::string& path, const std::string& contents);
Result<std::string> ReadFile(const std::string& path);

bool PathExists(const std::string& path);
bool IsDirectory(const std::string& path);
Status MakeDirs(const std::string& path);
// Removes a file or a folder tree; succeeds when it is already absent.
Status RemoveAll(const std::string& path);
// A new, empty folder at `path` that only this user may enter (mode 0700), for scratch space
// under a shared folder such as /tmp. A folder already there is this user's own leftover only
// when it is a real folder (no symlink) owned by this user: it is emptied; anything else there
// is refused (another user could have planted it to read or swap what is written).
Status MakePrivateDir(const std::string& path);
// Removes the folders named `prefix` + PID (e.g. "tmp/NormalizedData.partial-" + PID) whose
// process is gone: what an interrupted run left behind. A live PID's folder is another run's
// and stays. Returns the folders removed.
Result<std::vector<std::string>> RemoveStalePidFolders(const std::string& prefix);
// Renames `from` to `to`, replacing `to` (files or empty-or-not folders).
Status RenamePath(const std::string& from, const std::string& to);
Result<std::vector<std::string>> ListDirectory(const std::string& path);  // names, sorted
std::string JoinPath(const std::string& a, const std::string& b);
std::string DirName(const std::string& path);
std::string BaseName(const std::string& path);
// `path` if absolute, else `base`/`path`, with "./" segments dropped.
std::string ResolvePath(const std::string& base, const std::string& path);
Result<long long> FileSize(const std::string& path);
// fsyncs a folder so that a rename inside it is durable.
Status SyncDirectory(const std::string& path);

}  // namespace tarn
