// A small, fast HTTP/1.1 server: one epoll acceptor/reader thread per
// "loop" plus a fixed pool of handler threads, keep-alive, bounded header and
// body sizes, timeouts on slow clients. Used by `tarn serve` (model serving)
// and by the training coordinator's status page.
//
// Guarantees:
//  - Garbage from a client never crashes the server: the parser refuses it
//    with a 4xx and the connection is closed.
//  - Header block over Options::max_header_bytes -> 431; body over
//    Options::max_body_bytes -> 413 (the body is not read).
//  - A client that sends nothing for Options::idle_timeout_ms (between
//    requests) or is slower than that in the middle of one is disconnected.
//  - Stop() stops accepting, lets in-flight requests finish (their responses
//    are written), then closes every connection. The destructor calls Stop().
//  - With Options::tls set, every connection is TLS 1.2+ (OpenSSL): the
//    handshake runs on the event loop without blocking it, is bounded by
//    idle_timeout_ms, and a client that fails it (plain HTTP, no or a wrong
//    client certificate) is closed without a request being handled.
//  - Request and response buffers are reused per connection, so a keep-alive
//    connection does not allocate per request once it has warmed up (the
//    handler itself may).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"
#include "net/tls.h"

namespace tarn::net {

struct HttpRequest {
  std::string method;  // "GET", "POST", ... as sent (upper case)
  std::string path;    // percent-decoded path, without the query: "/v1/models/m"
  std::string query;   // raw query string after '?', not decoded ("" if none)
  // Header names are lower-cased; values are trimmed. In arrival order.
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  std::string remote;  // "127.0.0.1:53412"

  // The value of header `name` (lower case), or "" when absent.
  std::string_view Header(std::string_view name) const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  // Extra headers (Content-Type, Content-Length and Connection are set by the
  // server).
  std::vector<std::pair<std::string, std::string>> headers;

  // Resets to the defaults while keeping the buffers' capacity.
  void Clear();
};

// The reason phrase for an HTTP status code ("Not Found").
const char* HttpStatusText(int status);

class HttpServer {
 public:
  struct Options {
    std::string host = "127.0.0.1";  // numeric IPv4 address, or "localhost"
    int port = 0;                    // 0 -> an ephemeral port, see port()
    int threads = 2;                 // handler threads
    size_t max_header_bytes = 16 * 1024;
    size_t max_body_bytes = 4 * 1024 * 1024;
    int idle_timeout_ms = 30'000;  // keep-alive idle, and slow-client limit
    int max_connections = 4096;    // further connections are closed at once
    int backlog = 1024;
    // Certificate and key (and optionally a client CA) turn on TLS.
    TlsServerFiles tls;
    // Called (from a loop thread) for each connection whose TLS handshake
    // failed, with OpenSSL's reason; may be empty.
    std::function<void(const std::string& reason)> on_tls_failure;
  };
  using Handler = std::function<void(const HttpRequest&, HttpResponse*)>;

  // Binds, listens and starts the threads. The handler is called from the
  // handler threads, concurrently; it must be thread-safe. An exception from
  // the handler becomes a 500.
  static Result<std::unique_ptr<HttpServer>> Start(const Options& options, Handler handler);

  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;
  ~HttpServer();

  int port() const;  // the bound port
  bool tls() const;  // connections speak TLS
  const Options& options() const;
  // Graceful: stops accepting, finishes in-flight requests, closes
  // connections, joins the threads. Idempotent; safe from any thread except a
  // handler thread.
  void Stop();

  class Impl;

 private:
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tarn::net
