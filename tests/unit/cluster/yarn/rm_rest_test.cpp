#include "cluster/yarn/rm_rest.h"

#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cluster/yarn/yarn_backend.h"  // for EnvironmentValue
#include "common/strings.h"
#include "net/http_server.h"

namespace tarn::cluster::yarn {
namespace {

using Json = nlohmann::json;

// A ResourceManager (and NodeManager) REST endpoint for tests: records every request and answers
// from a table of (method + path) -> (status, body).
class FakeRm {
 public:
  FakeRm() {
    auto s = net::HttpServer::Start(net::HttpServer::Options{},
                                    [this](const net::HttpRequest& req, net::HttpResponse* resp) {
                                      std::lock_guard<std::mutex> l(mu_);
                                      requests_.push_back(req);
                                      const std::string key = req.method + " " + req.path;
                                      auto it = answers_.find(key);
                                      if (it == answers_.end() || it->second.empty()) {
                                        resp->status = 404;
                                        resp->body = R"({"RemoteException":{"exception":)"
                                                     R"("NotFoundException","message":"no )" +
                                                     key + "\"}}";
                                        return;
                                      }
                                      auto [status, body] = it->second.front();
                                      if (it->second.size() > 1)
                                        it->second.erase(it->second.begin());
                                      resp->status = status;
                                      resp->body = body;
                                    });
    EXPECT_TRUE(s.ok());
    server_ = std::move(s).value();
    address_ = "127.0.0.1:" + std::to_string(server_->port());
  }
  ~FakeRm() { server_->Stop(); }

  // Answers in turn; the last one repeats.
  void Answer(const std::string& method_path, int status, const std::string& body) {
    std::lock_guard<std::mutex> l(mu_);
    answers_[method_path].emplace_back(status, body);
  }
  std::vector<net::HttpRequest> Requests() {
    std::lock_guard<std::mutex> l(mu_);
    return requests_;
  }
  const std::string& address() const { return address_; }

 private:
  std::unique_ptr<net::HttpServer> server_;
  std::string address_;
  std::mutex mu_;
  std::map<std::string, std::vector<std::pair<int, std::string>>> answers_;
  std::vector<net::HttpRequest> requests_;
};

ResourceManagerClient Client(const std::vector<std::string>& addresses) {
  ResourceManagerOptions o;
  o.web_addresses = addresses;
  o.user = "alice";
  o.timeout_ms = 10'000;
  return ResourceManagerClient(o);
}

const char* kApp = R"({"app":{"id":"application_1700000000000_0007","user":"alice","name":"job",
  "queue":"root.default","state":"FINISHED","finalStatus":"SUCCEEDED","progress":100.0,
  "trackingUrl":"http://rm:8088/proxy/application_1700000000000_0007/","diagnostics":"",
  "applicationType":"TARN","startedTime":1700000001000,"finishedTime":1700000009000,
  "amContainerLogs":"http://nm:8042/node/containerlogs/container_1700000000000_0007_01_000001/alice",
  "amHostHttpAddress":"nm:8042","runningContainers":-1}})";

TEST(ResourceManagerClient, ApplicationIds) {
  EXPECT_TRUE(ResourceManagerClient::IsApplicationId("application_1700000000000_0007"));
  EXPECT_FALSE(ResourceManagerClient::IsApplicationId("application_1700000000000"));
  EXPECT_FALSE(ResourceManagerClient::IsApplicationId("application_17x_1"));
  EXPECT_FALSE(ResourceManagerClient::IsApplicationId("job_1_2"));
  EXPECT_FALSE(ResourceManagerClient::IsApplicationId("application__1"));
}

TEST(ResourceManagerClient, SubmissionJsonCarriesTheWholeAmSpec) {
  AppSubmission s;
  s.application_id = "application_1700000000000_0007";
  s.name = "train income";
  s.queue = "research";
  s.tags = {"tarn", "income"};
  s.max_attempts = 2;
  s.keep_containers = true;
  s.attempt_failures_validity_interval_ms = 600000;
  s.memory_mb = 768;
  s.vcores = 2;
  s.command = "./tarn yarn am 1><LOG_DIR>/stdout 2><LOG_DIR>/stderr";
  LocalResource bin;
  bin.url = "hdfs://nn:8020/user/alice/.tarn/staging/cache/tarn.123.456";
  bin.size = 123;
  bin.timestamp = 1700000000456;
  s.local_resources["tarn"] = bin;
  s.environment["PLAIN"] = "value";
  s.environment["ODD"] = "a \"b\" $c {{PWD}}";
  s.environment["LD_LIBRARY_PATH"] = "overridden by raw";
  s.raw_environment["LD_LIBRARY_PATH"] = "{{PWD}}";
  s.secrets["tarn.job.secret"] = "s3cr3t";

  Json j = Json::parse(ResourceManagerClient::SubmissionJson(s));
  EXPECT_EQ(j["application-id"], "application_1700000000000_0007");
  EXPECT_EQ(j["application-name"], "train income");
  EXPECT_EQ(j["queue"], "research");
  EXPECT_EQ(j["application-type"], "TARN");
  EXPECT_EQ(j["max-app-attempts"], 2);
  EXPECT_EQ(j["keep-containers-across-application-attempts"], true);
  EXPECT_EQ(j["attempt-failures-validity-interval"], 600000);
  EXPECT_EQ(j["unmanaged-AM"], false);
  EXPECT_EQ(j["resource"]["memory"], 768);
  EXPECT_EQ(j["resource"]["vCores"], 2);
  EXPECT_EQ(j["application-tags"]["tag"], Json({"tarn", "income"}));
  const Json& spec = j["am-container-spec"];
  EXPECT_EQ(spec["commands"]["command"], s.command);
  const Json& res = spec["local-resources"]["entry"][0];
  EXPECT_EQ(res["key"], "tarn");
  EXPECT_EQ(res["value"]["resource"], bin.url);
  EXPECT_EQ(res["value"]["type"], "FILE");
  EXPECT_EQ(res["value"]["visibility"], "APPLICATION");
  EXPECT_EQ(res["value"]["size"], 123);
  EXPECT_EQ(res["value"]["timestamp"], 1700000000456);
  std::map<std::string, std::string> env;
  for (const auto& e : spec["environment"]["entry"]) env[e["key"]] = e["value"];
  EXPECT_EQ(env.size(), 3u);
  EXPECT_EQ(env["PLAIN"], "value");
  EXPECT_EQ(env["ODD"], EnvironmentValue("a \"b\" $c {{PWD}}"));  // literal in the container
  EXPECT_NE(env["ODD"], "a \"b\" $c {{PWD}}");
  EXPECT_EQ(env["LD_LIBRARY_PATH"], "{{PWD}}");  // raw: the NodeManager expands it
  const Json& secret = spec["credentials"]["secrets"]["entry"][0];
  EXPECT_EQ(secret["key"], "tarn.job.secret");
  EXPECT_EQ(secret["value"], "czNjcjN0");  // base64("s3cr3t")
  EXPECT_TRUE(spec["credentials"]["tokens"].empty());

  // A secured cluster's delegation tokens, by service, as the RM's createCredentials reads them.
  AppSubmission secured = s;
  secured.secrets.clear();
  secured.tokens = {{"127.0.0.1:8020", "HgAEcm9vdA"}, {"ha-hdfs:prod", "IgAFYWxpY2U"}};
  Json sj = Json::parse(ResourceManagerClient::SubmissionJson(secured));
  const Json& tokens = sj["am-container-spec"]["credentials"]["tokens"]["entry"];
  ASSERT_EQ(tokens.size(), 2u);
  EXPECT_EQ(tokens[0]["key"], "127.0.0.1:8020");
  EXPECT_EQ(tokens[0]["value"], "HgAEcm9vdA");
  EXPECT_EQ(tokens[1]["key"], "ha-hdfs:prod");
  EXPECT_TRUE(sj["am-container-spec"]["credentials"]["secrets"].empty());

  AppSubmission bare;
  bare.application_id = s.application_id;
  bare.command = "x";
  Json b = Json::parse(ResourceManagerClient::SubmissionJson(bare));
  EXPECT_FALSE(b.contains("application-tags"));
  EXPECT_FALSE(b.contains("attempt-failures-validity-interval"));
  EXPECT_FALSE(b["am-container-spec"].contains("credentials"));
}

TEST(ResourceManagerClient, ParsesReportsTolerantly) {
  auto r = ResourceManagerClient::ParseAppReport(kApp);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->id, "application_1700000000000_0007");
  EXPECT_EQ(r->state, "FINISHED");
  EXPECT_EQ(r->final_status, "SUCCEEDED");
  EXPECT_EQ(r->type, "TARN");
  EXPECT_EQ(r->am_host_http_address, "nm:8042");
  EXPECT_DOUBLE_EQ(r->progress, 100.0);
  EXPECT_EQ(r->started_ms, 1700000001000);
  EXPECT_TRUE(r->Done());

  // Numbers as strings, as some RM versions write them.
  auto s = ResourceManagerClient::ParseAppReport(
      R"({"app":{"id":"application_1_2","state":"RUNNING","progress":"42.5","startedTime":"17"}})");
  ASSERT_TRUE(s.ok());
  EXPECT_DOUBLE_EQ(s->progress, 42.5);
  EXPECT_EQ(s->started_ms, 17);
  EXPECT_FALSE(s->Done());

  EXPECT_FALSE(ResourceManagerClient::ParseAppReport("<html>").ok());
  EXPECT_FALSE(ResourceManagerClient::ParseAppReport(R"({"apps":{}})").ok());
}

TEST(ResourceManagerClient, UnwrapsHadoop3ContainerLogs) {
  const std::string wrapped =
      "Container: container_1_0001_01_000001 on nm:45454\nLogAggregationType: LOCAL\n"
      "====\nLogType:stdout\nLogLastModifiedTime:Sun Nov 29 22:15:53 +0000 2026\n"
      "LogLength:12\nLogContents:\nhello\nworld\n\nEnd of LogType:stdout.\n*****\n\n";
  EXPECT_EQ(UnwrapContainerLog(wrapped), "hello\nworld\n");
  EXPECT_EQ(UnwrapContainerLog("raw bytes\n"), "raw bytes\n");
}

TEST(ResourceManagerClient, CreatesSubmitsAndReads) {
  FakeRm rm;
  rm.Answer("POST /ws/v1/cluster/apps/new-application", 200,
            R"({"application-id":"application_1700000000000_0007",)"
            R"("maximum-resource-capability":{"memory":8192,"vCores":"4"}})");
  rm.Answer("POST /ws/v1/cluster/apps", 202, "");
  rm.Answer("GET /ws/v1/cluster/apps/application_1700000000000_0007", 200, kApp);
  auto client = Client({rm.address()});

  auto app = client.CreateApplication();
  ASSERT_TRUE(app.ok()) << app.status().ToString();
  EXPECT_EQ(app->id, "application_1700000000000_0007");
  EXPECT_EQ(app->max_memory_mb, 8192);
  EXPECT_EQ(app->max_vcores, 4);

  AppSubmission s;
  s.application_id = app->id;
  s.command = "true";
  ASSERT_TRUE(client.Submit(s).ok());
  auto report = client.GetApplication(app->id);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->final_status, "SUCCEEDED");

  auto requests = rm.Requests();
  ASSERT_EQ(requests.size(), 3u);
  for (const auto& r : requests) EXPECT_EQ(r.query, "user.name=alice") << r.path;
  EXPECT_EQ(requests[1].method, "POST");
  EXPECT_EQ(std::string(requests[1].Header("content-type")), "application/json");
  EXPECT_EQ(Json::parse(requests[1].body)["application-id"], app->id);

  // Bad input never reaches the RM.
  AppSubmission no_id;
  no_id.command = "true";
  EXPECT_EQ(client.Submit(no_id).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(client.GetApplication("nonsense").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(rm.Requests().size(), 3u);
}

TEST(ResourceManagerClient, ErrorsNameTheRequestAndTheRemoteException) {
  FakeRm rm;
  rm.Answer("POST /ws/v1/cluster/apps", 400,
            R"({"RemoteException":{"exception":"BadRequestException",)"
            R"("message":"Invalid queue nope","javaClassName":"x"}})");
  auto client = Client({rm.address()});
  AppSubmission s;
  s.application_id = "application_1_1";
  s.command = "true";
  Status st = client.Submit(s);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("submitting application_1_1"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("POST http://" + rm.address() + "/ws/v1/cluster/apps"),
            std::string::npos)
      << st.message();
  EXPECT_NE(st.message().find("BadRequestException: Invalid queue nope"), std::string::npos);

  auto missing = client.GetApplication("application_1_2");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);

  auto none = Client({});
  auto s2 = none.CreateApplication();
  EXPECT_EQ(s2.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s2.status().message().find("yarn.resourcemanager.webapp.address"), std::string::npos);
}

TEST(ResourceManagerClient, TriesTheNextResourceManagerWhenOneIsDown) {
  int dead_port = 0;
  {
    auto s = net::HttpServer::Start(net::HttpServer::Options{},
                                    [](const net::HttpRequest&, net::HttpResponse*) {});
    ASSERT_TRUE(s.ok());
    dead_port = (*s)->port();
  }
  FakeRm rm;
  rm.Answer("GET /ws/v1/cluster/apps/application_1700000000000_0007", 200, kApp);
  auto client = Client({"127.0.0.1:" + std::to_string(dead_port), rm.address()});
  auto r = client.GetApplication("application_1700000000000_0007");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->state, "FINISHED");
}

TEST(ResourceManagerClient, AttemptsAndListsAcceptOneObjectOrAList) {
  FakeRm rm;
  rm.Answer("GET /ws/v1/cluster/apps/application_1_2/appattempts", 200,
            R"({"appAttempts":{"appAttempt":{"id":1,"containerId":"container_1_0002_01_000001",)"
            R"("nodeHttpAddress":"nm:8042","nodeId":"nm:45454","startTime":5}}})");
  rm.Answer(
      "GET /ws/v1/cluster/apps/application_1_3/appattempts", 200,
      R"({"appAttempts":{"appAttempt":[{"id":2,"containerId":"c2"},{"id":1,"containerId":"c1"}]}})");
  rm.Answer(
      "GET /ws/v1/cluster/apps", 200,
      R"({"apps":{"app":[{"id":"application_1_1","startedTime":1},)"
      R"({"id":"application_1_3","startedTime":3},{"id":"application_1_2","startedTime":2}]}})");
  auto client = Client({rm.address()});
  auto one = client.GetAttempts("application_1_2");
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  ASSERT_EQ(one->size(), 1u);
  EXPECT_EQ((*one)[0].container_id, "container_1_0002_01_000001");
  EXPECT_EQ((*one)[0].node_http_address, "nm:8042");
  auto two = client.GetAttempts("application_1_3");
  ASSERT_TRUE(two.ok());
  ASSERT_EQ(two->size(), 2u);
  EXPECT_EQ((*two)[0].id, 1);  // in attempt order
  EXPECT_EQ((*two)[1].container_id, "c2");

  auto apps = client.ListApplications("TARN");
  ASSERT_TRUE(apps.ok()) << apps.status().ToString();
  ASSERT_EQ(apps->size(), 3u);
  EXPECT_EQ((*apps)[0].id, "application_1_3");  // newest first
  EXPECT_EQ((*apps)[2].id, "application_1_1");
  EXPECT_EQ(rm.Requests().back().query, "applicationTypes=TARN&user.name=alice");

  FakeRm empty;
  empty.Answer("GET /ws/v1/cluster/apps", 200, R"({"apps":null})");
  auto none = Client({empty.address()}).ListApplications();
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST(ResourceManagerClient, AnAttemptsRunningContainersWithTheirNodes) {
  FakeRm rm;
  // As Hadoop 3.5's RM answers (one attempt, appAttemptId absent: tarn names it itself).
  rm.Answer("GET /ws/v1/cluster/apps/application_1796191830682_0002/appattempts", 200,
            R"({"appAttempts":{"appAttempt":[{"id":1,"containerId":)"
            R"("container_1796191830682_0002_01_000001","nodeHttpAddress":"localhost:35457",)"
            R"("nodeId":"localhost:41859"}]}})");
  rm.Answer(
      "GET /ws/v1/cluster/apps/application_1796191830682_0002/appattempts/"
      "appattempt_1796191830682_0002_000001/containers",
      200,
      R"({"container":[{"containerId":"container_1796191830682_0002_01_000001",)"
      R"("assignedNodeId":"localhost:41859","containerState":"RUNNING",)"
      R"("nodeHttpAddress":"http://localhost:35457","nodeId":"localhost:41859"},)"
      R"({"containerId":"container_1796191830682_0002_01_000002",)"
      R"("assignedNodeId":"localhost:43299","nodeHttpAddress":"https://localhost:8044/"}]})");
  rm.Answer("GET /ws/v1/cluster/apps/application_1796191830682_0002", 200,
            R"({"app":{"id":"application_1796191830682_0002","state":"KILLED",)"
            R"("logAggregationStatus":"RUNNING"}})");
  auto client = Client({rm.address()});
  auto attempts = client.GetAttempts("application_1796191830682_0002");
  ASSERT_TRUE(attempts.ok()) << attempts.status().ToString();
  ASSERT_EQ(attempts->size(), 1u);
  EXPECT_EQ((*attempts)[0].attempt_id, "appattempt_1796191830682_0002_000001");
  auto containers = client.GetAttemptContainers("application_1796191830682_0002", (*attempts)[0]);
  ASSERT_TRUE(containers.ok()) << containers.status().ToString();
  ASSERT_EQ(containers->size(), 2u);
  EXPECT_EQ((*containers)[0].node_http_address, "localhost:35457");
  EXPECT_EQ((*containers)[0].state, "RUNNING");
  EXPECT_EQ((*containers)[1].node_id, "localhost:43299");  // from assignedNodeId
  EXPECT_EQ((*containers)[1].node_http_address, "localhost:8044");
  auto app = client.GetApplication("application_1796191830682_0002");
  ASSERT_TRUE(app.ok());
  EXPECT_EQ(app->log_aggregation_status, "RUNNING");
}

TEST(ResourceManagerClient, KillWaitsUntilTheApplicationIsDone) {
  FakeRm rm;
  rm.Answer("PUT /ws/v1/cluster/apps/application_1_5/state", 202, R"({"state":"RUNNING"})");
  const std::string path = "GET /ws/v1/cluster/apps/application_1_5";
  rm.Answer(path, 200, R"({"app":{"id":"application_1_5","state":"RUNNING"}})");
  rm.Answer(path, 200, R"({"app":{"id":"application_1_5","state":"RUNNING"}})");
  rm.Answer(path, 200,
            R"({"app":{"id":"application_1_5","state":"KILLED","finalStatus":"KILLED"}})");
  auto client = Client({rm.address()});
  auto r = client.Kill("application_1_5");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->state, "KILLED");
  auto requests = rm.Requests();
  EXPECT_EQ(requests[0].method, "PUT");
  EXPECT_EQ(Json::parse(requests[0].body)["state"], "KILLED");
  EXPECT_EQ(requests.size(), 4u);

  FakeRm stuck;
  stuck.Answer("PUT /ws/v1/cluster/apps/application_1_6/state", 202, "");
  stuck.Answer("GET /ws/v1/cluster/apps/application_1_6", 200,
               R"({"app":{"id":"application_1_6","state":"RUNNING"}})");
  auto timed_out = Client({stuck.address()}).Kill("application_1_6", /*wait_ms=*/300);
  EXPECT_EQ(timed_out.status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_NE(timed_out.status().message().find("still RUNNING"), std::string::npos);
}

TEST(ResourceManagerClient, FollowReportsEachChangeUntilDone) {
  FakeRm rm;
  const std::string path = "GET /ws/v1/cluster/apps/application_1_8";
  for (const char* state : {"ACCEPTED", "ACCEPTED", "RUNNING", "RUNNING", "FINISHED"}) {
    rm.Answer(path, 200,
              std::string(R"({"app":{"id":"application_1_8","state":")") + state +
                  R"(","finalStatus":")" +
                  (std::string(state) == "FINISHED" ? "FAILED" : "UNDEFINED") + R"("}})");
  }
  auto client = Client({rm.address()});
  std::vector<std::string> seen;
  auto r = client.Follow("application_1_8", 10, 60'000,
                         [&](const AppReport& a) { seen.push_back(a.state); });
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->final_status, "FAILED");
  EXPECT_EQ(seen, (std::vector<std::string>{"ACCEPTED", "RUNNING", "FINISHED"}));
}

TEST(ResourceManagerClient, ContainerLogsFromTheNodeManager) {
  FakeRm nm;
  const std::string cid = "container_1_0002_01_000001";
  nm.Answer("GET /ws/v1/node/containers/" + cid + "/logs", 200,
            R"({"containerLogsInfo":{"containerLogInfo":[{"fileName":"stderr","fileSize":"0"},)"
            R"({"fileName":"stdout","fileSize":"6"}],"logAggregationType":"LOCAL"}})");
  nm.Answer(
      "GET /ws/v1/node/containerlogs/" + cid + "/stdout", 200,
      "Container: x\nLogType:stdout\nLogLength:6\nLogContents:\nhello\n\nEnd of LogType:stdout.\n");
  auto client = Client({"unused:1"});
  auto files = client.ContainerLogFiles(nm.address(), cid);
  ASSERT_TRUE(files.ok()) << files.status().ToString();
  ASSERT_EQ(files->size(), 2u);
  EXPECT_EQ((*files)[1].name, "stdout");
  EXPECT_EQ((*files)[1].size, 6);
  auto text = client.ContainerLog(nm.address(), cid, "stdout");
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_EQ(*text, "hello\n");
  EXPECT_EQ(client.ContainerLog(nm.address(), cid, "gone").status().code(), StatusCode::kNotFound);

  // An older NodeManager lists a JSON array of groups.
  FakeRm old;
  old.Answer("GET /ws/v1/node/containers/" + cid + "/logs", 200,
             R"([{"containerLogInfo":[{"fileName":"syslog","fileSize":3}]}])");
  auto old_files = client.ContainerLogFiles(old.address(), cid);
  ASSERT_TRUE(old_files.ok());
  ASSERT_EQ(old_files->size(), 1u);
  EXPECT_EQ((*old_files)[0].name, "syslog");
}

}  // namespace
}  // namespace tarn::cluster::yarn
