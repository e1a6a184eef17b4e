// A small HTTP/1.1 client on libcurl, for the ResourceManager's REST API and WebHDFS.
//
//  - Methods: GET, PUT, POST, DELETE (any other verb is sent as given).
//  - Request body from memory, or streamed from a callback (a file, a generator).
//  - Response body into memory, or streamed to a callback.
//  - Redirects are followed only when asked (WebHDFS's CREATE and APPEND answer 307 with the
//    DataNode's address, where the body must go in a second request: see WebHdfs).
//  - Connect and total timeouts. Transport failures come back as a Status naming the method
//    and URL: kUnavailable (refused, reset, DNS), kDeadlineExceeded (a timeout), kIoError (a
//    callback's own error keeps its code and message). An HTTP error status (4xx, 5xx) is not
//    a transport failure: it is returned in the response; HttpStatusError() turns it into one.
//
// One HttpClient keeps its connections open between requests (keep-alive) and is not
// thread-safe: use one per thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/settings.h"
#include "common/status.h"

namespace tarn::net {

struct ClientRequest {
  std::string method = "GET";
  std::string url;
  // Extra headers, e.g. {"Content-Type", "application/json"}.
  std::vector<std::pair<std::string, std::string>> headers;
  // The request body, from memory. Ignored when body_source is set.
  std::string body;
  // The request body from a callback: writes up to `cap` bytes into `dst` and returns how many;
  // 0 ends the body. An error aborts the request and is returned by Send().
  std::function<Result<size_t>(char* dst, size_t cap)> body_source;
  // With body_source: the body's size when known (sent as Content-Length); -1 sends it chunked.
  int64_t body_size = -1;
  // The response body to a callback, piece by piece, instead of ClientResponse::body. An error
  // aborts the transfer and is returned by Send(). Only a successful (2xx) final response's
  // body is passed on; an error response's body lands in ClientResponse::body as usual.
  std::function<Status(std::string_view piece)> body_sink;
  bool follow_redirects = false;
  int max_redirects = 5;
  // SPNEGO (HTTP Negotiate) with the default Kerberos credential (net/kerberos.h). The server's
  // auth cookie is kept on the client, so later requests skip the round trip. A 401 that
  // still offers Negotiate is an error from SpnegoRefusedError, not a response.
  bool negotiate = false;
  // https: the PEM file of the CA certificates to trust; empty: the one ConfigureClusterTls
  // set (tarn.tls.ca-file), else the system's. The server's certificate and host name are
  // always verified: a failure is an error, never ignored.
  std::string ca_file;
  int connect_timeout_ms = 10'000;
  int timeout_ms = 120'000;  // the whole request; 0: no limit
};

struct ClientResponse {
  int status = 0;
  // Headers of the final response, names lower-cased, values trimmed, in arrival order.
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;       // empty for a 2xx response to a request with a body_sink
  std::string final_url;  // after redirects
  // The value of a header (any case), or "" when absent.
  std::string Header(std::string_view name) const;
};

class HttpClient {
 public:
  HttpClient();
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  Result<ClientResponse> Send(const ClientRequest& request);

  Result<ClientResponse> Get(const std::string& url);
  Result<ClientResponse> Delete(const std::string& url);
  Result<ClientResponse> Put(const std::string& url, std::string body,
                             const std::string& content_type = "application/json");
  Result<ClientResponse> Post(const std::string& url, std::string body,
                              const std::string& content_type = "application/json");

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// In a YARN container: the CA file the submitter shipped with the job (its tarn.tls.ca-file,
// localized into the container's working folder), a path relative to that folder.
inline constexpr const char* kContainerCaFileEnv = "TARN_CONTAINER_CA_FILE";

// tarn.tls.ca-file: the CA certificates every https request trusts unless it names its own
// (the cluster's HTTPS_ONLY endpoints); when it is empty, $TARN_CONTAINER_CA_FILE's. Call at
// start-up, before any thread; a file that cannot be read fails here, naming it.
Status ConfigureClusterTls(const Settings& settings);
// The CA file ConfigureClusterTls chose (absolute); "" for the system's CAs.
const std::string& ClusterCaFile();

// "<what>: HTTP 404: <the start of the body>" (what: "GET http://host/path", say), with the
// code mapped to a StatusCode (404 kNotFound, 401/403 kPermissionDenied, 400 kInvalidArgument,
// 408/504 kDeadlineExceeded, 503 kUnavailable, other kIoError).
Status HttpStatusError(const std::string& what, const ClientResponse& response);

// Percent-encodes everything but RFC 3986's unreserved characters (query values).
std::string UrlEncode(std::string_view s);
// The same, but keeps '/' (a path).
std::string UrlEncodePath(std::string_view path);

}  // namespace tarn::net
