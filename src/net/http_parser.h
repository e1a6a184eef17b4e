// An incremental HTTP/1.1 request parser (RFC 9112), strict where lenience
// would open a hole (request smuggling, header injection) and bounded
// everywhere: the head by max_header_bytes, the body by max_body_bytes.
//
// The caller keeps every byte received for the current request in one buffer
// and calls Parse() with all of it after each read; the parser remembers how
// far it got, so a request that arrives a byte at a time costs linear time.
// After kDone, consumed() bytes belong to this request (pipelined requests
// follow them); call Reset() before parsing the next one.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "net/http_server.h"

namespace tarn::net {

struct HttpLimits {
  size_t max_header_bytes = 16 * 1024;      // request line + headers
  size_t max_body_bytes = 4 * 1024 * 1024;  // decoded body
};

class HttpRequestParser {
 public:
  enum class State { kNeedMore, kDone, kError };

  explicit HttpRequestParser(HttpLimits limits = {}) : limits_(limits) {}

  // `data`: every byte of this request received so far (and possibly the
  // start of the next ones). Fills *req (reusing its buffers) once the head is
  // complete, and req->body as the body arrives.
  State Parse(std::string_view data, HttpRequest* req);
  void Reset();

  // After kDone: the bytes of this request in `data`.
  size_t consumed() const { return consumed_; }
  // After kDone: whether the connection stays open (HTTP/1.1 without
  // "Connection: close", or HTTP/1.0 with "Connection: keep-alive").
  bool keep_alive() const { return keep_alive_; }
  // The head is complete, the body is not, and the client sent
  // "Expect: 100-continue": the server should answer "100 Continue" once.
  bool wants_continue() const {
    return head_done_ && expect_continue_ && state_ == State::kNeedMore;
  }
  // The head is complete (method, path, headers are in the request).
  bool head_done() const { return head_done_; }
  // Some byte of the request has been seen.
  bool started() const { return started_; }

  // After kError: the status to answer (400, 413, 414, 417, 431, 501, 505)
  // and what was wrong.
  int error_status() const { return error_status_; }
  const std::string& error() const { return error_; }

 private:
  State Fail(int status, std::string message);
  State ParseHead(std::string_view head, HttpRequest* req);
  State ParseChunked(std::string_view data, HttpRequest* req);

  HttpLimits limits_;
  State state_ = State::kNeedMore;
  bool started_ = false;
  bool head_done_ = false;
  size_t scan_from_ = 0;  // where the search for the end of the head resumes
  size_t head_len_ = 0;
  // Body framing.
  bool chunked_ = false;
  size_t content_length_ = 0;
  size_t chunk_pos_ = 0;        // chunked: offset in data of the next chunk-size line
  size_t chunk_remaining_ = 0;  // chunked: data bytes left in the current chunk
  int chunk_stage_ = 0;         // 0 size line, 1 data, 2 CRLF after data, 3 trailers
  bool expect_continue_ = false;
  bool keep_alive_ = true;
  size_t consumed_ = 0;
  int error_status_ = 0;
  std::string error_;
};

// Percent-decodes a URL path. False (and *out unspecified) for a bad escape,
// an encoded NUL, or a control character.
bool DecodeUrlPath(std::string_view in, std::string* out);

}  // namespace tarn::net
