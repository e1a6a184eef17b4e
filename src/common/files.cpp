#include "common/files.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace tarn {
namespace fs = std::filesystem;

namespace {
std::atomic<unsigned> g_temp_counter{0};
}

Result<AtomicFile> AtomicFile::Open(const std::string& path) {
  AtomicFile f;
  f.path_ = path;
  f.temp_path_ = path + ".tmp." + std::to_string(::getpid()) + "." +
                 std::to_string(g_temp_counter.fetch_add(1));
  f.file_ = std::fopen(f.temp_path_.c_str(), "wb");
  if (!f.file_) return ErrnoError("cannot create " + f.temp_path_, errno);
  return f;
}

AtomicFile::AtomicFile(AtomicFile&& o) noexcept
    : path_(std::move(o.path_)), temp_path_(std::move(o.temp_path_)), file_(o.file_) {
  o.file_ = nullptr;
}

AtomicFile& AtomicFile::operator=(AtomicFile&& o) noexcept {
  if (this != &o) {
    Abandon();
    path_ = std::move(o.path_);
    temp_path_ = std::move(o.temp_path_);
    file_ = o.file_;
    o.file_ = nullptr;
  }
  return *this;
}

AtomicFile::~AtomicFile() { Abandon(); }

void AtomicFile::Abandon() {
  if (file_) {
    std::fclose(file_);
    file_ = nullptr;
    ::unlink(temp_path_.c_str());
  }
}

Status AtomicFile::Write(const void* data, size_t size) {
  if (!file_) return Internal("write to a closed AtomicFile " + path_);
  if (size && std::fwrite(data, 1, size, file_) != size) {
    return ErrnoError("cannot write " + temp_path_, errno);
  }
  return Status::Ok();
}

Status AtomicFile::WriteAt(uint64_t offset, const void* data, size_t size) {
  if (!file_) return Internal("write to a closed AtomicFile " + path_);
  if (::fseeko(file_, static_cast<off_t>(offset), SEEK_SET) != 0 ||
      std::fwrite(data, 1, size, file_) != size || ::fseeko(file_, 0, SEEK_END) != 0) {
    return ErrnoError("cannot write " + temp_path_, errno);
  }
  return Status::Ok();
}

Status AtomicFile::Commit() {
  if (!file_) return Internal("commit of a closed AtomicFile " + path_);
  std::FILE* f = file_;
  file_ = nullptr;
  if (std::fflush(f) != 0 || ::fsync(::fileno(f)) != 0) {
    int err = errno;
    std::fclose(f);
    ::unlink(temp_path_.c_str());
    return ErrnoError("cannot flush " + temp_path_, err);
  }
  if (std::fclose(f) != 0) {
    int err = errno;
    ::unlink(temp_path_.c_str());
    return ErrnoError("cannot close " + temp_path_, err);
  }
  if (std::rename(temp_path_.c_str(), path_.c_str()) != 0) {
    int err = errno;
    ::unlink(temp_path_.c_str());
    return ErrnoError("cannot rename " + temp_path_ + " to " + path_, err);
  }
  return SyncDirectory(DirName(path_));
}

Status WriteFileAtomic(const std::string& path, const std::string& contents) {
  TARN_ASSIGN_OR_RETURN(AtomicFile f, AtomicFile::Open(path));
  TARN_RETURN_IF_ERROR(f.Write(contents));
  return f.Commit();
}

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return ErrnoError("cannot open " + path, errno);
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return ErrnoError("cannot read " + path, errno);
  return ss.str();
}

bool PathExists(const std::string& path) {
  std::error_code ec;
  return fs::exists(path, ec);
}

bool IsDirectory(const std::string& path) {
  std::error_code ec;
  return fs::is_directory(path, ec);
}

Status MakeDirs(const std::string& path) {
  std::error_code ec;
  fs::create_directories(path, ec);
  if (ec) return IoError("cannot create folder " + path + ": " + ec.message());
  return Status::Ok();
}

Status RemoveAll(const std::string& path) {
  std::error_code ec;
  fs::remove_all(path, ec);
  if (ec) return IoError("cannot remove " + path + ": " + ec.message());
  return Status::Ok();
}

Status MakePrivateDir(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode) || st.st_uid != ::geteuid()) {
      return PermissionDenied(path +
                              " already exists and is not a folder of this user's; "
                              "remove it or choose another path");
    }
    TARN_RETURN_IF_ERROR(RemoveAll(path));
  } else if (errno != ENOENT) {
    return ErrnoError(path, errno);
  }
  if (::mkdir(path.c_str(), 0700) != 0) return ErrnoError("creating " + path, errno);
  return Status::Ok();
}

Result<std::vector<std::string>> RemoveStalePidFolders(const std::string& prefix) {
  std::vector<std::string> removed;
  const std::string dir = DirName(prefix), stem = BaseName(prefix);
  if (!IsDirectory(dir)) return removed;
  TARN_ASSIGN_OR_RETURN(auto names, ListDirectory(dir));
  for (const auto& name : names) {
    if (name.size() <= stem.size() || name.compare(0, stem.size(), stem) != 0) continue;
    const std::string pid_text = name.substr(stem.size());
    if (!std::all_of(pid_text.begin(), pid_text.end(),
                     [](char c) { return c >= '0' && c <= '9'; }) ||
        pid_text.size() > 9) {
      continue;
    }
    const pid_t pid = static_cast<pid_t>(std::stol(pid_text));
    // kill(pid, 0) probes without signalling; EPERM means alive under another user.
    if (pid <= 0 || kill(pid, 0) == 0 || errno != ESRCH) continue;
    const std::string path = JoinPath(dir, name);
    if (!RemoveAll(path).ok()) continue;  // another user's, say: the rest are still tried
    removed.push_back(path);
  }
  return removed;
}

Status RenamePath(const std::string& from, const std::string& to) {
  std::error_code ec;
  if (fs::is_directory(to, ec) && fs::is_directory(from, ec)) fs::remove_all(to, ec);
  fs::rename(from, to, ec);
  if (ec) return IoError("cannot rename " + from + " to " + to + ": " + ec.message());
  return Status::Ok();
}

Result<std::vector<std::string>> ListDirectory(const std::string& path) {
  std::error_code ec;
  std::vector<std::string> names;
  fs::directory_iterator it(path, ec);
  if (ec)
    return Status(
        ec == std::errc::no_such_file_or_directory ? StatusCode::kNotFound : StatusCode::kIoError,
        "cannot list " + path + ": " + ec.message());
  for (const auto& entry : it) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::string JoinPath(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  if (b.front() == '/') return b;
  return a.back() == '/' ? a + b : a + "/" + b;
}

std::string DirName(const std::string& path) {
  auto parent = fs::path(path).parent_path().string();
  return parent.empty() ? "." : parent;
}

std::string BaseName(const std::string& path) { return fs::path(path).filename().string(); }

std::string ResolvePath(const std::string& base, const std::string& path) {
  if (path.empty()) return path;
  if (path.front() == '/' || path.find("://") != std::string::npos) return path;
  return fs::path(JoinPath(base, path)).lexically_normal().string();
}

Result<long long> FileSize(const std::string& path) {
  std::error_code ec;
  auto size = fs::file_size(path, ec);
  if (ec) return IoError("cannot stat " + path + ": " + ec.message());
  return static_cast<long long>(size);
}

Status SyncDirectory(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) return ErrnoError("cannot open folder " + path, errno);
  ::fsync(fd);  // best effort: some file systems refuse fsync on folders
  ::close(fd);
  return Status::Ok();
}

}  // namespace tarn
