// YARN's aggregated container logs, read from HDFS without a JVM (what `yarn logs` reads once an
// application has finished and its NodeManagers have uploaded its containers' logs).
//
// Where (Hadoop 3.3+, LogAggregationUtils and LogAggregationFileController): every log
// aggregation file controller F of yarn.log-aggregation.file-formats (default "TFile") writes
// under <root>/<owner>/bucket-<suffix>/<NNNN>/<application id>/ with NNNN the application's
// sequence number modulo 10000 (four digits), one file per NodeManager named after its node id
// ("host_port"; "host_port_<time>" with rolling aggregation; "<name>.tmp" while being written).
// <root> is yarn.log-aggregation.F.remote-app-log-dir, else yarn.nodemanager.remote-app-log-dir
// (default /tmp/logs on fs.defaultFS); <suffix> is
// yarn.log-aggregation.F.remote-app-log-dir-suffix, else yarn.nodemanager.remote-app-log-dir-suffix
// (default "logs") + "-" + lower-case F. Older layouts, still read:
// <root>/<owner>/<suffix>/<application id>/ (Hadoop 3.0 to 3.2) and <root>/<owner>/<nm
// suffix>/<application id>/ (Hadoop 2).
//
// What (AggregatedLogFormat over TFile over BCFile, hadoop-common's io.file.tfile):
//  - BCFile: the 16-byte magic, data blocks, meta blocks, the meta index, then the tail: the
//    meta index's offset (8 bytes), the BCFile version (major, minor: 2 bytes each) and the
//    magic again. The meta index names each meta block "data:<name>" with its compression and
//    region (offset, compressed size, raw size: TFile VLongs); "BCFile.index" holds the data
//    blocks' compression and regions. Compression is "none" or "gz" (zlib streams;
//    yarn.nodemanager.log-aggregation.compression-type), "lzo" is refused by name.
//  - TFile: meta block "TFile.meta" (version, record count, comparator), "TFile.index" (the
//    first key, then each data block's last key and record count). A data block holds records:
//    key length (VInt) and key bytes, then the value in chunks (VInt length, negative for every
//    chunk but the last).
//  - AggregatedLogFormat: keys are Java writeUTF strings: "VERSION" (value: a 4-byte int),
//    "APPLICATION_OWNER" (a writeUTF string), "APPLICATION_ACL" (writeUTF pairs), and one key
//    per container id whose value is a sequence of (file name: writeUTF, length: writeUTF of
//    the decimal length, that many bytes).
//
// The IndexedFormat controller (LogAggregationIndexedFileController, files that begin with the
// SHA-256 of the application id) is recognized and refused by name: its index is Java
// serialization.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "data/file_system.h"
#include "net/hadoop_conf.h"

namespace tarn::cluster::yarn {

struct AggregatedLogEntry {
  std::string file;  // stdout, stderr, ...
  uint64_t length = 0;
};

struct AggregatedContainer {
  std::string container_id;
  std::vector<AggregatedLogEntry> files;  // in the order the NodeManager wrote them
};

// Receives a node file's logs as Scan reads them.
struct AggregatedLogVisitor {
  // Called before each log file of each container: true to receive its bytes through `bytes`
  // (in order, in pieces), false to skip them. Unset: every file is skipped.
  std::function<bool(const std::string& container_id, const std::string& file, uint64_t length)>
      want;
  std::function<Status(std::string_view piece)> bytes;
};

// One NodeManager's aggregated log file (a TFile of AggregatedLogFormat).
class AggregatedLogReader {
 public:
  // Reads the tail and the indexes. A file too short for a TFile, one without the BCFile magic
  // or with regions past its end, is kCorrupt naming the path and the offset; the IndexedFormat
  // controller's files (recognized by `application_id`'s SHA-256 at their start) and lzo
  // compression are kUnsupported.
  static Result<std::unique_ptr<AggregatedLogReader>> Open(std::unique_ptr<data::ReadableFile> file,
                                                           const std::string& application_id);

  // Reads every record once, in order: the reserved keys into version(), owner() and acls();
  // each container's log files through the visitor; containers() then lists them.
  Status Scan(const AggregatedLogVisitor& visitor);

  const std::string& path() const;
  const std::string& compression() const { return compression_; }
  int64_t record_count() const { return record_count_; }
  int32_t version() const { return version_; }
  const std::string& owner() const { return owner_; }
  const std::map<std::string, std::string>& acls() const { return acls_; }
  const std::vector<AggregatedContainer>& containers() const { return containers_; }

  struct Region {
    uint64_t offset = 0, compressed = 0, raw = 0;
  };

 private:
  explicit AggregatedLogReader(std::unique_ptr<data::ReadableFile> file) : file_(std::move(file)) {}
  Status ReadIndexes(const std::string& application_id);

  std::unique_ptr<data::ReadableFile> file_;
  std::string compression_;
  std::vector<Region> blocks_;
  std::vector<int64_t> block_records_;
  int64_t record_count_ = 0;
  int32_t version_ = 0;
  std::string owner_;
  std::map<std::string, std::string> acls_;
  std::vector<AggregatedContainer> containers_;
};

// A configured log aggregation file controller (yarn.log-aggregation.file-formats).
struct LogAggregationController {
  std::string name;        // "TFile", "IndexedFormat", ...
  std::string class_name;  // yarn.log-aggregation.file-controller.<name>.class
  std::string root;        // its remote-app-log-dir, qualified with fs.defaultFS
  std::string suffix;      // its remote-app-log-dir-suffix
  bool indexed = false;    // the IndexedFormat controller, which tarn does not read
};
std::vector<LogAggregationController> LogAggregationControllers(const net::HadoopConf& conf);

// The folders an application's aggregated logs may be in, newest layout first (see above).
struct AggregatedLogDir {
  std::string path;
  const LogAggregationController* controller = nullptr;  // into `controllers`
};
std::vector<AggregatedLogDir> AggregatedLogDirs(
    const std::vector<LogAggregationController>& controllers, const net::HadoopConf& conf,
    const std::string& owner, const std::string& application_id);

// "localhost_45678" (or "localhost_45678_1700000000000") -> "localhost:45678"; other names as
// they are.
std::string NodeOfLogFileName(const std::string& name);

struct NodeLogFile {
  std::string path;
  std::string node;  // host:port
  uint64_t length = 0;
  int64_t modification_time_ms = 0;
};

// The node files of an application's aggregated logs: those of the first folder of
// AggregatedLogDirs that exists and holds any (files still being written, "*.tmp", and index
// checksums are left out), sorted by name. kNotFound naming every folder looked in; kUnsupported
// when the folder is the IndexedFormat controller's.
Result<std::vector<NodeLogFile>> FindAggregatedLogs(const net::HadoopConf& conf,
                                                    const std::string& owner,
                                                    const std::string& application_id);

}  // namespace tarn::cluster::yarn
