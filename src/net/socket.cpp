#include "net/socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/strings.h"

namespace tarn::net {

namespace {

// Waits until fd is readable (or writable); a timeout is an IoError.
Status WaitFor(int fd, short events, Deadline d, const std::string& what) {
  while (true) {
    pollfd p{fd, events, 0};
    int r = ::poll(&p, 1, d.PollMs());
    if (r > 0) return Status::Ok();
    if (r == 0) return DeadlineExceeded("timed out while " + what);
    if (errno != EINTR) return ErrnoError("poll while " + what, errno);
  }
}

Result<addrinfo*> Resolve(const std::string& host, int port, bool passive) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  if (passive) hints.ai_flags = AI_PASSIVE;
  addrinfo* res = nullptr;
  std::string service = std::to_string(port);
  int rc = ::getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &res);
  if (rc != 0) {
    return IoError("cannot resolve '" + host + "': " + ::gai_strerror(rc));
  }
  return res;
}

void Configure(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  ::fcntl(fd, F_SETFD, FD_CLOEXEC);
}

}  // namespace

Socket& Socket::operator=(Socket&& o) noexcept {
  if (this != &o) {
    Close();
    fd_ = std::exchange(o.fd_, -1);
  }
  return *this;
}

void Socket::Close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void Socket::Shutdown() {
  if (fd_ >= 0) ::shutdown(fd_, SHUT_RDWR);
}

Status Socket::WriteAll(const void* data, size_t n, Deadline d) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::send(fd_, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w > 0) {
      p += w;
      n -= static_cast<size_t>(w);
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      TARN_RETURN_IF_ERROR(WaitFor(fd_, POLLOUT, d, "sending"));
      continue;
    }
    return ErrnoError("send to " + PeerName(), errno);
  }
  return Status::Ok();
}

Status Socket::WaitReadable(Deadline d) { return WaitFor(fd_, POLLIN, d, "receiving"); }

Result<size_t> Socket::ReadSome(void* data, size_t n, Deadline d) {
  while (true) {
    ssize_t r = ::recv(fd_, data, n, MSG_DONTWAIT);
    if (r >= 0) return static_cast<size_t>(r);
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      TARN_RETURN_IF_ERROR(WaitFor(fd_, POLLIN, d, "receiving"));
      continue;
    }
    return ErrnoError("receive from " + PeerName(), errno);
  }
}

Status Socket::ReadAll(void* data, size_t n, Deadline d) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    TARN_ASSIGN_OR_RETURN(size_t r, ReadSome(p, n, d));
    if (r == 0) return Unavailable("connection closed by " + PeerName());
    p += r;
    n -= r;
  }
  return Status::Ok();
}

std::string Socket::PeerName() const {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (fd_ < 0 || ::getpeername(fd_, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return "peer";
  char host[INET6_ADDRSTRLEN] = "?";
  int port = 0;
  if (ss.ss_family == AF_INET) {
    auto* a = reinterpret_cast<sockaddr_in*>(&ss);
    ::inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
    port = ntohs(a->sin_port);
  } else if (ss.ss_family == AF_INET6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
    ::inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
    port = ntohs(a->sin6_port);
  }
  return std::string(host) + ":" + std::to_string(port);
}

Result<Socket> ListenTcp(const std::string& host, int port, int backlog) {
  TARN_ASSIGN_OR_RETURN(addrinfo * res, Resolve(host, port, true));
  Status last = IoError("no address for '" + host + "'");
  for (addrinfo* a = res; a; a = a->ai_next) {
    Socket s(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol));
    if (!s.open()) {
      last = ErrnoError("socket", errno);
      continue;
    }
    int one = 1;
    ::setsockopt(s.fd(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(s.fd(), a->ai_addr, a->ai_addrlen) != 0 || ::listen(s.fd(), backlog) != 0) {
      last = ErrnoError("listen on " + host + ":" + std::to_string(port), errno);
      continue;
    }
    ::freeaddrinfo(res);
    return s;
  }
  ::freeaddrinfo(res);
  return last;
}

int LocalPort(const Socket& s) {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (::getsockname(s.fd(), reinterpret_cast<sockaddr*>(&ss), &len) != 0) return 0;
  if (ss.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  if (ss.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port);
  return 0;
}

Result<Socket> AcceptTcp(const Socket& listener, Deadline d) {
  while (true) {
    int fd = ::accept4(listener.fd(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd >= 0) {
      // Blocking again: reads and writes use MSG_DONTWAIT plus poll().
      ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
      Configure(fd);
      return Socket(fd);
    }
    if (errno == EINTR || errno == ECONNABORTED) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      TARN_RETURN_IF_ERROR(WaitFor(listener.fd(), POLLIN, d, "accepting"));
      continue;
    }
    return ErrnoError("accept", errno);
  }
}

Result<Socket> ConnectTcp(const std::string& host, int port, Deadline d) {
  TARN_ASSIGN_OR_RETURN(addrinfo * res, Resolve(host, port, false));
  Status last = IoError("no address for '" + host + "'");
  for (addrinfo* a = res; a; a = a->ai_next) {
    Socket s(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol));
    if (!s.open()) continue;
    int rc = ::connect(s.fd(), a->ai_addr, a->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      Status w = WaitFor(s.fd(), POLLOUT, d, "connecting");
      if (!w.ok()) {
        last = w.WithContext(host + ":" + std::to_string(port));
        continue;
      }
      int err = 0;
      socklen_t len = sizeof(err);
      ::getsockopt(s.fd(), SOL_SOCKET, SO_ERROR, &err, &len);
      rc = err == 0 ? 0 : -1;
      errno = err;
    }
    if (rc != 0) {
      last = ErrnoError("connect to " + host + ":" + std::to_string(port), errno);
      continue;
    }
    ::fcntl(s.fd(), F_SETFL, ::fcntl(s.fd(), F_GETFL) & ~O_NONBLOCK);
    Configure(s.fd());
    ::freeaddrinfo(res);
    return s;
  }
  ::freeaddrinfo(res);
  return last;
}

Status SplitHostPort(const std::string& address, std::string* host, int* port) {
  auto colon = address.rfind(':');
  if (colon == std::string::npos) {
    return InvalidArgument("address '" + address + "' is not host:port");
  }
  auto p = ParseInt(std::string_view(address).substr(colon + 1));
  if (!p || *p < 0 || *p > 65535) {
    return InvalidArgument("address '" + address + "' has no valid port");
  }
  *host = address.substr(0, colon);
  if (host->size() >= 2 && host->front() == '[' && host->back() == ']') {
    *host = host->substr(1, host->size() - 2);
  }
  *port = static_cast<int>(*p);
  return Status::Ok();
}

}  // namespace tarn::net
