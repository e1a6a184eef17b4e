#include "runtime/checkpoint.h"

#include <algorithm>
#include <cstring>

#include "common/checksum.h"
#include "common/files.h"
#include "common/log.h"
#include "common/strings.h"
#include "data/file_system.h"
#include "train/graph_trainer.h"

namespace tarn::runtime {

namespace {

constexpr char kSliceMagic[8] = {'T', 'A', 'R', 'N', 'S', 'L', 'C', 'E'};
constexpr uint32_t kSliceVersion = 1;
constexpr char kTableShareMagic[8] = {'T', 'A', 'R', 'N', 'R', 'O', 'W', 'S'};
constexpr uint32_t kTableShareVersion = 1;

void Put(std::string* out, const void* p, size_t n) { out->append(static_cast<const char*>(p), n); }
void PutU32(std::string* out, uint32_t v) { Put(out, &v, 4); }
void PutFloats(std::string* out, std::span<const float> v) {
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

namespace {

EncodedSlice EncodeSliceParts(int bag, int epoch, int ps, size_t begin, size_t end,
                              std::span<const float> params, std::span<const float> state) {
  std::string out(kSliceMagic, 8);
  PutU32(&out, kSliceVersion);
  std::string header =
      data::Json{{"bag", bag}, {"epoch", epoch}, {"ps", ps}, {"begin", begin}, {"end", end}}.dump();
  PutU32(&out, static_cast<uint32_t>(header.size()));
  out += header;
  out.reserve(out.size() + 4 + params.size() * 4 + 4 + state.size() * 4 + 4);
  PutFloats(&out, params);
  PutFloats(&out, state);
  const uint32_t crc = Crc32c(0, out.data(), out.size());
  PutU32(&out, crc);
  return {std::move(out), crc};
}

}  // namespace

EncodedSlice EncodeSlice(const Slice& s) {
  return EncodeSliceParts(s.bag, s.epoch, s.ps, s.begin, s.end, s.params, s.optimizer_state);
}

EncodedSlice EncodeBestParams(int bag, int epoch, std::span<const float> params) {
  return EncodeSliceParts(bag, epoch, -1, 0, params.size(), params, {});
}

Result<uint32_t> WriteSlice(const std::string& path, const Slice& s) {
  EncodedSlice encoded = EncodeSlice(s);
  TARN_RETURN_IF_ERROR(WriteWhole(path, encoded.bytes));
  return encoded.crc;
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

TableShareWriter::TableShareWriter(std::unique_ptr<data::WritableFile> file, size_t stride)
    : file_(std::move(file)), stride_(stride) {}

Result<std::unique_ptr<TableShareWriter>> TableShareWriter::Open(const std::string& path,
                                                                 const model::EmbeddingTable& table,
                                                                 int bag, int epoch,
                                                                 uint64_t steps) {
  TARN_ASSIGN_OR_RETURN(auto fs, data::FileSystemFor(path));
  TARN_ASSIGN_OR_RETURN(auto file, fs->OpenWrite(path));
  std::unique_ptr<TableShareWriter> w(new TableShareWriter(std::move(file), table.stride()));
  std::string head(kTableShareMagic, 8);
  PutU32(&head, kTableShareVersion);
  const std::string header = data::Json{
      {"spec", table.spec().ToJson()},
      {"part", table.part()},
      {"parts", table.parts()},
      {"bag", bag},
      {"epoch", epoch},
      {"steps", steps},
      {"statePerRow", table.state_per_row()},
      {"ascending",
       table.indexed_densely()}}.dump();
  PutU32(&head, static_cast<uint32_t>(header.size()));
  head += header;
  TARN_RETURN_IF_ERROR(w->Write(head.data(), head.size()));
  return w;
}

Status TableShareWriter::Write(const void* data, size_t size) {
  TARN_RETURN_IF_ERROR(file_->Write(data, size).WithContext(file_->path()));
  crc_ = Crc32c(crc_, data, size);
  bytes_ += size;
  return Status::Ok();
}

void TableShareWriter::Add(uint64_t id, const float* values_and_state) {
  Put(&pending_, &id, 8);
  Put(&pending_, values_and_state, stride_ * sizeof(float));
  ++rows_;
}

Status TableShareWriter::Flush() {
  TARN_RETURN_IF_ERROR(Write(pending_.data(), pending_.size()));
  pending_.clear();
  return Status::Ok();
}

Result<uint32_t> TableShareWriter::Finish(uint64_t* bytes) {
  TARN_RETURN_IF_ERROR(Flush());
  TARN_RETURN_IF_ERROR(Write(&rows_, 8));
  const uint32_t body_crc = crc_;
  TARN_RETURN_IF_ERROR(Write(&body_crc, 4));
  TARN_RETURN_IF_ERROR(file_->Commit().WithContext(file_->path()));
  *bytes = bytes_;
  return body_crc;
}

Result<std::unique_ptr<TableShareReader>> TableShareReader::Open(const std::string& path) {
  auto bad = [&](const std::string& why) { return Corrupt(path + ": " + why); };
  TARN_ASSIGN_OR_RETURN(auto fs, data::FileSystemFor(path));
  std::unique_ptr<TableShareReader> r(new TableShareReader());
  r->path_ = path;
  TARN_ASSIGN_OR_RETURN(r->file_, fs->OpenRead(path));
  const uint64_t size = r->file_->size();
  char head[16];
  if (size < 8 + 4 + 4 + 8 + 4 || !r->file_->ReadAt(0, head, sizeof(head)).ok() ||
      std::memcmp(head, kTableShareMagic, 8) != 0) {
    return bad("not a tarn embedding table share");
  }
  uint32_t version = 0, hlen = 0;
  std::memcpy(&version, head + 8, 4);
  std::memcpy(&hlen, head + 12, 4);
  if (version != kTableShareVersion) return bad("unknown table share version");
  const uint64_t body = 16 + uint64_t{hlen};
  if (body > size - 12) return bad("truncated header");
  std::string text(hlen, '\0');
  TARN_RETURN_IF_ERROR(r->file_->ReadAt(16, text.data(), hlen));
  data::Json h = data::Json::parse(text, nullptr, false);
  if (!h.is_object()) return bad("malformed header");
  TableShare& t = r->header_;
  TARN_ASSIGN_OR_RETURN(t.spec, model::TableSpec::FromJson(h.value("spec", data::Json()), path));
  t.part = h.value("part", 0);
  t.parts = h.value("parts", 1);
  t.bag = h.value("bag", 0);
  t.epoch = h.value("epoch", 0);
  t.steps = h.value("steps", uint64_t{0});
  t.state_per_row = h.value("statePerRow", size_t{0});
  t.ascending = h.value("ascending", false);
  TARN_RETURN_IF_ERROR(r->file_->ReadAt(size - 12, &r->count_, 8));
  const uint64_t record = 8 + (t.spec.dim + t.state_per_row) * sizeof(float);
  if (t.state_per_row > 2 * size_t{t.spec.dim} || r->count_ > (size - 12 - body) / record ||
      r->count_ * record != size - 12 - body) {
    return bad("row count does not match the file size");
  }
  r->crc_ = Crc32c(0, head, sizeof(head));
  r->crc_ = Crc32c(r->crc_, text.data(), text.size());
  TARN_RETURN_IF_ERROR(r->file_->Seek(body));
  return r;
}

Result<size_t> TableShareReader::Next(size_t max_rows, std::vector<uint64_t>* ids,
                                      std::vector<float>* rows) {
  if (verified_) {
    ids->clear();
    rows->clear();
    return size_t{0};
  }
  const size_t floats = header_.spec.dim + header_.state_per_row;
  const size_t record = 8 + floats * sizeof(float);
  const size_t n = static_cast<size_t>(std::min<uint64_t>(max_rows, count_ - read_));
  // The last chunk carries the trailer (count and CRC) with it.
  const size_t trailer = read_ + n == count_ ? 12 : 0;
  chunk_.resize(n * record + trailer);
  size_t got = 0;
  while (got < chunk_.size()) {
    TARN_ASSIGN_OR_RETURN(size_t k, file_->Read(chunk_.data() + got, chunk_.size() - got));
    if (k == 0) return Corrupt(path_ + ": truncated while it was read");
    got += k;
  }
  if (trailer) {
    uint32_t stored = 0;
    std::memcpy(&stored, chunk_.data() + chunk_.size() - 4, 4);
    crc_ = Crc32c(crc_, chunk_.data(), chunk_.size() - 4);
    if (crc_ != stored) return Corrupt(path_ + ": checksum mismatch (truncated?)");
    verified_ = true;
  } else {
    crc_ = Crc32c(crc_, chunk_.data(), chunk_.size());
  }
  ids->resize(n);
  rows->resize(n * floats);
  for (size_t i = 0; i < n; ++i) {
    const char* p = chunk_.data() + i * record;
    std::memcpy(&(*ids)[i], p, 8);
    std::memcpy(rows->data() + i * floats, p + 8, floats * sizeof(float));
  }
  read_ += n;
  return n;
}

Status TableShareReader::ForEachRow(
    const std::function<Status(uint64_t id, const float* row)>& each) {
  const size_t floats = header_.spec.dim + header_.state_per_row;
  std::vector<uint64_t> ids;
  std::vector<float> rows;
  while (true) {
    TARN_ASSIGN_OR_RETURN(size_t n, Next(4096, &ids, &rows));
    if (n == 0) return Status::Ok();
    for (size_t i = 0; i < n; ++i) TARN_RETURN_IF_ERROR(each(ids[i], rows.data() + i * floats));
  }
}

Result<TableShare> ReadTableShare(const std::string& path) {
  TARN_ASSIGN_OR_RETURN(auto reader, TableShareReader::Open(path));
  TableShare t = reader->header();
  const size_t floats = t.spec.dim + t.state_per_row;
  TARN_RETURN_IF_ERROR(reader->ForEachRow([&](uint64_t id, const float* row) {
    t.ids.push_back(id);
    t.rows.insert(t.rows.end(), row, row + floats);
    return Status::Ok();
  }));
  return t;
}

Result<uint32_t> FileCrc(const std::string& path) {
  TARN_ASSIGN_OR_RETURN(std::string in, ReadWhole(path));
  uint32_t stored = 0;
  if (in.size() < 4) return Corrupt(path + ": too short for a checksum");
  std::memcpy(&stored, in.data() + in.size() - 4, 4);
  if (Crc32c(0, in.data(), in.size() - 4) != stored) {
    return Corrupt(path + ": checksum mismatch (truncated?)");
  }
  return stored;
}

namespace {

// Manifests written before checkpoint files were named by their own checksum
// recorded the CRC-32C of the whole file, checksum included: the same residue
// for every intact file. Such a manifest still resumes, checked for integrity only.
constexpr uint32_t kWholeFileResidue = 0x48674BC7;

// "" when the file at `path` is intact and the one `recorded` names, else why not.
std::string FileMismatch(const std::string& path, uint32_t recorded) {
  auto crc = FileCrc(path);
  if (!crc.ok()) {
    return crc.status().code() == StatusCode::kCorrupt ? " is damaged" : " is missing";
  }
  if (*crc == recorded || recorded == kWholeFileResidue) return "";
  return " is another file than the one recorded (another checksum)";
}

}  // namespace

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

std::string BestParamsName(int bag, int epoch) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "best-b%03d-e%06d.bin", bag, epoch);
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
  if (m.best) {
    j["best"] = {{"path", m.best->path}, {"crc", m.best->crc}, {"epoch", m.best->epoch}};
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
      const std::string mismatch = FileMismatch(entry.path, entry.crc);
      if (!mismatch.empty()) {
        TARN_LOG(kWarn) << "skipping checkpoint " << path << ": slice " << entry.path << mismatch;
        complete = false;
        break;
      }
      m.slices.push_back(entry);
    }
    for (const auto& e : j.value("tables", data::Json::array())) {
      if (!complete) break;
      Manifest::TableEntry entry{e.value("table", ""), e.value("ps", 0), e.value("path", ""),
                                 e.value("crc", 0u)};
      const std::string mismatch = FileMismatch(entry.path, entry.crc);
      if (!mismatch.empty()) {
        TARN_LOG(kWarn) << "skipping checkpoint " << path << ": table share " << entry.path
                        << mismatch;
        complete = false;
      }
      m.tables.push_back(entry);
    }
    if (complete && j.contains("best")) {
      const data::Json& b = j["best"];
      Manifest::Best best{b.value("path", ""), b.value("crc", 0u), b.value("epoch", 0)};
      const std::string mismatch = FileMismatch(best.path, best.crc);
      if (!mismatch.empty()) {
        TARN_LOG(kWarn) << "skipping checkpoint " << path << ": the best epoch's parameters "
                        << best.path << mismatch;
        complete = false;
      }
      m.best = best;
    }
    if (complete && !m.slices.empty()) return m;
  }
  return NotFound("no complete checkpoint in " + dir);
}

void PruneCheckpoints(const std::string& dir, int bag, int epoch, int keep,
                      const std::set<std::string>& keep_names) {
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
    if (StartsWith(n, "best-")) key = n.substr(5, 12);
    if (!key.empty() && key < limit && !keep_names.count(n)) {
      auto fs = data::FileSystemFor(dir);
      if (fs.ok()) (void)(*fs)->Delete(data::ChildPath(dir, n), false);
    }
  }
}

namespace {

// Rows read from a share, and rows written to the sink, at a time.
constexpr size_t kMergeRows = 4096;

// One share file read in ascending id: the next row it holds.
struct ShareCursor {
  std::unique_ptr<TableShareReader> reader;
  std::string path;
  std::vector<uint64_t> ids;
  std::vector<float> rows;
  size_t at = 0, stride = 0;
  bool done = false;

  // The next row's id, UINT64_MAX after the last (its checksum matched).
  Result<uint64_t> Peek() {
    if (at == ids.size() && !done) {
      TARN_ASSIGN_OR_RETURN(size_t n, reader->Next(kMergeRows, &ids, &rows));
      at = 0;
      done = n == 0;
    }
    return done ? UINT64_MAX : ids[at];
  }
};

}  // namespace

Status WriteTableFromShares(const model::TableSpec& spec, const std::vector<std::string>& shares,
                            model::ParamsSink& sink) {
  const int parts = static_cast<int>(shares.size());
  std::vector<ShareCursor> cursors(shares.size());
  bool ascending = true;
  for (int p = 0; p < parts; ++p) {
    ShareCursor& c = cursors[p];
    c.path = shares[p];
    TARN_ASSIGN_OR_RETURN(c.reader, TableShareReader::Open(c.path));
    const TableShare& h = c.reader->header();
    if (!(h.spec == spec) || h.part != p || h.parts != parts) {
      return Corrupt(c.path + " holds part " + std::to_string(h.part) + " of " +
                     std::to_string(h.parts) + " of table " + h.spec.name + ", not part " +
                     std::to_string(p) + " of " + std::to_string(parts) + " of " + spec.name);
    }
    c.stride = spec.dim + h.state_per_row;
    ascending = ascending && h.ascending;
  }
  const size_t dim = spec.dim;
  if (!ascending) {
    // Rows in the order they were created: the table whole, then written.
    std::vector<float> whole = train::InitialTable(spec);
    for (ShareCursor& c : cursors) {
      TARN_RETURN_IF_ERROR(c.reader->ForEachRow([&](uint64_t id, const float* row) {
        // Checked before the checksum is known: a damaged id must not write outside.
        if (id >= spec.rows || id % uint64_t(parts) != uint64_t(&c - cursors.data())) {
          return Corrupt(c.path + ": row " + std::to_string(id) + " is not this share's");
        }
        std::copy_n(row, dim, whole.data() + id * dim);
        return Status::Ok();
      }));
    }
    return sink.Write(whole);
  }
  std::vector<float> out;
  out.reserve(kMergeRows * dim);
  for (uint64_t r = 0; r < spec.rows; ++r) {
    ShareCursor& c = cursors[r % uint64_t(parts)];
    TARN_ASSIGN_OR_RETURN(uint64_t next, c.Peek());
    const size_t at = out.size();
    out.resize(at + dim);
    if (next == r) {
      std::copy_n(c.rows.data() + c.at * c.stride, dim, out.data() + at);
      ++c.at;
    } else if (next < r) {
      // A row out of order, repeated or of another server's share.
      return Corrupt(c.path + ": row " + std::to_string(next) + " is out of place");
    } else {
      model::InitialRow(spec, r, out.data() + at);
    }
    if (out.size() == kMergeRows * dim) {
      TARN_RETURN_IF_ERROR(sink.Write(out));
      out.clear();
    }
  }
  TARN_RETURN_IF_ERROR(sink.Write(out));
  for (ShareCursor& c : cursors) {
    TARN_ASSIGN_OR_RETURN(uint64_t next, c.Peek());  // read to the end: the checksum
    if (next != UINT64_MAX) {
      return Corrupt(c.path + ": row " + std::to_string(next) + " is outside table " + spec.name);
    }
  }
  return Status::Ok();
}

}  // namespace tarn::runtime
