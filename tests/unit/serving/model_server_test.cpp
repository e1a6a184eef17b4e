#include "serving/model_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "common/files.h"
#include "common/strings.h"
#include "model/serving_version.h"
#include "serving_test_util.h"
#include "test_util.h"

namespace tarn::serving {
namespace {

using nlohmann::json;

class ModelServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(model::WriteServingVersion(testing::MakeModel(1), tmp_.path()).ok());
    ASSERT_TRUE(model::WriteServingVersion(testing::MakeModel(2), tmp_.path()).ok());
  }
  void StartServer(const std::string& policy = "latest:2",
                   const std::function<void(ModelServerOptions*)>& tweak = nullptr) {
    ModelServerOptions o;
    o.model_name = "income";
    o.versions.base_dir = tmp_.path();
    o.versions.policy = VersionPolicy::Parse(policy).value();
    o.versions.poll_interval_ms = 50;
    o.access_log = tmp_.File("access.log");
    if (tweak) tweak(&o);
    auto s = ModelServer::Start(o);
    ASSERT_TRUE(s.ok()) << s.status().message();
    server_ = std::move(*s);
  }
  net::HttpResponse Call(const std::string& method, const std::string& path,
                         const std::string& body = "", const std::string& authorization = "") {
    net::HttpRequest req;
    req.method = method;
    req.path = path;
    req.body = body;
    if (!authorization.empty()) req.headers.emplace_back("authorization", authorization);
    req.remote = "test";
    net::HttpResponse resp;
    server_->Handle(req, &resp);
    return resp;
  }
  std::string Error(const net::HttpResponse& r) {
    auto j = json::parse(r.body, nullptr, false);
    return j.is_object() && j.contains("error") ? j["error"].get<std::string>() : "(no error)";
  }

  tarn::testing::TempDir tmp_;
  std::unique_ptr<ModelServer> server_;
};

TEST_F(ModelServerTest, StatusMetadataAndHealth) {
  StartServer();
  auto r = Call("GET", "/v1/models/income");
  ASSERT_EQ(r.status, 200);
  auto j = json::parse(r.body);
  ASSERT_EQ(j["model_version_status"].size(), 2u);
  EXPECT_EQ(j["model_version_status"][0]["version"], "2");
  EXPECT_EQ(j["model_version_status"][0]["state"], "AVAILABLE");
  EXPECT_EQ(j["model_version_status"][0]["status"]["error_code"], "OK");
  r = Call("GET", "/v1/models/income/versions/1");
  EXPECT_EQ(json::parse(r.body)["model_version_status"].size(), 1u);
  EXPECT_EQ(Call("GET", "/v1/models/income/versions/9").status, 404);

  r = Call("GET", "/v1/models/income/metadata");
  ASSERT_EQ(r.status, 200);
  j = json::parse(r.body);
  EXPECT_EQ(j["model_spec"]["version"], "2");
  EXPECT_EQ(j["tarn"]["columns"][0]["name"], "x");
  EXPECT_EQ(j["tarn"]["vectorWidth"], 2);
  // The default signature takes the raw columns; "normalized" the vector.
  auto sigs = j["metadata"]["signature_def"]["signature_def"];
  auto sig = sigs["serving_default"];
  EXPECT_EQ(sig["inputs"]["x"]["dtype"], "DT_DOUBLE");
  EXPECT_EQ(sig["inputs"]["color"]["dtype"], "DT_STRING");
  EXPECT_EQ(sig["inputs"]["x"]["tensor_shape"]["dim"],
            json::parse(R"([{"size": "-1", "name": ""}])"));
  EXPECT_EQ(sig["outputs"]["score"]["tensor_shape"]["dim"][1]["size"], "1");
  EXPECT_EQ(sigs["normalized"]["inputs"]["input"]["tensor_shape"]["dim"][1]["size"], "2");
  r = Call("GET", "/v1/models/income/versions/1/metadata");
  EXPECT_EQ(json::parse(r.body)["model_spec"]["version"], "1");

  EXPECT_EQ(Call("GET", "/v2/health/live").status, 200);
  EXPECT_EQ(Call("GET", "/v2/health/ready").status, 200);
  EXPECT_EQ(Call("GET", "/v2/models/income/ready").status, 200);
  EXPECT_EQ(Call("GET", "/v2/models/income/versions/7/ready").status, 503);
  r = Call("GET", "/v2/models/income");
  j = json::parse(r.body);
  EXPECT_EQ(j["versions"], json({"2", "1"}));
  EXPECT_EQ(j["inputs"][0]["datatype"], "FP64");
  EXPECT_EQ(j["inputs"][1]["datatype"], "BYTES");
  j = json::parse(Call("GET", "/v2").body);
  EXPECT_EQ(j["name"], "tarn");
  EXPECT_EQ(j["extensions"], json({"binary_tensor_data"}));
}

TEST_F(ModelServerTest, PredictsWithEitherApiAndVersion) {
  StartServer();
  auto r =
      Call("POST", "/v1/models/income:predict", R"({"instances": [{"x": 11, "color": "red"}]})");
  ASSERT_EQ(r.status, 200) << r.body;
  double newest = json::parse(r.body)["predictions"][0][0].get<double>();
  bool has_version = false;
  for (const auto& [k, v] : r.headers) has_version |= k == "X-Model-Version" && v == "2";
  EXPECT_TRUE(has_version);
  r = Call("POST", "/v1/models/income/versions/1:predict",
           R"({"instances": [{"x": 11, "color": "red"}]})");
  ASSERT_EQ(r.status, 200);
  double older = json::parse(r.body)["predictions"][0][0].get<double>();
  EXPECT_NE(newest, older);  // two different models
  r = Call("POST", "/v2/models/income/infer",
           R"({"inputs": [{"name": "x", "shape": [1], "datatype": "FP64", "data": [11]},
                          {"name": "color", "shape": [1], "datatype": "BYTES", "data": ["red"]}]})");
  ASSERT_EQ(r.status, 200) << r.body;
  auto j = json::parse(r.body);
  EXPECT_EQ(j["model_version"], "2");
  EXPECT_EQ(j["outputs"][0]["data"][0].get<double>(), newest);
  r = Call("POST", "/v2/models/income/versions/1/infer",
           R"({"inputs": [{"name": "x", "shape": [1], "datatype": "FP64", "data": [11]},
                          {"name": "color", "shape": [1], "datatype": "BYTES", "data": ["red"]}]})");
  EXPECT_EQ(json::parse(r.body)["outputs"][0]["data"][0].get<double>(), older);

  // Binary tensor data in, binary scores out (what tritonclient sends by default).
  const std::string header =
      R"({"inputs": [{"name": "x", "shape": [1], "datatype": "FP64",
                      "parameters": {"binary_data_size": 8}}],
          "parameters": {"binary_data_output": true}})";
  double x = 11;
  net::HttpRequest req;
  req.method = "POST";
  req.path = "/v2/models/income/infer";
  req.body = header + std::string(reinterpret_cast<const char*>(&x), 8);
  req.headers = {{"inference-header-content-length", std::to_string(header.size())}};
  net::HttpResponse resp;
  server_->Handle(req, &resp);
  ASSERT_EQ(resp.status, 200) << resp.body;
  EXPECT_EQ(resp.content_type, "application/octet-stream");
  size_t json_bytes = 0;
  for (const auto& [k, v] : resp.headers) {
    if (k == "Inference-Header-Content-Length") json_bytes = std::stoul(v);
  }
  ASSERT_EQ(resp.body.size(), json_bytes + 8);
  j = json::parse(resp.body.substr(0, json_bytes));
  EXPECT_EQ(j["outputs"][0]["parameters"]["binary_data_size"], 8);
  double score;
  std::memcpy(&score, resp.body.data() + json_bytes, 8);
  r = Call("POST", "/v2/models/income/infer",
           R"({"inputs": [{"name": "x", "shape": [1], "datatype": "FP64", "data": [11]}]})");
  EXPECT_EQ(score, json::parse(r.body)["outputs"][0]["data"][0].get<double>());
}

TEST_F(ModelServerTest, BadRequestsGetTheRightStatusAndMessage) {
  StartServer();
  struct Case {
    const char* method;
    const char* path;
    const char* body;
    int status;
    const char* error;
  } cases[] = {
      {"POST", "/v1/models/income:predict", "{\"instances\": [", 400, "malformed JSON at byte"},
      {"POST", "/v1/models/income:predict", "", 400, "empty request body"},
      {"POST", "/v1/models/income:predict", R"({"instances": [{"zip": 1}]})", 400,
       "unknown column \"zip\""},
      {"POST", "/v1/models/income:predict", R"({"instances": [{"x": "ten"}]})", 400,
       "is not a number"},
      {"POST", "/v1/models/income:predict", R"({"instances": [[1, 2, 3]]})", 400, "has 2 numbers"},
      {"POST", "/v1/models/other:predict", "{}", 404, "model \"other\" is not served here"},
      {"POST", "/v1/models/income/versions/9:predict", "{}", 404, "version 9 of model"},
      {"POST", "/v1/models/income/versions/x:predict", "{}", 400, "positive integer"},
      {"POST", "/v1/models/income/labels/stable:predict", "{}", 400, "labels"},
      {"POST", "/v1/models/income:classify", "{}", 400, "not supported"},
      {"POST", "/v1/models/income:explode", "{}", 404, "unknown method"},
      {"GET", "/v1/models/income:predict", "", 405, "use POST"},
      {"POST", "/v1/models/income", "{}", 405, "use GET"},
      {"DELETE", "/metrics", "", 405, "use GET"},
      {"GET", "/v3/anything", "", 404, "no such endpoint"},
      {"GET", "/v1/models/income/versions/2/other", "", 404, "no such endpoint"},
      {"POST", "/v2/models/income/infer", R"({"inputs": 1})", 400, "non-empty list"},
      {"POST", "/v2/models/income/infer",
       R"({"inputs": [{"name": "x", "shape": [1], "datatype": "FP64", "data": [1]}],
           "outputs": [{"name": "label"}]})",
       400, "unknown output \"label\""},
  };
  for (const auto& c : cases) {
    auto r = Call(c.method, c.path, c.body);
    EXPECT_EQ(r.status, c.status) << c.method << " " << c.path << " " << c.body << " -> " << r.body;
    EXPECT_NE(Error(r).find(c.error), std::string::npos)
        << c.method << " " << c.path << " -> " << r.body;
  }
  int predict_400 = 0;  // v1 paths with a ":verb" count as predict
  for (const auto& c : cases) {
    std::string p = c.path;
    predict_400 += c.status == 400 && p.rfind("/v1/", 0) == 0 && p.find(':') != std::string::npos;
  }
  auto m = Call("GET", "/metrics");
  ASSERT_EQ(m.status, 200);
  EXPECT_EQ(m.content_type.rfind("text/plain; version=0.0.4", 0), 0u);
  EXPECT_NE(m.body.find("tarn_serving_requests_total{endpoint=\"predict\",code=\"400\"} " +
                        std::to_string(predict_400) + "\n"),
            std::string::npos)
      << m.body;
  EXPECT_NE(m.body.find("tarn_serving_model_version{model=\"income\"} 2"), std::string::npos);
  EXPECT_NE(m.body.find("tarn_serving_loaded_versions{model=\"income\"} 2"), std::string::npos);
  EXPECT_NE(
      m.body.find("tarn_serving_request_duration_seconds_bucket{endpoint=\"predict\",le=\"+Inf\"}"),
      std::string::npos);
  server_->Stop();
  // The access log has one JSON line per request.
  auto log = ReadFile(tmp_.File("access.log"));
  ASSERT_TRUE(log.ok());
  size_t lines = 0;
  for (const auto& line : Split(*log, "\n")) {
    if (line.empty()) continue;
    ++lines;
    auto j = json::parse(line);
    EXPECT_TRUE(j.contains("status") && j.contains("latency_us") && j.contains("path"));
  }
  EXPECT_EQ(lines, std::size(cases) + 1);
}

TEST_F(ModelServerTest, NoVersionYetIs503AndServesOverHttp) {
  tarn::testing::TempDir empty;
  ModelServerOptions o;
  o.model_name = "m";
  o.versions.base_dir = empty.path();
  o.versions.poll_interval_ms = 20;
  auto s = ModelServer::Start(o);
  ASSERT_TRUE(s.ok());
  server_ = std::move(*s);
  auto r = Call("POST", "/v1/models/m:predict", R"({"instances": [{"x": 1}]})");
  EXPECT_EQ(r.status, 503);
  EXPECT_NE(Error(r).find("no version loaded yet"), std::string::npos);
  EXPECT_EQ(Call("GET", "/v2/health/ready").status, 503);
  ASSERT_TRUE(model::WriteServingVersion(testing::MakeModel(1), empty.path()).ok());
  for (int i = 0; i < 500 && Call("GET", "/v2/health/ready").status != 200; ++i) {
    usleep(10000);
  }
  // Through the network.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(server_->port()));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  std::string body = R"({"instances": [{"x": 1, "color": "blue"}]})";
  std::string req =
      "POST /v1/models/m:predict HTTP/1.1\r\nHost: t\r\nConnection: close\r\n"
      "Content-Length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body;
  ASSERT_EQ(::send(fd, req.data(), req.size(), 0), static_cast<ssize_t>(req.size()));
  std::string resp;
  char buf[4096];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof(buf), 0)) > 0;) resp.append(buf, n);
  ::close(fd);
  EXPECT_EQ(resp.rfind("HTTP/1.1 200 OK", 0), 0u) << resp;
  EXPECT_NE(resp.find("X-Model-Version: 1"), std::string::npos);
  EXPECT_NE(resp.find("{\"predictions\": ["), std::string::npos);
}

TEST_F(ModelServerTest, BearerTokensGuardEveryRouteButHealthAndAreCounted) {
  const std::string tokens = tmp_.Write("tokens", "# clients\ns3cret\n");
  StartServer("latest:2", [&](ModelServerOptions* o) { o->token_file = tokens; });
  const std::string predict = "/v1/models/income:predict";
  const std::string body = R"({"instances": [{"x": 1, "color": "blue"}]})";
  EXPECT_EQ(Call("POST", predict, body, "Bearer s3cret").status, 200);
  auto missing = Call("POST", predict, body);
  EXPECT_EQ(missing.status, 401);
  ASSERT_EQ(missing.headers.size(), 1u);
  EXPECT_EQ(missing.headers[0].first, "WWW-Authenticate");
  EXPECT_EQ(missing.headers[0].second, "Bearer realm=\"tarn\"");
  auto wrong = Call("POST", predict, body, "Bearer s3cre");
  EXPECT_EQ(wrong.status, 401);
  EXPECT_NE(wrong.headers[0].second.find("error=\"invalid_token\""), std::string::npos);
  EXPECT_NE(Error(wrong).find("not valid"), std::string::npos);
  EXPECT_EQ(Call("GET", "/v1/models/income/metadata").status, 401);
  EXPECT_EQ(Call("GET", "/metrics").status, 401);
  // Health stays open by default.
  EXPECT_EQ(Call("GET", "/v2/health/live").status, 200);
  EXPECT_EQ(Call("GET", "/v2/health/ready").status, 200);
  EXPECT_EQ(Call("GET", "/v2/models/income/ready").status, 200);
  EXPECT_EQ(Call("GET", "/v2/models/income/versions/1/ready").status, 200);
  std::string metrics = Call("GET", "/metrics", "", "Bearer s3cret").body;
  EXPECT_NE(metrics.find("tarn_serving_auth_refused_total{reason=\"missing_token\"} 3"),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("tarn_serving_auth_refused_total{reason=\"invalid_token\"} 1"),
            std::string::npos);
  EXPECT_NE(metrics.find("tarn_serving_requests_total{endpoint=\"other\",code=\"401\"} 4"),
            std::string::npos);
  // A new token file takes effect on a reload (SIGHUP in tarn serve).
  tmp_.Write("tokens", "n3w\n");
  ASSERT_TRUE(server_->ReloadTokens().ok());
  EXPECT_EQ(Call("POST", predict, body, "Bearer s3cret").status, 401);
  EXPECT_EQ(Call("POST", predict, body, "Bearer n3w").status, 200);
}

TEST_F(ModelServerTest, HealthNeedsATokenWhenItIsNotOpen) {
  const std::string tokens = tmp_.Write("tokens", "s3cret\n");
  StartServer("latest:2", [&](ModelServerOptions* o) {
    o->token_file = tokens;
    o->open_health = false;
  });
  EXPECT_EQ(Call("GET", "/v2/health/live").status, 401);
  EXPECT_EQ(Call("GET", "/v2/models/income/ready").status, 401);
  EXPECT_EQ(Call("GET", "/v2/health/ready", "", "Bearer s3cret").status, 200);
}

TEST(ModelServerStartTest, RefusesAMissingTokenFile) {
  tarn::testing::TempDir dir;
  ModelServerOptions o;
  o.versions.base_dir = dir.path();
  o.token_file = dir.File("tokens");
  auto s = ModelServer::Start(o);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find(dir.File("tokens")), std::string::npos);
}

TEST(ModelServerStartTest, RefusesBadNames) {
  ModelServerOptions o;
  o.model_name = "a/b";
  EXPECT_FALSE(ModelServer::Start(o).ok());
}

}  // namespace
}  // namespace tarn::serving
