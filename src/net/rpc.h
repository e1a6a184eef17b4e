// Request/reply calls over Connections, with retries and deadlines.
//
// A client sends a request and waits for the reply with the same id. When no
// reply comes within the retry interval (a dropped message, a busy server)
// it sends the same request again; the server answers a repeated id from a
// small cache of its latest replies and ignores a repeat of a request it is
// still working on, so a retried call runs once. Handlers may answer later
// from another thread (long polls: barriers, a synchronous step closing).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "net/connection.h"

namespace tarn::net {

// Error replies carry the status code and message; calls return them as the
// same Status the server's handler failed with.
std::string EncodeError(const Status& s);
Status DecodeError(std::string_view payload);

class RpcClient {
 public:
  RpcClient(std::unique_ptr<Connection> connection, int retry_ms);
  ~RpcClient();
  // One call at a time per client (calls from several threads queue).
  Result<std::string> Call(uint16_t type, std::string_view payload, Deadline d);
  void Close();
  std::string peer() const { return connection_->peer(); }
  uint64_t bytes() const { return connection_->bytes_sent() + connection_->bytes_received(); }

 private:
  std::mutex mu_;
  std::unique_ptr<Connection> connection_;
  int retry_ms_;
  uint64_t next_id_ = 1;
};

class RpcServer {
 public:
  struct Request {
    uint16_t type = 0;
    std::string payload;
    uint64_t connection = 0;  // which connection it came on (for disconnect tracking)
    std::string peer;
  };
  class Responder {
   public:
    virtual ~Responder() = default;
    virtual void Reply(std::string payload) = 0;
    virtual void Fail(const Status& status) = 0;
  };
  using Handler = std::function<void(const Request&, std::shared_ptr<Responder>)>;
  using DisconnectHandler = std::function<void(uint64_t connection)>;

  // Serves authenticated TCP connections on host:port (port 0: ephemeral).
  static Result<std::unique_ptr<RpcServer>> Start(const std::string& host, int port,
                                                  const std::string& secret,
                                                  const ConnectionOptions& options, Handler handler,
                                                  DisconnectHandler on_disconnect = nullptr);
  // A server without a listener: it serves only the connections handed to
  // Serve() (the embedded runtime's in-process connections).
  static std::unique_ptr<RpcServer> StartInProcess(Handler handler,
                                                   DisconnectHandler on_disconnect = nullptr);
  ~RpcServer();
  int port() const { return port_; }
  // Serves one more connection (an in-process one, for the embedded runtime).
  void Serve(std::unique_ptr<Connection> connection);
  // Closes the listener and every connection, and joins the threads.
  void Stop();
  // Connections refused at authentication so far.
  int64_t refused() const { return refused_.load(); }

 private:
  RpcServer() = default;
  void AcceptLoop();
  void ConnectionLoop(uint64_t id, std::shared_ptr<Connection> c, Socket raw);

  std::string secret_;
  ConnectionOptions options_;
  Handler handler_;
  DisconnectHandler on_disconnect_;
  Socket listener_;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int64_t> refused_{0};
  std::thread accept_thread_;
  std::mutex mu_;
  std::list<std::thread> threads_;
  std::vector<std::weak_ptr<Connection>> connections_;
  std::vector<int> raw_fds_;  // sockets still authenticating, to shut down on Stop
  uint64_t next_connection_ = 1;
};

}  // namespace tarn::net
