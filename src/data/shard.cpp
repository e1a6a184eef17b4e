#include "data/shard.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/checksum.h"
#include "common/strings.h"

namespace tarn::data {

namespace {

constexpr size_t kFixedHeader = 40;
constexpr size_t kAlign = 64;

size_t PayloadOffset(size_t json_bytes) {
  return (kFixedHeader + json_bytes + kAlign - 1) / kAlign * kAlign;
}

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
  return {{"format", "tarn-shard"},
          {"layout", "row-major float32: features..., target, weight"},
          {"normType", norm_type},
          {"target", target_name},
          {"features", feats}};
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
  std::memcpy(&head[kFixedHeader], json.data(), json.size());
  TARN_RETURN_IF_ERROR(file.Write(head.data(), head.size()));
  return ShardWriter(std::move(file), schema);
}

Status ShardWriter::Append(const float* data, uint64_t rows) {
  size_t bytes = rows * schema_.FloatsPerRow() * sizeof(float);
  crc_ = Crc32c(crc_, data, bytes);
  rows_ += rows;
  return file_.Write(data, bytes);
}

Status ShardWriter::Finish() {
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
  if (r->schema_.Version() > version) {
    return Corrupt(path + ": a version " + std::to_string(version) +
                   " shard cannot mark index features");
  }
  if (r->schema_.FloatsPerRow() != r->floats_per_row_) {
    return Corrupt(path + ": header lists " + std::to_string(r->schema_.FloatsPerRow()) +
                   " floats per row but the file says " + std::to_string(r->floats_per_row_));
  }
  size_t expected = offset + r->rows_ * r->floats_per_row_ * sizeof(float);
  if (expected != size) {
    return Corrupt(path + ": expected " + std::to_string(expected) + " bytes for " +
                   std::to_string(r->rows_) + " rows, found " + std::to_string(size) +
                   " (truncated or unfinished shard)");
  }
  r->data_ = reinterpret_cast<const float*>(p + offset);
  if (verify_payload && Crc32c(0, r->data_, size - offset) != payload_crc) {
    return Corrupt(path + ": shard payload checksum mismatch (the file is damaged)");
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
