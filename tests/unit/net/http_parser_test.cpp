#include "net/http_parser.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace tarn::net {
namespace {

using State = HttpRequestParser::State;

struct Parsed {
  State state;
  HttpRequest req;
  size_t consumed = 0;
  bool keep_alive = false;
  int status = 0;
  std::string error;
};

Parsed ParseAll(std::string_view text, HttpLimits limits = {}) {
  HttpRequestParser p(limits);
  Parsed out;
  out.state = p.Parse(text, &out.req);
  out.consumed = p.consumed();
  out.keep_alive = p.keep_alive();
  out.status = p.error_status();
  out.error = p.error();
  return out;
}

// The same bytes fed in pieces of `step` (as a slow client sends them).
Parsed ParseInSteps(std::string_view text, size_t step, HttpLimits limits = {}) {
  HttpRequestParser p(limits);
  Parsed out;
  out.state = State::kNeedMore;
  for (size_t n = std::min(step, text.size());; n = std::min(n + step, text.size())) {
    out.state = p.Parse(text.substr(0, n), &out.req);
    if (out.state != State::kNeedMore || n == text.size()) break;
  }
  out.consumed = p.consumed();
  out.keep_alive = p.keep_alive();
  out.status = p.error_status();
  out.error = p.error();
  return out;
}

TEST(HttpParserTest, ParsesARequestWithABody) {
  std::string text =
      "POST /v1/models/in%20come:predict?x=1&y=%41 HTTP/1.1\r\n"
      "Host: localhost\r\n"
      "Content-Type:application/json  \r\n"
      "Content-Length: 11\r\n"
      "\r\n"
      "{\"a\": [1]}\nGET / HTTP/1.1\r\n\r\n";
  auto p = ParseAll(text);
  ASSERT_EQ(p.state, State::kDone) << p.error;
  EXPECT_EQ(p.req.method, "POST");
  EXPECT_EQ(p.req.path, "/v1/models/in come:predict");
  EXPECT_EQ(p.req.query, "x=1&y=%41");
  EXPECT_EQ(p.req.Header("content-type"), "application/json");
  EXPECT_EQ(p.req.Header("host"), "localhost");
  EXPECT_EQ(p.req.Header("absent"), "");
  EXPECT_EQ(p.req.body, "{\"a\": [1]}\n");
  EXPECT_TRUE(p.keep_alive);
  // The pipelined request after it is not consumed.
  EXPECT_EQ(text.substr(p.consumed), "GET / HTTP/1.1\r\n\r\n");
  // Byte by byte gives the same result.
  auto slow = ParseInSteps(text, 1);
  ASSERT_EQ(slow.state, State::kDone);
  EXPECT_EQ(slow.consumed, p.consumed);
  EXPECT_EQ(slow.req.body, p.req.body);
  EXPECT_EQ(slow.req.path, p.req.path);
}

TEST(HttpParserTest, KeepAliveRules) {
  EXPECT_TRUE(ParseAll("GET / HTTP/1.1\r\n\r\n").keep_alive);
  EXPECT_FALSE(ParseAll("GET / HTTP/1.1\r\nConnection: close\r\n\r\n").keep_alive);
  EXPECT_FALSE(ParseAll("GET / HTTP/1.0\r\n\r\n").keep_alive);
  EXPECT_TRUE(ParseAll("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n").keep_alive);
  // Bare LF line endings and leading blank lines are tolerated.
  auto lf = ParseAll("\r\n\nGET /x HTTP/1.1\nA: b\n\n");
  ASSERT_EQ(lf.state, State::kDone);
  EXPECT_EQ(lf.req.path, "/x");
  EXPECT_EQ(lf.req.Header("a"), "b");
}

TEST(HttpParserTest, ChunkedBodiesAndContinue) {
  std::string text =
      "POST /p HTTP/1.1\r\nTransfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n"
      "5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nTrailer: x\r\n\r\nNEXT";
  auto p = ParseAll(text);
  ASSERT_EQ(p.state, State::kDone) << p.error;
  EXPECT_EQ(p.req.body, "hello world");
  EXPECT_EQ(text.substr(p.consumed), "NEXT");
  for (size_t step : {1, 2, 3, 7}) {
    auto s = ParseInSteps(text, step);
    ASSERT_EQ(s.state, State::kDone) << step;
    EXPECT_EQ(s.req.body, "hello world");
    EXPECT_EQ(s.consumed, p.consumed);
  }
  HttpRequestParser parser;
  HttpRequest req;
  std::string head = "POST /p HTTP/1.1\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n";
  EXPECT_EQ(parser.Parse(head, &req), State::kNeedMore);
  EXPECT_TRUE(parser.wants_continue());
  EXPECT_EQ(parser.Parse(head + "abc", &req), State::kDone);
  EXPECT_FALSE(parser.wants_continue());
  EXPECT_EQ(req.body, "abc");
}

TEST(HttpParserTest, RefusesWhatItMustWithTheRightStatus) {
  HttpLimits small;
  small.max_header_bytes = 256;
  small.max_body_bytes = 10;
  struct Case {
    std::string text;
    int status;
    const char* error;
  } cases[] = {
      {"GET\r\n\r\n", 400, "request line"},
      {"GET  / HTTP/1.1\r\n\r\n", 400, "request line"},
      {"GET / HTTP/1.1 x\r\n\r\n", 400, "request line"},
      {"G(T / HTTP/1.1\r\n\r\n", 400, "method"},
      {"GET / HTTP/2.0\r\n\r\n", 505, "version"},
      {"GET / HTTX/1.1\r\n\r\n", 400, "version"},
      {"GET relative HTTP/1.1\r\n\r\n", 400, "absolute path"},
      {"GET /a%zz HTTP/1.1\r\n\r\n", 400, "percent"},
      {"GET /a%00b HTTP/1.1\r\n\r\n", 400, "percent"},
      {"GET /a%0a HTTP/1.1\r\n\r\n", 400, "percent"},
      {"GET / HTTP/1.1\r\nBad Name: x\r\n\r\n", 400, "header name"},
      {"GET / HTTP/1.1\r\nNoColon\r\n\r\n", 400, "header line"},
      {"GET / HTTP/1.1\r\nA: b\r\n folded\r\n\r\n", 400, "folding"},
      {"GET / HTTP/1.1\r\nA: b\x01\r\n\r\n", 400, "control"},
      {"POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400, "Content-Length"},
      {"POST / HTTP/1.1\r\nContent-Length: 1x\r\n\r\n", 400, "Content-Length"},
      {"POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab", 400, "conflicting"},
      {"POST / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", 400, "both"},
      {"POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501, "Transfer-Encoding"},
      {"POST / HTTP/1.1\r\nContent-Length: 11\r\n\r\n", 413, "over the limit"},
      {"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nb\r\n", 413, "over the limit"},
      {"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400, "chunk size"},
      {"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\naXX", 400, "terminator"},
      {"GET / HTTP/1.1\r\nExpect: something\r\n\r\n", 417, "Expect"},
      {"GET /" + std::string(300, 'a') + " HTTP/1.1\r\n", 414, "too long"},
      {"GET / HTTP/1.1\r\nA: " + std::string(300, 'a') + "\r\n", 431, "too large"},
  };
  for (const auto& c : cases) {
    auto p = ParseAll(c.text, small);
    EXPECT_EQ(p.state, State::kError) << c.text;
    EXPECT_EQ(p.status, c.status) << c.text << " -> " << p.error;
    EXPECT_NE(p.error.find(c.error), std::string::npos) << c.text << " -> " << p.error;
    EXPECT_FALSE(p.keep_alive);
  }
  std::string many = "GET / HTTP/1.1\r\n";
  for (int i = 0; i < 101; ++i) many += "H" + std::to_string(i) + ": v\r\n";
  EXPECT_EQ(ParseAll(many + "\r\n").status, 431);
}

// A seeded mutator over HTTP requests. For every mutant: no crash, a clean
// verdict, consumed() within the input, and the same verdict and request
// whether the bytes arrive at once or in random pieces.
TEST(HttpParserTest, FuzzIsConsistentAcrossSplits) {
  const std::vector<std::string> seeds = {
      "POST /v1/models/m:predict HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello",
      "GET /v1/models/m?x=%41 HTTP/1.1\r\nConnection: close\r\n\r\n",
      "POST /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
      "GET / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 0\r\n\r\n",
  };
  static const char* kTokens[] = {"\r\n",
                                  "\n",
                                  ":",
                                  " ",
                                  "%",
                                  "%0",
                                  "Content-Length: 3\r\n",
                                  "Transfer-Encoding: chunked\r\n",
                                  "0\r\n\r\n",
                                  "HTTP/1.1",
                                  "\r\n\r\n",
                                  "ffffffff\r\n",
                                  "\t",
                                  "/"};
  std::mt19937_64 rng(77);
  HttpLimits limits;
  limits.max_header_bytes = 512;
  limits.max_body_bytes = 64;
  int done = 0, errors = 0, more = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    std::string s = seeds[rng() % seeds.size()];
    int edits = static_cast<int>(rng() % 5);
    for (int e = 0; e < edits; ++e) {
      size_t pos = rng() % (s.size() + 1);
      switch (rng() % 5) {
        case 0:
          if (pos < s.size()) s[pos] = static_cast<char>(rng() % 256);
          break;
        case 1:
          s.insert(pos, 1, static_cast<char>(rng() % 256));
          break;
        case 2:
          if (pos < s.size()) s.erase(pos, 1 + rng() % 3);
          break;
        case 3:
          s.insert(pos, kTokens[rng() % (sizeof(kTokens) / sizeof(kTokens[0]))]);
          break;
        default:
          s.resize(pos);
          break;
      }
    }
    auto whole = ParseAll(s, limits);
    ASSERT_LE(whole.consumed, s.size());
    if (whole.state == State::kDone) {
      ++done;
      ASSERT_GT(whole.consumed, 0u);
      ASSERT_LE(whole.req.body.size(), limits.max_body_bytes);
      ASSERT_FALSE(whole.req.path.empty());
      ASSERT_EQ(whole.req.path.find('\0'), std::string::npos);
    } else if (whole.state == State::kError) {
      ++errors;
      ASSERT_GE(whole.status, 400);
      ASSERT_FALSE(whole.error.empty());
    } else {
      ++more;
    }
    auto split = ParseInSteps(s, 1 + rng() % 9, limits);
    // A verdict reached on a prefix may come earlier than on the whole input
    // only for errors about sizes; otherwise both must agree exactly.
    if (whole.state == State::kDone) {
      ASSERT_EQ(split.state, State::kDone) << s;
      ASSERT_EQ(split.consumed, whole.consumed) << s;
      ASSERT_EQ(split.req.body, whole.req.body) << s;
      ASSERT_EQ(split.req.path, whole.req.path) << s;
      ASSERT_EQ(split.req.headers, whole.req.headers) << s;
    } else {
      ASSERT_EQ(split.state, whole.state) << s;
      ASSERT_EQ(split.status, whole.status) << s;
    }
  }
  EXPECT_GT(done, 1000);
  EXPECT_GT(errors, 1000);
  EXPECT_GT(more, 100);
}

}  // namespace
}  // namespace tarn::net
