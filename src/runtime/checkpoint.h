// Distributed checkpoints: each parameter server writes its slice (the
// parameters and the optimizer state) atomically, then the coordinator
// writes a manifest naming the slices with their checksums. The manifest is
// the commit point: a run resumes from the newest manifest whose slices all
// verify, so a half-written checkpoint is never read.
//
// Slice file, little-endian: "TARNSLCE", u32 version (1), u32 header bytes,
// header JSON {bag, epoch, begin, end, ps}, u32 + f32[] parameters,
// u32 + f32[] optimizer state, u32 CRC-32C of everything before it.
//
// Embedding tables (runtime/sparse_messages.h) are checkpointed per server
// and table: one "table share" file of the rows that server holds. Table
// share file, little-endian: "TARNROWS", u32 version (1), u32 header bytes,
// header JSON {table spec, part, parts, bag, epoch, steps, statePerRow,
// ascending (the rows in ascending id; absent: false)},
// then per row u64 id + f32[dim + statePerRow] (values, optimizer state),
// then u64 row count, u32 CRC-32C of everything before it. The manifest
// lists them under "tables" (absent when a job has none, so a dense-only
// manifest reads as before).
//
// Early stopping (tarn.train.early-stop-patience) keeps the best epoch's
// parameters, not the last's, for the model file: the coordinator writes
// them once per new best epoch to "best-b<bag>-e<epoch>.bin" (the slice
// format, ps -1, begin 0, no optimizer state: the model file's parameters
// whole), and every manifest after it names that file under "best" with its
// checksum, so a resume or a roll back gets them back.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "data/file_system.h"
#include "data/json_fields.h"
#include "model/embedding_table.h"
#include "model/model_file.h"

namespace tarn::runtime {

// Whole-file access on any file system (a local path or hdfs://): writes are
// atomic (a temporary file renamed into place).
Status WriteWhole(const std::string& path, std::string_view contents);
Result<std::string> ReadWhole(const std::string& path);
Result<std::vector<std::string>> ListNames(const std::string& dir);

struct Slice {
  int bag = 0;
  int epoch = 0;
  int ps = 0;
  size_t begin = 0, end = 0;
  std::vector<float> params;
  std::vector<float> optimizer_state;
};

// Every checkpoint file (slice, best parameters, table share) ends with the
// CRC-32C of everything before it; that value names the file in a manifest.
//
// A slice file's contents and their CRC-32C, for a caller that writes them
// itself (a parameter server, off its message loop).
struct EncodedSlice {
  std::string bytes;
  uint32_t crc = 0;
};
EncodedSlice EncodeSlice(const Slice& slice);
// The early-stopping best epoch's parameters (the model file's, whole) as a
// slice file's contents: bag, epoch, ps -1, [0, params.size()), no state.
EncodedSlice EncodeBestParams(int bag, int epoch, std::span<const float> params);
// Writes atomically; returns the file's CRC-32C (its trailer).
Result<uint32_t> WriteSlice(const std::string& path, const Slice& slice);
Result<Slice> ReadSlice(const std::string& path);
// The checksum a checkpoint file ends with, once it matches the bytes before it
// (Corrupt when it does not).
Result<uint32_t> FileCrc(const std::string& path);

struct Manifest {
  int bag = 0;
  int epoch = 0;  // epochs completed in this bag
  int64_t term = 0;
  std::string fingerprint;  // the network and slicing: resume refuses another
  struct Entry {
    std::string path;
    uint32_t crc = 0;
    size_t begin = 0, end = 0;
  };
  std::vector<Entry> slices;
  struct TableEntry {
    std::string table;
    int ps = 0;
    std::string path;
    uint32_t crc = 0;
  };
  std::vector<TableEntry> tables;  // embedding table shares, one per (table, server)
  // The early-stopping best epoch's parameters (EncodeBestParams), when kept.
  struct Best {
    std::string path;
    uint32_t crc = 0;
    int epoch = 0;
  };
  std::optional<Best> best;
  // The epoch driver's: best valid error, epochs without improvement, the
  // last epoch's errors, whether the bag trained its last epoch, and whether
  // the bag's model (and serving export) were written after it.
  data::Json state = data::Json::object();
  std::string path;  // where it was read from
};

// A table share file, streamed to its file as it is built: Add() only
// buffers (it may be called in chunks under the caller's lock), Flush()
// writes the buffered rows out (outside that lock), and Finish() appends the
// row count and the CRC-32C, computed on the way, and commits the file
// atomically. Memory: one chunk of rows, never the whole share.
class TableShareWriter {
 public:
  static Result<std::unique_ptr<TableShareWriter>> Open(const std::string& path,
                                                        const model::EmbeddingTable& table, int bag,
                                                        int epoch, uint64_t steps);
  void Add(uint64_t id, const float* values_and_state);
  Status Flush();
  uint64_t rows() const { return rows_; }
  // Returns the file's CRC-32C (its trailer, what FileCrc returns) and sets *bytes.
  Result<uint32_t> Finish(uint64_t* bytes);

 private:
  TableShareWriter(std::unique_ptr<data::WritableFile> file, size_t stride);
  Status Write(const void* data, size_t size);  // to the file, extending the CRC

  std::unique_ptr<data::WritableFile> file_;
  size_t stride_ = 0;
  std::string pending_;  // rows added since the last Flush
  uint64_t rows_ = 0, bytes_ = 0;
  uint32_t crc_ = 0;
};

struct TableShare {
  model::TableSpec spec;
  int part = 0, parts = 1;
  int bag = 0, epoch = 0;
  uint64_t steps = 0;
  size_t state_per_row = 0;
  bool ascending = false;  // rows in ascending id (a densely indexed share)
  std::vector<uint64_t> ids;
  std::vector<float> rows;  // ids.size() x (dim + state_per_row)
};

// Reads a table share file a chunk of rows at a time, so that a restore
// holds one chunk of the file, never all of it. The checksum covers the
// whole file and is known only at the end: Next() fails on the last chunk
// when it does not match, so a caller must not use the rows it was given
// until Next() has returned 0.
class TableShareReader {
 public:
  // Reads and checks the header and the row count against the file's size.
  static Result<std::unique_ptr<TableShareReader>> Open(const std::string& path);
  // The share's header (ids and rows empty).
  const TableShare& header() const { return header_; }
  // Up to max_rows (> 0) next rows into *ids and *rows (replacing them);
  // 0 at the end, once the checksum matched.
  Result<size_t> Next(size_t max_rows, std::vector<uint64_t>* ids, std::vector<float>* rows);
  // Calls each(id, values and state) for every row left, 4,096 rows read at
  // a time; stops at the first error, each's or the checksum's.
  Status ForEachRow(const std::function<Status(uint64_t id, const float* row)>& each);

 private:
  TableShareReader() = default;

  std::unique_ptr<data::ReadableFile> file_;
  std::string path_;
  TableShare header_;
  uint64_t count_ = 0, read_ = 0;
  uint32_t crc_ = 0;
  bool verified_ = false;  // the trailer was read and its checksum matched
  std::string chunk_;
};
Result<TableShare> ReadTableShare(const std::string& path);

// Writes table `spec` whole (row 0 first, dim values a row) into `sink` from
// its servers' share files (shares[p]: server p's of shares.size()), each
// file's checksum checked: a row from the share that holds it, InitialRow
// values for the rows no server holds. Shares whose rows come in ascending
// id (the header's "ascending": densely indexed shares) are merged a chunk at
// a time, so the table is never whole in memory; others are gathered whole.
Status WriteTableFromShares(const model::TableSpec& spec, const std::vector<std::string>& shares,
                            model::ParamsSink& sink);

std::string ManifestName(int bag, int epoch);
std::string SliceName(int bag, int epoch, int ps);
std::string TableShareName(int bag, int epoch, const std::string& table, int ps);
std::string BestParamsName(int bag, int epoch);
Status WriteManifest(const std::string& dir, const Manifest& m);
// The newest complete manifest in dir (every slice, table share and best
// file present with its checksum), or NotFound. Broken newer ones are
// skipped with a warning.
Result<Manifest> NewestManifest(const std::string& dir);
// Deletes manifests, slices, table shares and best files older than
// (bag, epoch) - keep, except the files named in `keep_names` (best files
// a kept manifest names).
void PruneCheckpoints(const std::string& dir, int bag, int epoch, int keep,
                      const std::set<std::string>& keep_names = {});

}  // namespace tarn::runtime
