#include "data/text_reader.h"

#include <libdeflate.h>
#include <zlib.h>

#include <algorithm>  // for std::max, std::min
#include <cstring>    // for memchr, memcpy, memrchr

#include "common/strings.h"  // for FormatBytes
#include "data/file_system.h"

namespace tarn::data {
namespace {

constexpr size_t kInputBufferBytes = 1 << 20;
constexpr size_t kNpos = std::string::npos;

}  // namespace

class ChunkReader::Inflater {
 public:
  Inflater() { ok = inflateInit2(&zs, 15 + 16) == Z_OK; }  // gzip wrapper only
  ~Inflater() {
    if (ok) inflateEnd(&zs);
  }
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;

  z_stream zs{};
  bool ok = false;
};

ChunkReader::ChunkReader(const ChunkReaderOptions& options)
    : options_(options), parser_(options.delimiter) {
  options_.chunk_bytes = std::max<size_t>(options_.chunk_bytes, 1);
}

ChunkReader::~ChunkReader() = default;

Result<std::unique_ptr<ChunkReader>> ChunkReader::Open(const std::string& path,
                                                       size_t chunk_bytes) {
  ChunkReaderOptions options;
  options.chunk_bytes = chunk_bytes;
  return Open(path, options);
}

Result<std::unique_ptr<ChunkReader>> ChunkReader::Open(const std::string& path,
                                                       const ChunkReaderOptions& options) {
  std::unique_ptr<ChunkReader> reader(new ChunkReader(options));
  TARN_RETURN_IF_ERROR(reader->Init(path));
  return reader;
}

Status ChunkReader::Init(const std::string& path) {
  path_ = path;
  TARN_ASSIGN_OR_RETURN(auto fs, FileSystemFor(path));
  TARN_ASSIGN_OR_RETURN(file_, fs->OpenRead(path));
  file_size_ = file_->size();

  in_cap_ = kInputBufferBytes;
  in_.reset(new unsigned char[in_cap_]);
  while (in_len_ < 2 && !input_eof_) TARN_RETURN_IF_ERROR(RefillInput());
  gzip_ = in_len_ >= 2 && in_[0] == 0x1f && in_[1] == 0x8b;
  if (!gzip_) return Status::Ok();

  inflater_ = std::make_unique<Inflater>();
  if (!inflater_->ok) return Internal("zlib inflateInit2 failed for " + path);
  return TryWholeGzip();
}

Result<size_t> ChunkReader::ReadSome(void* dst, size_t cap) {
  TARN_ASSIGN_OR_RETURN(size_t r, file_->Read(dst, cap));
  if (r == 0) input_eof_ = true;
  file_pos_ += r;
  return r;
}

Status ChunkReader::RefillInput() {
  if (in_pos_ > 0) {
    std::memmove(in_.get(), in_.get() + in_pos_, in_len_ - in_pos_);
    in_len_ -= in_pos_;
    in_pos_ = 0;
  }
  if (in_len_ < in_cap_) {  // one read per refill keeps the first chunk quick
    TARN_ASSIGN_OR_RETURN(size_t r, ReadSome(in_.get() + in_len_, in_cap_ - in_len_));
    in_len_ += r;
  }
  return Status::Ok();
}

Status ChunkReader::TryWholeGzip() {
  const size_t limit = options_.whole_gzip_limit;
  if (limit == 0 || file_size_ < 18 || file_size_ >= limit) return Status::Ok();
  unsigned char trailer[4];
  TARN_RETURN_IF_ERROR(file_->ReadAt(file_size_ - 4, trailer, 4));
  // ISIZE of the last member: the whole text for a one-member file (modulo 2^32; a wrong guess
  // only makes libdeflate run out of room, and then zlib streams the file instead).
  const uint64_t isize = uint64_t{trailer[0]} | uint64_t{trailer[1]} << 8 |
                         uint64_t{trailer[2]} << 16 | uint64_t{trailer[3]} << 24;
  if (isize == 0 || isize > limit - file_size_) return Status::Ok();

  PodArray<char> compressed;
  compressed.Reserve(file_size_);
  TARN_RETURN_IF_ERROR(file_->ReadAt(0, compressed.data(), file_size_));
  PodArray<char> text;
  text.Reserve(isize);
  libdeflate_decompressor* d = libdeflate_alloc_decompressor();
  if (d == nullptr) return Status::Ok();
  size_t in_used = 0, out_used = 0;
  const libdeflate_result r = libdeflate_gzip_decompress_ex(
      d, compressed.data(), file_size_, text.data(), isize, &in_used, &out_used);
  libdeflate_free_decompressor(d);
  if (r != LIBDEFLATE_SUCCESS) return Status::Ok();  // zlib streams it and names any fault

  whole_ = std::move(text);
  whole_size_ = out_used;
  whole_pos_ = 0;
  whole_input_ = in_used;
  // Further members (or trailing bytes) are streamed by zlib from where libdeflate stopped.
  in_pos_ = in_len_ = 0;
  member_done_ = true;
  if (in_used >= file_size_) {
    file_pos_ = file_size_;
    input_eof_ = true;
  } else {
    TARN_RETURN_IF_ERROR(file_->Seek(in_used));
    file_pos_ = in_used;
    input_eof_ = false;
  }
  return Status::Ok();
}

Status ChunkReader::SkipTrailingBytes() {
  // gzip(1) ignores zero padding after the last member (tapes, some writers); anything else is
  // a damaged file.
  while (true) {
    for (size_t i = in_pos_; i < in_len_; ++i) {
      if (in_[i] != 0) {
        const uint64_t at = file_pos_ - (in_len_ - i);
        return Corrupt(path_ + ": unexpected data after the end of the gzip stream at byte " +
                       std::to_string(at) + " (a damaged or concatenated non-gzip file)");
      }
    }
    in_pos_ = in_len_;
    if (input_eof_) return Status::Ok();
    TARN_RETURN_IF_ERROR(RefillInput());
  }
}

Result<size_t> ChunkReader::Inflate(char* dst, size_t cap) {
  z_stream& zs = inflater_->zs;
  size_t produced = 0;
  while (produced < cap) {
    if (in_pos_ == in_len_ && !input_eof_) TARN_RETURN_IF_ERROR(RefillInput());
    if (member_done_) {
      if (in_pos_ == in_len_) {
        if (input_eof_) return produced;
        continue;
      }
      if (in_[in_pos_] != 0x1f) {
        TARN_RETURN_IF_ERROR(SkipTrailingBytes());
        return produced;
      }
      if (inflateReset(&zs) != Z_OK) return Internal("zlib inflateReset failed for " + path_);
      member_done_ = false;
    }
    zs.next_in = in_.get() + in_pos_;
    zs.avail_in = static_cast<uInt>(in_len_ - in_pos_);
    zs.next_out = reinterpret_cast<Bytef*>(dst + produced);
    zs.avail_out = static_cast<uInt>(std::min<size_t>(cap - produced, 1u << 30));
    const uInt avail_out = zs.avail_out;
    const int r = inflate(&zs, Z_NO_FLUSH);
    in_pos_ = in_len_ - zs.avail_in;
    produced += avail_out - zs.avail_out;
    if (r == Z_STREAM_END) {
      member_done_ = true;
      continue;
    }
    if (r == Z_OK) continue;
    if (r == Z_BUF_ERROR && !(in_pos_ == in_len_ && input_eof_)) continue;  // wants more input
    if (r == Z_BUF_ERROR) {
      return Corrupt(path_ + ": truncated gzip file: the compressed data ends before the end of " +
                     "the stream (" + std::to_string(file_size_) +
                     " bytes read); the file was probably cut off while being written or copied");
    }
    return Corrupt(path_ + ": corrupt gzip data near byte " + std::to_string(Consumed()) + ": " +
                   (zs.msg != nullptr ? zs.msg : "inflate error " + std::to_string(r)));
  }
  return produced;
}

Result<size_t> ChunkReader::Produce(char* dst, size_t cap) {
  size_t got = 0;
  if (whole_pos_ < whole_size_) {
    const size_t n = std::min(cap, whole_size_ - whole_pos_);
    std::memcpy(dst, whole_.data() + whole_pos_, n);
    whole_pos_ += n;
    got = n;
    if (whole_pos_ == whole_size_) {  // hand the memory back as soon as it is used up
      whole_.Release();
      whole_size_ = whole_pos_ = 0;
    }
    if (got == cap) return got;
  }
  if (gzip_) {
    TARN_ASSIGN_OR_RETURN(size_t n, Inflate(dst + got, cap - got));
    return got + n;
  }
  const size_t buffered = std::min(cap - got, in_len_ - in_pos_);
  std::memcpy(dst + got, in_.get() + in_pos_, buffered);
  in_pos_ += buffered;
  got += buffered;
  while (got < cap && !input_eof_) {
    TARN_ASSIGN_OR_RETURN(size_t r, ReadSome(dst + got, cap - got));
    got += r;
  }
  return got;
}

Status ChunkReader::Fill(std::string* text, size_t target) {
  const size_t old = text->size();
  if (old >= target) return Status::Ok();
  text->resize(target);
  auto got = Produce(text->data() + old, target - old);
  if (!got.ok()) {
    text->resize(old);
    return got.status();
  }
  text->resize(old + *got);
  if (*got < target - old) source_eof_ = true;
  return Status::Ok();
}

size_t ChunkReader::FindCut(const std::string& text, size_t scan_from) const {
  const char* s = text.data();
  const size_t n = text.size();
  if (std::memchr(s + scan_from, '"', n - scan_from) == nullptr) {
    const void* nl = ::memrchr(s + scan_from, '\n', n - scan_from);
    return nl ? static_cast<size_t>(static_cast<const char*>(nl) - s) + 1 : kNpos;
  }
  size_t pos = scan_from, last = kNpos;
  while (pos < n) {
    const size_t e = parser_.FindRecordEnd(std::string_view(s + pos, n - pos));
    if (e == kNpos) break;
    pos += e;
    last = pos;
  }
  return last;
}

uint64_t ChunkReader::Consumed() const {
  if (whole_size_ > 0) return whole_input_ * whole_pos_ / whole_size_;
  return file_pos_ - (in_len_ - in_pos_);
}

Result<bool> ChunkReader::Next(TextChunk* chunk) {
  std::string& text = chunk->text;
  text.clear();
  chunk->compressed_bytes = 0;
  if (done_) return false;
  text.assign(carry_);
  carry_.clear();
  size_t target = options_.chunk_bytes;
  size_t cut = 0;
  while (true) {
    if (!source_eof_) TARN_RETURN_IF_ERROR(Fill(&text, target));
    if (!bom_checked_ && (text.size() >= 3 || source_eof_)) {
      bom_checked_ = true;
      if (text.compare(0, 3, "\xEF\xBB\xBF") == 0) text.erase(0, 3);
    }
    if (source_eof_) {
      cut = text.size();
      break;
    }
    cut = FindCut(text, 0);
    if (cut != kNpos) break;
    if (text.size() > options_.max_record_bytes) {
      return Corrupt(path_ + ":" + std::to_string(next_line_) + ": a record longer than " +
                     FormatBytes(static_cast<double>(options_.max_record_bytes)) +
                     "; a field that starts with '\"' is probably never closed");
    }
    target = text.size() + std::max(options_.chunk_bytes, text.size() / 2);
  }
  carry_.assign(text, cut, kNpos);
  text.resize(cut);
  if (text.empty()) {
    done_ = true;
    return false;
  }
  if (text.back() != '\n') text.push_back('\n');
  if (source_eof_ && carry_.empty()) done_ = true;
  chunk->first_line = next_line_;
  next_line_ += CountNewlines(text.data(), text.size());
  const uint64_t consumed = done_ ? file_size_ : Consumed();
  chunk->compressed_bytes = consumed > reported_ ? consumed - reported_ : 0;
  reported_ = std::max(reported_, consumed);
  return true;
}

}  // namespace tarn::data
