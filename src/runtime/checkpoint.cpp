#include "runtime/checkpoint.h"

#include <cstring>

#include "common/checksum.h"
#include "common/files.h"
#include "common/log.h"
#include "common/strings.h"
#include "data/file_system.h"

namespace tarn::runtime {

namespace {

constexpr char kSliceMagic[8] = {'T', 'A', 'R', 'N', 'S', 'L', 'C', 'E'};
constexpr uint32_t kSliceVersion = 1;
constexpr char kTableShareMagic[8] = {'T', 'A', 'R', 'N', 'R', 'O', 'W', 'S'};
constexpr uint32_t kTableShareVersion = 1;

void Put(std::string* out, const void* p, size_t n) { out->append(static_cast<const char*>(p), n); }
void PutU32(std::string* out, uint32_t v) { Put(out, &v, 4); }
void PutFloats(std::string* out, const std::vector<float>& v) {
  PutU32(out, static_cast<uint32_t>(v.size()));
  Put(out, v.data(), v.size() * sizeof(float));
}

}  // namespace

Status WriteWhole(const std::string& path, std::string_view contents) {
  TARN_ASSIGN_OR_RETURN(auto fs, data::FileSystemFor(path));
  return fs->WriteAll(path, contents);
}

Result<std::string> ReadWhole(const std::string& path) {
  TARN_ASSIGN_OR_RETURN(auto fs, data::FileSystemFor(path));
  return fs->ReadAll(path);
}

Result<std::vector<std::string>> ListNames(const std::string& dir) {
  TARN_ASSIGN_OR_RETURN(auto fs, data::FileSystemFor(dir));
  TARN_ASSIGN_OR_RETURN(auto entries, fs->List(dir));
  std::vector<std::string> names;
  for (const auto& e : entries) names.push_back(e.name);
  return names;
}

Result<uint32_t> WriteSlice(const std::string& path, const Slice& s) {
  std::string out(kSliceMagic, 8);
  PutU32(&out, kSliceVersion);
  std::string header = data::Json{
      {"bag", s.bag},
      {"epoch", s.epoch},
      {"ps", s.ps},
      {"begin", s.begin},
      {"end", s.end}}.dump();
  PutU32(&out, static_cast<uint32_t>(header.size()));
  out += header;
  PutFloats(&out, s.params);
  PutFloats(&out, s.optimizer_state);
  PutU32(&out, Crc32c(0, out.data(), out.size()));
  TARN_RETURN_IF_ERROR(WriteWhole(path, out));
  return Crc32c(0, out.data(), out.size());
}

Result<Slice> ReadSlice(const std::string& path) {
  TARN_ASSIGN_OR_RETURN(std::string in, ReadWhole(path));
  auto bad = [&](const std::string& why) { return Corrupt(path + ": " + why); };
  if (in.size() < 8 + 4 + 4 + 4 || std::memcmp(in.data(), kSliceMagic, 8) != 0) {
    return bad("not a tarn parameter slice");
  }
  uint32_t crc = 0;
  std::memcpy(&crc, in.data() + in.size() - 4, 4);
  if (Crc32c(0, in.data(), in.size() - 4) != crc) return bad("checksum mismatch (truncated?)");
  size_t pos = 8;
  auto u32 = [&](uint32_t* v) {
    if (pos + 4 > in.size() - 4) return false;
    std::memcpy(v, in.data() + pos, 4);
    pos += 4;
    return true;
  };
  uint32_t version = 0, hlen = 0;
  if (!u32(&version) || version != kSliceVersion) return bad("unknown slice version");
  if (!u32(&hlen) || pos + hlen > in.size() - 4) return bad("truncated header");
  data::Json h = data::Json::parse(in.substr(pos, hlen), nullptr, false);
  pos += hlen;
  if (!h.is_object()) return bad("malformed header");
  Slice s;
  s.bag = h.value("bag", 0);
  s.epoch = h.value("epoch", 0);
  s.ps = h.value("ps", 0);
  s.begin = h.value("begin", size_t{0});
  s.end = h.value("end", size_t{0});
  for (auto* v : {&s.params, &s.optimizer_state}) {
    uint32_t n = 0;
    if (!u32(&n) || pos + static_cast<size_t>(n) * 4 > in.size() - 4) return bad("truncated data");
    v->resize(n);
    std::memcpy(v->data(), in.data() + pos, static_cast<size_t>(n) * 4);
    pos += static_cast<size_t>(n) * 4;
  }
  if (s.params.size() != s.end - s.begin) return bad("parameter count does not match its range");
  return s;
}

TableShareWriter::TableShareWriter(const model::EmbeddingTable& table, int bag, int epoch,
                                   uint64_t steps)
    : stride_(table.stride()) {
  out_.assign(kTableShareMagic, 8);
  PutU32(&out_, kTableShareVersion);
  const std::string header = data::Json{
      {"spec", table.spec().ToJson()},
      {"part", table.part()},
      {"parts", table.parts()},
      {"bag", bag},
      {"epoch", epoch},
      {"steps", steps},
      {"statePerRow",
       table.state_per_row()}}.dump();
  PutU32(&out_, static_cast<uint32_t>(header.size()));
  out_ += header;
  // Room for the rows held now (and some created meanwhile), so that Add
  // rarely reallocates while the caller holds its lock.
  const size_t record = 8 + stride_ * sizeof(float);
  out_.reserve(out_.size() + (table.rows_held() + table.rows_held() / 16 + 64) * record + 12);
}

void TableShareWriter::Add(uint64_t id, const float* values_and_state) {
  Put(&out_, &id, 8);
  Put(&out_, values_and_state, stride_ * sizeof(float));
  ++rows_;
}

Result<uint32_t> TableShareWriter::Finish(const std::string& path, uint64_t* bytes) {
  Put(&out_, &rows_, 8);
  const uint32_t crc = Crc32c(0, out_.data(), out_.size());
  PutU32(&out_, crc);
  TARN_RETURN_IF_ERROR(WriteWhole(path, out_));
  *bytes = out_.size();
  return Crc32c(0, out_.data(), out_.size());
}

Result<TableShare> ReadTableShare(const std::string& path) {
  TARN_ASSIGN_OR_RETURN(std::string in, ReadWhole(path));
  auto bad = [&](const std::string& why) { return Corrupt(path + ": " + why); };
  if (in.size() < 8 + 4 + 4 + 8 + 4 || std::memcmp(in.data(), kTableShareMagic, 8) != 0) {
    return bad("not a tarn embedding table share");
  }
  uint32_t crc = 0, version = 0, hlen = 0;
  std::memcpy(&crc, in.data() + in.size() - 4, 4);
  if (Crc32c(0, in.data(), in.size() - 4) != crc) return bad("checksum mismatch (truncated?)");
  std::memcpy(&version, in.data() + 8, 4);
  std::memcpy(&hlen, in.data() + 12, 4);
  if (version != kTableShareVersion) return bad("unknown table share version");
  const size_t body = 16 + static_cast<size_t>(hlen);
  if (body > in.size() - 12) return bad("truncated header");
  data::Json h = data::Json::parse(in.substr(16, hlen), nullptr, false);
  if (!h.is_object()) return bad("malformed header");
  TableShare t;
  TARN_ASSIGN_OR_RETURN(t.spec, model::TableSpec::FromJson(h.value("spec", data::Json()), path));
  t.part = h.value("part", 0);
  t.parts = h.value("parts", 1);
  t.bag = h.value("bag", 0);
  t.epoch = h.value("epoch", 0);
  t.steps = h.value("steps", uint64_t{0});
  t.state_per_row = h.value("statePerRow", size_t{0});
  uint64_t count = 0;
  std::memcpy(&count, in.data() + in.size() - 12, 8);
  const size_t record = 8 + (t.spec.dim + t.state_per_row) * sizeof(float);
  if (t.state_per_row > 2 * size_t{t.spec.dim} || count > (in.size() - 12 - body) / record ||
      count * record != in.size() - 12 - body) {
    return bad("row count does not match the file size");
  }
  t.ids.resize(count);
  t.rows.resize(count * (t.spec.dim + t.state_per_row));
  const char* p = in.data() + body;
  const size_t floats = t.spec.dim + t.state_per_row;
  for (uint64_t i = 0; i < count; ++i, p += record) {
    std::memcpy(&t.ids[i], p, 8);
    std::memcpy(t.rows.data() + i * floats, p + 8, floats * sizeof(float));
  }
  return t;
}

Result<uint32_t> FileCrc(const std::string& path) {
  TARN_ASSIGN_OR_RETURN(std::string in, ReadWhole(path));
  return Crc32c(0, in.data(), in.size());
}

std::string ManifestName(int bag, int epoch) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "manifest-b%03d-e%06d.json", bag, epoch);
  return buf;
}

std::string SliceName(int bag, int epoch, int ps) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "slice-b%03d-e%06d-ps%03d.bin", bag, epoch, ps);
  return buf;
}

std::string TableShareName(int bag, int epoch, const std::string& table, int ps) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "rows-b%03d-e%06d-ps%03d-", bag, epoch, ps);
  return buf + table + ".bin";
}

Status WriteManifest(const std::string& dir, const Manifest& m) {
  data::Json slices = data::Json::array();
  for (const auto& e : m.slices) {
    slices.push_back({{"path", e.path}, {"crc", e.crc}, {"begin", e.begin}, {"end", e.end}});
  }
  data::Json j{{"bag", m.bag},     {"epoch", m.epoch},
               {"term", m.term},   {"fingerprint", m.fingerprint},
               {"slices", slices}, {"state", m.state}};
  if (!m.tables.empty()) {
    data::Json tables = data::Json::array();
    for (const auto& t : m.tables) {
      tables.push_back({{"table", t.table}, {"ps", t.ps}, {"path", t.path}, {"crc", t.crc}});
    }
    j["tables"] = tables;
  }
  return WriteWhole(data::ChildPath(dir, ManifestName(m.bag, m.epoch)), j.dump(2) + "\n");
}

Result<Manifest> NewestManifest(const std::string& dir) {
  auto names = ListNames(dir);
  if (!names.ok()) return NotFound("no checkpoint in " + dir);
  std::vector<std::string> manifests;
  for (const auto& n : *names) {
    if (StartsWith(n, "manifest-") && EndsWith(n, ".json")) manifests.push_back(n);
  }
  std::sort(manifests.rbegin(), manifests.rend());  // zero-padded: newest first
  for (const auto& n : manifests) {
    const std::string path = data::ChildPath(dir, n);
    auto text = ReadWhole(path);
    data::Json j = text.ok() ? data::Json::parse(*text, nullptr, false) : data::Json();
    if (!j.is_object() || !j.contains("slices")) {
      TARN_LOG(kWarn) << "skipping checkpoint manifest " << path << ": unreadable";
      continue;
    }
    Manifest m;
    m.path = path;
    m.bag = j.value("bag", 0);
    m.epoch = j.value("epoch", 0);
    m.term = j.value("term", int64_t{0});
    m.fingerprint = j.value("fingerprint", "");
    m.state = j.value("state", data::Json::object());
    bool complete = true;
    for (const auto& e : j["slices"]) {
      Manifest::Entry entry{e.value("path", ""), e.value("crc", 0u), e.value("begin", size_t{0}),
                            e.value("end", size_t{0})};
      auto crc = FileCrc(entry.path);
      if (!crc.ok() || *crc != entry.crc) {
        TARN_LOG(kWarn) << "skipping checkpoint " << path << ": slice " << entry.path
                        << (crc.ok() ? " has another checksum" : " is missing");
        complete = false;
        break;
      }
      m.slices.push_back(entry);
    }
    for (const auto& e : j.value("tables", data::Json::array())) {
      if (!complete) break;
      Manifest::TableEntry entry{e.value("table", ""), e.value("ps", 0), e.value("path", ""),
                                 e.value("crc", 0u)};
      auto crc = FileCrc(entry.path);
      if (!crc.ok() || *crc != entry.crc) {
        TARN_LOG(kWarn) << "skipping checkpoint " << path << ": table share " << entry.path
                        << (crc.ok() ? " has another checksum" : " is missing");
        complete = false;
      }
      m.tables.push_back(entry);
    }
    if (complete && !m.slices.empty()) return m;
  }
  return NotFound("no complete checkpoint in " + dir);
}

void PruneCheckpoints(const std::string& dir, int bag, int epoch, int keep) {
  auto names = ListNames(dir);
  if (!names.ok()) return;
  // Names sort by (bag, epoch); remove those before the kept window.
  char limit[64];
  std::snprintf(limit, sizeof(limit), "b%03d-e%06d", bag, std::max(0, epoch - keep + 1));
  for (const auto& n : *names) {
    std::string key;
    if (StartsWith(n, "manifest-")) key = n.substr(9, 12);
    if (StartsWith(n, "slice-")) key = n.substr(6, 12);
    if (StartsWith(n, "rows-")) key = n.substr(5, 12);
    if (!key.empty() && key < limit) {
      auto fs = data::FileSystemFor(dir);
      if (fs.ok()) (void)(*fs)->Delete(data::ChildPath(dir, n), false);
    }
  }
}

}  // namespace tarn::runtime
