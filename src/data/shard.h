// Binary normalized-data shards (tmp/NormalizedData/part-NNNNN.tshard).
//
// Layout, little-endian:
//   0  char[8]  magic "TARNSHRD"
//   8  u32      format version: 1; 2 when a feature holds category indices;
//               3 when the shard carries id columns
//  12  u32      header JSON bytes (H)
//  16  u64      rows
//  24  u32      floats per row (F = features + 2)
//  28  u32      CRC-32C of the payload
//  32  u32      CRC-32C of the header JSON
//  36  u32      ids per row (K; version 3, else 0)
//  40  H bytes  header JSON: feature columns (name, columnNum, width; version 2
//               adds, for a feature some of whose slots hold a bin or
//               category index, "indexSlots" (offsets within the feature) and
//               "indexCount" (indices are 0..indexCount-1, the missing bin
//               last)), target, normType; version 3 adds "idColumns": per
//               id column its name, columnNum, kind ("index" or "hash"),
//               vocabulary (ids are 0..vocabulary-1, the missing value's
//               last) and, for "hash", buckets and hashSeed
//               (data/id_column.h)
//      padding to a multiple of 64 bytes
//      payload: rows x F float32, row-major: features..., target (0/1), weight
//      version 3 only:
//      padding to a multiple of 64 bytes
//      ids: rows x K uint32, row-major, in idColumns order
//      u32      CRC-32C of the ids
// Readers map the file and refuse unknown versions, size mismatches and bad
// checksums with an error naming the file. Version 1 files (written before
// the *_INDEX normTypes, and still written when no feature holds an index)
// read as features without indices; versions 1 and 2 have no ids.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "common/files.h"
#include "common/status.h"
#include "data/id_column.h"
#include "data/json_fields.h"

namespace tarn::data {

inline constexpr uint32_t kShardVersion = 3;  // the newest version read and written
inline constexpr char kShardMagic[8] = {'T', 'A', 'R', 'N', 'S', 'H', 'R', 'D'};
inline constexpr const char* kShardSuffix = ".tshard";

struct ShardFeature {
  std::string name;  // raw column name; one-hot columns have width > 1
  int column_num = 0;
  int width = 1;
  // The slots (0..width-1) that hold an index, for models that embed ids;
  // indices run from 0 to index_count - 1.
  std::vector<int> index_slots;
  int index_count = 0;
};

struct ShardSchema {
  std::vector<ShardFeature> features;
  std::string target_name;
  std::string norm_type;
  std::vector<IdColumn> id_columns;  // integer ids beside the floats (version 3)

  int FeatureCount() const;  // sum of widths
  bool HasIndexFeatures() const;
  uint32_t Version() const { return !id_columns.empty() ? 3 : HasIndexFeatures() ? 2 : 1; }
  int IdsPerRow() const { return static_cast<int>(id_columns.size()); }
  int FloatsPerRow() const { return FeatureCount() + 2; }
  Json ToJson() const;
  static Result<ShardSchema> FromJson(const Json& j, const std::string& file);
};

class ShardWriter {
 public:
  static Result<ShardWriter> Create(const std::string& path, const ShardSchema& schema);
  // `rows` rows of FloatsPerRow() floats each (a schema without ids).
  Status Append(const float* data, uint64_t rows);
  // `rows` records of FloatsPerRow() float32 followed by IdsPerRow() uint32,
  // native byte order (little-endian). The ids go to an unlinked spill file
  // beside the shard and are copied after the floats by Finish, so memory
  // does not grow with the rows.
  Status AppendRecords(const void* records, uint64_t rows);
  // Bytes of one AppendRecords record.
  size_t RecordBytes() const;
  // Writes the ids, patches the header with the row count and checksum,
  // fsyncs and renames.
  Status Finish();
  uint64_t rows() const { return rows_; }

 private:
  ShardWriter(AtomicFile file, ShardSchema schema)
      : file_(std::move(file)), schema_(std::move(schema)) {}
  AtomicFile file_;
  ShardSchema schema_;
  uint64_t rows_ = 0;
  uint32_t crc_ = 0;
  uint64_t payload_offset_ = 0;  // where the floats start
  // The ids written so far (unlinked when created: nothing is left behind).
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> id_spill_{nullptr, &std::fclose};
  uint64_t id_bytes_ = 0;
  uint32_t id_crc_ = 0;
};

class ShardReader {
 public:
  // Maps the file and checks magic, version, sizes and the header checksum;
  // with verify_payload also the payload checksum.
  static Result<std::unique_ptr<ShardReader>> Open(const std::string& path,
                                                   bool verify_payload = true);
  ~ShardReader();
  ShardReader(const ShardReader&) = delete;
  ShardReader& operator=(const ShardReader&) = delete;

  const ShardSchema& schema() const { return schema_; }
  uint64_t rows() const { return rows_; }
  int floats_per_row() const { return floats_per_row_; }
  const float* row(uint64_t i) const { return data_ + i * floats_per_row_; }
  const float* data() const { return data_; }
  int ids_per_row() const { return schema_.IdsPerRow(); }
  // Row i's ids, in schema().id_columns order (version 3; null without ids).
  const uint32_t* ids(uint64_t i) const { return ids_ + i * schema_.IdsPerRow(); }
  const std::string& path() const { return path_; }

 private:
  ShardReader() = default;
  std::string path_;
  ShardSchema schema_;
  uint64_t rows_ = 0;
  int floats_per_row_ = 0;
  const float* data_ = nullptr;
  const uint32_t* ids_ = nullptr;
  void* map_ = nullptr;
  size_t map_size_ = 0;
};

// The shard files of a folder (part-*.tshard), sorted.
Result<std::vector<std::string>> ListShards(const std::string& folder);

}  // namespace tarn::data
