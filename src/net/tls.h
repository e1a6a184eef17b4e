// TLS (OpenSSL), TLS 1.2 or newer only:
// - for tarn's HTTP server, a server context loaded from PEM files, with
//   optional client-certificate verification; the HTTP server drives each
//   connection's handshake and records without blocking (net/http_server.cpp);
// - for the connections between the nodes of a job (tarn.cluster.tls), a
//   stream keyed by a pre-shared key derived from the job's secret.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "common/status.h"
#include "net/deadline.h"
#include "net/socket.h"

struct ssl_ctx_st;  // OpenSSL's SSL_CTX
struct ssl_st;      // OpenSSL's SSL

namespace tarn::net {

struct TlsServerFiles {
  std::string cert_file;  // PEM: the server certificate, then any intermediates
  std::string key_file;   // PEM: its private key (not encrypted)
  // PEM CA certificates; when set, a client must present a certificate signed
  // by one of them or its handshake fails.
  std::string client_ca_file;
  // What names these files in error messages (a setting, a flag), e.g.
  // "tarn.serving.tls"; "" names only the files.
  std::string origin;

  bool enabled() const { return !cert_file.empty() || !key_file.empty(); }
};

class TlsServerContext {
 public:
  // Loads and checks the files: each must be readable PEM, the key must match
  // the certificate. Every error names the file and why.
  static Result<std::shared_ptr<TlsServerContext>> Load(const TlsServerFiles& files);
  ~TlsServerContext();
  TlsServerContext(const TlsServerContext&) = delete;
  TlsServerContext& operator=(const TlsServerContext&) = delete;

  ssl_ctx_st* get() const { return ctx_; }

 private:
  TlsServerContext() = default;
  ssl_ctx_st* ctx_ = nullptr;
};

// A TCP connection under TLS with a pre-shared key (RFC 4279, and TLS 1.3's
// external PSK with an (EC)DHE exchange): both ends prove they hold the key
// in the handshake, so no certificate has to be made or handed out, and a
// peer without the key never gets an encrypted byte through. Sends may run
// on one thread while one other thread receives.
class TlsPskStream {
 public:
  enum class Side { kClient, kServer };
  // Runs the handshake on a connected socket; an error names `peer` and
  // says that the keys differ (or TLS is off at the other end).
  static Result<std::unique_ptr<TlsPskStream>> Handshake(Socket socket, Side side,
                                                         std::string_view key, Deadline d);
  ~TlsPskStream();
  TlsPskStream(const TlsPskStream&) = delete;
  TlsPskStream& operator=(const TlsPskStream&) = delete;

  Status WriteAll(const void* data, size_t n, Deadline d);
  Status ReadAll(void* data, size_t n, Deadline d);
  // Waits until decrypted bytes, or a record, are there to read.
  Status WaitReadable(Deadline d);
  // Wakes threads blocked on the socket; their calls fail.
  void Shutdown() { socket_.Shutdown(); }
  std::string PeerName() const { return socket_.PeerName(); }
  // "TLSv1.3 TLS_AES_128_GCM_SHA256", for logs and tests.
  std::string Description() const;

 private:
  TlsPskStream() = default;
  // One SSL call under the lock; waits outside it for what OpenSSL wants.
  template <typename Call>
  Result<int> Drive(Call call, Deadline d, const char* what);

  Socket socket_;
  ssl_ctx_st* ctx_ = nullptr;
  ssl_st* ssl_ = nullptr;
  std::string key_;
  mutable std::mutex mu_;  // OpenSSL's SSL is not safe for concurrent calls
};

// OpenSSL's queued errors for this thread as one line ("" when none), and
// the queue cleared.
std::string TakeTlsErrors();

}  // namespace tarn::net
