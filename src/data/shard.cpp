#include "data/shard.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/checksum.h"
#include "common/strings.h"

namespace tarn::data {

namespace {

constexpr size_t kFixedHeader = 40;
constexpr size_t kAlign = 64;

size_t AlignUp(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }
size_t PayloadOffset(size_t json_bytes) { return AlignUp(kFixedHeader + json_bytes); }

template <typename T>
void Put(unsigned char* p, T v) {
  std::memcpy(p, &v, sizeof(T));
}
template <typename T>
T Get(const unsigned char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

}  // namespace

int ShardSchema::FeatureCount() const {
  int n = 0;
  for (const auto& f : features) n += f.width;
  return n;
}

bool ShardSchema::HasIndexFeatures() const {
  for (const auto& f : features)
    if (!f.index_slots.empty()) return true;
  return false;
}

Json ShardSchema::ToJson() const {
  Json feats = Json::array();
  for (const auto& f : features) {
    Json j = {{"name", f.name}, {"columnNum", f.column_num}, {"width", f.width}};
    if (!f.index_slots.empty()) {
      j["indexSlots"] = f.index_slots;
      j["indexCount"] = f.index_count;
    }
    feats.push_back(std::move(j));
  }
  Json j = {{"format", "tarn-shard"},
            {"layout", "row-major float32: features..., target, weight"},
            {"normType", norm_type},
            {"target", target_name},
            {"features", feats}};
  if (!id_columns.empty()) {
    j["idLayout"] = "row-major uint32 after the floats, one per id column";
    Json ids = Json::array();
    for (const auto& c : id_columns) ids.push_back(c.ToJson());
    j["idColumns"] = std::move(ids);
  }
  return j;
}

Result<ShardSchema> ShardSchema::FromJson(const Json& j, const std::string& file) {
  ShardSchema s;
  try {
    s.norm_type = j.at("normType").get<std::string>();
    s.target_name = j.at("target").get<std::string>();
    for (const auto& f : j.at("features")) {
      ShardFeature sf{f.at("name").get<std::string>(), f.at("columnNum").get<int>(),
                      f.at("width").get<int>()};
      if (sf.width < 1) return Corrupt(file + ": feature '" + sf.name + "' has width < 1");
      if (f.contains("indexSlots")) {
        sf.index_slots = f.at("indexSlots").get<std::vector<int>>();
        sf.index_count = f.at("indexCount").get<int>();
        for (int slot : sf.index_slots) {
          if (slot < 0 || slot >= sf.width) {
            return Corrupt(file + ": feature '" + sf.name + "' marks slot " + std::to_string(slot) +
                           " as an index but has width " + std::to_string(sf.width));
          }
        }
        if (sf.index_count < 1) {
          return Corrupt(file + ": feature '" + sf.name + "' has indexCount < 1");
        }
      }
      s.features.push_back(std::move(sf));
    }
    if (j.contains("idColumns")) {
      for (const auto& c : j.at("idColumns")) {
        TARN_ASSIGN_OR_RETURN(auto id, IdColumn::FromJson(c, file + ": idColumns"));
        s.id_columns.push_back(std::move(id));
      }
    }
  } catch (const nlohmann::json::exception& e) {
    return Corrupt(file + ": bad shard header: " + e.what());
  }
  return s;
}

Result<ShardWriter> ShardWriter::Create(const std::string& path, const ShardSchema& schema) {
  TARN_ASSIGN_OR_RETURN(AtomicFile file, AtomicFile::Open(path));
  std::string json = schema.ToJson().dump();
  std::vector<unsigned char> head(PayloadOffset(json.size()), 0);
  std::memcpy(head.data(), kShardMagic, 8);
  Put<uint32_t>(&head[8], schema.Version());
  Put<uint32_t>(&head[12], static_cast<uint32_t>(json.size()));
  Put<uint64_t>(&head[16], 0);
  Put<uint32_t>(&head[24], static_cast<uint32_t>(schema.FloatsPerRow()));
  Put<uint32_t>(&head[28], 0);
  Put<uint32_t>(&head[32], Crc32c(0, json.data(), json.size()));
  Put<uint32_t>(&head[36], static_cast<uint32_t>(schema.IdsPerRow()));
  std::memcpy(&head[kFixedHeader], json.data(), json.size());
  TARN_RETURN_IF_ERROR(file.Write(head.data(), head.size()));
  ShardWriter writer(std::move(file), schema);
  writer.payload_offset_ = head.size();
  return writer;
}

Status ShardWriter::Append(const float* data, uint64_t rows) {
  if (schema_.IdsPerRow() > 0) return AppendRecords(data, rows);
  size_t bytes = rows * schema_.FloatsPerRow() * sizeof(float);
  crc_ = Crc32c(crc_, data, bytes);
  rows_ += rows;
  return file_.Write(data, bytes);
}

size_t ShardWriter::RecordBytes() const {
  return schema_.FloatsPerRow() * sizeof(float) + schema_.IdsPerRow() * sizeof(uint32_t);
}

Status ShardWriter::AppendRecords(const void* records, uint64_t rows) {
  const size_t ids = schema_.IdsPerRow();
  if (ids == 0) return Append(static_cast<const float*>(records), rows);
  if (!id_spill_) {
    // Beside the shard (same file system), unlinked at once: the kernel frees it on close or
    // crash, so an interrupted norm leaves no spill behind.
    const std::string spill_path = file_.temp_path() + ".ids";
    id_spill_.reset(std::fopen(spill_path.c_str(), "w+b"));
    if (!id_spill_) return ErrnoError("cannot create " + spill_path, errno);
    if (::unlink(spill_path.c_str()) != 0) return ErrnoError("cannot unlink " + spill_path, errno);
  }
  const size_t float_bytes = schema_.FloatsPerRow() * sizeof(float);
  const size_t id_row_bytes = ids * sizeof(uint32_t);
  const size_t record_bytes = RecordBytes();
  const auto* p = static_cast<const unsigned char*>(records);
  std::vector<unsigned char> floats(rows * float_bytes);
  std::vector<unsigned char> id_rows(rows * id_row_bytes);
  for (uint64_t r = 0; r < rows; ++r, p += record_bytes) {
    std::memcpy(floats.data() + r * float_bytes, p, float_bytes);
    std::memcpy(id_rows.data() + r * id_row_bytes, p + float_bytes, id_row_bytes);
  }
  if (!id_rows.empty() &&
      std::fwrite(id_rows.data(), 1, id_rows.size(), id_spill_.get()) != id_rows.size()) {
    return ErrnoError("cannot write the ids of " + file_.temp_path(), errno);
  }
  id_crc_ = Crc32c(id_crc_, id_rows.data(), id_rows.size());
  id_bytes_ += id_rows.size();
  crc_ = Crc32c(crc_, floats.data(), floats.size());
  rows_ += rows;
  return file_.Write(floats.data(), floats.size());
}

Status ShardWriter::Finish() {
  if (schema_.IdsPerRow() > 0) {
    // The ids start on a 64-byte boundary after the floats.
    const uint64_t end = payload_offset_ + rows_ * schema_.FloatsPerRow() * sizeof(float);
    std::vector<unsigned char> pad(AlignUp(end) - end, 0);
    if (!pad.empty()) TARN_RETURN_IF_ERROR(file_.Write(pad.data(), pad.size()));
    if (id_spill_) {
      if (std::fflush(id_spill_.get()) != 0 || ::fseeko(id_spill_.get(), 0, SEEK_SET) != 0) {
        return ErrnoError("cannot read back the ids of " + file_.temp_path(), errno);
      }
      std::vector<unsigned char> chunk(1 << 20);
      for (uint64_t left = id_bytes_; left > 0;) {
        const size_t n = static_cast<size_t>(std::min<uint64_t>(left, chunk.size()));
        if (std::fread(chunk.data(), 1, n, id_spill_.get()) != n) {
          return ErrnoError("cannot read back the ids of " + file_.temp_path(), errno);
        }
        TARN_RETURN_IF_ERROR(file_.Write(chunk.data(), n));
        left -= n;
      }
      id_spill_.reset();
    }
    unsigned char crc[4];
    Put<uint32_t>(crc, id_crc_);
    TARN_RETURN_IF_ERROR(file_.Write(crc, sizeof(crc)));
  }
  unsigned char patch[16];
  Put<uint64_t>(patch, rows_);
  Put<uint32_t>(patch + 8, static_cast<uint32_t>(schema_.FloatsPerRow()));
  Put<uint32_t>(patch + 12, crc_);
  TARN_RETURN_IF_ERROR(file_.WriteAt(16, patch, sizeof(patch)));
  return file_.Commit();
}

ShardReader::~ShardReader() {
  if (map_) ::munmap(map_, map_size_);
}

Result<std::unique_ptr<ShardReader>> ShardReader::Open(const std::string& path,
                                                       bool verify_payload) {
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return ErrnoError("cannot open shard " + path, errno);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return ErrnoError("cannot stat shard " + path, err);
  }
  size_t size = static_cast<size_t>(st.st_size);
  if (size < kFixedHeader) {
    ::close(fd);
    return Corrupt(path + ": not a tarn shard (" + std::to_string(size) + " bytes, truncated)");
  }
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) return ErrnoError("cannot map shard " + path, errno);
  std::unique_ptr<ShardReader> r(new ShardReader());
  r->path_ = path;
  r->map_ = map;
  r->map_size_ = size;
  const auto* p = static_cast<const unsigned char*>(map);
  if (std::memcmp(p, kShardMagic, 8) != 0) return Corrupt(path + ": not a tarn shard (bad magic)");
  uint32_t version = Get<uint32_t>(p + 8);
  if (version < 1 || version > kShardVersion) {
    return Corrupt(path + ": shard format version " + std::to_string(version) +
                   " is not supported (this tarn reads versions 1 to " +
                   std::to_string(kShardVersion) + ")");
  }
  uint32_t json_bytes = Get<uint32_t>(p + 12);
  r->rows_ = Get<uint64_t>(p + 16);
  r->floats_per_row_ = static_cast<int>(Get<uint32_t>(p + 24));
  uint32_t payload_crc = Get<uint32_t>(p + 28);
  uint32_t json_crc = Get<uint32_t>(p + 32);
  size_t offset = PayloadOffset(json_bytes);
  if (offset > size) return Corrupt(path + ": truncated shard header");
  std::string_view json(reinterpret_cast<const char*>(p + kFixedHeader), json_bytes);
  if (Crc32c(0, json.data(), json.size()) != json_crc) {
    return Corrupt(path + ": shard header checksum mismatch");
  }
  Json j;
  try {
    j = Json::parse(json);
  } catch (const nlohmann::json::exception& e) {
    return Corrupt(path + ": bad shard header JSON: " + e.what());
  }
  TARN_ASSIGN_OR_RETURN(r->schema_, ShardSchema::FromJson(j, path));
  if (version < 3 && !r->schema_.id_columns.empty()) {
    return Corrupt(path + ": a version " + std::to_string(version) +
                   " shard cannot carry id columns");
  }
  if (r->schema_.Version() > version) {
    return Corrupt(path + ": a version " + std::to_string(version) +
                   " shard cannot mark index features");
  }
  if (r->schema_.FloatsPerRow() != r->floats_per_row_) {
    return Corrupt(path + ": header lists " + std::to_string(r->schema_.FloatsPerRow()) +
                   " floats per row but the file says " + std::to_string(r->floats_per_row_));
  }
  const uint32_t ids_per_row = Get<uint32_t>(p + 36);
  if (version >= 3 && ids_per_row != r->schema_.id_columns.size()) {
    return Corrupt(path + ": header lists " + std::to_string(r->schema_.id_columns.size()) +
                   " id columns but the file says " + std::to_string(ids_per_row));
  }
  const size_t float_bytes = r->rows_ * r->floats_per_row_ * sizeof(float);
  const size_t id_offset = AlignUp(offset + float_bytes);
  const size_t id_bytes = r->rows_ * ids_per_row * sizeof(uint32_t);
  const size_t expected =
      r->schema_.id_columns.empty() ? offset + float_bytes : id_offset + id_bytes + 4;
  if (expected != size) {
    return Corrupt(path + ": expected " + std::to_string(expected) + " bytes for " +
                   std::to_string(r->rows_) + " rows, found " + std::to_string(size) +
                   " (truncated or unfinished shard)");
  }
  r->data_ = reinterpret_cast<const float*>(p + offset);
  if (verify_payload && Crc32c(0, r->data_, float_bytes) != payload_crc) {
    return Corrupt(path + ": shard payload checksum mismatch (the file is damaged)");
  }
  if (r->schema_.id_columns.empty()) return r;
  r->ids_ = reinterpret_cast<const uint32_t*>(p + id_offset);
  if (!verify_payload) return r;
  if (Crc32c(0, r->ids_, id_bytes) != Get<uint32_t>(p + id_offset + id_bytes)) {
    return Corrupt(path + ": shard id section checksum mismatch (the file is damaged)");
  }
  const auto& cols = r->schema_.id_columns;
  for (uint64_t row = 0; row < r->rows_; ++row) {
    for (size_t k = 0; k < cols.size(); ++k) {
      const uint32_t id = r->ids_[row * cols.size() + k];
      if (id >= cols[k].vocabulary) {
        return Corrupt(path + ": row " + std::to_string(row) + " has id " + std::to_string(id) +
                       " for column '" + cols[k].name + "', outside its vocabulary of " +
                       std::to_string(cols[k].vocabulary));
      }
    }
  }
  return r;
}

Result<std::vector<std::string>> ListShards(const std::string& folder) {
  TARN_ASSIGN_OR_RETURN(auto names, ListDirectory(folder));
  std::vector<std::string> out;
  for (const auto& n : names) {
    if (StartsWith(n, "part-") && EndsWith(n, kShardSuffix)) out.push_back(JoinPath(folder, n));
  }
  if (out.empty()) return NotFound("no normalized shards (part-*.tshard) in " + folder);
  return out;
}

}  // namespace tarn::data
