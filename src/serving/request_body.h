// A predict request's body with its HTTP encodings undone: a
// Content-Encoding of gzip or deflate is inflated (within the body limit),
// and for KServe v2 the binary tensor data extension's framing is split:
// `Inference-Header-Content-Length: N` says that the first N bytes are the
// JSON inference header and the rest is the tensors' binary data.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"
#include "net/http_server.h"

namespace tarn::serving {

struct RequestBody {
  std::string_view json;    // the JSON part
  std::string_view binary;  // binary tensor data after it ("" when none)
};

// Fills *out with views into req.body or into *inflated (which must outlive
// them). On error, *http_status is what to answer: 400 (a corrupt
// compressed body, a bad header length), 413 (inflates past max_bytes) or
// 415 (an unsupported Content-Encoding).
Status DecodeRequestBody(const net::HttpRequest& req, bool binary_extension, size_t max_bytes,
                         std::string* inflated, RequestBody* out, int* http_status);

// Inflates a gzip (gzip = true) or zlib stream into *out; InvalidArgument
// when it is corrupt or truncated, FailedPrecondition when it would exceed
// max_bytes.
Status Inflate(std::string_view in, bool gzip, size_t max_bytes, std::string* out);

}  // namespace tarn::serving
