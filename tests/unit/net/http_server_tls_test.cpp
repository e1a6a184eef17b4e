// tarn's HTTP server over TLS: handshakes on the event loop, refused plain
// HTTP and missing client certificates, large and pipelined requests through
// OpenSSL's buffers, and clear errors for bad certificate files. The
// certificates are made here with OpenSSL (a CA, a server and a client
// certificate signed by it).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>  // for setenv
#include <filesystem>
#include <memory>
#include <string>

#include "http_test_util.h"
#include "net/http_client.h"
#include "net/http_server.h"
#include "net/tls.h"
#include "test_util.h"

namespace tarn::net {
namespace {

EVP_PKEY* NewKey() { return EVP_EC_gen("P-256"); }

// A certificate for `cn` signed by (issuer, issuer_key), or self-signed when
// issuer is null.
X509* NewCert(const char* cn, EVP_PKEY* key, X509* issuer, EVP_PKEY* issuer_key, bool ca) {
  X509* cert = X509_new();
  X509_set_version(cert, 2);
  static long serial = 1;
  ASN1_INTEGER_set(X509_get_serialNumber(cert), serial++);
  X509_gmtime_adj(X509_getm_notBefore(cert), -60);
  X509_gmtime_adj(X509_getm_notAfter(cert), 3600);
  X509_set_pubkey(cert, key);
  X509_NAME* name = X509_get_subject_name(cert);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn),
                             -1, -1, 0);
  X509_set_issuer_name(cert, issuer ? X509_get_subject_name(issuer) : name);
  X509V3_CTX v3;
  X509V3_set_ctx_nodb(&v3);
  X509V3_set_ctx(&v3, issuer ? issuer : cert, cert, nullptr, nullptr, 0);
  auto add = [&](int nid, const char* value) {
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &v3, nid, value);
    X509_add_ext(cert, ext, -1);
    X509_EXTENSION_free(ext);
  };
  add(NID_basic_constraints, ca ? "critical,CA:TRUE" : "CA:FALSE");
  if (!ca) add(NID_subject_alt_name, "IP:127.0.0.1");
  X509_sign(cert, issuer_key ? issuer_key : key, EVP_sha256());
  return cert;
}

// What `write` puts into a memory BIO, as text.
template <typename Write>
std::string ToPem(Write write) {
  BIO* b = BIO_new(BIO_s_mem());
  write(b);
  char* data = nullptr;
  long n = BIO_get_mem_data(b, &data);
  std::string out(data, static_cast<size_t>(n));
  BIO_free(b);
  return out;
}

std::string Pem(X509* cert) {
  return ToPem([&](BIO* b) { PEM_write_bio_X509(b, cert); });
}

std::string Pem(EVP_PKEY* key) {
  return ToPem(
      [&](BIO* b) { PEM_write_bio_PrivateKey(b, key, nullptr, nullptr, 0, nullptr, nullptr); });
}

// ca.pem, server.pem / server.key (signed by the CA), client.pem / client.key
// (signed by the CA), other-ca.pem and stray.key (matches nothing).
struct Pki {
  explicit Pki(const tarn::testing::TempDir& dir, const std::string& prefix = "") {
    EVP_PKEY* ca_key = NewKey();
    X509* ca = NewCert("tarn test CA", ca_key, nullptr, nullptr, true);
    EVP_PKEY* server_key = NewKey();
    X509* server = NewCert("127.0.0.1", server_key, ca, ca_key, false);
    EVP_PKEY* client_key = NewKey();
    X509* client = NewCert("client", client_key, ca, ca_key, false);
    EVP_PKEY* other_key = NewKey();
    X509* other = NewCert("another CA", other_key, nullptr, nullptr, true);
    EVP_PKEY* stray = NewKey();
    ca_file = dir.Write(prefix + "ca.pem", Pem(ca));
    cert_file = dir.Write(prefix + "server.pem", Pem(server));
    key_file = dir.Write(prefix + "server.key", Pem(server_key));
    client_cert = dir.Write(prefix + "client.pem", Pem(client));
    client_key_file = dir.Write(prefix + "client.key", Pem(client_key));
    other_ca_file = dir.Write(prefix + "other-ca.pem", Pem(other));
    stray_key = dir.Write(prefix + "stray.key", Pem(stray));
    for (X509* c : {ca, server, client, other}) X509_free(c);
    for (EVP_PKEY* k : {ca_key, server_key, client_key, other_key, stray}) EVP_PKEY_free(k);
  }
  std::string ca_file, cert_file, key_file, client_cert, client_key_file, other_ca_file, stray_key;
};

// A blocking TLS client that verifies the server against `ca_file`.
class TlsClient {
 public:
  TlsClient(int port, const std::string& ca_file, const std::string& cert = "",
            const std::string& key = "", int max_version = 0) {
    ctx_ = SSL_CTX_new(TLS_client_method());
    SSL_CTX_load_verify_locations(ctx_, ca_file.c_str(), nullptr);
    SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER, nullptr);
    if (max_version) {
      SSL_CTX_set_security_level(ctx_, 0);  // let OpenSSL offer the old version at all
      SSL_CTX_set_min_proto_version(ctx_, TLS1_VERSION);
      SSL_CTX_set_max_proto_version(ctx_, max_version);
    }
    if (!cert.empty()) {
      SSL_CTX_use_certificate_file(ctx_, cert.c_str(), SSL_FILETYPE_PEM);
      SSL_CTX_use_PrivateKey_file(ctx_, key.c_str(), SSL_FILETYPE_PEM);
    }
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    timeval tv{5, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) return;
    ssl_ = SSL_new(ctx_);
    SSL_set_fd(ssl_, fd_);
    SSL_set1_host(ssl_, "127.0.0.1");
    handshake_ok_ = SSL_connect(ssl_) == 1;
    ERR_clear_error();
  }
  ~TlsClient() {
    if (ssl_) SSL_free(ssl_);
    if (fd_ >= 0) ::close(fd_);
    SSL_CTX_free(ctx_);
  }
  bool handshake_ok() const { return handshake_ok_; }
  bool Send(const std::string& s) {
    size_t done = 0;
    while (done < s.size()) {
      int w = SSL_write(ssl_, s.data() + done, static_cast<int>(s.size() - done));
      if (w <= 0) return false;
      done += static_cast<size_t>(w);
    }
    return true;
  }
  // Reads until `count` complete responses (Content-Length framing), EOF, an
  // error or the socket's 5 s receive timeout.
  std::string ReadResponses(int count) {
    std::string in;
    while (testing::CountCompleteResponses(in) < count) {
      char buf[65536];
      int r = SSL_read(ssl_, buf, sizeof(buf));
      if (r <= 0) break;
      in.append(buf, static_cast<size_t>(r));
    }
    ERR_clear_error();
    return in;
  }

 private:
  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
  int fd_ = -1;
  bool handshake_ok_ = false;
};

// True when the peer closed `fd` (EOF or a reset) before its receive timeout;
// what came before is appended to *got.
bool ReadUntilClosed(int fd, std::string* got) {
  char buf[4096];
  while (true) {
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n > 0) {
      got->append(buf, static_cast<size_t>(n));
      continue;
    }
    return n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
  }
}

// A plain TCP connection.
int Connect(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  return fd;
}

HttpServer::Handler Echo() {
  return [](const HttpRequest& req, HttpResponse* resp) {
    resp->content_type = "text/plain";
    if (req.path == "/big") {
      resp->body.assign(3 << 20, 'y');
      return;
    }
    resp->body = req.method + " " + req.path + " " + std::to_string(req.body.size());
  };
}

class HttpServerTlsTest : public ::testing::Test {
 protected:
  std::unique_ptr<HttpServer> Start(bool verify_clients, int idle_timeout_ms = 30'000) {
    HttpServer::Options o;
    o.threads = 2;
    o.idle_timeout_ms = idle_timeout_ms;
    o.max_body_bytes = 8 << 20;
    o.tls.cert_file = pki_.cert_file;
    o.tls.key_file = pki_.key_file;
    if (verify_clients) o.tls.client_ca_file = pki_.ca_file;
    o.on_tls_failure = [this](const std::string&) { failures_.fetch_add(1); };
    auto s = HttpServer::Start(o, Echo());
    EXPECT_TRUE(s.ok()) << s.status().message();
    return s.ok() ? std::move(*s) : nullptr;
  }
  tarn::testing::TempDir dir_;
  Pki pki_{dir_};
  std::atomic<int> failures_{0};
};

TEST_F(HttpServerTlsTest, AnswersKeepAlivePipelinedAndLargeRequests) {
  auto server = Start(false);
  ASSERT_TRUE(server);
  EXPECT_TRUE(server->tls());
  TlsClient c(server->port(), pki_.ca_file);
  ASSERT_TRUE(c.handshake_ok());
  ASSERT_TRUE(c.Send("GET /a HTTP/1.1\r\nHost: x\r\n\r\n"));
  EXPECT_NE(c.ReadResponses(1).find("GET /a 0"), std::string::npos);
  // Three pipelined requests, one with a 5 MB body: many TLS records, read
  // through OpenSSL's buffer.
  const std::string body(5 << 20, 'b');
  std::string pipelined =
      "GET /1 HTTP/1.1\r\nHost: x\r\n\r\nPOST /2 HTTP/1.1\r\nHost: x\r\n"
      "Content-Length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body + "GET /3 HTTP/1.1\r\nHost: x\r\n\r\n";
  ASSERT_TRUE(c.Send(pipelined));
  std::string r = c.ReadResponses(3);
  EXPECT_NE(r.find("GET /1 0"), std::string::npos);
  EXPECT_NE(r.find("POST /2 " + std::to_string(body.size())), std::string::npos);
  EXPECT_NE(r.find("GET /3 0"), std::string::npos);
  // A 3 MB response over the same connection.
  ASSERT_TRUE(c.Send("GET /big HTTP/1.1\r\nHost: x\r\n\r\n"));
  r = c.ReadResponses(1);
  EXPECT_NE(r.find("Content-Length: " + std::to_string(3 << 20)), std::string::npos);
  EXPECT_EQ(r.size() - r.find("\r\n\r\n") - 4, static_cast<size_t>(3 << 20));
  EXPECT_EQ(failures_.load(), 0);
}

TEST_F(HttpServerTlsTest, PlainHttpIsRefusedAndOthersAreStillServed) {
  auto server = Start(false);
  ASSERT_TRUE(server);
  int fd = Connect(server->port());
  const std::string plain = "GET /secret HTTP/1.1\r\nHost: x\r\n\r\n";
  ASSERT_EQ(::send(fd, plain.data(), plain.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(plain.size()));
  // The server closes the connection; nothing readable as HTTP comes back.
  std::string got;
  EXPECT_TRUE(ReadUntilClosed(fd, &got)) << "the server did not close the connection";
  ::close(fd);
  EXPECT_EQ(got.find("HTTP/1.1"), std::string::npos) << got;
  EXPECT_EQ(failures_.load(), 1);
  TlsClient c(server->port(), pki_.ca_file);
  ASSERT_TRUE(c.handshake_ok());
  ASSERT_TRUE(c.Send("GET /after HTTP/1.1\r\nHost: x\r\n\r\n"));
  EXPECT_NE(c.ReadResponses(1).find("GET /after 0"), std::string::npos);
}

TEST_F(HttpServerTlsTest, AStalledHandshakeDoesNotBlockOthersAndIsClosed) {
  auto server = Start(false, 500);
  ASSERT_TRUE(server);
  // Connected, sends one byte of a ClientHello and nothing more.
  int stalled = Connect(server->port());
  ASSERT_EQ(::send(stalled, "\x16", 1, MSG_NOSIGNAL), 1);
  for (int i = 0; i < 4; ++i) {  // more clients than threads, all served meanwhile
    TlsClient c(server->port(), pki_.ca_file);
    ASSERT_TRUE(c.handshake_ok());
    ASSERT_TRUE(c.Send("GET /x HTTP/1.1\r\nHost: x\r\n\r\n"));
    EXPECT_NE(c.ReadResponses(1).find("GET /x 0"), std::string::npos);
  }
  // Closed by the server once the handshake has taken longer than the idle
  // limit (the receive timeout, 5 s, is the test's bound).
  std::string got;
  EXPECT_TRUE(ReadUntilClosed(stalled, &got));
  ::close(stalled);
  EXPECT_EQ(failures_.load(), 1);
}

TEST_F(HttpServerTlsTest, OldProtocolVersionsAreRefused) {
  auto server = Start(false);
  ASSERT_TRUE(server);
  TlsClient old(server->port(), pki_.ca_file, "", "", TLS1_1_VERSION);
  EXPECT_FALSE(old.handshake_ok());
  TlsClient tls12(server->port(), pki_.ca_file, "", "", TLS1_2_VERSION);
  EXPECT_TRUE(tls12.handshake_ok());
}

TEST_F(HttpServerTlsTest, ClientCertificatesAreRequiredWhenAClientCaIsSet) {
  auto server = Start(true);
  ASSERT_TRUE(server);
  {
    // TLS 1.3 lets the client finish before the server has checked it: the
    // refusal shows when it reads, and no request is answered.
    TlsClient anonymous(server->port(), pki_.ca_file);
    if (anonymous.handshake_ok()) {
      anonymous.Send("GET /x HTTP/1.1\r\nHost: x\r\n\r\n");
      EXPECT_EQ(anonymous.ReadResponses(1), "");
    }
  }
  {
    // A certificate from another CA (the server's own, unrelated CA).
    Pki other(dir_, "other-");
    TlsClient stranger(server->port(), pki_.ca_file, other.client_cert, other.client_key_file);
    if (stranger.handshake_ok()) {
      stranger.Send("GET /x HTTP/1.1\r\nHost: x\r\n\r\n");
      EXPECT_EQ(stranger.ReadResponses(1), "");
    }
  }
  TlsClient known(server->port(), pki_.ca_file, pki_.client_cert, pki_.client_key_file);
  ASSERT_TRUE(known.handshake_ok());
  ASSERT_TRUE(known.Send("GET /x HTTP/1.1\r\nHost: x\r\n\r\n"));
  EXPECT_NE(known.ReadResponses(1).find("GET /x 0"), std::string::npos);
  EXPECT_EQ(failures_.load(), 2);
}

// tarn as the client of an HTTPS_ONLY cluster endpoint: the server's certificate is checked
// against the configured CA file (tarn.tls.ca-file), and a failure is an error.
TEST_F(HttpServerTlsTest, TheHttpClientVerifiesTheServerAgainstTheCaFile) {
  auto server = Start(false);
  ASSERT_TRUE(server);
  HttpClient client;
  ClientRequest req;
  req.url = "https://127.0.0.1:" + std::to_string(server->port()) + "/webhdfs/v1/x";
  req.ca_file = pki_.ca_file;
  auto ok = client.Send(req);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->body, "GET /webhdfs/v1/x 0");

  req.ca_file = pki_.other_ca_file;  // a certificate of an untrusted CA is refused
  auto refused = client.Send(req);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find(req.url), std::string::npos);
  EXPECT_NE(refused.status().message().find("certificate"), std::string::npos)
      << refused.status().message();

  // The setting is every request's default.
  Settings settings;
  ASSERT_TRUE(settings.ApplyOverride("tarn.tls.ca-file=" + pki_.ca_file).ok());
  ASSERT_TRUE(ConfigureClusterTls(settings).ok());
  req.ca_file.clear();
  EXPECT_TRUE(client.Send(req).ok());
  Settings missing;
  ASSERT_TRUE(missing.ApplyOverride("tarn.tls.ca-file=" + dir_.File("none.pem")).ok());
  Status bad = ConfigureClusterTls(missing);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("none.pem"), std::string::npos);
  ASSERT_TRUE(ConfigureClusterTls(Settings()).ok());
  EXPECT_EQ(ClusterCaFile(), "");

  // In a YARN container, the CA file shipped with the job (a name in the working folder)
  // when the setting is empty; made absolute, so a later chdir keeps it.
  const std::string cwd = std::filesystem::current_path().string();
  std::filesystem::current_path(std::filesystem::path(pki_.ca_file).parent_path());
  ::setenv(kContainerCaFileEnv, std::filesystem::path(pki_.ca_file).filename().c_str(), 1);
  Status shipped = ConfigureClusterTls(Settings());
  std::filesystem::current_path(cwd);
  ASSERT_TRUE(shipped.ok()) << shipped.ToString();
  EXPECT_EQ(ClusterCaFile(), std::filesystem::canonical(pki_.ca_file).string());
  EXPECT_TRUE(client.Send(req).ok());
  ::setenv(kContainerCaFileEnv, "absent-ca.pem", 1);
  Status lost = ConfigureClusterTls(Settings());
  ASSERT_FALSE(lost.ok());
  EXPECT_NE(lost.message().find(std::string("$") + kContainerCaFileEnv), std::string::npos)
      << lost.message();
  ::unsetenv(kContainerCaFileEnv);
  ASSERT_TRUE(ConfigureClusterTls(Settings()).ok());
  // Plain HTTP to the TLS port is no answer either.
  req.url = "http://127.0.0.1:" + std::to_string(server->port()) + "/x";
  auto plain = client.Send(req);
  EXPECT_TRUE(!plain.ok() || plain->status >= 400);
}

TEST_F(HttpServerTlsTest, BadFilesAreClearErrorsNamingTheFile) {
  auto start = [&](TlsServerFiles files) {
    HttpServer::Options o;
    o.tls = std::move(files);
    auto s = HttpServer::Start(o, Echo());
    return s.ok() ? std::string("started") : s.status().message();
  };
  const std::string missing = dir_.File("missing.pem");
  std::string e = start({missing, pki_.key_file, "", "tarn.serving.tls"});
  EXPECT_NE(e.find(missing), std::string::npos) << e;
  EXPECT_NE(e.find("No such file"), std::string::npos) << e;
  EXPECT_NE(e.find("tarn.serving.tls"), std::string::npos) << e;
  const std::string garbage = dir_.Write("garbage.pem", "not a certificate\n");
  e = start({garbage, pki_.key_file, "", ""});
  EXPECT_NE(e.find(garbage), std::string::npos) << e;
  EXPECT_NE(e.find("not a PEM certificate"), std::string::npos) << e;
  // The server's key file given as the certificate.
  e = start({pki_.key_file, pki_.key_file, "", ""});
  EXPECT_NE(e.find("not a PEM certificate"), std::string::npos) << e;
  e = start({pki_.cert_file, pki_.stray_key, "", ""});
  EXPECT_NE(e.find(pki_.stray_key), std::string::npos) << e;
  EXPECT_NE(e.find("does not match the certificate " + pki_.cert_file), std::string::npos) << e;
  e = start({pki_.cert_file, garbage, "", ""});
  EXPECT_NE(e.find("TLS private key " + garbage), std::string::npos) << e;
  e = start({pki_.cert_file, pki_.key_file, garbage, ""});
  EXPECT_NE(e.find("TLS client CA file " + garbage), std::string::npos) << e;
  e = start({pki_.cert_file, "", "", ""});
  EXPECT_NE(e.find("needs both a certificate and a private key"), std::string::npos) << e;
  EXPECT_EQ(start({pki_.cert_file, pki_.key_file, pki_.ca_file, ""}), "started");
}

}  // namespace
}  // namespace tarn::net
