// DatasetReader: the one reader every pipeline step uses to stream a data set (a delimited text
// file, or a folder of part files, plain or gzip) through a callback, in parallel.
//
// Shifu compatibility, and where tarn differs on purpose:
//  - Listing: dataPath is a file, or a folder whose files (not sub-folders) are read in name
//    order; names starting with '.' or '_' (.pig_header, _SUCCESS, _logs) are skipped, as
//    Hadoop's input formats do.
//  - Header: from headerPath split by headerDelimiter, else the first record of the first data
//    file, which is then not data. Only the first file's first line is taken: Pig writes part
//    files without a header. A later file whose first record is exactly the header line (Spark
//    or Hive exports repeat it in every part) has it skipped too. Names are trimmed and
//    surrounding quotes removed. When the header comes from the data, tarn splits it with the
//    data delimiter (Shifu uses headerDelimiter there, which differs when only one is set).
//  - Fields are split as record_parser.h describes (RFC 4180 quotes, no trimming); a record
//    with another number of fields than the header is a bad row (Shifu silently drops it):
//    counted, the first few reported with file:line, and the read fails when they are more than
//    tarn.data.max-bad-row-ratio of all rows. Empty lines are skipped.
//  - Missing values: see MissingValues in record_parser.h (trimmed, case-insensitive).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "data/filter_expression.h"
#include "data/record_parser.h"  // for MissingValues, SplitResult

namespace tarn::data {

/// Where a data set is and how it is written (ModelConfig dataSet).
struct DataSource {
  std::string data_path;    // a file or a folder of part files (absolute, already resolved)
  std::string header_path;  // empty: the header is the first line of the first data file
  std::string delimiter = "|";
  std::string header_delimiter = "|";
  std::string filter_expression;  // FilterExpression text; empty = all rows
  std::vector<std::string> missing_values = {"", "?"};
};

struct ReadOptions {
  /// Workers calling fn; 0 = DefaultThreadCount(). With 1, everything runs on the calling
  /// thread. With more, one extra thread reads and decompresses the files while the workers
  /// split and call fn, through a queue of at most 2 * threads chunks (memory stays bounded).
  int threads = 0;
  /// Text per chunk (one fn call). On flights_3m, 1 MiB was about 15% faster than 4 MiB: the
  /// field views of a chunk (16 bytes each) then stay in cache.
  size_t chunk_bytes = 4 << 20;
  /// Rows with a wrong field count above this share of all rows fail the read
  /// (setting tarn.data.max-bad-row-ratio).
  double max_bad_row_ratio = 0.001;
  int bad_rows_reported = 5;  // the first N bad rows (in file order) are reported with file:line
  /// A row is kept when a hash of (seed, file index, line) falls below the rate: the same rows
  /// whatever the thread count or chunk size.
  double sample_rate = 1.0;
  uint64_t seed = 42;
  std::string progress_label;  // empty = no progress output
  /// false (default): files are read one after another by one reader thread, and chunk_index
  /// runs 0, 1, 2, ... in file order, whatever the thread count: callers can write output in
  /// input order, or merge per-chunk results deterministically, by chunk_index.
  /// true: when there are at least as many files as threads, each worker reads whole files on
  /// its own, so decompression runs in parallel too (one thread per file); chunk_index still
  /// numbers the chunks 0, 1, 2, ... without gaps, but in the order they happen to be read.
  /// Use it only where the result does not depend on chunk order.
  bool parallel_files = false;
  /// Memory, in bytes, that gzip files may use to be decoded whole by libdeflate (about 2.5x
  /// faster than streaming through zlib). A file whose text is larger, or all files when 0,
  /// streams with memory bounded by a few chunks. Shared by files read at the same time.
  size_t gzip_whole_file_bytes = 256 << 20;
};

/// The rows of one chunk, handed to one worker. Every row has exactly one field per column.
/// Field views point into the chunk's text and are valid only during the callback.
class RowBatch {
 public:
  size_t file_index = 0;       // index in DatasetReader::files()
  uint64_t chunk_index = 0;    // 0, 1, 2, ... with no gaps (see ReadOptions::parallel_files)
  uint64_t chunk_in_file = 0;  // 0, 1, 2, ... within the file

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  size_t num_columns() const { return num_columns_; }
  /// The fields of one row, one per column.
  std::span<const std::string_view> fields(size_t row) const {
    return {fields_ + row * num_columns_, num_columns_};
  }
  std::string_view field(size_t row, size_t column) const {
    return fields_[row * num_columns_ + column];
  }
  /// Physical 1-based line where the row starts in its file.
  uint64_t line(size_t row) const { return lines_[row]; }
  /// Path of the file the rows come from.
  const std::string& file() const { return *file_; }

 private:
  friend class DatasetReader;
  const std::string_view* fields_ = nullptr;  // size_ * num_columns_, in the worker's buffers
  const uint64_t* lines_ = nullptr;
  size_t size_ = 0;
  size_t num_columns_ = 0;
  const std::string* file_ = nullptr;
};

struct ReadSummary {
  uint64_t rows = 0;              // delivered to fn
  uint64_t bad_rows = 0;          // wrong field count
  uint64_t filtered_rows = 0;     // well-formed and sampled, but rejected by the filter
  uint64_t sampled_out_rows = 0;  // well-formed, dropped by sample_rate
  uint64_t bytes = 0;             // text bytes read (uncompressed)
  uint64_t file_bytes = 0;        // bytes of the files (compressed size for gzip)
  uint64_t chunks = 0;
  std::vector<std::string> bad_row_reports;  // "<file>:<line>: expected N fields, found M"
  double seconds = 0;
};

class DatasetReader {
 public:
  /// Lists the files, reads the header and compiles the filter. Errors: kNotFound for a missing
  /// data or header path (naming it), kInvalidArgument for an empty folder, a bad delimiter or
  /// a filter outside tarn's subset.
  static Result<DatasetReader> Open(const DataSource& source);

  /// Header names, trimmed and unquoted.
  const std::vector<std::string>& columns() const { return columns_; }
  /// Data files in reading order.
  const std::vector<std::string>& files() const { return files_; }
  /// Index of the column named `name`, or failing that of the first whose ShifuColumnName is
  /// `name`; -1 if none.
  int ColumnIndex(std::string_view name) const;
  const MissingValues& missing() const { return missing_; }
  const DataSource& source() const { return source_; }
  const FilterExpression& filter() const { return filter_; }

  /// Calls fn(worker, batch) once for every chunk, with its well-formed, sampled, filter-passing
  /// rows (also when there are none, so that chunk_index has no gaps), on options.threads
  /// threads; `worker` is in [0, threads) and no two calls run with the same worker at once.
  /// Stops early and returns the error when fn returns one, when a file cannot be read (the
  /// error names it), or when bad rows exceed options.max_bad_row_ratio (the message gives the
  /// first few as "<file>:<line>: expected N fields, found M", the counts, the ratio and the
  /// setting tarn.data.max-bad-row-ratio). A read whose first 1000 inspected rows are all bad
  /// stops at once. Const and thread-safe: several reads may run at the same time.
  Result<ReadSummary> ForEachBatch(
      const ReadOptions& options,
      const std::function<Status(int worker, const RowBatch& batch)>& fn) const;

 private:
  struct ReadState;
  struct Worker;
  DatasetReader() = default;
  struct ChunkInfo;
  // Splits, checks, samples and filters one chunk, then calls fn.
  Status ProcessChunk(ReadState& state, Worker& worker, std::string& text,
                      const ChunkInfo& info) const;
  // Reads one whole file on the calling thread (inline and parallel-files modes).
  Status ReadWholeFile(ReadState& state, Worker& worker, size_t file_index,
                       size_t gzip_limit) const;
  // One reader thread feeding the workers through a bounded queue.
  void RunPipelined(ReadState& state, std::vector<Worker>& workers) const;
  struct BadRowReport {
    size_t file;
    uint64_t line;
    size_t found;
    uint32_t lines;
  };
  std::string ReportString(const BadRowReport& r) const;
  Status BadRowsError(const ReadState& state, uint64_t bad, uint64_t total, bool early) const;

  DataSource source_;
  std::vector<std::string> files_;
  std::vector<std::string> columns_;
  std::string header_line_;  // the header record, when it came from the first data file
  MissingValues missing_;
  FilterExpression filter_;
};

}  // namespace tarn::data
