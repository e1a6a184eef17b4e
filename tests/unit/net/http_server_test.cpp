#include "net/http_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "http_test_util.h"

namespace tarn::net {
namespace {

// A blocking loopback client with a receive timeout.
class Client {
 public:
  explicit Client(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
  }
  ~Client() {
    if (fd_ >= 0) ::close(fd_);
  }
  bool connected() const { return connected_; }
  bool Send(std::string_view s) {
    while (!s.empty()) {
      ssize_t w = ::send(fd_, s.data(), s.size(), MSG_NOSIGNAL);
      if (w <= 0) return false;
      s.remove_prefix(static_cast<size_t>(w));
    }
    return true;
  }
  // Reads until `count` complete responses have arrived (Content-Length
  // framing; 0: until the timeout), EOF, or the timeout. Returns everything read.
  std::string ReadResponses(int count, int timeout_ms = 5000) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (count == 0 || testing::CountCompleteResponses(buffer_) < count) {
      int left = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                      deadline - std::chrono::steady_clock::now())
                                      .count());
      if (left <= 0) break;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, left) <= 0) break;
      char buf[65536];
      ssize_t r = ::recv(fd_, buf, sizeof(buf), 0);
      if (r <= 0) {
        eof_ = true;
        break;
      }
      buffer_.append(buf, static_cast<size_t>(r));
    }
    std::string out;
    out.swap(buffer_);
    return out;
  }
  // True when the server closed the connection within the timeout.
  bool WaitClosed(int timeout_ms) {
    if (eof_) return true;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (std::chrono::steady_clock::now() < deadline) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) > 0) {
        char buf[4096];
        ssize_t r = ::recv(fd_, buf, sizeof(buf), 0);
        if (r <= 0) return true;
      }
    }
    return false;
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
  bool eof_ = false;
  std::string buffer_;
};

HttpServer::Handler Echo(std::atomic<int>* calls = nullptr) {
  return [calls](const HttpRequest& req, HttpResponse* resp) {
    if (calls) calls->fetch_add(1);
    if (req.path == "/throw") throw std::runtime_error("boom");
    if (req.path == "/slow") std::this_thread::sleep_for(std::chrono::milliseconds(300));
    if (req.path == "/big") {
      resp->body.assign(8 << 20, 'x');
      return;
    }
    resp->content_type = "text/plain";
    resp->headers.emplace_back("X-Path", req.path);
    resp->headers.emplace_back("X-Bad", "a\r\nInjected: yes");  // must be dropped
    resp->body = req.method + " " + req.path + " " + req.body;
  };
}

std::unique_ptr<HttpServer> StartServer(HttpServer::Handler h, HttpServer::Options o = {}) {
  auto s = HttpServer::Start(o, std::move(h));
  EXPECT_TRUE(s.ok()) << s.status().message();
  return s.ok() ? std::move(*s) : nullptr;
}

TEST(HttpServerTest, AnswersKeepAliveAndPipelinedRequests) {
  auto server = StartServer(Echo());
  ASSERT_TRUE(server);
  EXPECT_GT(server->port(), 0);
  Client c(server->port());
  ASSERT_TRUE(c.connected());
  ASSERT_TRUE(c.Send("POST /a HTTP/1.1\r\nContent-Length: 3\r\n\r\nxyz"));
  std::string r = c.ReadResponses(1);
  EXPECT_EQ(r.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << r;
  EXPECT_NE(r.find("Content-Type: text/plain\r\n"), std::string::npos);
  EXPECT_NE(r.find("X-Path: /a\r\n"), std::string::npos);
  EXPECT_EQ(r.find("Injected"), std::string::npos);
  EXPECT_NE(r.find("\r\n\r\nPOST /a xyz"), std::string::npos);
  // Three pipelined requests on the same connection, answered in order.
  ASSERT_TRUE(c.Send("GET /1 HTTP/1.1\r\n\r\nGET /2 HTTP/1.1\r\n\r\nGET /3 HTTP/1.1\r\n\r\n"));
  r = c.ReadResponses(3);
  size_t p1 = r.find("GET /1"), p2 = r.find("GET /2"), p3 = r.find("GET /3");
  ASSERT_NE(p3, std::string::npos) << r;
  EXPECT_LT(p1, p2);
  EXPECT_LT(p2, p3);
  // HEAD gets headers only.
  ASSERT_TRUE(c.Send("HEAD /h HTTP/1.1\r\n\r\n"));
  r = c.ReadResponses(1, 300);
  EXPECT_NE(r.find("Content-Length: 8"), std::string::npos) << r;
  EXPECT_EQ(r.find("HEAD /h"), std::string::npos);
}

TEST(HttpServerTest, ContinueChunkedAndConnectionClose) {
  auto server = StartServer(Echo());
  ASSERT_TRUE(server);
  Client c(server->port());
  ASSERT_TRUE(c.Send("POST /c HTTP/1.1\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n"));
  std::string r = c.ReadResponses(0, 300);
  EXPECT_EQ(r, "HTTP/1.1 100 Continue\r\n\r\n");
  ASSERT_TRUE(c.Send("body"));
  r = c.ReadResponses(1);
  EXPECT_NE(r.find("POST /c body"), std::string::npos) << r;
  ASSERT_TRUE(
      c.Send("POST /k HTTP/1.1\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
             "2\r\nab\r\n0\r\n\r\n"));
  r = c.ReadResponses(1);
  EXPECT_NE(r.find("Connection: close"), std::string::npos) << r;
  EXPECT_NE(r.find("POST /k ab"), std::string::npos);
  EXPECT_TRUE(c.WaitClosed(2000));
}

TEST(HttpServerTest, BadRequestsGet4xxAndTheServerKeepsGoing) {
  HttpServer::Options o;
  o.max_body_bytes = 100;
  o.max_header_bytes = 1024;
  std::atomic<int> calls{0};
  auto server = StartServer(Echo(&calls), o);
  ASSERT_TRUE(server);
  struct Case {
    std::string request;
    const char* status;
  } cases[] = {
      {"garbage\r\n\r\n", "400"},
      {"POST / HTTP/1.1\r\nContent-Length: 101\r\n\r\n", "413"},
      {"GET / HTTP/1.1\r\nX: " + std::string(2000, 'a') + "\r\n\r\n", "431"},
      {"GET / HTTP/3.0\r\n\r\n", "505"},
      {"GET /throw HTTP/1.1\r\n\r\n", "500"},
  };
  for (const auto& cs : cases) {
    Client c(server->port());
    ASSERT_TRUE(c.Send(cs.request));
    std::string r = c.ReadResponses(1);
    EXPECT_EQ(r.substr(9, 3), cs.status) << cs.request.substr(0, 40) << " -> " << r;
    if (std::string(cs.status) != "500") {
      EXPECT_NE(r.find("{\"error\": \""), std::string::npos) << r;
      EXPECT_TRUE(c.WaitClosed(3000));
    }
  }
  // A body over the limit sent in full still gets its 413 (no reset).
  {
    Client c(server->port());
    ASSERT_TRUE(c.Send("POST / HTTP/1.1\r\nContent-Length: 200000\r\n\r\n"));
    c.Send(std::string(200000, 'z'));
    std::string r = c.ReadResponses(1);
    EXPECT_EQ(r.substr(9, 3), "413") << r;
  }
  // Random bytes never crash it.
  std::mt19937_64 rng(5);
  for (int i = 0; i < 50; ++i) {
    Client c(server->port());
    std::string junk(1 + rng() % 3000, '\0');
    for (auto& ch : junk) ch = static_cast<char>(rng() % 256);
    c.Send(junk);
    c.WaitClosed(50);
  }
  Client ok(server->port());
  ASSERT_TRUE(ok.Send("GET /fine HTTP/1.1\r\n\r\n"));
  EXPECT_NE(ok.ReadResponses(1).find("GET /fine"), std::string::npos);
}

TEST(HttpServerTest, SlowAndIdleClientsAreDisconnected) {
  HttpServer::Options o;
  o.idle_timeout_ms = 300;
  auto server = StartServer(Echo(), o);
  ASSERT_TRUE(server);
  Client idle(server->port());
  ASSERT_TRUE(idle.connected());
  EXPECT_TRUE(idle.WaitClosed(3000));
  Client slow(server->port());
  ASSERT_TRUE(slow.Send("GET /partial HTTP/1.1\r\nHost: x\r\n"));  // never finished
  std::string r = slow.ReadResponses(1, 3000);
  EXPECT_EQ(r.substr(0, 12), "HTTP/1.1 408") << r;
  EXPECT_TRUE(slow.WaitClosed(3000));
}

TEST(HttpServerTest, LargeResponsesAndStopFinishesInFlightRequests) {
  HttpServer::Options o;
  o.threads = 2;
  auto server = StartServer(Echo(), o);
  ASSERT_TRUE(server);
  {
    Client c(server->port());
    ASSERT_TRUE(c.Send("GET /big HTTP/1.1\r\n\r\n"));
    std::string r = c.ReadResponses(1, 10000);
    EXPECT_EQ(r.size(), r.find("\r\n\r\n") + 4 + (8u << 20));
  }
  Client c(server->port());
  ASSERT_TRUE(c.Send("GET /slow HTTP/1.1\r\n\r\n"));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the handler is running
  std::thread stopper([&] { server->Stop(); });
  std::string r = c.ReadResponses(1);
  stopper.join();
  EXPECT_EQ(r.substr(0, 15), "HTTP/1.1 200 OK") << r;
  EXPECT_NE(r.find("Connection: close"), std::string::npos);
  EXPECT_NE(r.find("GET /slow"), std::string::npos);
  // Stopped: new connections are refused.
  Client after(server->port());
  EXPECT_FALSE(after.connected() && after.Send("GET / HTTP/1.1\r\n\r\n") &&
               !after.ReadResponses(1, 300).empty());
  server->Stop();  // idempotent
}

TEST(HttpServerTest, ConcurrentClients) {
  HttpServer::Options o;
  o.threads = 3;
  std::atomic<int> calls{0};
  auto server = StartServer(Echo(&calls), o);
  ASSERT_TRUE(server);
  std::vector<std::thread> clients;
  std::atomic<int> good{0};
  for (int t = 0; t < 6; ++t) {
    clients.emplace_back([&, t] {
      Client c(server->port());
      for (int i = 0; i < 50; ++i) {
        std::string body = std::to_string(t) + "-" + std::to_string(i);
        c.Send("POST /x HTTP/1.1\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" +
               body);
        std::string r = c.ReadResponses(1);
        if (r.find("POST /x " + body) != std::string::npos) good.fetch_add(1);
      }
    });
  }
  for (auto& t : clients) t.join();
  EXPECT_EQ(good.load(), 300);
  EXPECT_EQ(calls.load(), 300);
}

TEST(HttpServerTest, RefusesBadOptions) {
  HttpServer::Options o;
  o.host = "not-an-ip";
  EXPECT_FALSE(HttpServer::Start(o, Echo()).ok());
  o.host = "127.0.0.1";
  o.port = 70000;
  EXPECT_FALSE(HttpServer::Start(o, Echo()).ok());
  // A port in use.
  auto first = StartServer(Echo());
  ASSERT_TRUE(first);
  o.port = first->port();
  auto second = HttpServer::Start(o, Echo());
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find("bind"), std::string::npos);
  EXPECT_STREQ(HttpStatusText(404), "Not Found");
}

}  // namespace
}  // namespace tarn::net
