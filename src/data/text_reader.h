// Reading a delimited text file, plain or gzip, as chunks of whole records.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "common/status.h"
#include "data/record_parser.h"

namespace tarn::data {

class ReadableFile;  // file_system.h

/// A run of whole records from one file.
struct TextChunk {
  /// Whole records, each ending in '\n' (a last record without one gets one appended). A UTF-8
  /// byte-order mark at the start of the file is dropped.
  std::string text;
  /// 1-based physical line number, in the file, of the first record of `text`.
  uint64_t first_line = 1;
  /// Bytes of the file (compressed bytes for gzip) consumed since the previous chunk; for
  /// progress. They add up to total_bytes() at the end.
  uint64_t compressed_bytes = 0;
};

struct ChunkReaderOptions {
  /// Chunks hold about this many bytes (more when one record is longer).
  size_t chunk_bytes = 4 << 20;
  /// The field delimiter, so that only a '"' at the start of a field opens a quoted field (see
  /// record_parser.h). Empty: any '"' toggles quoting (plain quote parity); the same for files
  /// that follow RFC 4180.
  std::string delimiter;
  /// A gzip file whose compressed plus uncompressed size (the latter from its trailer) is at
  /// most this many bytes is decoded in one go with libdeflate, about 2.5 times faster than
  /// zlib, holding both in memory meanwhile. 0: always stream through zlib, whose memory use is
  /// bounded by a few chunks whatever the file size.
  size_t whole_gzip_limit = 0;
  /// A record longer than this fails the read (kCorrupt): almost always a quoted field that is
  /// never closed, which would otherwise swallow the rest of the file.
  size_t max_record_bytes = 64 << 20;
};

/// Reads one file (a local path, or hdfs:// through file_system.h), plain or gzip (recognised by
/// its magic bytes 1f 8b, not its name; files of several gzip members, as written by `cat a.gz
/// b.gz` or Hadoop, are read to the end), and hands out chunks whose cuts never fall inside a
/// record, even when quoted fields hold newlines. Memory stays bounded: the zlib stream decodes
/// straight into the chunk.
///
/// Errors name the file: a missing file is kNotFound; a truncated or corrupt gzip stream, or
/// bytes after the last gzip member other than zero padding, are kCorrupt.
/// Not thread-safe; use one reader per thread.
class ChunkReader {
 public:
  static Result<std::unique_ptr<ChunkReader>> Open(const std::string& path, size_t chunk_bytes);
  static Result<std::unique_ptr<ChunkReader>> Open(const std::string& path,
                                                   const ChunkReaderOptions& options);
  ~ChunkReader();
  ChunkReader(const ChunkReader&) = delete;
  ChunkReader& operator=(const ChunkReader&) = delete;

  /// Fills *chunk (reusing its buffer) with the next records. Returns false at the end of the
  /// file (and leaves chunk->text empty).
  Result<bool> Next(TextChunk* chunk);

  /// Size of the file in bytes (compressed size for gzip), for progress.
  uint64_t total_bytes() const { return file_size_; }
  bool gzip() const { return gzip_; }
  const std::string& path() const { return path_; }

 private:
  class Inflater;
  explicit ChunkReader(const ChunkReaderOptions& options);
  Status Init(const std::string& path);
  Status TryWholeGzip();
  Status RefillInput();
  Status SkipTrailingBytes();
  // Appends up to `target - text->size()` bytes of decoded text; sets source_eof_ at the end.
  Status Fill(std::string* text, size_t target);
  Result<size_t> Produce(char* dst, size_t cap);
  // One read(2) of at most `cap` bytes (retried on EINTR); 0 at the end of the file.
  Result<size_t> ReadSome(void* dst, size_t cap);
  Result<size_t> Inflate(char* dst, size_t cap);
  size_t FindCut(const std::string& text, size_t scan_from) const;
  uint64_t Consumed() const;

  ChunkReaderOptions options_;
  RecordParser parser_;
  std::string path_;
  std::unique_ptr<ReadableFile> file_;
  uint64_t file_size_ = 0;
  bool gzip_ = false;

  // Raw input buffer (plain: only the first read; gzip: compressed bytes).
  std::unique_ptr<unsigned char[]> in_;
  size_t in_cap_ = 0;
  size_t in_pos_ = 0;
  size_t in_len_ = 0;
  uint64_t file_pos_ = 0;  // bytes read from the file so far
  bool input_eof_ = false;

  std::unique_ptr<Inflater> inflater_;
  bool member_done_ = false;  // between two gzip members

  // Text decoded in one go by libdeflate (whole_gzip_limit), handed out from whole_pos_.
  PodArray<char> whole_;
  size_t whole_size_ = 0;
  size_t whole_pos_ = 0;
  uint64_t whole_input_ = 0;  // compressed bytes it came from

  bool source_eof_ = false;
  bool done_ = false;
  bool bom_checked_ = false;
  std::string carry_;  // decoded text after the last cut: the start of the next chunk
  uint64_t next_line_ = 1;
  uint64_t reported_ = 0;
};

}  // namespace tarn::data
