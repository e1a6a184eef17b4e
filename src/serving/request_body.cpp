#include "serving/request_body.h"

#include <zlib.h>

#include <algorithm>

#include "common/strings.h"

namespace tarn::serving {

Status Inflate(std::string_view in, bool gzip, size_t max_bytes, std::string* out) {
  out->clear();
  const std::string what = std::string("the ") + (gzip ? "gzip" : "deflate") + " body";
  auto too_big = [&]() {
    return FailedPrecondition(what + " inflates to more than " + std::to_string(max_bytes) +
                              " bytes (the body limit)");
  };
  z_stream zs{};
  if (inflateInit2(&zs, gzip ? 15 + 16 : 15) != Z_OK) return Internal("zlib inflateInit2 failed");
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  const size_t limit = max_bytes + 1;  // one byte more than allowed tells "too big"
  Status status;
  while (true) {
    if (out->size() >= limit) {
      status = too_big();
      break;
    }
    const size_t before = out->size();
    const size_t room = std::min(limit - before, std::max<size_t>(64 << 10, in.size() * 4));
    out->resize(before + room);
    zs.next_out = reinterpret_cast<Bytef*>(out->data() + before);
    zs.avail_out = static_cast<uInt>(room);
    const int rc = inflate(&zs, Z_NO_FLUSH);
    out->resize(before + room - zs.avail_out);
    if (rc == Z_STREAM_END) {
      if (zs.avail_in != 0) status = InvalidArgument(what + " has bytes after its compressed data");
      if (out->size() > max_bytes) status = too_big();
      break;
    }
    if (rc == Z_OK && zs.avail_out == 0) continue;  // the output filled: more room
    if (rc == Z_OK || rc == Z_BUF_ERROR) {
      status = InvalidArgument(what + " is truncated");
    } else {
      status = InvalidArgument(what + " is corrupt (" + (zs.msg ? zs.msg : "inflate failed") + ")");
    }
    break;
  }
  inflateEnd(&zs);
  return status;
}

Status DecodeRequestBody(const net::HttpRequest& req, bool binary_extension, size_t max_bytes,
                         std::string* inflated, RequestBody* out, int* http_status) {
  std::string_view body = req.body;
  *http_status = 400;
  const std::string_view encoding = Trim(req.Header("content-encoding"));
  if (!encoding.empty() && !EqualsIgnoreCase(encoding, "identity")) {
    const bool gzip = EqualsIgnoreCase(encoding, "gzip") || EqualsIgnoreCase(encoding, "x-gzip");
    if (!gzip && !EqualsIgnoreCase(encoding, "deflate")) {
      *http_status = 415;
      return Unsupported("Content-Encoding " + std::string(encoding) +
                         " is not supported (send gzip, deflate or identity)");
    }
    Status s = Inflate(body, gzip, max_bytes, inflated);
    if (!s.ok()) {
      if (s.code() == StatusCode::kFailedPrecondition) *http_status = 413;
      return s;
    }
    body = *inflated;
  }
  out->json = body;
  out->binary = {};
  if (!binary_extension) return Status::Ok();
  const std::string_view header_length = req.Header("inference-header-content-length");
  if (!header_length.empty()) {
    auto n = ParseInt(Trim(header_length));
    if (!n || *n < 0 || static_cast<size_t>(*n) > body.size()) {
      return InvalidArgument("Inference-Header-Content-Length " + std::string(header_length) +
                             " must be a byte count within the body's " +
                             std::to_string(body.size()) + " bytes");
    }
    out->json = body.substr(0, static_cast<size_t>(*n));
    out->binary = body.substr(static_cast<size_t>(*n));
  }
  return Status::Ok();
}

}  // namespace tarn::serving
