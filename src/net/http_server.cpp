#include "net/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>

#include "common/log.h"
#include "net/http_parser.h"

namespace tarn::net {

const char* HttpStatusText(int status) {
  switch (status) {
    case 100:
      return "Continue";
    case 200:
      return "OK";
    case 201:
      return "Created";
    case 204:
      return "No Content";
    case 301:
      return "Moved Permanently";
    case 304:
      return "Not Modified";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 409:
      return "Conflict";
    case 411:
      return "Length Required";
    case 413:
      return "Content Too Large";
    case 414:
      return "URI Too Long";
    case 415:
      return "Unsupported Media Type";
    case 417:
      return "Expectation Failed";
    case 422:
      return "Unprocessable Content";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 503:
      return "Service Unavailable";
    case 505:
      return "HTTP Version Not Supported";
    default:
      return status < 400 ? "OK" : status < 500 ? "Client Error" : "Server Error";
  }
}

void HttpResponse::Clear() {
  status = 200;
  content_type = "application/json";
  body.clear();
  headers.clear();
}

namespace {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// A byte buffer that keeps its storage: data in [begin, end) of cap bytes.
class Buffer {
 public:
  const char* data() const { return buf_.get() + begin_; }
  size_t size() const { return end_ - begin_; }
  bool empty() const { return begin_ == end_; }
  void Consume(size_t n) {
    begin_ += n;
    if (begin_ == end_) begin_ = end_ = 0;
  }
  // Room for at least `n` more bytes at the end; returns where to write.
  char* Reserve(size_t n) {
    if (cap_ - end_ >= n) return buf_.get() + end_;
    if (begin_ > 0) {  // compact first
      std::memmove(buf_.get(), buf_.get() + begin_, end_ - begin_);
      end_ -= begin_;
      begin_ = 0;
      if (cap_ - end_ >= n) return buf_.get() + end_;
    }
    size_t cap = std::max<size_t>(cap_ * 2, 4096);
    while (cap - end_ < n) cap *= 2;
    std::unique_ptr<char[]> grown(new char[cap]);
    if (end_) std::memcpy(grown.get(), buf_.get(), end_);
    buf_ = std::move(grown);
    cap_ = cap;
    return buf_.get() + end_;
  }
  void Commit(size_t n) { end_ += n; }
  void Append(std::string_view s) {
    std::memcpy(Reserve(s.size()), s.data(), s.size());
    Commit(s.size());
  }
  size_t capacity() const { return cap_; }
  void Release() {
    buf_.reset();
    cap_ = begin_ = end_ = 0;
  }
  void Clear() { begin_ = end_ = 0; }

 private:
  std::unique_ptr<char[]> buf_;
  size_t cap_ = 0, begin_ = 0, end_ = 0;
};

struct Conn {
  ~Conn() {
    if (ssl) SSL_free(ssl);
  }
  int fd = -1;
  SSL* ssl = nullptr;        // TLS connections only
  bool handshaking = false;  // TLS handshake not finished yet
  int64_t accepted_ms = 0;
  // SSL_read needs the socket writable before it can go on (TLS records the
  // library must send while reading).
  bool read_wants_write = false;
  // Decrypted bytes wait inside OpenSSL, where epoll cannot see them.
  bool tls_ready = false;
  size_t index = 0;  // in its loop's list
  std::string remote;
  Buffer in, out;
  HttpRequestParser parser;
  HttpRequest req;
  HttpResponse resp;
  int64_t last_active_ms = 0;
  int64_t request_started_ms = 0;  // 0: no partial request
  bool continue_sent = false;
  bool close_after_write = false;  // close once `out` is written
  bool want_write = false;         // EPOLLOUT is registered
  bool reading_paused = false;
  bool eof = false;        // the peer has shut down its side
  bool lingering = false;  // response sent and write side shut down: reading to EOF
};

// Buffers larger than this are released when a connection is recycled.
constexpr size_t kKeepBufferBytes = 64 * 1024;
// How long a closing connection is read to EOF.
constexpr int64_t kLingerMs = 2000;

}  // namespace

class HttpServer::Impl {
 public:
  Impl(const Options& options, Handler handler) : options_(options), handler_(std::move(handler)) {
    limits_.max_header_bytes = options.max_header_bytes;
    limits_.max_body_bytes = options.max_body_bytes;
  }
  ~Impl() { Stop(); }

  Status Bind();
  void StartLoops();
  void Stop();
  int port() const { return port_; }
  const Options& options() const { return options_; }
  bool tls() const { return tls_ != nullptr; }

 private:
  struct Loop {
    int index = 0;
    int epoll_fd = -1;
    int wake_fd = -1;
    std::thread thread;
    std::vector<Conn*> conns;
    std::vector<std::unique_ptr<Conn>> free_conns;
    std::atomic<int> open{0};  // connections owned or being handed over
    std::mutex handoff_mutex;
    std::vector<std::pair<int, std::string>> handoff;  // accepted elsewhere: fd, remote
    std::vector<Conn*> tls_ready;  // connections with decrypted bytes buffered in OpenSSL
  };

  void Run(Loop* loop);
  void Accept(Loop* loop);
  void TakeHandoffs(Loop* loop);
  void AddConn(Loop* loop, int fd, std::string remote);
  void OnReadable(Loop* loop, Conn* c);
  // Advances a TLS handshake; false when the connection was closed.
  bool ContinueHandshake(Loop* loop, Conn* c);
  // recv/send through TLS when the connection has it: > 0 bytes, 0 at EOF
  // (Recv only), -1 with errno EAGAIN when it would block, else -1.
  ssize_t Recv(Conn* c, char* dst, size_t n);
  ssize_t Send(Conn* c, const char* src, size_t n);
  // Reads what OpenSSL holds for connections that epoll will not report.
  void DrainTlsReady(Loop* loop);
  // False when the connection was closed.
  bool OnWritable(Loop* loop, Conn* c);
  // Parses and answers every complete request in c->in; false when the
  // connection was closed.
  bool Process(Loop* loop, Conn* c);
  void Respond(Conn* c, bool keep_alive, bool is_head);
  void RespondError(Conn* c, int status, const std::string& message);
  // Writes what it can of c->out; false when the connection was closed.
  bool Flush(Loop* loop, Conn* c);
  void UpdateInterest(Loop* loop, Conn* c);
  void Close(Loop* loop, Conn* c);
  void Sweep(Loop* loop, int64_t now);

  Options options_;
  Handler handler_;
  HttpLimits limits_;
  std::shared_ptr<TlsServerContext> tls_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::vector<std::unique_ptr<Loop>> loops_;
  std::atomic<bool> stopping_{false};
  std::atomic<int> connections_{0};
  std::mutex stop_mutex_;
  bool stopped_ = false;
};

Status HttpServer::Impl::Bind() {
  if (options_.tls.enabled()) {
    TARN_ASSIGN_OR_RETURN(tls_, TlsServerContext::Load(options_.tls));
  }
  std::string host = options_.host.empty() ? "127.0.0.1" : options_.host;
  if (host == "localhost") host = "127.0.0.1";
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICHOST | AI_PASSIVE;
  addrinfo* res = nullptr;
  std::string port_text = std::to_string(options_.port);
  int rc = ::getaddrinfo(host.c_str(), port_text.c_str(), &hints, &res);
  if (rc != 0) {
    return InvalidArgument("http server: host '" + options_.host +
                           "' is not a numeric IP address (" + gai_strerror(rc) + ")");
  }
  int fd = ::socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    int err = errno;
    ::freeaddrinfo(res);
    return ErrnoError("http server: socket", err);
  }
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(fd, res->ai_addr, res->ai_addrlen) != 0) {
    int err = errno;
    ::freeaddrinfo(res);
    ::close(fd);
    return ErrnoError("http server: bind " + host + ":" + port_text, err);
  }
  ::freeaddrinfo(res);
  if (::listen(fd, options_.backlog) != 0) {
    int err = errno;
    ::close(fd);
    return ErrnoError("http server: listen", err);
  }
  sockaddr_storage bound{};
  socklen_t len = sizeof(bound);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
  port_ = bound.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                                      : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  listen_fd_ = fd;

  int threads = std::max(1, options_.threads);
  for (int i = 0; i < threads; ++i) {
    auto loop = std::make_unique<Loop>();
    loop->index = i;
    loop->epoll_fd = ::epoll_create1(EPOLL_CLOEXEC);
    loop->wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (loop->epoll_fd < 0 || loop->wake_fd < 0) {
      int err = errno;
      if (loop->epoll_fd >= 0) ::close(loop->epoll_fd);
      if (loop->wake_fd >= 0) ::close(loop->wake_fd);
      return ErrnoError("http server: epoll", err);
    }
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLEXCLUSIVE;
    ev.data.ptr = nullptr;  // the listening socket
    if (::epoll_ctl(loop->epoll_fd, EPOLL_CTL_ADD, listen_fd_, &ev) != 0) {
      return ErrnoError("http server: epoll_ctl", errno);
    }
    epoll_event wake{};
    wake.events = EPOLLIN;
    wake.data.ptr = loop.get();  // the wake-up eventfd
    ::epoll_ctl(loop->epoll_fd, EPOLL_CTL_ADD, loop->wake_fd, &wake);
    loops_.push_back(std::move(loop));
  }
  return Status::Ok();
}

void HttpServer::Impl::StartLoops() {
  for (auto& loop : loops_) {
    Loop* l = loop.get();
    l->thread = std::thread([this, l] { Run(l); });
  }
}

void HttpServer::Impl::Stop() {
  std::lock_guard<std::mutex> lock(stop_mutex_);
  if (stopped_) return;
  stopped_ = true;
  stopping_.store(true);
  for (auto& loop : loops_) {
    uint64_t one = 1;
    if (loop->wake_fd >= 0) {
      ssize_t w = ::write(loop->wake_fd, &one, sizeof(one));
      (void)w;
    }
  }
  for (auto& loop : loops_) {
    if (loop->thread.joinable()) loop->thread.join();
  }
  for (auto& loop : loops_) {
    for (Conn* c : loop->conns) {
      ::close(c->fd);
      delete c;
    }
    loop->conns.clear();
    for (auto& [fd, remote] : loop->handoff) ::close(fd);
    loop->handoff.clear();
    if (loop->epoll_fd >= 0) ::close(loop->epoll_fd);
    if (loop->wake_fd >= 0) ::close(loop->wake_fd);
    loop->epoll_fd = loop->wake_fd = -1;
  }
  if (listen_fd_ >= 0) ::close(listen_fd_);
  listen_fd_ = -1;
}

void HttpServer::Impl::Run(Loop* loop) {
  constexpr int kMaxEvents = 64;
  epoll_event events[kMaxEvents];
  int64_t last_sweep = NowMs();
  bool draining = false;
  int64_t drain_deadline = 0;
  while (true) {
    int timeout = !loop->tls_ready.empty() ? 0 : draining ? 50 : 250;
    int n = ::epoll_wait(loop->epoll_fd, events, kMaxEvents, timeout);
    if (n < 0 && errno != EINTR) {
      TARN_LOG(kError) << "http server: epoll_wait: " << std::strerror(errno);
      break;
    }
    for (int i = 0; i < n; ++i) {
      void* p = events[i].data.ptr;
      if (p == nullptr) {
        if (!draining) Accept(loop);
        continue;
      }
      if (p == loop) {
        uint64_t v;
        ssize_t r = ::read(loop->wake_fd, &v, sizeof(v));
        (void)r;
        TakeHandoffs(loop);
        continue;
      }
      Conn* c = static_cast<Conn*>(p);
      uint32_t e = events[i].events;
      if (e & (EPOLLERR | EPOLLHUP)) {
        // Read what is left (the peer may have sent a request and shut down
        // its side); a hard error closes below.
        if (!(e & EPOLLIN)) {
          Close(loop, c);
          continue;
        }
      }
      if (c->handshaking) {
        ContinueHandshake(loop, c);
        continue;
      }
      if ((e & EPOLLOUT) && c->read_wants_write) {
        c->read_wants_write = false;
        e |= EPOLLIN;
      }
      if (e & EPOLLOUT) {
        if (!OnWritable(loop, c)) continue;  // closed
      }
      if (e & EPOLLIN) OnReadable(loop, c);
    }
    DrainTlsReady(loop);
    int64_t now = NowMs();
    if (stopping_.load(std::memory_order_relaxed) && !draining) {
      draining = true;
      drain_deadline = now + 5000;
      ::epoll_ctl(loop->epoll_fd, EPOLL_CTL_DEL, listen_fd_, nullptr);
    }
    if (draining) {
      // Close every connection that is not receiving a request or sending a
      // response; the rest get until the deadline.
      for (size_t i = loop->conns.size(); i-- > 0;) {
        Conn* c = loop->conns[i];
        bool busy = !c->lingering && (!c->out.empty() || c->request_started_ms != 0);
        if (!busy || now >= drain_deadline) Close(loop, c);
      }
      if (loop->conns.empty()) break;
    }
    if (now - last_sweep >= 250) {
      Sweep(loop, now);
      last_sweep = now;
    }
  }
}

void HttpServer::Impl::Accept(Loop* loop) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  int fd =
      ::accept4(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (fd < 0) {
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ECONNABORTED) {
      TARN_LOG(kWarn) << "http server: accept: " << std::strerror(errno);
      if (errno == EMFILE || errno == ENFILE) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    }
    return;
  }
  if (connections_.load(std::memory_order_relaxed) >= options_.max_connections) {
    static constexpr char kBusy[] =
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
        "Content-Length: 38\r\nConnection: close\r\n\r\n{\"error\": \"too many open connections\"}";
    if (!tls_) {  // a TLS client could not read it
      ssize_t w = ::send(fd, kBusy, sizeof(kBusy) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
      (void)w;
    }
    ::close(fd);
    return;
  }
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  char host[INET6_ADDRSTRLEN] = "?";
  int port = 0;
  if (addr.ss_family == AF_INET) {
    auto* a = reinterpret_cast<sockaddr_in*>(&addr);
    ::inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
    port = ntohs(a->sin_port);
  } else if (addr.ss_family == AF_INET6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&addr);
    ::inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
    port = ntohs(a->sin6_port);
  }
  std::string remote = std::string(host) + ":" + std::to_string(port);
  connections_.fetch_add(1, std::memory_order_relaxed);
  // The thread with the fewest connections takes it, so that the load spreads
  // evenly whichever thread the kernel woke for the accept.
  Loop* target = loop;
  for (auto& l : loops_) {
    if (l->open.load(std::memory_order_relaxed) < target->open.load(std::memory_order_relaxed)) {
      target = l.get();
    }
  }
  target->open.fetch_add(1, std::memory_order_relaxed);
  if (target == loop) {
    AddConn(loop, fd, std::move(remote));
    return;
  }
  {
    std::lock_guard<std::mutex> lock(target->handoff_mutex);
    target->handoff.emplace_back(fd, std::move(remote));
  }
  uint64_t wake = 1;
  ssize_t w = ::write(target->wake_fd, &wake, sizeof(wake));
  (void)w;
}

void HttpServer::Impl::TakeHandoffs(Loop* loop) {
  std::vector<std::pair<int, std::string>> taken;
  {
    std::lock_guard<std::mutex> lock(loop->handoff_mutex);
    taken.swap(loop->handoff);
  }
  for (auto& [fd, remote] : taken) AddConn(loop, fd, std::move(remote));
}

void HttpServer::Impl::AddConn(Loop* loop, int fd, std::string remote) {
  std::unique_ptr<Conn> c;
  if (!loop->free_conns.empty()) {
    c = std::move(loop->free_conns.back());
    loop->free_conns.pop_back();
  } else {
    c = std::make_unique<Conn>();
  }
  c->fd = fd;
  c->parser = HttpRequestParser(limits_);
  c->in.Clear();
  c->out.Clear();
  c->last_active_ms = NowMs();
  c->request_started_ms = 0;
  c->continue_sent = c->close_after_write = c->want_write = c->reading_paused = false;
  c->eof = c->lingering = false;
  c->remote = std::move(remote);
  c->accepted_ms = c->last_active_ms;
  c->handshaking = c->read_wants_write = c->tls_ready = false;
  bool ok = true;
  if (tls_) {
    ERR_clear_error();
    c->ssl = SSL_new(tls_->get());
    ok = c->ssl && SSL_set_fd(c->ssl, fd) == 1;
    if (ok) {
      SSL_set_accept_state(c->ssl);
      c->handshaking = true;
    } else {
      TARN_LOG(kWarn) << "http server: TLS for " << c->remote << ": " << TakeTlsErrors();
    }
  }
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLRDHUP;
  ev.data.ptr = c.get();
  if (!ok || ::epoll_ctl(loop->epoll_fd, EPOLL_CTL_ADD, fd, &ev) != 0) {
    if (c->ssl) SSL_free(c->ssl);
    c->ssl = nullptr;
    ::close(fd);
    connections_.fetch_sub(1, std::memory_order_relaxed);
    loop->open.fetch_sub(1, std::memory_order_relaxed);
    loop->free_conns.push_back(std::move(c));
    return;
  }
  c->index = loop->conns.size();
  loop->conns.push_back(c.release());
  TARN_LOG(kDebug) << "http server: thread " << loop->index << " took a connection from "
                   << loop->conns.back()->remote << " (" << loop->conns.size() << " open there)";
}

void HttpServer::Impl::Close(Loop* loop, Conn* c) {
  ::epoll_ctl(loop->epoll_fd, EPOLL_CTL_DEL, c->fd, nullptr);
  ::close(c->fd);
  c->fd = -1;
  if (c->ssl) {
    SSL_free(c->ssl);
    c->ssl = nullptr;
  }
  if (c->tls_ready) {  // the Conn may be deleted below
    auto& ready = loop->tls_ready;
    ready.erase(std::remove(ready.begin(), ready.end(), c), ready.end());
  }
  c->handshaking = c->read_wants_write = c->tls_ready = false;
  connections_.fetch_sub(1, std::memory_order_relaxed);
  loop->open.fetch_sub(1, std::memory_order_relaxed);
  size_t i = c->index;
  loop->conns[i] = loop->conns.back();
  loop->conns[i]->index = i;
  loop->conns.pop_back();
  if (c->in.capacity() > kKeepBufferBytes) c->in.Release();
  if (c->out.capacity() > kKeepBufferBytes) c->out.Release();
  if (c->req.body.capacity() > kKeepBufferBytes) std::string().swap(c->req.body);
  if (c->resp.body.capacity() > kKeepBufferBytes) std::string().swap(c->resp.body);
  if (loop->free_conns.size() < 256) {
    loop->free_conns.emplace_back(c);
  } else {
    delete c;
  }
}

void HttpServer::Impl::OnReadable(Loop* loop, Conn* c) {
  if (c->lingering) {
    // Discard what the client still sends so that closing does not reset
    // the connection before it has read the response.
    char sink[16 * 1024];
    while (true) {
      ssize_t r = ::recv(c->fd, sink, sizeof(sink), 0);
      if (r > 0) continue;
      if (r < 0 && errno == EINTR) continue;
      if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      Close(loop, c);  // EOF or an error
      return;
    }
  }
  if (c->reading_paused) return;
  bool eof = false;
  // Read until the socket is empty or the buffer holds a whole maximal request.
  const size_t cap = options_.max_header_bytes + options_.max_body_bytes + 64 * 1024;
  for (int rounds = 0; rounds < 16; ++rounds) {
    if (c->in.size() >= cap) break;
    size_t want = std::min<size_t>(64 * 1024, cap - c->in.size());
    char* dst = c->in.Reserve(want);
    ssize_t r = Recv(c, dst, want);
    if (r > 0) {
      c->in.Commit(static_cast<size_t>(r));
      c->last_active_ms = NowMs();
      // A short read emptied the socket; over TLS, once OpenSSL holds
      // nothing more (it reads ahead whole socket buffers).
      if (static_cast<size_t>(r) < want && (!c->ssl || !SSL_has_pending(c->ssl))) break;
      continue;
    }
    if (r == 0) {
      eof = true;
      break;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) break;
    Close(loop, c);  // ECONNRESET and the like
    return;
  }
  c->eof = eof;
  if (!Process(loop, c)) return;
  if (c->ssl && !eof && !c->reading_paused && !c->tls_ready && SSL_has_pending(c->ssl)) {
    c->tls_ready = true;
    loop->tls_ready.push_back(c);
  }
  if (eof) {
    // The peer will send no more: answer what was complete, then close.
    if (c->out.empty()) {
      Close(loop, c);
    } else {
      c->close_after_write = true;
      c->reading_paused = true;
      UpdateInterest(loop, c);
    }
  }
}

bool HttpServer::Impl::Process(Loop* loop, Conn* c) {
  while (!c->in.empty() && !c->close_after_write) {
    std::string_view data(c->in.data(), c->in.size());
    if (!c->parser.started()) c->request_started_ms = NowMs();
    auto state = c->parser.Parse(data, &c->req);
    if (state == HttpRequestParser::State::kNeedMore) {
      if (c->parser.wants_continue() && !c->continue_sent) {
        c->out.Append("HTTP/1.1 100 Continue\r\n\r\n");
        c->continue_sent = true;
      }
      break;
    }
    if (state == HttpRequestParser::State::kError) {
      RespondError(c, c->parser.error_status(), c->parser.error());
      c->in.Clear();
      c->request_started_ms = 0;
      break;
    }
    // A complete request.
    c->req.remote = c->remote;
    c->resp.Clear();
    try {
      handler_(c->req, &c->resp);
    } catch (const std::exception& e) {
      TARN_LOG(kError) << "http server: handler failed on " << c->req.method << " " << c->req.path
                       << ": " << e.what();
      c->resp.Clear();
      c->resp.status = 500;
      c->resp.body = "{\"error\": \"internal error\"}";
    } catch (...) {
      c->resp.Clear();
      c->resp.status = 500;
      c->resp.body = "{\"error\": \"internal error\"}";
    }
    // Decided after the handler: a Stop() meanwhile closes the connection.
    const bool keep_alive = c->parser.keep_alive() && !stopping_.load(std::memory_order_relaxed);
    Respond(c, keep_alive, c->req.method == "HEAD");
    c->in.Consume(c->parser.consumed());
    c->parser.Reset();
    c->continue_sent = false;
    c->request_started_ms = 0;
    if (!keep_alive) {
      c->close_after_write = true;
      c->in.Clear();
    }
    // Do not let one pipelining client queue unbounded output.
    if (c->out.size() > 4 * 1024 * 1024) break;
  }
  if (c->in.empty() && !c->parser.started()) {
    c->request_started_ms = 0;
    // A keep-alive connection does not hold on to what one large request grew.
    if (c->in.capacity() > kKeepBufferBytes) c->in.Release();
    if (c->req.body.capacity() > kKeepBufferBytes) std::string().swap(c->req.body);
    if (c->resp.body.capacity() > kKeepBufferBytes) std::string().swap(c->resp.body);
  }
  return Flush(loop, c);
}

void HttpServer::Impl::Respond(Conn* c, bool keep_alive, bool is_head) {
  const HttpResponse& r = c->resp;
  char num[24];
  auto append_num = [&](size_t v) {
    auto [end, ec] = std::to_chars(num, num + sizeof(num), v);
    (void)ec;
    c->out.Append(std::string_view(num, end - num));
  };
  c->out.Append("HTTP/1.1 ");
  append_num(static_cast<size_t>(r.status));
  c->out.Append(" ");
  c->out.Append(HttpStatusText(r.status));
  c->out.Append("\r\nContent-Type: ");
  c->out.Append(r.content_type);
  c->out.Append("\r\nContent-Length: ");
  append_num(r.body.size());
  if (!keep_alive) c->out.Append("\r\nConnection: close");
  for (const auto& [name, value] : r.headers) {
    // Never let a handler inject a header line.
    if (name.find_first_of("\r\n:") != std::string::npos ||
        value.find_first_of("\r\n") != std::string::npos) {
      continue;
    }
    c->out.Append("\r\n");
    c->out.Append(name);
    c->out.Append(": ");
    c->out.Append(value);
  }
  c->out.Append("\r\n\r\n");
  if (!is_head) c->out.Append(r.body);
}

void HttpServer::Impl::RespondError(Conn* c, int status, const std::string& message) {
  c->resp.Clear();
  c->resp.status = status;
  c->resp.body = "{\"error\": \"";
  for (char ch : message) {
    if (ch == '"' || ch == '\\') {
      c->resp.body += '\\';
      c->resp.body += ch;
    } else if (static_cast<unsigned char>(ch) >= 0x20) {
      c->resp.body += ch;
    }
  }
  c->resp.body += "\"}";
  Respond(c, false, false);
  c->close_after_write = true;
}

bool HttpServer::Impl::Flush(Loop* loop, Conn* c) {
  while (!c->out.empty()) {
    ssize_t w = Send(c, c->out.data(), c->out.size());
    if (w > 0) {
      c->out.Consume(static_cast<size_t>(w));
      c->last_active_ms = NowMs();
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    Close(loop, c);
    return false;
  }
  if (c->out.empty() && c->out.capacity() > kKeepBufferBytes) c->out.Release();
  if (c->out.empty() && c->close_after_write) {
    // Half-close, then read to EOF (bounded by the sweep) so that unread
    // request bytes do not turn the close into a reset that loses the response.
    if (c->ssl) {
      ERR_clear_error();
      SSL_shutdown(c->ssl);  // close_notify, best effort: the socket may be full
      ERR_clear_error();
    }
    ::shutdown(c->fd, SHUT_WR);
    if (c->eof || c->lingering) {
      Close(loop, c);
      return false;
    }
    c->lingering = true;
    c->last_active_ms = NowMs();
    c->want_write = false;
    c->reading_paused = false;
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.ptr = c;
    ::epoll_ctl(loop->epoll_fd, EPOLL_CTL_MOD, c->fd, &ev);
    return false;  // no more requests on it
  }
  UpdateInterest(loop, c);
  return true;
}

void HttpServer::Impl::UpdateInterest(Loop* loop, Conn* c) {
  bool want_write = !c->out.empty() || c->read_wants_write;
  // Stop reading while a large response is pending (backpressure).
  bool pause = c->close_after_write || c->out.size() > 1024 * 1024;
  if (!pause && c->reading_paused && c->ssl && !c->tls_ready && SSL_has_pending(c->ssl)) {
    c->tls_ready = true;  // resumed reading: what OpenSSL holds comes first
    loop->tls_ready.push_back(c);
  }
  if (want_write == c->want_write && pause == c->reading_paused) return;
  c->want_write = want_write;
  c->reading_paused = pause;
  epoll_event ev{};
  ev.events = (pause ? 0u : static_cast<uint32_t>(EPOLLIN | EPOLLRDHUP)) |
              (want_write ? static_cast<uint32_t>(EPOLLOUT) : 0u);
  ev.data.ptr = c;
  ::epoll_ctl(loop->epoll_fd, EPOLL_CTL_MOD, c->fd, &ev);
}

bool HttpServer::Impl::OnWritable(Loop* loop, Conn* c) {
  if (!Flush(loop, c)) return false;
  // Output drained: requests that were held back may be pending in `in`.
  if (c->out.empty() && !c->in.empty() && !c->close_after_write) return Process(loop, c);
  return true;
}

bool HttpServer::Impl::ContinueHandshake(Loop* loop, Conn* c) {
  ERR_clear_error();
  int r = SSL_do_handshake(c->ssl);
  if (r == 1) {
    c->handshaking = false;
    c->last_active_ms = NowMs();
    // Back to the plain interest set; the request may already be here.
    c->want_write = true;
    c->reading_paused = true;
    UpdateInterest(loop, c);
    OnReadable(loop, c);
    return c->fd >= 0;
  }
  int err = SSL_get_error(c->ssl, r);
  if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
    bool want_write = err == SSL_ERROR_WANT_WRITE;
    if (want_write != c->want_write) {
      c->want_write = want_write;
      epoll_event ev{};
      ev.events = EPOLLIN | EPOLLRDHUP | (want_write ? static_cast<uint32_t>(EPOLLOUT) : 0u);
      ev.data.ptr = c;
      ::epoll_ctl(loop->epoll_fd, EPOLL_CTL_MOD, c->fd, &ev);
    }
    return true;
  }
  // Plain HTTP, a client without an accepted certificate, an aborted
  // connection: nothing was handled; close it and serve the others.
  std::string reason = TakeTlsErrors();
  if (reason.empty()) {
    reason = err == SSL_ERROR_SYSCALL ? "connection closed during the handshake"
                                      : "handshake failed (SSL error " + std::to_string(err) + ")";
  }
  TARN_LOG(kDebug) << "http server: TLS handshake with " << c->remote << " failed: " << reason;
  if (options_.on_tls_failure) options_.on_tls_failure(reason);
  Close(loop, c);
  return false;
}

ssize_t HttpServer::Impl::Recv(Conn* c, char* dst, size_t n) {
  if (!c->ssl) return ::recv(c->fd, dst, n, 0);
  ERR_clear_error();
  int r = SSL_read(c->ssl, dst, static_cast<int>(std::min<size_t>(n, 1 << 30)));
  if (r > 0) return r;
  switch (SSL_get_error(c->ssl, r)) {
    case SSL_ERROR_ZERO_RETURN:
      return 0;
    case SSL_ERROR_WANT_READ:
      errno = EAGAIN;
      return -1;
    case SSL_ERROR_WANT_WRITE:
      c->read_wants_write = true;
      errno = EAGAIN;
      return -1;
    default:
      TARN_LOG(kDebug) << "http server: TLS read from " << c->remote << ": " << TakeTlsErrors();
      errno = ECONNRESET;
      return -1;
  }
}

ssize_t HttpServer::Impl::Send(Conn* c, const char* src, size_t n) {
  if (!c->ssl) return ::send(c->fd, src, n, MSG_NOSIGNAL);
  ERR_clear_error();
  int r = SSL_write(c->ssl, src, static_cast<int>(std::min<size_t>(n, 1 << 30)));
  if (r > 0) return r;
  switch (SSL_get_error(c->ssl, r)) {
    case SSL_ERROR_WANT_READ:  // not with renegotiation off; retried after the next read
    case SSL_ERROR_WANT_WRITE:
      errno = EAGAIN;
      return -1;
    default:
      TARN_LOG(kDebug) << "http server: TLS write to " << c->remote << ": " << TakeTlsErrors();
      errno = ECONNRESET;
      return -1;
  }
}

void HttpServer::Impl::DrainTlsReady(Loop* loop) {
  if (loop->tls_ready.empty()) return;
  std::vector<Conn*> ready;
  ready.swap(loop->tls_ready);
  for (Conn* c : ready) {
    // A connection closed meanwhile has its flag cleared (its Conn may be reused).
    if (!c->tls_ready) continue;
    c->tls_ready = false;
    if (c->fd >= 0 && !c->lingering) OnReadable(loop, c);
  }
}

void HttpServer::Impl::Sweep(Loop* loop, int64_t now) {
  const int64_t limit = options_.idle_timeout_ms;
  for (size_t i = loop->conns.size(); i-- > 0;) {
    Conn* c = loop->conns[i];
    if (c->lingering) {
      if (now - c->last_active_ms > kLingerMs) Close(loop, c);
      continue;
    }
    if (c->handshaking) {
      // Bounded from the accept, so a client cannot trickle a handshake.
      if (now - c->accepted_ms > limit) {
        if (options_.on_tls_failure) options_.on_tls_failure("handshake not finished in time");
        Close(loop, c);
      }
      continue;
    }
    if (c->request_started_ms != 0 && now - c->request_started_ms > limit && c->out.empty()) {
      // A request that has been arriving for too long (a slow client).
      RespondError(c, 408, "request not received in time");
      c->in.Clear();
      c->request_started_ms = 0;
      Flush(loop, c);
      continue;
    }
    if (now - c->last_active_ms > limit) Close(loop, c);
  }
}

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpServer::~HttpServer() { Stop(); }

Result<std::unique_ptr<HttpServer>> HttpServer::Start(const Options& options, Handler handler) {
  if (options.port < 0 || options.port > 65535) {
    return InvalidArgument("http server: port " + std::to_string(options.port) +
                           " is out of range 0..65535");
  }
  if (options.max_header_bytes < 256) {
    return InvalidArgument("http server: max_header_bytes must be at least 256");
  }
  auto impl = std::make_unique<Impl>(options, std::move(handler));
  TARN_RETURN_IF_ERROR(impl->Bind());
  impl->StartLoops();
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

int HttpServer::port() const { return impl_->port(); }

bool HttpServer::tls() const { return impl_->tls(); }

const HttpServer::Options& HttpServer::options() const { return impl_->options(); }

void HttpServer::Stop() {
  if (impl_) impl_->Stop();
}

}  // namespace tarn::net
