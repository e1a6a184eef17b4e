// TensorBoard event files: scalars (losses, AUC, throughput) that TensorBoard
// plots, written without TensorFlow or a protobuf library.
//
// A file is a sequence of TFRecord records:
//   u64 length (little-endian), u32 masked CRC-32C of those 8 bytes,
//   `length` bytes of data, u32 masked CRC-32C of the data,
// where mask(crc) = ((crc >> 15) | (crc << 17)) + 0xa282ead8. Each record's data
// is one tensorflow.Event protobuf (tensorflow/core/util/event.proto), encoded
// by hand: wall_time (field 1, double), step (2, int64), and either
// file_version (3, string; "brain.Event:2", the first event of every file) or
// summary (5, tensorflow.Summary: repeated Value value = 1, with Value.tag = 1
// and Value.simple_value = 2, a float).
//
// An event log is appended to, not written atomically: records are buffered
// and written whole by Flush(), so a reader that polls the file sees whole
// records, and a crash leaves at most a truncated last record, which
// TensorBoard's reader skips.
//
// Usage (one writer per run folder, one thread at a time):
//   TARN_ASSIGN_OR_RETURN(auto tb, model::TensorBoardWriter::Open(dir));
//   TARN_RETURN_IF_ERROR(tb->AddScalar("loss/train", epoch, err));
//   TARN_RETURN_IF_ERROR(tb->Flush());   // e.g. once per epoch
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "common/status.h"

namespace tarn::model {

class TensorBoardWriter {
 public:
  // Creates `dir` (and its parents) and a new event file in it named
  // events.out.tfevents.<unix seconds>.<hostname>.<pid>.tarn (with a ".<n>"
  // before ".tarn" should that name exist), holding the file_version event.
  static Result<std::unique_ptr<TensorBoardWriter>> Open(const std::string& dir);

  TensorBoardWriter(const TensorBoardWriter&) = delete;
  TensorBoardWriter& operator=(const TensorBoardWriter&) = delete;
  // Flushes what is buffered (a failure is logged) and closes the file.
  ~TensorBoardWriter();

  // Buffers one scalar event at the current wall time. TensorBoard stores
  // scalars as float; `value` is rounded to the nearest float.
  Status AddScalar(const std::string& tag, int64_t step, double value);
  // The same with an explicit wall time (seconds since the epoch).
  Status AddScalar(const std::string& tag, int64_t step, double value, double wall_time);
  // Writes the buffered records to the file (whole records only).
  Status Flush();

  const std::string& path() const { return path_; }

 private:
  TensorBoardWriter(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}

  std::string path_;
  int fd_ = -1;
  std::string pending_;  // framed records not yet written
};

// The pieces of the format, exposed for tests and for other writers.
namespace tensorboard {

// mask(crc) as TFRecord defines it.
uint32_t MaskCrc(uint32_t crc);
// One TFRecord record holding `data`.
std::string FrameRecord(const std::string& data);
// An Event with wall_time, step 0 and file_version.
std::string EncodeFileVersionEvent(double wall_time, const std::string& version);
// An Event with wall_time, step and a Summary of one simple_value.
std::string EncodeScalarEvent(double wall_time, int64_t step, const std::string& tag, float value);

inline constexpr const char* kFileVersion = "brain.Event:2";

}  // namespace tensorboard

}  // namespace tarn::model
