// Framed, authenticated connections between the nodes of a job.
//
// A frame is a 32-byte header and a payload, little-endian:
//   u32 magic "TRNF", u16 protocol version (1), u16 message type,
//   u64 request id, u32 payload bytes, u32 deadline (ms the sender will wait
//   for an answer, 0: none), u32 flags (kFlagReply, kFlagError), u32 reserved.
// Payloads above the connection's limit are refused before they are read.
//
// Authentication happens before any frame is read. The server sends
// "TARNAUTH", a u16 version and a 32-byte random nonce; the client answers
// with its own nonce and HMAC-SHA256(secret, "tarn-client" | server nonce |
// client nonce); the server checks it and proves itself with
// HMAC-SHA256(secret, "tarn-server" | client nonce | server nonce). A peer
// without the job's secret never gets past this exchange, and the server
// reads at most the fixed-size answer from it. With ConnectionOptions::tls the
// same exchange, and every frame after it, runs inside TLS (net/tls.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "common/status.h"
#include "net/deadline.h"
#include "net/socket.h"

namespace tarn::net {

inline constexpr uint32_t kFrameMagic = 0x464E5254;  // "TRNF"
inline constexpr uint16_t kProtocolVersion = 1;
inline constexpr uint32_t kFlagReply = 1;
inline constexpr uint32_t kFlagError = 2;  // the payload is an error message

struct Message {
  uint16_t type = 0;
  uint64_t id = 0;
  uint32_t flags = 0;
  uint32_t deadline_ms = 0;
  std::string payload;
};

struct ConnectionOptions {
  size_t max_message_bytes = 64 << 20;
  int auth_timeout_ms = 5000;
  // tarn.cluster.tls: TCP connections run TLS 1.2+ keyed by the job's secret
  // (a pre-shared key), and the handshake above inside it. Both ends must agree.
  bool tls = false;
  // Test knobs (tarn.net.test-drop-rate, tarn.net.test-delay-ms): a sent
  // message is silently dropped with this probability, and every send
  // waits this long first. Callers retry on their deadlines.
  double drop_rate = 0;
  int delay_ms = 0;
  uint64_t fault_seed = 1;
};

class Connection {
 public:
  virtual ~Connection() = default;
  // Thread-safe against concurrent Send calls.
  virtual Status Send(const Message& m, Deadline d) = 0;
  // One reader at a time.
  virtual Result<Message> Receive(Deadline d) = 0;
  // Unblocks pending Receive/Send calls; they fail.
  virtual void Close() = 0;
  virtual std::string peer() const = 0;
  // Bytes written and read so far, frames included (for bytes-per-sample figures).
  uint64_t bytes_sent() const { return sent_.load(std::memory_order_relaxed); }
  uint64_t bytes_received() const { return received_.load(std::memory_order_relaxed); }

 protected:
  std::atomic<uint64_t> sent_{0}, received_{0};
};

// Connects to host:port and authenticates with the secret.
Result<std::unique_ptr<Connection>> Dial(const std::string& host, int port,
                                         const std::string& secret, const ConnectionOptions& o,
                                         Deadline d);

// The server side of the handshake on an accepted socket. Runs on the
// connection's own thread, so a silent peer delays nobody else; an error
// says why the peer was refused (the socket is closed).
Result<std::unique_ptr<Connection>> AuthenticateServer(Socket s, const std::string& secret,
                                                       const ConnectionOptions& o);

// A connected pair inside one process (the embedded runtime): what one end
// sends, the other receives. Applies the same size limit and fault knobs.
struct ConnectionPair {
  std::unique_ptr<Connection> a, b;
};
ConnectionPair InProcessPair(const ConnectionOptions& o, const std::string& name);

}  // namespace tarn::net
