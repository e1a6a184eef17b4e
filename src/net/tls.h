// TLS for tarn's HTTP server (OpenSSL): a server context loaded from PEM
// files, TLS 1.2 or newer only, with optional client-certificate
// verification. The HTTP server drives each connection's handshake and
// records without blocking (src/net/http_server.cpp).
#pragma once

#include <memory>
#include <string>

#include "common/status.h"

struct ssl_ctx_st;  // OpenSSL's SSL_CTX

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

// OpenSSL's queued errors for this thread as one line ("" when none), and
// the queue cleared.
std::string TakeTlsErrors();

}  // namespace tarn::net
