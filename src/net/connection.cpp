#include "net/connection.h"

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <random>
#include <thread>

#include "net/hmac.h"
#include "net/tls.h"

namespace tarn::net {

namespace {

constexpr char kAuthMagic[8] = {'T', 'A', 'R', 'N', 'A', 'U', 'T', 'H'};
constexpr uint16_t kAuthVersion = 1;
constexpr size_t kNonce = 32;
constexpr size_t kHeaderBytes = 32;
constexpr int kFrameAllowanceMs = 60000;  // to finish a frame once it has started

struct FrameHeader {
  uint32_t magic;
  uint16_t version;
  uint16_t type;
  uint64_t id;
  uint32_t length;
  uint32_t deadline_ms;
  uint32_t flags;
  uint32_t reserved;
};
static_assert(sizeof(FrameHeader) == kHeaderBytes);

std::string Proof(const std::string& secret, const char* who, const uint8_t* first,
                  const uint8_t* second) {
  std::string msg(who);
  msg.append(reinterpret_cast<const char*>(first), kNonce);
  msg.append(reinterpret_cast<const char*>(second), kNonce);
  Digest d = HmacSha256(secret, msg);
  return std::string(reinterpret_cast<const char*>(d.data()), d.size());
}

// What a connection's bytes travel over: the socket itself, or TLS on it.
class Stream {
 public:
  virtual ~Stream() = default;
  virtual Status WriteAll(const void* data, size_t n, Deadline d) = 0;
  virtual Status ReadAll(void* data, size_t n, Deadline d) = 0;
  virtual Status WaitReadable(Deadline d) = 0;
  virtual void Shutdown() = 0;
  virtual std::string PeerName() const = 0;
};

class PlainStream final : public Stream {
 public:
  explicit PlainStream(Socket s) : s_(std::move(s)) {}
  Status WriteAll(const void* data, size_t n, Deadline d) override {
    return s_.WriteAll(data, n, d);
  }
  Status ReadAll(void* data, size_t n, Deadline d) override { return s_.ReadAll(data, n, d); }
  Status WaitReadable(Deadline d) override { return s_.WaitReadable(d); }
  void Shutdown() override { s_.Shutdown(); }
  std::string PeerName() const override { return s_.PeerName(); }

 private:
  Socket s_;
};

class TlsStream final : public Stream {
 public:
  explicit TlsStream(std::unique_ptr<TlsPskStream> t) : t_(std::move(t)) {}
  Status WriteAll(const void* data, size_t n, Deadline d) override {
    return t_->WriteAll(data, n, d);
  }
  Status ReadAll(void* data, size_t n, Deadline d) override { return t_->ReadAll(data, n, d); }
  Status WaitReadable(Deadline d) override { return t_->WaitReadable(d); }
  void Shutdown() override { t_->Shutdown(); }
  std::string PeerName() const override { return t_->PeerName(); }

 private:
  std::unique_ptr<TlsPskStream> t_;
};

// The TLS key: the job's secret through HMAC with a label of its own, so that it differs
// from the key of the HMAC handshake's proofs.
std::string TlsKey(const std::string& secret) {
  const Digest d = HmacSha256(secret, "tarn-cluster-tls-psk");
  return std::string(reinterpret_cast<const char*>(d.data()), d.size());
}

// The socket as the connection's stream: under TLS when the options ask for it.
Result<std::unique_ptr<Stream>> OpenStream(Socket s, TlsPskStream::Side side,
                                           const std::string& secret, const ConnectionOptions& o,
                                           Deadline d) {
  if (!o.tls) return std::unique_ptr<Stream>(new PlainStream(std::move(s)));
  TARN_ASSIGN_OR_RETURN(auto t, TlsPskStream::Handshake(std::move(s), side, TlsKey(secret), d));
  return std::unique_ptr<Stream>(new TlsStream(std::move(t)));
}

// The test knobs: drop and delay sends.
class Faults {
 public:
  explicit Faults(const ConnectionOptions& o) : o_(o), rng_(o.fault_seed) {}
  // True when the message should be dropped; sleeps the delay first.
  bool Apply() {
    if (o_.delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(o_.delay_ms));
    if (o_.drop_rate <= 0) return false;
    std::lock_guard<std::mutex> lock(mu_);
    return std::uniform_real_distribution<double>(0, 1)(rng_) < o_.drop_rate;
  }

 private:
  ConnectionOptions o_;
  std::mutex mu_;
  std::mt19937_64 rng_;
};

class TcpConnection final : public Connection {
 public:
  TcpConnection(std::unique_ptr<Stream> s, const ConnectionOptions& o)
      : socket_(std::move(s)), options_(o), faults_(o), peer_(socket_->PeerName()) {}

  Status Send(const Message& m, Deadline d) override {
    if (m.payload.size() > options_.max_message_bytes) {
      return InvalidArgument("message of " + std::to_string(m.payload.size()) +
                             " bytes exceeds the limit of " +
                             std::to_string(options_.max_message_bytes));
    }
    if (faults_.Apply()) return Status::Ok();
    FrameHeader h{
        kFrameMagic,   kProtocolVersion, m.type, m.id, static_cast<uint32_t>(m.payload.size()),
        m.deadline_ms, m.flags,          0};
    std::lock_guard<std::mutex> lock(send_mu_);
    sent_ += kHeaderBytes + m.payload.size();
    if (m.payload.size() <= 4096) {  // one write for small frames
      char buf[kHeaderBytes + 4096];
      std::memcpy(buf, &h, kHeaderBytes);
      std::memcpy(buf + kHeaderBytes, m.payload.data(), m.payload.size());
      return socket_->WriteAll(buf, kHeaderBytes + m.payload.size(), d);
    }
    TARN_RETURN_IF_ERROR(socket_->WriteAll(&h, kHeaderBytes, d));
    return socket_->WriteAll(m.payload.data(), m.payload.size(), d);
  }

  Result<Message> Receive(Deadline d) override {
    FrameHeader h{};
    // The deadline bounds the wait for a frame to start; once it has, the
    // rest is read with a fixed allowance, so a timeout never leaves half a
    // frame behind to desynchronize the stream.
    TARN_RETURN_IF_ERROR(socket_->WaitReadable(d));
    const Deadline frame = Deadline::InMs(kFrameAllowanceMs);
    TARN_RETURN_IF_ERROR(socket_->ReadAll(&h, kHeaderBytes, frame));
    if (h.magic != kFrameMagic) {
      return Corrupt("bad frame from " + peer_ + ": not a tarn message (magic " +
                     std::to_string(h.magic) + ")");
    }
    if (h.version != kProtocolVersion) {
      return Unsupported("peer " + peer_ + " speaks protocol version " + std::to_string(h.version) +
                         ", this tarn speaks " + std::to_string(kProtocolVersion));
    }
    if (h.length > options_.max_message_bytes) {
      return InvalidArgument("message of " + std::to_string(h.length) + " bytes from " + peer_ +
                             " exceeds the limit of " + std::to_string(options_.max_message_bytes));
    }
    Message m;
    m.type = h.type;
    m.id = h.id;
    m.flags = h.flags;
    m.deadline_ms = h.deadline_ms;
    m.payload.resize(h.length);
    TARN_RETURN_IF_ERROR(socket_->ReadAll(m.payload.data(), h.length, frame));
    received_ += kHeaderBytes + h.length;
    return m;
  }

  void Close() override { socket_->Shutdown(); }
  std::string peer() const override { return peer_; }

 private:
  std::unique_ptr<Stream> socket_;
  ConnectionOptions options_;
  Faults faults_;
  std::string peer_;
  std::mutex send_mu_;
};

// One direction of an in-process pair.
struct Queue {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Message> messages;
  bool closed = false;
};

class InProcessConnection final : public Connection {
 public:
  InProcessConnection(std::shared_ptr<Queue> in, std::shared_ptr<Queue> out,
                      const ConnectionOptions& o, std::string peer)
      : in_(std::move(in)), out_(std::move(out)), options_(o), faults_(o), peer_(std::move(peer)) {}
  ~InProcessConnection() override { Close(); }

  Status Send(const Message& m, Deadline) override {
    if (m.payload.size() > options_.max_message_bytes) {
      return InvalidArgument("message of " + std::to_string(m.payload.size()) +
                             " bytes exceeds the limit of " +
                             std::to_string(options_.max_message_bytes));
    }
    if (faults_.Apply()) return Status::Ok();
    std::lock_guard<std::mutex> lock(out_->mu);
    if (out_->closed) return Unavailable("connection to " + peer_ + " is closed");
    sent_ += kHeaderBytes + m.payload.size();
    out_->messages.push_back(m);
    out_->cv.notify_one();
    return Status::Ok();
  }

  Result<Message> Receive(Deadline d) override {
    std::unique_lock<std::mutex> lock(in_->mu);
    auto ready = [&] { return !in_->messages.empty() || in_->closed; };
    if (d.never()) {
      in_->cv.wait(lock, ready);
    } else if (!in_->cv.wait_until(lock, d.at(), ready)) {
      return DeadlineExceeded("timed out while receiving from " + peer_);
    }
    if (in_->messages.empty()) return Unavailable("connection closed by " + peer_);
    Message m = std::move(in_->messages.front());
    in_->messages.pop_front();
    received_ += kHeaderBytes + m.payload.size();
    return m;
  }

  void Close() override {
    for (auto* q : {in_.get(), out_.get()}) {
      std::lock_guard<std::mutex> lock(q->mu);
      q->closed = true;
      q->cv.notify_all();
    }
  }
  std::string peer() const override { return peer_; }

 private:
  std::shared_ptr<Queue> in_, out_;
  ConnectionOptions options_;
  Faults faults_;
  std::string peer_;
};

}  // namespace

Result<std::unique_ptr<Connection>> Dial(const std::string& host, int port,
                                         const std::string& secret, const ConnectionOptions& o,
                                         Deadline d) {
  TARN_ASSIGN_OR_RETURN(Socket socket, ConnectTcp(host, port, d));
  const std::string where = host + ":" + std::to_string(port);
  Deadline auth = d.Sooner(Deadline::InMs(o.auth_timeout_ms));
  // With tarn.cluster.tls the HMAC handshake below runs inside TLS, unchanged.
  TARN_ASSIGN_OR_RETURN(
      auto stream, OpenStream(std::move(socket), TlsPskStream::Side::kClient, secret, o, auth));
  Stream& s = *stream;
  char hello[8 + 2 + kNonce];
  TARN_RETURN_IF_ERROR(
      s.ReadAll(hello, sizeof(hello), auth).WithContext("handshake with " + where));
  uint16_t version = 0;
  std::memcpy(&version, hello + 8, 2);
  if (std::memcmp(hello, kAuthMagic, 8) != 0) {
    return PermissionDenied(where + " is not a tarn node (no handshake)");
  }
  if (version != kAuthVersion) {
    return Unsupported(where + " speaks handshake version " + std::to_string(version));
  }
  const uint8_t* server_nonce = reinterpret_cast<const uint8_t*>(hello + 10);
  uint8_t client_nonce[kNonce];
  TARN_RETURN_IF_ERROR(RandomBytes(client_nonce, kNonce));
  std::string answer(kAuthMagic, 8);
  answer.append(reinterpret_cast<const char*>(&kAuthVersion), 2);
  answer.append(reinterpret_cast<const char*>(client_nonce), kNonce);
  answer += Proof(secret, "tarn-client", server_nonce, client_nonce);
  TARN_RETURN_IF_ERROR(s.WriteAll(answer.data(), answer.size(), auth));
  char server_proof[32];
  Status st = s.ReadAll(server_proof, sizeof(server_proof), auth);
  if (!st.ok()) {
    return PermissionDenied(
        where + " refused this node's credentials (wrong job secret?): " + st.message());
  }
  std::string expected = Proof(secret, "tarn-server", client_nonce, server_nonce);
  if (!ConstantTimeEqual(server_proof, expected.data(), 32)) {
    return PermissionDenied(where + " does not know the job secret");
  }
  return std::unique_ptr<Connection>(new TcpConnection(std::move(stream), o));
}

Result<std::unique_ptr<Connection>> AuthenticateServer(Socket socket, const std::string& secret,
                                                       const ConnectionOptions& o) {
  const std::string peer = socket.PeerName();
  Deadline auth = Deadline::InMs(o.auth_timeout_ms);
  TARN_ASSIGN_OR_RETURN(
      auto stream, OpenStream(std::move(socket), TlsPskStream::Side::kServer, secret, o, auth));
  Stream& s = *stream;
  uint8_t server_nonce[kNonce];
  TARN_RETURN_IF_ERROR(RandomBytes(server_nonce, kNonce));
  std::string hello(kAuthMagic, 8);
  hello.append(reinterpret_cast<const char*>(&kAuthVersion), 2);
  hello.append(reinterpret_cast<const char*>(server_nonce), kNonce);
  TARN_RETURN_IF_ERROR(s.WriteAll(hello.data(), hello.size(), auth).WithContext(peer));
  // Exactly the fixed-size answer, nothing more, is read from an unknown peer.
  char answer[8 + 2 + kNonce + 32];
  Status st = s.ReadAll(answer, sizeof(answer), auth);
  if (!st.ok()) return PermissionDenied(peer + " sent no handshake: " + st.message());
  uint16_t version = 0;
  std::memcpy(&version, answer + 8, 2);
  if (std::memcmp(answer, kAuthMagic, 8) != 0 || version != kAuthVersion) {
    return PermissionDenied(peer + " sent a malformed handshake");
  }
  const uint8_t* client_nonce = reinterpret_cast<const uint8_t*>(answer + 10);
  std::string expected = Proof(secret, "tarn-client", server_nonce, client_nonce);
  if (!ConstantTimeEqual(answer + 10 + kNonce, expected.data(), 32)) {
    return PermissionDenied(peer + " does not know the job secret");
  }
  std::string proof = Proof(secret, "tarn-server", client_nonce, server_nonce);
  TARN_RETURN_IF_ERROR(s.WriteAll(proof.data(), proof.size(), auth).WithContext(peer));
  return std::unique_ptr<Connection>(new TcpConnection(std::move(stream), o));
}

ConnectionPair InProcessPair(const ConnectionOptions& o, const std::string& name) {
  auto q1 = std::make_shared<Queue>(), q2 = std::make_shared<Queue>();
  ConnectionPair p;
  p.a = std::make_unique<InProcessConnection>(q1, q2, o, name + "/b");
  p.b = std::make_unique<InProcessConnection>(q2, q1, o, name + "/a");
  return p;
}

}  // namespace tarn::net
