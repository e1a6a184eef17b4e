// A small HTTP/1.1 load generator for bench/serving_vs_ceiling.py (built by
// that script with g++; not part of the tarn binary).
//
//   serving_loadgen HOST PORT PATH BODY_FILE RATE CONNECTIONS SECONDS WARMUP_SECONDS
//                   [--tls CA_FILE] [--header 'Name: value']...
//
// --tls: HTTPS (OpenSSL), the server verified against CA_FILE. Each
// connection does its handshake once, before the clock starts, and then
// stays open (keep-alive), so the figures are the cost of encrypting the
// requests and answers, not of handshakes.
// RATE > 0: open loop. Request k is due at t0 + k / RATE; it goes out on an
// idle keep-alive connection, or waits for one. Its latency is measured from
// when it was due, not from when it was sent, so a stalled server is charged
// for every request it delayed (no coordinated omission).
// RATE = 0: closed loop, each connection sends its next request as soon as
// the previous answer arrives (the maximum rate at this concurrency).
//
// Prints one JSON object: requests answered in the measured window, errors
// (non-200 answers or broken connections), achieved rate, and latency
// percentiles in microseconds.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

struct Conn {
  int fd = -1;
  SSL* ssl = nullptr;
  bool busy = false;
  Clock::time_point due;  // when the request in flight was due
  std::string in;
  size_t sent = 0;
};

// The value of the Content-Length header in the header block in[0, end), or 0.
// Field names are case-insensitive (uvicorn, under MLServer, sends them in
// lower case), and optional white space may precede the value.
size_t ContentLength(const std::string& in, size_t end) {
  static constexpr char kName[] = "\r\ncontent-length:";
  constexpr size_t kLen = sizeof(kName) - 1;
  for (size_t i = in.find("\r\n"); i != std::string::npos && i < end; i = in.find("\r\n", i + 2)) {
    if (i + kLen > end) break;
    bool match = true;
    for (size_t k = 0; k < kLen && match; ++k) {
      match = std::tolower(static_cast<unsigned char>(in[i + k])) == kName[k];
    }
    if (match) return std::strtoul(in.c_str() + i + kLen, nullptr, 10);  // skips spaces
  }
  return 0;
}

// Bytes of the first complete response in `in`, or 0; *ok: status 200.
size_t CompleteResponse(const std::string& in, bool* ok) {
  size_t end = in.find("\r\n\r\n");
  if (end == std::string::npos) return 0;
  size_t len = ContentLength(in, end);
  if (in.size() < end + 4 + len) return 0;
  *ok = in.compare(0, 12, "HTTP/1.1 200") == 0;
  return end + 4 + len;
}

}  // namespace

// Reads what the connection has: > 0 bytes, 0 when it would block, -1 when
// it was closed or failed.
ssize_t ReadSome(Conn& c, char* buf, size_t n) {
  if (!c.ssl) {
    ssize_t r = recv(c.fd, buf, n, 0);
    if (r < 0 && errno == EAGAIN) return 0;
    return r == 0 ? -1 : r;
  }
  int r = SSL_read(c.ssl, buf, static_cast<int>(n));
  if (r > 0) return r;
  int e = SSL_get_error(c.ssl, r);
  return e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE ? 0 : -1;
}

// Writes some of [p, p+n): bytes written, 0 when it would block, -1 on error.
ssize_t WriteSome(Conn& c, const char* p, size_t n) {
  if (!c.ssl) {
    ssize_t w = send(c.fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EAGAIN) return 0;
    return w;
  }
  int w = SSL_write(c.ssl, p, static_cast<int>(n));
  if (w > 0) return w;
  int e = SSL_get_error(c.ssl, w);
  return e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE ? 0 : -1;
}

int main(int argc, char** argv) {
  std::string ca_file;
  std::string extra_headers;  // each line ends with CRLF
  std::vector<char*> args = {argv[0]};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--tls" && i + 1 < argc) {
      ca_file = argv[++i];
    } else if (a == "--header" && i + 1 < argc) {
      extra_headers += std::string(argv[++i]) + "\r\n";
    } else {
      args.push_back(argv[i]);
    }
  }
  argc = static_cast<int>(args.size());
  argv = args.data();
  if (argc != 9) {
    std::fprintf(stderr,
                 "usage: serving_loadgen HOST PORT PATH BODY_FILE RATE CONNECTIONS SECONDS "
                 "WARMUP_SECONDS [--tls CA_FILE] [--header 'Name: value']...\n");
    return 2;
  }
  SSL_CTX* tls = nullptr;
  if (!ca_file.empty()) {
    tls = SSL_CTX_new(TLS_client_method());
    SSL_CTX_set_min_proto_version(tls, TLS1_2_VERSION);
    if (SSL_CTX_load_verify_locations(tls, ca_file.c_str(), nullptr) != 1) {
      std::fprintf(stderr, "cannot read the CA file %s\n", ca_file.c_str());
      return 2;
    }
    SSL_CTX_set_verify(tls, SSL_VERIFY_PEER, nullptr);
    SSL_CTX_set_mode(tls, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  }
  const std::string host = argv[1];
  const int port = std::atoi(argv[2]);
  const std::string path = argv[3];
  std::ifstream body_file(argv[4], std::ios::binary);
  std::stringstream ss;
  ss << body_file.rdbuf();
  const std::string body = ss.str();
  const double rate = std::atof(argv[5]);
  const int connections = std::max(1, std::atoi(argv[6]));
  const double seconds = std::atof(argv[7]);
  const double warmup = std::atof(argv[8]);
  const std::string request = "POST " + path + " HTTP/1.1\r\nHost: " + host +
                              "\r\nContent-Type: application/json\r\n" + extra_headers +
                              "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;

  int ep = epoll_create1(0);
  std::vector<Conn> conns(connections);
  for (int i = 0; i < connections; ++i) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    inet_pton(AF_INET, host.c_str(), &a.sin_addr);
    if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
      std::fprintf(stderr, "connect: %s\n", std::strerror(errno));
      return 1;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (tls) {  // the handshake, blocking, before anything is measured
      conns[i].ssl = SSL_new(tls);
      SSL_set_fd(conns[i].ssl, fd);
      SSL_set1_host(conns[i].ssl, host.c_str());
      if (SSL_connect(conns[i].ssl) != 1) {
        char why[256];
        ERR_error_string_n(ERR_get_error(), why, sizeof(why));
        std::fprintf(stderr, "TLS handshake: %s\n", why);
        return 1;
      }
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    conns[i].fd = fd;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u32 = static_cast<uint32_t>(i);
    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
  }

  const Clock::time_point t0 = Clock::now();
  const Clock::time_point measure_from =
      t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(warmup));
  const Clock::time_point end = measure_from + std::chrono::duration_cast<Clock::duration>(
                                                   std::chrono::duration<double>(seconds));
  std::vector<double> latencies;  // microseconds, measured window only
  latencies.reserve(rate > 0 ? static_cast<size_t>(rate * seconds * 1.1) + 16 : 1 << 20);
  long long answered = 0, errors = 0, issued = 0;
  std::deque<Clock::time_point> waiting;  // due requests with no idle connection
  // Idle connections in the order they went idle: the one idle longest goes next, so every
  // connection carries its share even at low rates and none sits idle long enough for a
  // server's keep-alive timeout (uvicorn's, under MLServer, is 5 s) to close it.
  std::deque<int> idle;
  for (int i = 0; i < connections; ++i) idle.push_back(i);

  auto send_on = [&](int i, Clock::time_point due) {
    Conn& c = conns[i];
    c.busy = true;
    c.due = due;
    c.sent = 0;
    while (c.sent < request.size()) {
      ssize_t w = WriteSome(c, request.data() + c.sent, request.size() - c.sent);
      if (w > 0) {
        c.sent += static_cast<size_t>(w);
      } else if (w == 0) {
        // The request is small; the socket buffer is never full here. Spin.
        continue;
      } else {
        ++errors;
        return false;
      }
    }
    return true;
  };
  auto due_time = [&](long long k) {
    return t0 + std::chrono::duration_cast<Clock::duration>(
                    std::chrono::duration<double>(static_cast<double>(k) / rate));
  };

  if (rate <= 0) {
    while (!idle.empty()) {
      int i = idle.front();
      idle.pop_front();
      send_on(i, Clock::now());
    }
  }
  epoll_event events[256];
  char buf[65536];
  while (true) {
    Clock::time_point now = Clock::now();
    if (now >= end) break;
    if (rate > 0) {
      while (due_time(issued) <= now) {
        Clock::time_point due = due_time(issued++);
        if (!idle.empty()) {
          int i = idle.front();
          idle.pop_front();
          send_on(i, due);
        } else {
          waiting.push_back(due);
        }
      }
    }
    timespec timeout{0, 0};
    if (rate > 0) {
      auto wait = std::chrono::duration_cast<std::chrono::nanoseconds>(due_time(issued) - now);
      long long ns = std::max<long long>(0, std::min<long long>(wait.count(), 10'000'000));
      timeout.tv_sec = ns / 1'000'000'000;
      timeout.tv_nsec = ns % 1'000'000'000;
    } else {
      timeout.tv_nsec = 10'000'000;
    }
    int n = epoll_pwait2(ep, events, 256, &timeout, nullptr);
    for (int e = 0; e < n; ++e) {
      int i = static_cast<int>(events[e].data.u32);
      Conn& c = conns[i];
      while (true) {
        ssize_t r = ReadSome(c, buf, sizeof(buf));
        if (r > 0) {
          c.in.append(buf, static_cast<size_t>(r));
          continue;
        }
        if (r < 0) {
          std::fprintf(stderr, "connection %d closed by the server\n", i);
          ++errors;
          epoll_ctl(ep, EPOLL_CTL_DEL, c.fd, nullptr);
          close(c.fd);
          c.fd = -1;
        }
        break;
      }
      if (c.fd < 0) continue;
      bool ok = false;
      size_t used;
      while (c.busy && (used = CompleteResponse(c.in, &ok)) > 0) {
        c.in.erase(0, used);
        Clock::time_point done = Clock::now();
        if (c.due >= measure_from && done < end) {
          ++answered;
          if (!ok) ++errors;
          latencies.push_back(std::chrono::duration<double, std::micro>(done - c.due).count());
        }
        c.busy = false;
        if (rate <= 0) {
          send_on(i, done);
        } else if (!waiting.empty()) {
          Clock::time_point due = waiting.front();
          waiting.pop_front();
          send_on(i, due);
        } else {
          idle.push_back(i);
        }
      }
    }
  }
  // Requests that were due in the window but not answered before its end
  // (queued for a connection, or in flight): reported, as their latency is
  // not in the percentiles.
  size_t unanswered = 0;
  for (const auto& d : waiting) unanswered += d >= measure_from;
  for (const auto& c : conns) unanswered += c.busy && c.due >= measure_from;
  std::sort(latencies.begin(), latencies.end());
  auto pct = [&](double p) {
    if (latencies.empty()) return 0.0;
    size_t k = static_cast<size_t>(p * static_cast<double>(latencies.size() - 1) + 0.5);
    return latencies[std::min(k, latencies.size() - 1)];
  };
  std::printf(
      "{\"rate\": %.1f, \"connections\": %d, \"seconds\": %.3f, \"answered\": %lld, "
      "\"errors\": %lld, \"unanswered_at_end\": %zu, \"achieved_per_s\": %.1f, "
      "\"p50_us\": %.1f, \"p90_us\": %.1f, \"p99_us\": %.1f, \"p999_us\": %.1f, "
      "\"max_us\": %.1f}\n",
      rate, connections, seconds, answered, errors, unanswered,
      static_cast<double>(answered) / seconds, pct(0.5), pct(0.9), pct(0.99), pct(0.999),
      latencies.empty() ? 0.0 : latencies.back());
  (void)Seconds;
  return errors > 0 ? 1 : 0;
}
