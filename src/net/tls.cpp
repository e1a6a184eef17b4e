#include "net/tls.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/log.h"

namespace tarn::net {

std::string TakeTlsErrors() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    const char* reason = ERR_reason_error_string(e);
    if (!out.empty()) out += "; ";
    out += reason ? reason : ("OpenSSL error " + std::to_string(e));
  }
  return out;
}

namespace {

// A readable file, or an error naming it (OpenSSL's own message for a missing
// file is only "system lib").
Status CheckReadable(const std::string& what, const std::string& path, const std::string& origin) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) {
    int err = errno;
    return InvalidArgument(what + " " + path + origin + ": cannot read it: " + std::strerror(err));
  }
  std::fclose(f);
  return Status::Ok();
}

}  // namespace

TlsServerContext::~TlsServerContext() {
  if (ctx_) SSL_CTX_free(ctx_);
}

Result<std::shared_ptr<TlsServerContext>> TlsServerContext::Load(const TlsServerFiles& files) {
  const std::string origin = files.origin.empty() ? "" : " (" + files.origin + ")";
  if (files.cert_file.empty() || files.key_file.empty()) {
    return InvalidArgument("TLS needs both a certificate and a private key file" + origin +
                           ": got " +
                           (files.cert_file.empty() ? "only the key " + files.key_file
                                                    : "only the certificate " + files.cert_file));
  }
  TARN_RETURN_IF_ERROR(CheckReadable("TLS certificate", files.cert_file, origin));
  TARN_RETURN_IF_ERROR(CheckReadable("TLS private key", files.key_file, origin));
  if (!files.client_ca_file.empty()) {
    TARN_RETURN_IF_ERROR(CheckReadable("TLS client CA file", files.client_ca_file, origin));
  }
  ERR_clear_error();
  std::shared_ptr<TlsServerContext> tls(new TlsServerContext());
  tls->ctx_ = SSL_CTX_new(TLS_server_method());
  if (!tls->ctx_) return Internal("TLS: cannot create a context: " + TakeTlsErrors());
  SSL_CTX* ctx = tls->ctx_;
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  // Renegotiation would let a client make SSL_write wait for a read; a
  // closed connection without close_notify is an ordinary end of the stream.
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_IGNORE_UNEXPECTED_EOF |
                               SSL_OP_CIPHER_SERVER_PREFERENCE);
  // The server writes from a buffer that moves and grows between retries.
  // Idle connections give their buffers back (4,096 of them would hold 140 MB).
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                            SSL_MODE_RELEASE_BUFFERS);
  // One recv per socket buffer rather than two per record (header, then
  // body); what it reads ahead is seen with SSL_has_pending.
  SSL_CTX_set_read_ahead(ctx, 1);
  if (SSL_CTX_use_certificate_chain_file(ctx, files.cert_file.c_str()) != 1) {
    return InvalidArgument("TLS certificate " + files.cert_file + origin +
                           " is not a PEM certificate: " + TakeTlsErrors());
  }
  // Read on its own first: OpenSSL's loader reports a key of another
  // certificate as a bad key file.
  EVP_PKEY* key = nullptr;
  if (BIO* bio = BIO_new_file(files.key_file.c_str(), "r")) {
    key = PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
    BIO_free(bio);
  }
  if (!key) {
    return InvalidArgument("TLS private key " + files.key_file + origin +
                           " is not an unencrypted PEM private key: " + TakeTlsErrors());
  }
  X509* cert = SSL_CTX_get0_certificate(ctx);
  const bool matches = X509_check_private_key(cert, key) == 1;
  ERR_clear_error();
  const bool used = matches && SSL_CTX_use_PrivateKey(ctx, key) == 1;
  EVP_PKEY_free(key);
  if (!matches) {
    return InvalidArgument("TLS private key " + files.key_file + origin +
                           " does not match the certificate " + files.cert_file);
  }
  if (!used || SSL_CTX_check_private_key(ctx) != 1) {
    return InvalidArgument("TLS private key " + files.key_file + origin +
                           " cannot be used with the certificate " + files.cert_file + ": " +
                           TakeTlsErrors());
  }
  if (X509_cmp_current_time(X509_get0_notAfter(cert)) < 0) {
    TARN_LOG(kWarn) << "TLS certificate " << files.cert_file
                    << " has expired: clients that check it will refuse the server";
  }
  if (!files.client_ca_file.empty()) {
    if (SSL_CTX_load_verify_locations(ctx, files.client_ca_file.c_str(), nullptr) != 1) {
      return InvalidArgument("TLS client CA file " + files.client_ca_file + origin +
                             " holds no PEM certificate: " + TakeTlsErrors());
    }
    STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(files.client_ca_file.c_str());
    if (!names) {
      return InvalidArgument("TLS client CA file " + files.client_ca_file + origin +
                             " holds no PEM certificate: " + TakeTlsErrors());
    }
    SSL_CTX_set_client_CA_list(ctx, names);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
    // Resumed sessions must carry the verified client; OpenSSL refuses to
    // resume without a session id context when clients are verified.
    static const unsigned char kContext[] = "tarn-serve";
    SSL_CTX_set_session_id_context(ctx, kContext, sizeof(kContext) - 1);
  }
  ERR_clear_error();
  return tls;
}

}  // namespace tarn::net
