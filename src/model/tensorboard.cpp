#include "model/tensorboard.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <utility>

#include "common/checksum.h"
#include "common/files.h"
#include "common/log.h"

namespace tarn::model {

namespace tensorboard {
namespace {

// Protobuf wire types.
constexpr uint32_t kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5;

void PutVarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

void PutKey(std::string* out, uint32_t field, uint32_t wire_type) {
  PutVarint(out, (static_cast<uint64_t>(field) << 3) | wire_type);
}

template <typename T>
void PutLittleEndian(std::string* out, T v) {
  for (size_t i = 0; i < sizeof(T); ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

void PutDouble(std::string* out, uint32_t field, double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof(bits));
  PutKey(out, field, kFixed64);
  PutLittleEndian(out, bits);
}

void PutFloat(std::string* out, uint32_t field, float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof(bits));
  PutKey(out, field, kFixed32);
  PutLittleEndian(out, bits);
}

void PutBytes(std::string* out, uint32_t field, const std::string& bytes) {
  PutKey(out, field, kLengthDelimited);
  PutVarint(out, bytes.size());
  out->append(bytes);
}

// event.proto: Event.
constexpr uint32_t kEventWallTime = 1, kEventStep = 2, kEventFileVersion = 3, kEventSummary = 5;
// summary.proto: Summary.value, Summary.Value.tag and .simple_value.
constexpr uint32_t kSummaryValue = 1, kValueTag = 1, kValueSimpleValue = 2;

// wall_time and step; proto3 leaves out a zero step.
std::string EventHead(double wall_time, int64_t step) {
  std::string e;
  PutDouble(&e, kEventWallTime, wall_time);
  if (step != 0) {
    PutKey(&e, kEventStep, kVarint);
    PutVarint(&e, static_cast<uint64_t>(step));  // negative: ten bytes, as int64 is encoded
  }
  return e;
}

double Now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

uint32_t MaskCrc(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

std::string FrameRecord(const std::string& data) {
  std::string out;
  out.reserve(data.size() + 16);
  PutLittleEndian<uint64_t>(&out, data.size());
  PutLittleEndian<uint32_t>(&out, MaskCrc(Crc32c(0, out.data(), 8)));
  out.append(data);
  PutLittleEndian<uint32_t>(&out, MaskCrc(Crc32c(0, data.data(), data.size())));
  return out;
}

std::string EncodeFileVersionEvent(double wall_time, const std::string& version) {
  std::string e = EventHead(wall_time, 0);
  PutBytes(&e, kEventFileVersion, version);
  return e;
}

std::string EncodeScalarEvent(double wall_time, int64_t step, const std::string& tag, float value) {
  std::string v;
  PutBytes(&v, kValueTag, tag);
  PutFloat(&v, kValueSimpleValue, value);
  std::string summary;
  PutBytes(&summary, kSummaryValue, v);
  std::string e = EventHead(wall_time, step);
  PutBytes(&e, kEventSummary, summary);
  return e;
}

}  // namespace tensorboard

Result<std::unique_ptr<TensorBoardWriter>> TensorBoardWriter::Open(const std::string& dir) {
  TARN_RETURN_IF_ERROR(MakeDirs(dir));
  char host[256] = "localhost";
  if (::gethostname(host, sizeof(host) - 1) != 0) std::strcpy(host, "localhost");
  host[sizeof(host) - 1] = '\0';
  const double now = tensorboard::Now();
  const std::string base = "events.out.tfevents." + std::to_string(static_cast<long long>(now)) +
                           "." + host + "." + std::to_string(::getpid());
  // Two writers of one process may open a file in the same folder within a second.
  static std::atomic<int> sequence{0};
  for (int attempt = 0;; ++attempt) {
    std::string name = base;
    if (attempt > 0) name += "." + std::to_string(sequence.fetch_add(1) + 1);
    std::string path = JoinPath(dir, name + ".tarn");
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) {
      if (errno == EEXIST && attempt < 1000) continue;
      return ErrnoError("cannot create TensorBoard event file " + path, errno);
    }
    std::unique_ptr<TensorBoardWriter> w(new TensorBoardWriter(path, fd));
    w->pending_ = tensorboard::FrameRecord(
        tensorboard::EncodeFileVersionEvent(now, tensorboard::kFileVersion));
    TARN_RETURN_IF_ERROR(w->Flush());
    return w;
  }
}

TensorBoardWriter::~TensorBoardWriter() {
  if (fd_ < 0) return;
  Status s = Flush();
  if (!s.ok()) {
    TARN_LOG(kWarn) << s.message();
  }
  ::close(fd_);
}

Status TensorBoardWriter::AddScalar(const std::string& tag, int64_t step, double value) {
  return AddScalar(tag, step, value, tensorboard::Now());
}

Status TensorBoardWriter::AddScalar(const std::string& tag, int64_t step, double value,
                                    double wall_time) {
  if (tag.empty()) return InvalidArgument("TensorBoard scalar with an empty tag");
  pending_ += tensorboard::FrameRecord(
      tensorboard::EncodeScalarEvent(wall_time, step, tag, static_cast<float>(value)));
  return Status::Ok();
}

Status TensorBoardWriter::Flush() {
  // What a failed write leaves unwritten stays buffered: a later Flush
  // completes the record, so the file never holds a gap.
  size_t done = 0;
  while (done < pending_.size()) {
    ssize_t n = ::write(fd_, pending_.data() + done, pending_.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      pending_.erase(0, done);
      return ErrnoError("cannot write " + path_, err);
    }
    done += static_cast<size_t>(n);
  }
  pending_.clear();
  return Status::Ok();
}

}  // namespace tarn::model
