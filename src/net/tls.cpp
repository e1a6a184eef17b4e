#include "net/tls.h"

#include <fcntl.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <poll.h>

#include <algorithm>
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

namespace {

// The PSK identity both ends use: the key, not the name, is the credential.
constexpr char kPskIdentity[] = "tarn-job";

const std::string& PskOf(SSL* ssl) {
  return *static_cast<const std::string*>(SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl)));
}

unsigned int ClientPsk(SSL* ssl, const char*, char* identity, unsigned int max_identity,
                       unsigned char* psk, unsigned int max_psk) {
  const std::string& key = PskOf(ssl);
  if (sizeof(kPskIdentity) > max_identity || key.size() > max_psk) return 0;
  std::memcpy(identity, kPskIdentity, sizeof(kPskIdentity));
  std::memcpy(psk, key.data(), key.size());
  return static_cast<unsigned int>(key.size());
}

unsigned int ServerPsk(SSL* ssl, const char* identity, unsigned char* psk, unsigned int max_psk) {
  const std::string& key = PskOf(ssl);
  if (!identity || std::strcmp(identity, kPskIdentity) != 0 || key.size() > max_psk) return 0;
  std::memcpy(psk, key.data(), key.size());
  return static_cast<unsigned int>(key.size());
}

Status WaitFd(int fd, short events, Deadline d, const char* what) {
  while (true) {
    pollfd p{fd, events, 0};
    const int r = ::poll(&p, 1, d.PollMs());
    if (r > 0) return Status::Ok();
    if (r == 0) return DeadlineExceeded(std::string("timed out while ") + what);
    if (errno != EINTR) return ErrnoError(std::string("poll while ") + what, errno);
  }
}

}  // namespace

TlsPskStream::~TlsPskStream() {
  if (ssl_) SSL_free(ssl_);
  if (ctx_) SSL_CTX_free(ctx_);
}

template <typename Call>
Result<int> TlsPskStream::Drive(Call call, Deadline d, const char* what) {
  while (true) {
    int rc, err;
    {
      std::lock_guard<std::mutex> lock(mu_);
      ERR_clear_error();
      rc = call();
      err = rc > 0 ? SSL_ERROR_NONE : SSL_get_error(ssl_, rc);
    }
    switch (err) {
      case SSL_ERROR_NONE:
        return rc;
      case SSL_ERROR_WANT_READ:
        TARN_RETURN_IF_ERROR(WaitFd(socket_.fd(), POLLIN, d, what));
        break;
      case SSL_ERROR_WANT_WRITE:
        TARN_RETURN_IF_ERROR(WaitFd(socket_.fd(), POLLOUT, d, what));
        break;
      case SSL_ERROR_ZERO_RETURN:
        return Unavailable("connection closed by " + PeerName());
      case SSL_ERROR_SYSCALL: {
        const int e = errno;
        const std::string tls = TakeTlsErrors();
        if (!tls.empty()) return IoError(std::string(what) + " " + PeerName() + ": " + tls);
        if (e == 0) return Unavailable("connection closed by " + PeerName());
        return ErrnoError(std::string(what) + " " + PeerName(), e);
      }
      default:
        return IoError(std::string("TLS error while ") + what + " " + PeerName() + ": " +
                       TakeTlsErrors());
    }
  }
}

Result<std::unique_ptr<TlsPskStream>> TlsPskStream::Handshake(Socket socket, Side side,
                                                              std::string_view key, Deadline d) {
  std::unique_ptr<TlsPskStream> t(new TlsPskStream());
  t->socket_ = std::move(socket);
  t->key_ = std::string(key);
  const std::string peer = t->PeerName();
  // Non-blocking: a reader waiting in poll must not hold OpenSSL's lock from a sender.
  const int flags = ::fcntl(t->socket_.fd(), F_GETFL, 0);
  if (flags < 0 || ::fcntl(t->socket_.fd(), F_SETFL, flags | O_NONBLOCK) < 0) {
    return ErrnoError("fcntl O_NONBLOCK for " + peer, errno);
  }
  ERR_clear_error();
  const bool server = side == Side::kServer;
  t->ctx_ = SSL_CTX_new(server ? TLS_server_method() : TLS_client_method());
  if (!t->ctx_) return Internal("TLS: cannot create a context: " + TakeTlsErrors());
  SSL_CTX_set_min_proto_version(t->ctx_, TLS1_2_VERSION);
  // TLS 1.3 (its PSK handshake runs psk_dhe_ke: forward secrecy): a PSK from these
  // callbacks needs a SHA-256 suite; AES-GCM first, which CPUs with AES instructions run
  // fastest. TLS 1.2: PSK suites with an ECDHE exchange first.
  if (SSL_CTX_set_ciphersuites(t->ctx_, "TLS_AES_128_GCM_SHA256:TLS_CHACHA20_POLY1305_SHA256") !=
          1 ||
      SSL_CTX_set_cipher_list(t->ctx_,
                              "ECDHE-PSK-CHACHA20-POLY1305:ECDHE-PSK-AES256-CBC-SHA384:"
                              "PSK-AES256-GCM-SHA384:PSK-AES128-GCM-SHA256") != 1) {
    return Internal("TLS: no PSK cipher suite in this OpenSSL: " + TakeTlsErrors());
  }
  SSL_CTX_set_options(t->ctx_, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_TICKET);
  SSL_CTX_set_num_tickets(t->ctx_, 0);  // one connection per handshake: nothing to resume
  SSL_CTX_set_session_cache_mode(t->ctx_, SSL_SESS_CACHE_OFF);
  SSL_CTX_set_mode(t->ctx_, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  SSL_CTX_set_app_data(t->ctx_, &t->key_);
  if (server) {
    SSL_CTX_set_psk_server_callback(t->ctx_, ServerPsk);
  } else {
    SSL_CTX_set_psk_client_callback(t->ctx_, ClientPsk);
  }
  t->ssl_ = SSL_new(t->ctx_);
  if (!t->ssl_ || SSL_set_fd(t->ssl_, t->socket_.fd()) != 1) {
    return Internal("TLS: cannot set up a connection: " + TakeTlsErrors());
  }
  TlsPskStream* self = t.get();
  auto done =
      t->Drive([self, server] { return server ? SSL_accept(self->ssl_) : SSL_connect(self->ssl_); },
               d, "in the TLS handshake with");
  if (!done.ok()) {
    return PermissionDenied("TLS handshake with " + peer + " failed (" + done.status().message() +
                            "): the peer has another job secret, or tarn.cluster.tls is not on "
                            "at both ends");
  }
  return t;
}

Status TlsPskStream::WriteAll(const void* data, size_t n, Deadline d) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const int chunk = static_cast<int>(std::min<size_t>(n, 1 << 30));
    TARN_ASSIGN_OR_RETURN(int w, Drive([&] { return SSL_write(ssl_, p, chunk); }, d, "sending to"));
    p += w;
    n -= static_cast<size_t>(w);
  }
  return Status::Ok();
}

Status TlsPskStream::ReadAll(void* data, size_t n, Deadline d) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    const int chunk = static_cast<int>(std::min<size_t>(n, 1 << 30));
    TARN_ASSIGN_OR_RETURN(int r,
                          Drive([&] { return SSL_read(ssl_, p, chunk); }, d, "receiving from"));
    p += r;
    n -= static_cast<size_t>(r);
  }
  return Status::Ok();
}

Status TlsPskStream::WaitReadable(Deadline d) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (SSL_pending(ssl_) > 0) return Status::Ok();
  }
  return WaitFd(socket_.fd(), POLLIN, d, "receiving");
}

std::string TlsPskStream::Description() const {
  std::lock_guard<std::mutex> lock(mu_);
  return std::string(SSL_get_version(ssl_)) + " " + SSL_get_cipher_name(ssl_);
}

}  // namespace tarn::net
