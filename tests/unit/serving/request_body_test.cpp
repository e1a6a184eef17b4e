#include "serving/request_body.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "../test_util.h"

namespace tarn::serving {
namespace {

net::HttpRequest Request(std::string body, std::vector<std::pair<std::string, std::string>> h) {
  net::HttpRequest req;
  req.method = "POST";
  req.body = std::move(body);
  req.headers = std::move(h);
  return req;
}

TEST(RequestBodyTest, PlainBodiesAreViewsOfTheRequest) {
  auto req = Request(R"({"instances": []})", {});
  std::string inflated;
  RequestBody body;
  int status = 0;
  ASSERT_TRUE(DecodeRequestBody(req, true, 1 << 20, &inflated, &body, &status).ok());
  EXPECT_EQ(body.json.data(), req.body.data());
  EXPECT_TRUE(body.binary.empty());
}

TEST(RequestBodyTest, GzipAndDeflateBodiesAreInflated) {
  // Large enough to need several rounds of output room.
  std::string text = R"({"instances": [)";
  for (int i = 0; i < 20000; ++i) text += (i ? ", " : "") + std::string(R"({"Age": 39})");
  text += "]}";
  for (bool gzip : {true, false}) {
    auto req = Request(gzip ? testing::Gzip(text) : testing::Zlib(text),
                       {{"content-encoding", gzip ? "gzip" : "deflate"}});
    std::string inflated;
    RequestBody body;
    int status = 0;
    Status s = DecodeRequestBody(req, false, 1 << 20, &inflated, &body, &status);
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_EQ(body.json, text);
    // Over the body limit once inflated: 413.
    s = DecodeRequestBody(req, false, text.size() - 1, &inflated, &body, &status);
    EXPECT_FALSE(s.ok());
    EXPECT_EQ(status, 413);
    EXPECT_NE(s.message().find("inflates to more than"), std::string::npos) << s.message();
  }
}

TEST(RequestBodyTest, CorruptCompressedBodiesAndUnknownEncodingsAreRefused) {
  const std::string gz = testing::Gzip(R"({"instances": [{"Age": 39}]})");
  std::string inflated;
  RequestBody body;
  int status = 0;
  auto check = [&](const std::string& bytes, const char* encoding, int want, const char* part) {
    auto req = Request(bytes, {{"content-encoding", encoding}});
    Status s = DecodeRequestBody(req, false, 1 << 20, &inflated, &body, &status);
    EXPECT_FALSE(s.ok()) << encoding;
    EXPECT_EQ(status, want) << s.message();
    EXPECT_NE(s.message().find(part), std::string::npos) << s.message();
  };
  check("not gzip at all", "gzip", 400, "the gzip body is corrupt");
  check(gz.substr(0, gz.size() / 2), "gzip", 400, "the gzip body is truncated");
  std::string flipped = gz;
  flipped[flipped.size() - 6] ^= 0x55;  // the CRC-32 of the trailer
  check(flipped, "gzip", 400, "the gzip body is corrupt");
  check(gz + "xx", "gzip", 400, "bytes after its compressed data");
  check(gz, "br", 415, "Content-Encoding br is not supported");
  // Random damage never crashes and never passes for the original.
  std::mt19937 rng(5);
  for (int i = 0; i < 500; ++i) {
    std::string d = gz;
    d[rng() % d.size()] = static_cast<char>(rng());
    auto req = Request(d, {{"content-encoding", "gzip"}});
    Status s = DecodeRequestBody(req, false, 1 << 20, &inflated, &body, &status);
    if (s.ok()) {
      EXPECT_EQ(body.json, R"({"instances": [{"Age": 39}]})");
    }
  }
}

TEST(RequestBodyTest, InferenceHeaderLengthSplitsJsonAndBinary) {
  const std::string json = R"({"inputs": []})";
  auto req = Request(json + std::string("\x01\x02\x00", 3),
                     {{"inference-header-content-length", std::to_string(json.size())}});
  std::string inflated;
  RequestBody body;
  int status = 0;
  ASSERT_TRUE(DecodeRequestBody(req, true, 1 << 20, &inflated, &body, &status).ok());
  EXPECT_EQ(body.json, json);
  EXPECT_EQ(body.binary, std::string("\x01\x02\x00", 3));
  // Not for v1 requests (binary_extension false): the whole body is JSON.
  ASSERT_TRUE(DecodeRequestBody(req, false, 1 << 20, &inflated, &body, &status).ok());
  EXPECT_EQ(body.json.size(), req.body.size());
  // Compressed: the length counts the inflated JSON.
  auto gz = Request(testing::Gzip(req.body),
                    {{"content-encoding", "gzip"},
                     {"inference-header-content-length", std::to_string(json.size())}});
  ASSERT_TRUE(DecodeRequestBody(gz, true, 1 << 20, &inflated, &body, &status).ok());
  EXPECT_EQ(body.json, json);
  EXPECT_EQ(body.binary.size(), 3u);
  for (const char* bad : {"-1", "x", "100"}) {
    auto r = Request(json, {{"inference-header-content-length", bad}});
    Status s = DecodeRequestBody(r, true, 1 << 20, &inflated, &body, &status);
    EXPECT_FALSE(s.ok()) << bad;
    EXPECT_EQ(status, 400);
    EXPECT_NE(s.message().find("Inference-Header-Content-Length"), std::string::npos);
  }
}

}  // namespace
}  // namespace tarn::serving
