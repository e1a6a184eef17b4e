#include "data/gzip_writer.h"

#include <zlib.h>

#include <vector>

namespace tarn::data {

struct GzipWriter::State {
  z_stream stream{};
  std::vector<unsigned char> out = std::vector<unsigned char>(1 << 18);
  bool open = false;
  ~State() {
    if (open) deflateEnd(&stream);
  }
};

GzipWriter::GzipWriter(AtomicFile file, std::unique_ptr<State> state)
    : file_(std::move(file)), state_(std::move(state)) {}
GzipWriter::GzipWriter(GzipWriter&&) noexcept = default;
GzipWriter& GzipWriter::operator=(GzipWriter&&) noexcept = default;
GzipWriter::~GzipWriter() = default;

Result<GzipWriter> GzipWriter::Create(const std::string& path, int level) {
  TARN_ASSIGN_OR_RETURN(AtomicFile file, AtomicFile::Open(path));
  auto state = std::make_unique<State>();
  // windowBits 15 + 16: a gzip (not zlib) wrapper.
  if (deflateInit2(&state->stream, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    return Internal("cannot start gzip compression for " + path);
  }
  state->open = true;
  return GzipWriter(std::move(file), std::move(state));
}

Status GzipWriter::Deflate(int flush) {
  auto& s = state_->stream;
  do {
    s.next_out = state_->out.data();
    s.avail_out = static_cast<uInt>(state_->out.size());
    int rc = deflate(&s, flush);
    if (rc == Z_STREAM_ERROR) return Internal("gzip compression failed for " + file_.path());
    size_t produced = state_->out.size() - s.avail_out;
    TARN_RETURN_IF_ERROR(file_.Write(state_->out.data(), produced));
  } while (s.avail_out == 0);
  return Status::Ok();
}

Status GzipWriter::Write(std::string_view data) {
  auto& s = state_->stream;
  s.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  s.avail_in = static_cast<uInt>(data.size());
  return Deflate(Z_NO_FLUSH);
}

Status GzipWriter::Finish() {
  state_->stream.avail_in = 0;
  TARN_RETURN_IF_ERROR(Deflate(Z_FINISH));
  return file_.Commit();
}

}  // namespace tarn::data
