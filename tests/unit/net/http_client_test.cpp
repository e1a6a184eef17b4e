#include "net/http_client.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "net/http_server.h"

namespace tarn::net {
namespace {

// A loopback server whose handler answers by path.
class HttpClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HttpServer::Options o;
    o.host = "127.0.0.1";
    o.threads = 2;
    auto s = HttpServer::Start(
        o, [this](const HttpRequest& req, HttpResponse* resp) { Handle(req, resp); });
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    server_ = std::move(s).value();
    base_ = "http://127.0.0.1:" + std::to_string(server_->port());
  }
  void TearDown() override { server_->Stop(); }

  void Handle(const HttpRequest& req, HttpResponse* resp) {
    ++requests_;
    if (req.path == "/echo") {
      // method, query, content type and body, one per line
      resp->content_type = "text/plain";
      resp->body = req.method + "\n" + req.query + "\n" + std::string(req.Header("content-type")) +
                   "\n" + std::string(req.Header("x-test")) + "\n" + req.body;
      resp->headers.emplace_back("X-Answer", "42");
    } else if (req.path == "/redirect") {
      resp->status = 307;
      resp->headers.emplace_back("Location", base_ + "/echo?from=redirect");
      resp->body = "";
    } else if (req.path == "/missing") {
      resp->status = 404;
      resp->body = R"({"error":"no such thing"})";
    } else if (req.path == "/big") {
      resp->content_type = "application/octet-stream";
      resp->body.resize(300000);
      for (size_t i = 0; i < resp->body.size(); ++i) resp->body[i] = static_cast<char>(i * 7);
    } else if (req.path == "/slow") {
      std::this_thread::sleep_for(std::chrono::milliseconds(1500));
      resp->body = "late";
    } else {
      resp->status = 400;
      resp->body = "unknown path " + req.path;
    }
  }

  std::unique_ptr<HttpServer> server_;
  std::string base_;
  std::atomic<int> requests_{0};
};

TEST_F(HttpClientTest, GetReturnsStatusHeadersAndBody) {
  HttpClient c;
  auto r = c.Get(base_ + "/echo?a=1");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "GET\na=1\n\n\n");
  EXPECT_EQ(r->Header("x-answer"), "42");
  EXPECT_EQ(r->Header("X-ANSWER"), "42");
  EXPECT_EQ(r->Header("x-absent"), "");
  EXPECT_EQ(r->final_url, base_ + "/echo?a=1");
}

TEST_F(HttpClientTest, PostPutAndDeleteSendMethodHeadersAndBody) {
  HttpClient c;
  auto post = c.Post(base_ + "/echo", R"({"k":1})");
  ASSERT_TRUE(post.ok()) << post.status().ToString();
  EXPECT_EQ(post->body, "POST\n\napplication/json\n\n{\"k\":1}");

  auto put = c.Put(base_ + "/echo?op=X", "payload", "text/plain");
  ASSERT_TRUE(put.ok()) << put.status().ToString();
  EXPECT_EQ(put->body, "PUT\nop=X\ntext/plain\n\npayload");

  auto empty_put = c.Put(base_ + "/echo", "");
  ASSERT_TRUE(empty_put.ok()) << empty_put.status().ToString();
  EXPECT_EQ(empty_put->body, "PUT\n\napplication/json\n\n");

  auto del = c.Delete(base_ + "/echo?recursive=true");
  ASSERT_TRUE(del.ok()) << del.status().ToString();
  EXPECT_EQ(del->body, "DELETE\nrecursive=true\n\n\n");

  ClientRequest custom;
  custom.url = base_ + "/echo";
  custom.headers.emplace_back("X-Test", "yes");
  auto with_header = c.Send(custom);
  ASSERT_TRUE(with_header.ok());
  EXPECT_EQ(with_header->body, "GET\n\n\nyes\n");
  EXPECT_EQ(requests_.load(), 5);
}

TEST_F(HttpClientTest, StreamsTheRequestBodyFromACallback) {
  std::string data(200000, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>('a' + i % 26);
  for (bool known_size : {true, false}) {  // Content-Length, then chunked
    size_t pos = 0;
    int calls = 0;
    ClientRequest req;
    req.method = "PUT";
    req.url = base_ + "/echo";
    req.headers.emplace_back("Content-Type", "application/octet-stream");
    req.body_size = known_size ? static_cast<int64_t>(data.size()) : -1;
    req.body_source = [&](char* dst, size_t cap) -> Result<size_t> {
      ++calls;
      size_t n = std::min<size_t>({cap, 7000, data.size() - pos});
      std::copy(data.data() + pos, data.data() + pos + n, dst);
      pos += n;
      return n;
    };
    HttpClient c;
    auto r = c.Send(req);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->body, "PUT\n\napplication/octet-stream\n\n" + data) << known_size;
    EXPECT_GT(calls, 20);
  }
}

TEST_F(HttpClientTest, ABodySourceErrorAbortsTheRequestWithThatError) {
  ClientRequest req;
  req.method = "POST";
  req.url = base_ + "/echo";
  req.body_size = 100;
  req.body_source = [](char*, size_t) -> Result<size_t> { return IoError("disk went away"); };
  HttpClient c;
  auto r = c.Send(req);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kIoError);
  EXPECT_NE(r.status().message().find("disk went away"), std::string::npos);
  EXPECT_NE(r.status().message().find(base_ + "/echo"), std::string::npos);
}

TEST_F(HttpClientTest, StreamsASuccessfulResponseToTheSinkButKeepsAnErrorBody) {
  std::string received;
  int pieces = 0;
  ClientRequest req;
  req.url = base_ + "/big";
  req.body_sink = [&](std::string_view piece) {
    ++pieces;
    received.append(piece);
    return Status::Ok();
  };
  HttpClient c;
  auto r = c.Send(req);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_TRUE(r->body.empty());
  ASSERT_EQ(received.size(), 300000u);
  EXPECT_EQ(received[12345], static_cast<char>(12345 * 7));
  EXPECT_GE(pieces, 2);

  received.clear();
  req.url = base_ + "/missing";
  auto missing = c.Send(req);
  ASSERT_TRUE(missing.ok());
  EXPECT_EQ(missing->status, 404);
  EXPECT_EQ(missing->body, R"({"error":"no such thing"})");
  EXPECT_TRUE(received.empty());

  Status s = HttpStatusError("GET " + req.url, *missing);
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_NE(s.message().find("HTTP 404"), std::string::npos);
  EXPECT_NE(s.message().find("/missing"), std::string::npos);
  EXPECT_NE(s.message().find("no such thing"), std::string::npos);
}

TEST_F(HttpClientTest, ASinkErrorAbortsTheTransfer) {
  ClientRequest req;
  req.url = base_ + "/big";
  req.body_sink = [](std::string_view) { return Corrupt("bad bytes"); };
  HttpClient c;
  auto r = c.Send(req);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kCorrupt);
  EXPECT_NE(r.status().message().find("bad bytes"), std::string::npos);
}

TEST_F(HttpClientTest, RedirectsAreFollowedOnlyWhenAsked) {
  HttpClient c;
  ClientRequest req;
  req.method = "PUT";
  req.url = base_ + "/redirect";
  req.body = "moved body";
  auto stay = c.Send(req);
  ASSERT_TRUE(stay.ok()) << stay.status().ToString();
  EXPECT_EQ(stay->status, 307);
  EXPECT_EQ(stay->Header("location"), base_ + "/echo?from=redirect");
  EXPECT_EQ(requests_.load(), 1);

  req.follow_redirects = true;
  auto follow = c.Send(req);
  ASSERT_TRUE(follow.ok()) << follow.status().ToString();
  EXPECT_EQ(follow->status, 200);
  // 307 keeps the method and the body.
  EXPECT_EQ(follow->body, "PUT\nfrom=redirect\n\n\nmoved body");
  EXPECT_EQ(follow->final_url, base_ + "/echo?from=redirect");
  EXPECT_EQ(follow->Header("x-answer"), "42");  // the final response's headers only
  EXPECT_EQ(follow->Header("location"), "");
}

TEST_F(HttpClientTest, ATimeoutIsDeadlineExceededNamingTheUrl) {
  HttpClient c;
  ClientRequest req;
  req.url = base_ + "/slow";
  req.timeout_ms = 100;
  auto r = c.Send(req);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_NE(r.status().message().find("GET " + base_ + "/slow"), std::string::npos);
}

TEST(HttpClient, ARefusedConnectionIsUnavailableNamingTheUrl) {
  // Bind a port, then close it: nothing listens there.
  int port = 0;
  {
    auto s = HttpServer::Start(HttpServer::Options{}, [](const HttpRequest&, HttpResponse*) {});
    ASSERT_TRUE(s.ok());
    port = (*s)->port();
  }
  const std::string url = "http://127.0.0.1:" + std::to_string(port) + "/x";
  HttpClient c;
  auto r = c.Get(url);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find(url), std::string::npos);

  auto bad = c.Get("nonsense://x");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("nonsense://x"), std::string::npos);
}

TEST(HttpClient, UrlEncodingKeepsUnreservedCharacters) {
  EXPECT_EQ(UrlEncode("a-b_c.d~e"), "a-b_c.d~e");
  EXPECT_EQ(UrlEncode("a b/c?d=e&f"), "a%20b%2Fc%3Fd%3De%26f");
  EXPECT_EQ(UrlEncode("é"), "%C3%A9");
  EXPECT_EQ(UrlEncodePath("/user/a b/x%y"), "/user/a%20b/x%25y");
}

}  // namespace
}  // namespace tarn::net
