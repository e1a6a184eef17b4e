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

Status WriteManifest(const std::string& dir, const Manifest& m) {
  data::Json slices = data::Json::array();
  for (const auto& e : m.slices) {
    slices.push_back({{"path", e.path}, {"crc", e.crc}, {"begin", e.begin}, {"end", e.end}});
  }
  data::Json j{{"bag", m.bag},     {"epoch", m.epoch},
               {"term", m.term},   {"fingerprint", m.fingerprint},
               {"slices", slices}, {"state", m.state}};
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
    if (!key.empty() && key < limit) {
      auto fs = data::FileSystemFor(dir);
      if (fs.ok()) (void)(*fs)->Delete(data::ChildPath(dir, n), false);
    }
  }
}

}  // namespace tarn::runtime
