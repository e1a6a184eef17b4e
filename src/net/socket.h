// TCP sockets with deadlines: blocking file descriptors driven by poll(), so
// every read and write gives up when its deadline passes.
#pragma once

#include <string>
#include <utility>

#include "common/status.h"
#include "net/deadline.h"

namespace tarn::net {

class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  Socket(Socket&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Socket& operator=(Socket&& o) noexcept;
  ~Socket() { Close(); }

  int fd() const { return fd_; }
  bool open() const { return fd_ >= 0; }
  void Close();
  // Wakes a thread blocked in Read/Write on this socket (shutdown(2)).
  void Shutdown();

  Status WriteAll(const void* data, size_t n, Deadline d);
  Status ReadAll(void* data, size_t n, Deadline d);
  // Waits until there is something to read (or the peer closed).
  Status WaitReadable(Deadline d);
  // Reads what is available (at most n, at least 1); 0 at end of stream.
  Result<size_t> ReadSome(void* data, size_t n, Deadline d);
  std::string PeerName() const;

 private:
  int fd_ = -1;
};

// host:port; port 0 binds an ephemeral port. Returns the listening socket.
Result<Socket> ListenTcp(const std::string& host, int port, int backlog = 128);
int LocalPort(const Socket& s);
Result<Socket> AcceptTcp(const Socket& listener, Deadline d);
Result<Socket> ConnectTcp(const std::string& host, int port, Deadline d);
// "host:port" -> parts; an error names the text.
Status SplitHostPort(const std::string& address, std::string* host, int* port);

}  // namespace tarn::net
