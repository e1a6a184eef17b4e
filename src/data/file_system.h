// FileSystem: where data, model sets and models live. A plain path (or file://) is this
// machine's file system; hdfs://authority/path (or webhdfs://host:http-port/path) is HDFS,
// reached over WebHDFS (cluster/webhdfs.h) with the cluster's configuration
// (ConfigureFileSystems). data knows only local files: the cluster layer registers the hdfs://
// file systems (RegisterFileSystem), so data needs no network code.
//
// Every write is atomic: a WritableFile is visible under its name only after Commit(), in
// full; an uncommitted one leaves nothing behind (locally a temporary file renamed over the
// target; on HDFS a temporary file created, then renamed over the target).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/settings.h"
#include "common/status.h"

namespace tarn::data {

struct FileStatus {
  std::string path;  // as the file system names it (a full hdfs:// URI on HDFS)
  std::string name;  // the last component
  bool is_dir = false;
  uint64_t length = 0;               // bytes (0 for a folder)
  int64_t modification_time_ms = 0;  // milliseconds since the epoch
};

// A file opened for reading. Not thread-safe: one reader per thread.
class ReadableFile {
 public:
  virtual ~ReadableFile() = default;
  virtual const std::string& path() const = 0;
  virtual uint64_t size() const = 0;
  // Up to `cap` bytes from the current position, which moves on; 0 at the end of the file.
  virtual Result<size_t> Read(void* dst, size_t cap) = 0;
  // Exactly `size` bytes at `offset`; the position does not move. Fails when the file is
  // shorter.
  virtual Status ReadAt(uint64_t offset, void* dst, size_t size) = 0;
  virtual Status Seek(uint64_t offset) = 0;
};

// A file being written; see the atomicity above.
class WritableFile {
 public:
  virtual ~WritableFile() = default;  // abandons an uncommitted file
  virtual const std::string& path() const = 0;
  virtual Status Write(const void* data, size_t size) = 0;
  Status Write(std::string_view s) { return Write(s.data(), s.size()); }
  virtual Status Commit() = 0;
};

class FileSystem {
 public:
  virtual ~FileSystem() = default;
  virtual std::string name() const = 0;  // "local", "hdfs://nn:8020"
  // kNotFound (naming the path) when it does not exist.
  virtual Result<FileStatus> Stat(const std::string& path) = 0;
  // The entries of a folder, sorted by name. kNotFound when absent; kInvalidArgument for a file.
  virtual Result<std::vector<FileStatus>> List(const std::string& dir) = 0;
  virtual Result<std::unique_ptr<ReadableFile>> OpenRead(const std::string& path) = 0;
  // Creates the parent folders as needed.
  virtual Result<std::unique_ptr<WritableFile>> OpenWrite(const std::string& path) = 0;
  virtual Status MakeDirs(const std::string& path) = 0;
  // Removes a file, or a folder (with `recursive`, and its contents). Absent: OK.
  virtual Status Delete(const std::string& path, bool recursive) = 0;
  // Renames, replacing an existing file `to`.
  virtual Status Rename(const std::string& from, const std::string& to) = 0;

  Result<bool> Exists(const std::string& path);
  Result<std::string> ReadAll(const std::string& path);
  Status WriteAll(const std::string& path, std::string_view contents);
};

// "hdfs://..." or "webhdfs://...".
bool IsHdfsPath(std::string_view path);
// Whether a local or hdfs:// path exists (false when its file system cannot be reached).
bool PathExistsAnywhere(const std::string& path);
// "file:///a/b" -> "/a/b"; other paths unchanged.
std::string StripFileScheme(std::string_view path);
// A child path: JoinPath for local paths, "/"-joined for URIs.
std::string ChildPath(const std::string& dir, const std::string& name);

// The settings a registered file system is made with (for hdfs://: the Hadoop configuration
// folder, tarn.hadoop.conf-dir, else $HADOOP_CONF_DIR, else $HADOOP_HOME/etc/hadoop; every
// Hadoop key given with -D, i.e. any setting not starting with "shifu." or "tarn."; and the
// tarn.hdfs.* settings). Drops the file systems made so far; they are made again, with these
// settings, at their next use. Until it is called, tarn's defaults apply.
void ConfigureFileSystems(const Settings& settings);

// Makes paths "scheme://authority/..." reach the file system `factory` makes for
// "scheme://authority" (made at the first use of that authority, from the settings of
// ConfigureFileSystems, and shared from then on).
using FileSystemFactory = std::function<Result<std::shared_ptr<FileSystem>>(
    const std::string& scheme_authority, const std::string& path, const Settings& settings)>;
void RegisterFileSystem(const std::string& scheme, FileSystemFactory factory);

// The file system serving `path` (shared; thread-safe). Fails for a scheme no file system is
// registered for, or when the registered factory fails (for hdfs://: the configuration cannot
// be read or names no NameNode).
Result<std::shared_ptr<FileSystem>> FileSystemFor(const std::string& path);

// Copies a file or a folder tree between any two file systems (local <-> HDFS, ...); each
// file is written atomically. `filter` (optional) chooses the entries by relative path.
Status CopyTree(const std::string& from, const std::string& to,
                const std::function<bool(const std::string& relative)>& filter = nullptr);

}  // namespace tarn::data
