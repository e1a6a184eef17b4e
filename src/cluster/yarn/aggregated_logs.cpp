#include "cluster/yarn/aggregated_logs.h"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <set>

#include "common/strings.h"
#include "net/sha256.h"

namespace tarn::cluster::yarn {
namespace {

constexpr std::array<unsigned char, 16> kBcfileMagic = {
    0xd1, 0x11, 0xd3, 0x68, 0x91, 0xb5, 0xd7, 0xb6, 0x39, 0xdf, 0x41, 0x40, 0x92, 0xba, 0xe1, 0x50};
// The tail: meta index offset (8), version (2 + 2), magic (16).
constexpr uint64_t kTailBytes = 8 + 4 + kBcfileMagic.size();
constexpr int64_t kMaxKeyBytes = 64 * 1024;  // TFile's key limit
constexpr size_t kBufferBytes = 64 * 1024;

const char* const kTFileControllerClass =
    "org.apache.hadoop.yarn.logaggregation.filecontroller.tfile.LogAggregationTFileController";
const char* const kIndexedControllerClass =
    "org.apache.hadoop.yarn.logaggregation.filecontroller.ifile."
    "LogAggregationIndexedFileController";

std::string Num(uint64_t v) { return std::to_string(v); }

uint64_t BigEndian(const unsigned char* p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v = (v << 8) | p[i];
  return v;
}

// Bytes read in order from somewhere in the file; Where() says where the next one is, for errors.
class Input {
 public:
  virtual ~Input() = default;
  virtual Status Read(void* dst, size_t n) = 0;  // exactly n bytes
  virtual Status Skip(uint64_t n) = 0;
  virtual std::string Where() const = 0;
};

// Exactly `n` bytes at `offset` of the file (its position moves on).
Status ReadFileAt(data::ReadableFile& f, uint64_t offset, void* dst, size_t n) {
  TARN_RETURN_IF_ERROR(f.Seek(offset));
  auto* out = static_cast<char*>(dst);
  size_t got = 0;
  while (got < n) {
    TARN_ASSIGN_OR_RETURN(size_t r, f.Read(out + got, n - got));
    if (r == 0) {
      return Corrupt(f.path() + ": truncated: the file ends at offset " + Num(offset + got) + ", " +
                     Num(n - got) + " bytes short of what its index says");
    }
    got += r;
  }
  return Status::Ok();
}

// One BCFile block's bytes, decompressed ("none" or "gz": zlib streams, one after another).
class BlockInput : public Input {
 public:
  BlockInput(data::ReadableFile& file, std::string what, AggregatedLogReader::Region region,
             bool gz)
      : file_(file), what_(std::move(what)), region_(region), gz_(gz), buffer_(kBufferBytes) {
    if (gz_) {
      std::memset(&z_, 0, sizeof(z_));
      z_ok_ = inflateInit(&z_) == Z_OK;
    }
  }
  ~BlockInput() override {
    if (gz_ && z_ok_) inflateEnd(&z_);
  }
  BlockInput(const BlockInput&) = delete;
  BlockInput& operator=(const BlockInput&) = delete;

  uint64_t position() const { return raw_pos_; }

  std::string Where() const override {
    if (!gz_) return what_ + " at file offset " + Num(region_.offset + raw_pos_);
    return "byte " + Num(raw_pos_) + " (decompressed) of " + what_ + " (gz, file offsets " +
           Num(region_.offset) + ".." + Num(region_.offset + region_.compressed) + ")";
  }

  Status Read(void* dst, size_t n) override {
    if (raw_pos_ + n > region_.raw) {
      return Corrupt(file_.path() + ": corrupt: " + Num(n) + " bytes needed at " + Where() +
                     ", but the block holds " + Num(region_.raw) + " bytes");
    }
    auto* out = static_cast<unsigned char*>(dst);
    if (!gz_) {
      size_t done = 0;
      while (done < n) {
        if (in_off_ == in_len_) TARN_RETURN_IF_ERROR(Fill());
        const size_t take = std::min(n - done, in_len_ - in_off_);
        std::memcpy(out + done, buffer_.data() + in_off_, take);
        in_off_ += take;
        done += take;
      }
      raw_pos_ += n;
      return Status::Ok();
    }
    if (!z_ok_) return Internal("zlib could not be initialized");
    z_.next_out = out;
    z_.avail_out = static_cast<uInt>(n);
    while (z_.avail_out > 0) {
      if (z_.avail_in == 0) {
        TARN_RETURN_IF_ERROR(Fill());
        z_.next_in = buffer_.data();
        z_.avail_in = static_cast<uInt>(in_len_);
      }
      const int r = inflate(&z_, Z_NO_FLUSH);
      if (r == Z_STREAM_END) {
        // Another zlib stream may follow in the same block.
        if (inflateReset(&z_) != Z_OK) return Internal("zlib inflateReset failed");
        continue;
      }
      if (r != Z_OK && r != Z_BUF_ERROR) {
        return Corrupt(file_.path() + ": corrupt gz data at " + Where() + ": " +
                       (z_.msg != nullptr ? z_.msg : "zlib error " + std::to_string(r)));
      }
    }
    raw_pos_ += n;
    return Status::Ok();
  }

  Status Skip(uint64_t n) override {
    if (gz_) {
      char scratch[4096];
      while (n > 0) {
        const size_t take = static_cast<size_t>(std::min<uint64_t>(n, sizeof(scratch)));
        TARN_RETURN_IF_ERROR(Read(scratch, take));
        n -= take;
      }
      return Status::Ok();
    }
    if (raw_pos_ + n > region_.raw) {
      return Corrupt(file_.path() + ": corrupt: " + Num(n) + " bytes to skip at " + Where() +
                     ", but the block holds " + Num(region_.raw) + " bytes");
    }
    const uint64_t buffered = in_len_ - in_off_;
    if (n <= buffered) {
      in_off_ += static_cast<size_t>(n);
    } else {
      consumed_ += n - buffered;
      in_off_ = in_len_ = 0;
    }
    raw_pos_ += n;
    return Status::Ok();
  }

 private:
  // The next compressed bytes of the block into buffer_.
  Status Fill() {
    const uint64_t left = region_.compressed - consumed_;
    if (left == 0) {
      return Corrupt(file_.path() + ": corrupt: " + what_ + " ends (" + Num(region_.compressed) +
                     " compressed bytes) before its " + Num(region_.raw) + " bytes at " + Where());
    }
    const size_t want = static_cast<size_t>(std::min<uint64_t>(left, buffer_.size()));
    TARN_RETURN_IF_ERROR(ReadFileAt(file_, region_.offset + consumed_, buffer_.data(), want));
    consumed_ += want;
    in_off_ = 0;
    in_len_ = want;
    return Status::Ok();
  }

  data::ReadableFile& file_;
  std::string what_;
  AggregatedLogReader::Region region_;
  bool gz_;
  std::vector<unsigned char> buffer_;
  size_t in_off_ = 0, in_len_ = 0;
  uint64_t consumed_ = 0;  // compressed bytes fetched
  uint64_t raw_pos_ = 0;
  z_stream z_{};
  bool z_ok_ = false;
};

// A whole small block already in memory (the meta index).
class MemoryInput : public Input {
 public:
  MemoryInput(const std::string& path, std::string what, std::string data, uint64_t file_offset)
      : path_(path), what_(std::move(what)), data_(std::move(data)), base_(file_offset) {}
  Status Read(void* dst, size_t n) override {
    if (pos_ + n > data_.size()) {
      return Corrupt(path_ + ": corrupt: " + Num(n) + " bytes needed at " + Where() + ", past " +
                     what_ + "'s end at file offset " + Num(base_ + data_.size()));
    }
    std::memcpy(dst, data_.data() + pos_, n);
    pos_ += n;
    return Status::Ok();
  }
  Status Skip(uint64_t n) override {
    if (pos_ + n > data_.size()) return Read(nullptr, static_cast<size_t>(n));
    pos_ += static_cast<size_t>(n);
    return Status::Ok();
  }
  std::string Where() const override { return what_ + " at file offset " + Num(base_ + pos_); }

 private:
  const std::string& path_;
  std::string what_;
  std::string data_;
  uint64_t base_;
  size_t pos_ = 0;
};

// TFile's variable-length integers (Utils.readVLong): one byte for -32..127, else a first
// byte that says how many bytes follow.
Result<int64_t> ReadVLong(Input& in, const std::string& path) {
  signed char first;
  TARN_RETURN_IF_ERROR(in.Read(&first, 1));
  const int fb = first;
  if (fb >= -32) return static_cast<int64_t>(fb);
  unsigned char b[8];
  if (fb >= -72) {  // -72..-33: one more byte
    TARN_RETURN_IF_ERROR(in.Read(b, 1));
    return (static_cast<int64_t>(fb + 52) << 8) | b[0];
  }
  if (fb >= -104) {  // two more
    TARN_RETURN_IF_ERROR(in.Read(b, 2));
    return (static_cast<int64_t>(fb + 88) << 16) | static_cast<int64_t>(BigEndian(b, 2));
  }
  if (fb >= -120) {  // three more
    TARN_RETURN_IF_ERROR(in.Read(b, 3));
    return (static_cast<int64_t>(fb + 112) << 24) | static_cast<int64_t>(BigEndian(b, 3));
  }
  const int len = fb + 129;  // 1..8 bytes, a signed big-endian number; TFile writes 4..8
  if (len < 4 || len > 8) {
    return Corrupt(path + ": corrupt variable-length integer (first byte " + std::to_string(fb) +
                   ") before " + in.Where());
  }
  TARN_RETURN_IF_ERROR(in.Read(b, static_cast<size_t>(len)));
  uint64_t v = BigEndian(b, len);
  if (len < 8 && (b[0] & 0x80) != 0) v |= ~uint64_t{0} << (8 * len);  // sign-extend
  return static_cast<int64_t>(v);
}

Result<int64_t> ReadCount(Input& in, const std::string& path, const std::string& what,
                          int64_t max) {
  const std::string where = in.Where();
  TARN_ASSIGN_OR_RETURN(int64_t v, ReadVLong(in, path));
  if (v < 0 || v > max) {
    return Corrupt(path + ": corrupt " + what + " " + std::to_string(v) + " at " + where);
  }
  return v;
}

// Utils.readString: a VInt length, then that many bytes.
Result<std::string> ReadTFileString(Input& in, const std::string& path, const std::string& what) {
  TARN_ASSIGN_OR_RETURN(int64_t n, ReadCount(in, path, what + " length", kMaxKeyBytes));
  std::string s(static_cast<size_t>(n), '\0');
  TARN_RETURN_IF_ERROR(in.Read(s.data(), s.size()));
  return s;
}

Result<AggregatedLogReader::Region> ReadRegion(Input& in, const std::string& path) {
  AggregatedLogReader::Region r;
  const int64_t max = int64_t{1} << 56;
  TARN_ASSIGN_OR_RETURN(int64_t offset, ReadCount(in, path, "block offset", max));
  TARN_ASSIGN_OR_RETURN(int64_t compressed, ReadCount(in, path, "compressed block size", max));
  TARN_ASSIGN_OR_RETURN(int64_t raw, ReadCount(in, path, "raw block size", max));
  r.offset = static_cast<uint64_t>(offset);
  r.compressed = static_cast<uint64_t>(compressed);
  r.raw = static_cast<uint64_t>(raw);
  return r;
}

// Java's DataOutput.writeUTF: a 2-byte length, then (modified) UTF-8.
Result<std::string> ReadUtf(Input& in) {
  unsigned char len[2];
  TARN_RETURN_IF_ERROR(in.Read(len, 2));
  std::string s(static_cast<size_t>(BigEndian(len, 2)), '\0');
  TARN_RETURN_IF_ERROR(in.Read(s.data(), s.size()));
  return s;
}

// A TFile value: chunks of (VInt length, bytes), the length negated for all but the last.
class ChunkInput : public Input {
 public:
  ChunkInput(Input& in, const std::string& path) : in_(in), path_(path) {}
  Result<bool> AtEnd() {
    TARN_RETURN_IF_ERROR(NextChunk());
    return remain_ == 0;
  }
  Status Read(void* dst, size_t n) override {
    auto* out = static_cast<char*>(dst);
    while (n > 0) {
      TARN_RETURN_IF_ERROR(NextChunk());
      if (remain_ == 0) {
        return Corrupt(path_ + ": corrupt: a value ends " + Num(n) + " bytes early at " + Where());
      }
      const size_t take = static_cast<size_t>(std::min<uint64_t>(n, remain_));
      TARN_RETURN_IF_ERROR(in_.Read(out, take));
      out += take;
      n -= take;
      remain_ -= take;
    }
    return Status::Ok();
  }
  Status Skip(uint64_t n) override {
    while (n > 0) {
      TARN_RETURN_IF_ERROR(NextChunk());
      if (remain_ == 0) {
        return Corrupt(path_ + ": corrupt: a value ends " + Num(n) + " bytes early at " + Where());
      }
      const uint64_t take = std::min<uint64_t>(n, remain_);
      TARN_RETURN_IF_ERROR(in_.Skip(take));
      n -= take;
      remain_ -= take;
    }
    return Status::Ok();
  }
  // Past whatever the reader left of the value.
  Status Drain() {
    while (true) {
      TARN_RETURN_IF_ERROR(NextChunk());
      if (remain_ == 0) return Status::Ok();
      TARN_RETURN_IF_ERROR(Skip(remain_));
    }
  }
  std::string Where() const override { return in_.Where(); }

 private:
  Status NextChunk() {
    while (remain_ == 0 && !last_) {
      TARN_ASSIGN_OR_RETURN(int64_t len, ReadVLong(in_, path_));
      if (len < INT32_MIN || len > INT32_MAX) {
        return Corrupt(path_ + ": corrupt value chunk length " + std::to_string(len) + " before " +
                       Where());
      }
      last_ = len >= 0;
      remain_ = static_cast<uint64_t>(len >= 0 ? len : -len);
    }
    return Status::Ok();
  }

  Input& in_;
  const std::string& path_;
  uint64_t remain_ = 0;
  bool last_ = false;
};

bool IsDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::string Qualify(const std::string& dir, const net::HadoopConf& conf) {
  if (dir.find("://") != std::string::npos) return dir;
  std::string fs = conf.DefaultFs();
  while (!fs.empty() && fs.back() == '/') fs.pop_back();
  return fs + (dir.empty() || dir[0] != '/' ? "/" : "") + dir;
}

}  // namespace

const std::string& AggregatedLogReader::path() const { return file_->path(); }

Result<std::unique_ptr<AggregatedLogReader>> AggregatedLogReader::Open(
    std::unique_ptr<data::ReadableFile> file, const std::string& application_id) {
  std::unique_ptr<AggregatedLogReader> reader(new AggregatedLogReader(std::move(file)));
  TARN_RETURN_IF_ERROR(reader->ReadIndexes(application_id));
  return reader;
}

Status AggregatedLogReader::ReadIndexes(const std::string& application_id) {
  data::ReadableFile& f = *file_;
  const std::string& p = f.path();
  const uint64_t size = f.size();
  unsigned char head[32];
  const size_t head_bytes = static_cast<size_t>(std::min<uint64_t>(size, sizeof(head)));
  TARN_RETURN_IF_ERROR(ReadFileAt(f, 0, head, head_bytes));
  if (head_bytes == sizeof(head) && !application_id.empty()) {
    const std::string want = net::Sha256Hex(application_id);
    static const char* kHex = "0123456789abcdef";
    std::string got;
    for (unsigned char c : head) {
      got += kHex[c >> 4];
      got += kHex[c & 15];
    }
    if (got == want) {
      return Unsupported(p +
                         ": written by YARN's IndexedFormat log aggregation controller "
                         "(LogAggregationIndexedFileController), which tarn does not read; tarn "
                         "reads the TFile controller's files (yarn.log-aggregation.file-formats="
                         "TFile); use `yarn logs` for these");
    }
  }
  if (size < kBcfileMagic.size() + kTailBytes) {
    return Corrupt(p + ": truncated at offset " + Num(size) + ": fewer bytes than the " +
                   Num(kBcfileMagic.size() + kTailBytes) + " of the smallest TFile");
  }
  if (std::memcmp(head, kBcfileMagic.data(), kBcfileMagic.size()) != 0) {
    return Corrupt(p + ": not a TFile of aggregated logs: no BCFile magic at offset 0");
  }
  unsigned char tail[kTailBytes];
  const uint64_t tail_at = size - kTailBytes;
  TARN_RETURN_IF_ERROR(ReadFileAt(f, tail_at, tail, sizeof(tail)));
  if (std::memcmp(tail + 12, kBcfileMagic.data(), kBcfileMagic.size()) != 0) {
    return Corrupt(p + ": truncated or corrupt: no BCFile magic at offset " + Num(size - 16) +
                   " (the end of a complete TFile); a NodeManager may still be writing it, or "
                   "its upload was cut short");
  }
  const uint64_t meta_index_at = BigEndian(tail, 8);
  const int major = static_cast<int16_t>(BigEndian(tail + 8, 2));
  const int minor = static_cast<int16_t>(BigEndian(tail + 10, 2));
  if (major != 1) {
    return Unsupported(p + ": BCFile version " + std::to_string(major) + "." +
                       std::to_string(minor) + " at offset " + Num(tail_at + 8) +
                       "; tarn reads version 1");
  }
  if (meta_index_at < kBcfileMagic.size() || meta_index_at >= tail_at) {
    return Corrupt(p + ": corrupt: the meta index offset " + Num(meta_index_at) + " (at offset " +
                   Num(tail_at) + ") is outside the file's " + Num(size) + " bytes");
  }
  // The meta index: count, then (name "data:<name>", compression, region) per meta block.
  std::string index_bytes(static_cast<size_t>(tail_at - meta_index_at), '\0');
  TARN_RETURN_IF_ERROR(ReadFileAt(f, meta_index_at, index_bytes.data(), index_bytes.size()));
  MemoryInput meta(p, "the meta index", std::move(index_bytes), meta_index_at);
  TARN_ASSIGN_OR_RETURN(int64_t metas, ReadCount(meta, p, "meta block count", 1 << 20));
  struct Meta {
    std::string compression;
    Region region;
  };
  std::map<std::string, Meta> meta_blocks;
  const auto check_region = [&](const Region& r, const std::string& what) -> Status {
    if (r.offset < kBcfileMagic.size() || r.offset + r.compressed > meta_index_at ||
        r.offset + r.compressed < r.offset) {
      return Corrupt(p + ": corrupt or truncated: " + what + " at file offsets " + Num(r.offset) +
                     ".." + Num(r.offset + r.compressed) + " is outside the blocks (offsets " +
                     Num(kBcfileMagic.size()) + ".." + Num(meta_index_at) + ")");
    }
    return Status::Ok();
  };
  const auto check_compression = [&](const std::string& c, const std::string& what) -> Status {
    if (c == "none" || c == "gz") return Status::Ok();
    if (c == "lzo") {
      return Unsupported(p + ": " + what +
                         " is lzo-compressed, which tarn does not read (set "
                         "yarn.nodemanager.log-aggregation.compression-type to none or gz)");
    }
    return Corrupt(p + ": corrupt: " + what + " names an unknown compression '" + c + "'");
  };
  for (int64_t i = 0; i < metas; ++i) {
    TARN_ASSIGN_OR_RETURN(std::string name, ReadTFileString(meta, p, "meta block name"));
    if (!StartsWith(name, "data:")) {
      return Corrupt(p + ": corrupt meta index: block name '" + name + "' before " + meta.Where());
    }
    name = name.substr(5);
    TARN_ASSIGN_OR_RETURN(std::string compression, ReadTFileString(meta, p, "compression"));
    TARN_ASSIGN_OR_RETURN(Region region, ReadRegion(meta, p));
    TARN_RETURN_IF_ERROR(check_region(region, "meta block " + name));
    meta_blocks[name] = Meta{compression, region};
  }
  const auto meta_block = [&](const std::string& name) -> Result<Meta> {
    auto it = meta_blocks.find(name);
    if (it == meta_blocks.end()) {
      return Corrupt(p + ": corrupt: no meta block '" + name + "' in the meta index at offset " +
                     Num(meta_index_at));
    }
    TARN_RETURN_IF_ERROR(check_compression(it->second.compression, "meta block " + name));
    return it->second;
  };

  TARN_ASSIGN_OR_RETURN(Meta bcfile_index, meta_block("BCFile.index"));
  BlockInput data_index(f, "meta block BCFile.index", bcfile_index.region,
                        bcfile_index.compression == "gz");
  TARN_ASSIGN_OR_RETURN(compression_, ReadTFileString(data_index, p, "compression"));
  TARN_RETURN_IF_ERROR(check_compression(compression_, "the data blocks"));
  TARN_ASSIGN_OR_RETURN(int64_t block_count, ReadCount(data_index, p, "data block count", 1 << 24));
  for (int64_t b = 0; b < block_count; ++b) {
    TARN_ASSIGN_OR_RETURN(Region region, ReadRegion(data_index, p));
    TARN_RETURN_IF_ERROR(check_region(region, "data block " + std::to_string(b)));
    if (compression_ == "none" && region.raw != region.compressed) {
      return Corrupt(p + ": corrupt: uncompressed data block " + std::to_string(b) + " has " +
                     Num(region.compressed) + " stored and " + Num(region.raw) + " raw bytes");
    }
    blocks_.push_back(region);
  }

  TARN_ASSIGN_OR_RETURN(Meta tfile_meta, meta_block("TFile.meta"));
  BlockInput tmeta(f, "meta block TFile.meta", tfile_meta.region, tfile_meta.compression == "gz");
  unsigned char version[4];
  TARN_RETURN_IF_ERROR(tmeta.Read(version, 4));
  if (static_cast<int16_t>(BigEndian(version, 2)) != 1) {
    return Unsupported(p + ": TFile version " + std::to_string(BigEndian(version, 2)) + "." +
                       std::to_string(BigEndian(version + 2, 2)) + "; tarn reads version 1");
  }
  TARN_ASSIGN_OR_RETURN(record_count_, ReadCount(tmeta, p, "record count", int64_t{1} << 48));

  TARN_ASSIGN_OR_RETURN(Meta tfile_index, meta_block("TFile.index"));
  BlockInput tindex(f, "meta block TFile.index", tfile_index.region,
                    tfile_index.compression == "gz");
  TARN_ASSIGN_OR_RETURN(int64_t first_key_bytes,
                        ReadCount(tindex, p, "first key entry size", kMaxKeyBytes + 16));
  if (first_key_bytes == 0 && block_count != 0) {
    return Corrupt(p + ": corrupt: TFile.index has no first key but the file has " +
                   std::to_string(block_count) + " data blocks");
  }
  int64_t records = 0;
  if (first_key_bytes > 0) {
    TARN_RETURN_IF_ERROR(tindex.Skip(static_cast<uint64_t>(first_key_bytes)));
    for (int64_t b = 0; b < block_count; ++b) {
      TARN_ASSIGN_OR_RETURN(int64_t entry_bytes,
                            ReadCount(tindex, p, "index entry size", kMaxKeyBytes + 16));
      std::string entry(static_cast<size_t>(entry_bytes), '\0');
      TARN_RETURN_IF_ERROR(tindex.Read(entry.data(), entry.size()));
      MemoryInput e(p, "the TFile.index entry of data block " + std::to_string(b), entry, 0);
      TARN_ASSIGN_OR_RETURN(int64_t key_bytes, ReadCount(e, p, "last key length", kMaxKeyBytes));
      TARN_RETURN_IF_ERROR(e.Skip(static_cast<uint64_t>(key_bytes)));
      TARN_ASSIGN_OR_RETURN(int64_t n, ReadCount(e, p, "record count", int64_t{1} << 48));
      block_records_.push_back(n);
      records += n;
    }
  }
  if (records != record_count_) {
    return Corrupt(p + ": corrupt: TFile.meta counts " + std::to_string(record_count_) +
                   " records, its data blocks " + std::to_string(records));
  }
  return Status::Ok();
}

Status AggregatedLogReader::Scan(const AggregatedLogVisitor& visitor) {
  containers_.clear();
  data::ReadableFile& f = *file_;
  const std::string& p = f.path();
  for (size_t b = 0; b < blocks_.size(); ++b) {
    BlockInput block(f, "data block " + std::to_string(b), blocks_[b], compression_ == "gz");
    for (int64_t r = 0; r < block_records_[b]; ++r) {
      const std::string key_at = block.Where();
      TARN_ASSIGN_OR_RETURN(int64_t key_bytes, ReadCount(block, p, "key length", kMaxKeyBytes));
      std::string key_raw(static_cast<size_t>(key_bytes), '\0');
      TARN_RETURN_IF_ERROR(block.Read(key_raw.data(), key_raw.size()));
      if (key_raw.size() < 2 || BigEndian(reinterpret_cast<const unsigned char*>(key_raw.data()),
                                          2) != key_raw.size() - 2) {
        return Corrupt(p + ": corrupt: the key at " + key_at +
                       " is not a container id or reserved key (writeUTF string)");
      }
      const std::string key = key_raw.substr(2);
      ChunkInput value(block, p);
      if (key == "VERSION") {
        unsigned char v[4];
        TARN_RETURN_IF_ERROR(value.Read(v, 4));
        version_ = static_cast<int32_t>(BigEndian(v, 4));
      } else if (key == "APPLICATION_OWNER") {
        TARN_ASSIGN_OR_RETURN(owner_, ReadUtf(value));
      } else if (key == "APPLICATION_ACL") {
        while (true) {
          TARN_ASSIGN_OR_RETURN(bool end, value.AtEnd());
          if (end) break;
          TARN_ASSIGN_OR_RETURN(std::string access, ReadUtf(value));
          TARN_ASSIGN_OR_RETURN(std::string acl, ReadUtf(value));
          acls_[access] = acl;
        }
      } else {
        AggregatedContainer c;
        c.container_id = key;
        while (true) {
          TARN_ASSIGN_OR_RETURN(bool end, value.AtEnd());
          if (end) break;
          TARN_ASSIGN_OR_RETURN(std::string name, ReadUtf(value));
          const std::string length_at = value.Where();
          TARN_ASSIGN_OR_RETURN(std::string length_text, ReadUtf(value));
          auto length = ParseInt(length_text);
          if (!IsDigits(length_text) || !length) {
            return Corrupt(p + ": corrupt: the length '" + length_text + "' of " + key + "/" +
                           name + " at " + length_at + " is not a number");
          }
          const uint64_t n = static_cast<uint64_t>(*length);
          c.files.push_back({name, n});
          if (visitor.want && visitor.want(key, name, n)) {
            std::string piece;
            uint64_t left = n;
            while (left > 0) {
              piece.resize(static_cast<size_t>(std::min<uint64_t>(left, kBufferBytes)));
              TARN_RETURN_IF_ERROR(value.Read(piece.data(), piece.size()));
              if (visitor.bytes) TARN_RETURN_IF_ERROR(visitor.bytes(piece));
              left -= piece.size();
            }
          } else {
            TARN_RETURN_IF_ERROR(value.Skip(n));
          }
        }
        containers_.push_back(std::move(c));
      }
      TARN_RETURN_IF_ERROR(value.Drain());
    }
  }
  return Status::Ok();
}

std::vector<LogAggregationController> LogAggregationControllers(const net::HadoopConf& conf) {
  std::vector<LogAggregationController> out;
  const std::string nm_root = conf.GetOr("yarn.nodemanager.remote-app-log-dir", "/tmp/logs");
  const std::string nm_suffix = conf.GetOr("yarn.nodemanager.remote-app-log-dir-suffix", "logs");
  std::set<std::string> seen;
  for (const auto& part : Split(conf.GetOr("yarn.log-aggregation.file-formats", "TFile"), ",")) {
    const std::string name(Trim(part));
    if (name.empty() || !seen.insert(name).second) continue;
    LogAggregationController c;
    c.name = name;
    const std::string fallback_class = name == "TFile"           ? kTFileControllerClass
                                       : name == "IndexedFormat" ? kIndexedControllerClass
                                                                 : "";
    c.class_name =
        conf.GetOr("yarn.log-aggregation.file-controller." + name + ".class", fallback_class);
    c.root =
        Qualify(conf.GetOr("yarn.log-aggregation." + name + ".remote-app-log-dir", nm_root), conf);
    c.suffix = conf.GetOr("yarn.log-aggregation." + name + ".remote-app-log-dir-suffix",
                          nm_suffix + "-" + ToLower(name));
    c.indexed = c.class_name.find("IndexedFileController") != std::string::npos;
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<AggregatedLogDir> AggregatedLogDirs(
    const std::vector<LogAggregationController>& controllers, const net::HadoopConf& conf,
    const std::string& owner, const std::string& application_id) {
  std::vector<AggregatedLogDir> out;
  std::set<std::string> seen;
  const auto add = [&](std::string path, const LogAggregationController* c) {
    if (seen.insert(path).second) out.push_back({std::move(path), c});
  };
  std::string bucket;
  const auto underscore = application_id.rfind('_');
  if (underscore != std::string::npos) {
    auto seq = ParseInt(application_id.substr(underscore + 1));
    if (seq && *seq >= 0) {
      char buf[16];
      std::snprintf(buf, sizeof(buf), "%04lld", *seq % 10000);
      bucket = buf;
    }
  }
  for (const auto& c : controllers) {
    const std::string user_dir = c.root + "/" + owner;
    if (!bucket.empty()) {
      add(user_dir + "/bucket-" + c.suffix + "/" + bucket + "/" + application_id, &c);
    }
    add(user_dir + "/" + c.suffix + "/" + application_id, &c);
  }
  // Hadoop 2: TFiles under the NodeManagers' own suffix.
  const LogAggregationController* tfile = nullptr;
  for (const auto& c : controllers) {
    if (!c.indexed && tfile == nullptr) tfile = &c;
  }
  add(Qualify(conf.GetOr("yarn.nodemanager.remote-app-log-dir", "/tmp/logs"), conf) + "/" + owner +
          "/" + conf.GetOr("yarn.nodemanager.remote-app-log-dir-suffix", "logs") + "/" +
          application_id,
      tfile);
  return out;
}

std::string NodeOfLogFileName(const std::string& name) {
  const std::vector<std::string> parts = Split(name, "_");
  if (parts.size() < 2) return name;
  size_t port = parts.size() - 1;
  // host_port_<upload time> (rolling aggregation): the port is the one before the time.
  if (parts.size() >= 3 && IsDigits(parts[port]) && IsDigits(parts[port - 1]) &&
      parts[port].size() > 5) {
    --port;
  }
  if (!IsDigits(parts[port])) return name;
  std::vector<std::string> host(parts.begin(), parts.begin() + static_cast<long>(port));
  return Join(host, "_") + ":" + parts[port];
}

Result<std::vector<NodeLogFile>> FindAggregatedLogs(const net::HadoopConf& conf,
                                                    const std::string& owner,
                                                    const std::string& application_id) {
  const auto controllers = LogAggregationControllers(conf);
  std::vector<std::string> tried;
  bool being_written = false;
  for (const auto& dir : AggregatedLogDirs(controllers, conf, owner, application_id)) {
    TARN_ASSIGN_OR_RETURN(auto fs, data::FileSystemFor(dir.path));
    auto listed = fs->List(dir.path);
    tried.push_back(dir.path);
    if (!listed.ok()) {
      if (listed.status().code() == StatusCode::kNotFound) continue;
      return listed.status().WithContext("listing the aggregated logs of " + application_id);
    }
    std::vector<NodeLogFile> files;
    for (const auto& s : *listed) {
      if (s.is_dir) continue;
      if (EndsWith(s.name, ".tmp")) {
        being_written = true;
        continue;
      }
      if (EndsWith(s.name, "-checksum")) continue;
      files.push_back({s.path.empty() ? data::ChildPath(dir.path, s.name) : s.path,
                       NodeOfLogFileName(s.name), s.length, s.modification_time_ms});
    }
    if (files.empty()) continue;
    if (dir.controller != nullptr && dir.controller->indexed) {
      return Unsupported("the aggregated logs of " + application_id + " in " + dir.path +
                         " were written by YARN's " + dir.controller->name +
                         " log aggregation controller (" + dir.controller->class_name +
                         "), which tarn does not read; it reads the TFile controller's files; "
                         "use `yarn logs` for these");
    }
    std::sort(files.begin(), files.end(),
              [](const NodeLogFile& a, const NodeLogFile& b) { return a.path < b.path; });
    return files;
  }
  return NotFound("no aggregated logs of " + application_id + " (owner " + owner + ") in " +
                  Join(tried, ", ") +
                  (being_written ? " yet: a NodeManager is still uploading them (*.tmp)" : ""));
}

}  // namespace tarn::cluster::yarn
