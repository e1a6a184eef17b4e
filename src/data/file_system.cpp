#include "data/file_system.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>  // for std::sort
#include <cerrno>
#include <map>
#include <mutex>
#include <tuple>

#include "common/files.h"
#include "common/strings.h"  // for StartsWith, ToLower

namespace tarn::data {
namespace {

// ---------------------------------------------------------------------------------------------
// Local files

class LocalReadable : public ReadableFile {
 public:
  LocalReadable(std::string path, int fd, uint64_t size)
      : path_(std::move(path)), fd_(fd), size_(size) {}
  ~LocalReadable() override { ::close(fd_); }

  const std::string& path() const override { return path_; }
  uint64_t size() const override { return size_; }

  Result<size_t> Read(void* dst, size_t cap) override {
    while (true) {
      ssize_t r = ::read(fd_, dst, cap);
      if (r < 0) {
        if (errno == EINTR) continue;
        return ErrnoError("cannot read " + path_, errno);
      }
      return static_cast<size_t>(r);
    }
  }

  Status ReadAt(uint64_t offset, void* dst, size_t size) override {
    auto* out = static_cast<char*>(dst);
    size_t done = 0;
    while (done < size) {
      ssize_t r = ::pread(fd_, out + done, size - done, static_cast<off_t>(offset + done));
      if (r < 0) {
        if (errno == EINTR) continue;
        return ErrnoError("cannot read " + path_, errno);
      }
      if (r == 0) return IoError("cannot read " + path_ + ": the file shrank while being read");
      done += static_cast<size_t>(r);
    }
    return Status::Ok();
  }

  Status Seek(uint64_t offset) override {
    if (::lseek(fd_, static_cast<off_t>(offset), SEEK_SET) < 0) {
      return ErrnoError("cannot seek in " + path_, errno);
    }
    return Status::Ok();
  }

 private:
  std::string path_;
  int fd_;
  uint64_t size_;
};

class LocalWritable : public WritableFile {
 public:
  explicit LocalWritable(AtomicFile file) : file_(std::move(file)) {}
  const std::string& path() const override { return file_.path(); }
  Status Write(const void* data, size_t size) override { return file_.Write(data, size); }
  Status Commit() override { return file_.Commit(); }

 private:
  AtomicFile file_;
};

FileStatus LocalStatus(const std::string& path, const struct stat& st) {
  FileStatus s;
  s.path = path;
  s.name = BaseName(path);
  s.is_dir = S_ISDIR(st.st_mode);
  s.length = s.is_dir ? 0 : static_cast<uint64_t>(st.st_size);
  s.modification_time_ms =
      static_cast<int64_t>(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1000000;
  return s;
}

class LocalFileSystem : public FileSystem {
 public:
  std::string name() const override { return "local"; }

  Result<FileStatus> Stat(const std::string& uri) override {
    const std::string path = StripFileScheme(uri);
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) {
      const int err = errno;
      if (err == ENOENT || err == ENOTDIR) return NotFound(path + ": no such file or folder");
      return ErrnoError("cannot stat " + path, err);
    }
    return LocalStatus(path, st);
  }

  Result<std::vector<FileStatus>> List(const std::string& uri) override {
    const std::string dir = StripFileScheme(uri);
    TARN_ASSIGN_OR_RETURN(FileStatus self, Stat(dir));
    if (!self.is_dir) return InvalidArgument(dir + " is a file, not a folder");
    TARN_ASSIGN_OR_RETURN(auto names, ListDirectory(dir));
    std::vector<FileStatus> out;
    out.reserve(names.size());
    for (const auto& n : names) {
      const std::string full = JoinPath(dir, n);
      struct stat st;
      if (::stat(full.c_str(), &st) != 0) continue;  // removed meanwhile, or a dangling link
      out.push_back(LocalStatus(full, st));
    }
    return out;
  }

  Result<std::unique_ptr<ReadableFile>> OpenRead(const std::string& uri) override {
    const std::string path = StripFileScheme(uri);
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      const int err = errno;
      if (err == ENOENT) return NotFound(path + ": no such file");
      return ErrnoError("cannot open " + path, err);
    }
    struct stat st;
    if (::fstat(fd, &st) != 0) {
      const int err = errno;
      ::close(fd);
      return ErrnoError("cannot stat " + path, err);
    }
    if (S_ISDIR(st.st_mode)) {
      ::close(fd);
      return InvalidArgument(path + " is a folder, not a file");
    }
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    return std::unique_ptr<ReadableFile>(
        new LocalReadable(path, fd, static_cast<uint64_t>(st.st_size)));
  }

  Result<std::unique_ptr<WritableFile>> OpenWrite(const std::string& uri) override {
    const std::string path = StripFileScheme(uri);
    const std::string parent = DirName(path);
    if (!parent.empty()) TARN_RETURN_IF_ERROR(tarn::MakeDirs(parent));
    TARN_ASSIGN_OR_RETURN(AtomicFile f, AtomicFile::Open(path));
    return std::unique_ptr<WritableFile>(new LocalWritable(std::move(f)));
  }

  Status MakeDirs(const std::string& uri) override { return tarn::MakeDirs(StripFileScheme(uri)); }

  Status Delete(const std::string& uri, bool recursive) override {
    const std::string path = StripFileScheme(uri);
    if (recursive) return RemoveAll(path);
    if (::remove(path.c_str()) != 0 && errno != ENOENT) {
      return ErrnoError("cannot remove " + path, errno);
    }
    return Status::Ok();
  }

  Status Rename(const std::string& from, const std::string& to) override {
    return RenamePath(StripFileScheme(from), StripFileScheme(to));
  }
};

// ---------------------------------------------------------------------------------------------
// The process's configuration and file systems

struct Registry {
  std::mutex mu;
  Settings settings;                                   // as given to ConfigureFileSystems
  std::map<std::string, FileSystemFactory> factories;  // by scheme
  std::map<std::string, std::shared_ptr<FileSystem>> by_authority;  // by scheme://authority
};

Registry& GetRegistry() {
  static Registry r;
  return r;
}

}  // namespace

// ---------------------------------------------------------------------------------------------

Result<bool> FileSystem::Exists(const std::string& path) {
  auto st = Stat(path);
  if (st.ok()) return true;
  if (st.status().code() == StatusCode::kNotFound) return false;
  return st.status();
}

Result<std::string> FileSystem::ReadAll(const std::string& path) {
  TARN_ASSIGN_OR_RETURN(auto file, OpenRead(path));
  std::string out(file->size(), '\0');
  TARN_RETURN_IF_ERROR(file->ReadAt(0, out.data(), out.size()));
  return out;
}

Status FileSystem::WriteAll(const std::string& path, std::string_view contents) {
  TARN_ASSIGN_OR_RETURN(auto file, OpenWrite(path));
  TARN_RETURN_IF_ERROR(file->Write(contents.data(), contents.size()));
  return file->Commit();
}

bool PathExistsAnywhere(const std::string& path) {
  if (!IsHdfsPath(path)) return PathExists(StripFileScheme(path));
  auto fs = FileSystemFor(path);
  if (!fs.ok()) return false;
  auto exists = (*fs)->Exists(path);
  return exists.ok() && *exists;
}

bool IsHdfsPath(std::string_view path) {
  return StartsWith(path, "hdfs://") || StartsWith(path, "webhdfs://");
}

std::string StripFileScheme(std::string_view path) {
  if (StartsWith(path, "file://")) {
    std::string_view rest = path.substr(7);
    // file:///a (empty authority) or file://localhost/a
    if (StartsWith(rest, "localhost/")) rest = rest.substr(9);
    return std::string(rest);
  }
  if (StartsWith(path, "file:/")) return std::string(path.substr(5));
  return std::string(path);
}

std::string ChildPath(const std::string& dir, const std::string& name) {
  if (dir.find("://") == std::string::npos) return JoinPath(dir, name);
  if (!dir.empty() && dir.back() == '/') return dir + name;
  return dir + "/" + name;
}

void ConfigureFileSystems(const Settings& settings) {
  Registry& r = GetRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.settings = settings;
  r.by_authority.clear();
}

void RegisterFileSystem(const std::string& scheme, FileSystemFactory factory) {
  Registry& r = GetRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.factories[ToLower(scheme)] = std::move(factory);
  r.by_authority.clear();
}

Result<std::shared_ptr<FileSystem>> FileSystemFor(const std::string& path) {
  static std::shared_ptr<FileSystem> local = std::make_shared<LocalFileSystem>();
  const auto scheme_end = path.find("://");
  if (scheme_end == std::string::npos || StartsWith(path, "file:")) return local;
  const std::string scheme = ToLower(path.substr(0, scheme_end));
  const size_t auth_start = scheme_end + 3;
  const size_t auth_end = path.find('/', auth_start);
  const std::string authority = path.substr(
      auth_start, auth_end == std::string::npos ? std::string::npos : auth_end - auth_start);

  Registry& r = GetRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto factory = r.factories.find(scheme);
  if (factory == r.factories.end()) {
    if (IsHdfsPath(path)) {
      // A program that links tarn's data layer without its cluster layer.
      return FailedPrecondition(path + ": this program cannot reach HDFS (no " + scheme +
                                ":// file system is registered)");
    }
    return Unsupported("unsupported file system '" + scheme + "://' in " + path +
                       " (tarn reads local paths and hdfs://)");
  }
  const std::string key = scheme + "://" + authority;
  if (auto it = r.by_authority.find(key); it != r.by_authority.end()) return it->second;
  TARN_ASSIGN_OR_RETURN(auto fs, factory->second(key, path, r.settings));
  r.by_authority[key] = fs;
  return fs;
}

Status CopyTree(const std::string& from, const std::string& to,
                const std::function<bool(const std::string& relative)>& filter) {
  TARN_ASSIGN_OR_RETURN(auto src, FileSystemFor(from));
  TARN_ASSIGN_OR_RETURN(auto dst, FileSystemFor(to));
  TARN_ASSIGN_OR_RETURN(FileStatus top, src->Stat(from));

  // Depth-first over (source, target, relative) triples.
  std::vector<std::tuple<std::string, std::string, std::string>> stack;
  stack.emplace_back(from, to, "");
  std::vector<char> buffer(4 << 20);
  bool first = true;
  while (!stack.empty()) {
    auto [s, d, rel] = stack.back();
    stack.pop_back();
    FileStatus st;
    if (first) {
      st = top;
      first = false;
    } else {
      TARN_ASSIGN_OR_RETURN(st, src->Stat(s));
    }
    if (st.is_dir) {
      TARN_RETURN_IF_ERROR(dst->MakeDirs(d));
      TARN_ASSIGN_OR_RETURN(auto entries, src->List(s));
      for (auto it = entries.rbegin(); it != entries.rend(); ++it) {
        const std::string child_rel = rel.empty() ? it->name : rel + "/" + it->name;
        if (filter && !filter(child_rel)) continue;
        stack.emplace_back(it->path, ChildPath(d, it->name), child_rel);
      }
      continue;
    }
    TARN_ASSIGN_OR_RETURN(auto in, src->OpenRead(s));
    TARN_ASSIGN_OR_RETURN(auto out, dst->OpenWrite(d));
    while (true) {
      TARN_ASSIGN_OR_RETURN(size_t n, in->Read(buffer.data(), buffer.size()));
      if (n == 0) break;
      TARN_RETURN_IF_ERROR(out->Write(buffer.data(), n));
    }
    TARN_RETURN_IF_ERROR(out->Commit().WithContext("copying " + s + " to " + d));
  }
  return Status::Ok();
}

}  // namespace tarn::data
