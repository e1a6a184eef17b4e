// Malformed messages from an authenticated peer, sent over real TCP
// connections to a running parameter server and to a running coordinator:
// each gets an error answer naming what was wrong, and the node then still
// answers good messages.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <condition_variable>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

#include "net/wire.h"
#include "runtime/job.h"
#include "runtime/messages.h"
#include "runtime/node.h"
#include "runtime/node_harness.h"
#include "runtime/protocol.h"
#include "test_util.h"
#include "train/setup.h"

namespace tarn::runtime {
namespace {

constexpr const char* kSecret = "malformed-messages-test-secret";

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The error a call got; fails the test when the call succeeded.
std::string ErrorOf(net::RpcClient& client, uint16_t type, const std::string& payload) {
  auto r = client.Call(type, payload, net::Deadline::InMs(20000));
  EXPECT_FALSE(r.ok()) << "message type " << type << " with " << payload.substr(0, 80)
                       << " was accepted";
  return r.ok() ? "" : r.status().message();
}

TEST(MalformedMessagesTest, AParameterServerAnswersEachWithAnErrorAndKeepsServing) {
  testing::TempDir dir;
  ParameterServerThread ps(kSecret);
  auto dialed = ps.Dial();
  ASSERT_TRUE(dialed.ok()) << dialed.status().message();
  net::RpcClient& client = **dialed;

  // Before it is configured: malformed control messages and pushes.
  EXPECT_TRUE(Has(ErrorOf(client, kConfigure, "{not json"), "kConfigure: not valid JSON"));
  EXPECT_TRUE(Has(ErrorOf(client, kConfigure, "[1,2]"), "kConfigure: must be a JSON object"));
  EXPECT_TRUE(Has(ErrorOf(client, kReset, R"({"term":"1"})"),
                  "kReset: field 'term' must be an integer >= 0, got \"1\""));
  EXPECT_TRUE(Has(ErrorOf(client, kStartEpoch, R"({"term":0,"epoch":0,"slots":"all"})"),
                  "kStartEpoch: field 'slots' must be a list"));
  EXPECT_TRUE(
      Has(ErrorOf(client, kSlotDone, R"({"term":0})"), "kSlotDone: field 'slot' is missing"));
  EXPECT_TRUE(Has(ErrorOf(client, kCheckpoint, R"({"epoch":1,"path":5})"),
                  "kCheckpoint: field 'path' must be a string, got 5"));
  EXPECT_TRUE(Has(ErrorOf(client, 99, "{}"), "does not take message type 99"));
  const std::string deep(100000, '[');
  EXPECT_TRUE(
      Has(ErrorOf(client, kReset, "{\"term\":" + deep + std::string(deep.size(), ']') + "}"),
          "kReset: nested deeper than 64 levels"));
  EXPECT_TRUE(Has(ErrorOf(client, kPull, "abc"), "kPull: "));
  EXPECT_TRUE(
      Has(ErrorOf(client, kPush, msg::Push::Encode(-1, 0, 0, 1.0, {})), "kPush before kConfigure"));

  // Configure it for real (the job as the coordinator sends it) ...
  const JobConfig job = SmallJob(dir.path());
  auto setup = train::TrainSetup::FromTrainParams(job.train_params, job.algorithm, job.inputs);
  ASSERT_TRUE(setup.ok()) << setup.status().message();
  const size_t count = setup->spec.ParameterCount();
  msg::Configure configure;
  configure.term = 1;
  configure.begin = 0;
  configure.end = count;
  configure.job = job.ToJson();
  configure.init_seed = 42;
  Json bad = configure.ToJson();
  bad["end"] = "x";
  EXPECT_TRUE(Has(ErrorOf(client, kConfigure, bad.dump()),
                  "kConfigure: field 'end' must be an integer > begin, got \"x\""));
  bad["end"] = count + 1;
  EXPECT_TRUE(Has(ErrorOf(client, kConfigure, bad.dump()), "field 'end' must be at most"));
  bad = configure.ToJson();
  bad.erase("job");
  EXPECT_TRUE(Has(ErrorOf(client, kConfigure, bad.dump()), "kConfigure: field 'job' is missing"));
  auto configured = client.Call(kConfigure, configure.ToJson().dump(), net::Deadline::InMs(20000));
  ASSERT_TRUE(configured.ok()) << configured.status().message();
  auto started = client.Call(kStartEpoch, msg::StartEpoch{1, 0, {0}}.ToJson().dump(),
                             net::Deadline::InMs(20000));
  ASSERT_TRUE(started.ok()) << started.status().message();

  // ... then malformed pushes: short, oversized, truncated, with trailing bytes.
  const std::vector<float> grad(count, 0.01f);
  const std::string push = msg::Push::Encode(1, 0, 0, 16.0, grad);
  EXPECT_TRUE(Has(ErrorOf(client, kPush, msg::Push::Encode(1, 0, 0, 16.0, {grad.data(), 2})),
                  "kPush: gradient holds 2 values, the slice " + std::to_string(count)));
  std::vector<float> longer(count + 5, 0.0f);
  EXPECT_TRUE(Has(ErrorOf(client, kPush, msg::Push::Encode(1, 0, 0, 16.0, longer)),
                  "exceeds the limit of " + std::to_string(count)));
  for (size_t cut : {size_t{0}, size_t{5}, size_t{20}, size_t{31}, push.size() - 1}) {
    EXPECT_TRUE(Has(ErrorOf(client, kPush, push.substr(0, cut)), "kPush: ")) << "cut " << cut;
  }
  EXPECT_TRUE(Has(ErrorOf(client, kPush, push + "!"), "kPush: 1 unexpected bytes at the end"));
  EXPECT_TRUE(Has(ErrorOf(client, kPush, msg::Push::Encode(1, 0, 0, -1.0, grad)),
                  "kPush: weight must be a finite number >= 0"));

  // Still serving: a good push closes the step (one slot trains) and is answered.
  auto answered = client.Call(kPush, push, net::Deadline::InMs(20000));
  ASSERT_TRUE(answered.ok()) << answered.status().message();
  msg::ParamsAnswer answer;
  ASSERT_TRUE(msg::ParamsAnswer::Decode(*answered, count, &answer).ok());
  EXPECT_EQ(answer.status, msg::ParamsAnswer::kApplied);
  EXPECT_EQ(answer.step, 1);
  auto params = client.Call(kGetParams, "{}", net::Deadline::InMs(20000));
  ASSERT_TRUE(params.ok()) << params.status().message();
  auto values = msg::Params::Decode(*params, count);
  ASSERT_TRUE(values.ok()) << values.status().message();
  EXPECT_EQ(*values, answer.params);
  const Status& ended = ps.Join();
  EXPECT_TRUE(ended.ok()) << ended.message();
}

// The node ids and roles the coordinator launched, and its address, from
// tmp/cluster.json (written once its server is up).
struct Cluster {
  std::string address;
  std::map<std::string, int> node_of_role;
};

Cluster WaitForCluster(const std::string& path) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    std::ifstream in(path);
    Json j = Json::parse(in, nullptr, false);
    if (j.is_object() && j.contains("nodes")) {
      Cluster c;
      c.address = j["coordinator"]["address"].get<std::string>();
      for (const auto& n : j["nodes"]) {
        c.node_of_role[n["role"].get<std::string>()] = n["node"].get<int>();
      }
      return c;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return {};
}

TEST(MalformedMessagesTest, ACoordinatorAnswersEachWithAnErrorAndKeepsServing) {
  testing::TempDir dir;
  // The launched nodes stand by until the test ends them (the test speaks for them).
  const std::string stop = dir.File("stop");
  const std::string node = dir.Write(
      "node.sh", "#!/bin/sh\nwhile [ ! -e '" + stop + "' ]; do sleep 0.05; done\nexit 1\n");
  ASSERT_EQ(::chmod(node.c_str(), 0755), 0);
  JobConfig job = SmallJob(dir.path());
  job.heartbeat_ms = 500;
  // The nodes end when the stop file appears; the coordinator then returns.
  NodeThread coordinator([&] { return RunCoordinator(job, kSecret, node); },
                         [&] { dir.Write("stop", ""); });
  const Cluster cluster = WaitForCluster(job.cluster_json);
  ASSERT_FALSE(cluster.address.empty()) << "no " << job.cluster_json;
  ASSERT_TRUE(cluster.node_of_role.count("ps"));
  const int ps = cluster.node_of_role.at("ps");
  const int worker = cluster.node_of_role.at("worker");
  auto dialed =
      DialRpc(cluster.address, kSecret, net::ConnectionOptions{}, 1000, net::Deadline::InMs(20000));
  ASSERT_TRUE(dialed.ok()) << dialed.status().message();
  net::RpcClient& client = **dialed;

  EXPECT_TRUE(Has(ErrorOf(client, 99, "{}"), "the coordinator does not take message type 99"));
  EXPECT_TRUE(Has(ErrorOf(client, kRegister, "\x01\x02garbage"), "kRegister: not valid JSON"));
  msg::Register reg{"ps", 0, ps, 4321, "127.0.0.1:1"};
  Json bad = reg.ToJson();
  bad["index"] = "0";
  EXPECT_TRUE(Has(ErrorOf(client, kRegister, bad.dump()),
                  "kRegister: field 'index' must be an integer >= 0, got \"0\""));
  bad = reg.ToJson();
  bad.erase("pid");
  EXPECT_TRUE(Has(ErrorOf(client, kRegister, bad.dump()), "kRegister: field 'pid' is missing"));
  EXPECT_TRUE(Has(ErrorOf(client, kHeartbeat, msg::Heartbeat{ps, 0, 0, -5}.ToJson().dump()),
                  "kHeartbeat: field 'position' must be an integer >= 0, got -5"));
  msg::ValidDoneReport valid;
  valid.origin = {0, 0, 0, 1};
  msg::Report report = msg::Report::Of(valid);
  report.node = worker;
  Json bad_report = report.ToJson();
  bad_report["loss"] = "x";
  EXPECT_TRUE(Has(ErrorOf(client, kReport, bad_report.dump()),
                  "kReport valid_done: field 'loss' must be a number, got \"x\""));
  bad_report["loss"] = 1.0;
  bad_report["pos"] = Json(std::vector<int>(msg::kMaxReportBins + 1, 0));  // a huge histogram
  EXPECT_TRUE(Has(ErrorOf(client, kReport, bad_report.dump()),
                  "kReport valid_done: field 'pos' must be a list of at most"));
  EXPECT_TRUE(Has(ErrorOf(client, kReport, R"({"kind":"done","node":1,"seq":0})"),
                  "kReport: field 'kind' must be one of"));
  // A well-formed message for a node that was never launched is refused too.
  EXPECT_TRUE(Has(ErrorOf(client, kHeartbeat, msg::Heartbeat{999, 0, 0, 0}.ToJson().dump()),
                  "unknown or retired node 999"));

  // Still serving: the parameter server's registration and heartbeat are answered.
  auto registered = msg::Call<msg::RegisterReply>(client, reg, net::Deadline::InMs(20000));
  ASSERT_TRUE(registered.ok()) << registered.status().message();
  EXPECT_EQ(registered->heartbeat_ms, job.heartbeat_ms);
  EXPECT_GT(registered->generation, 0);
  auto beat = msg::Call<msg::HeartbeatReply>(client, msg::Heartbeat{ps, 0, 0, 0},
                                             net::Deadline::InMs(20000));
  ASSERT_TRUE(beat.ok()) << beat.status().message();
  EXPECT_FALSE(beat->stop);

  // The nodes end; the coordinator, alive to the end, reports the worker that never came.
  const Status& result = coordinator.Join();
  ASSERT_FALSE(result.ok());
  EXPECT_TRUE(Has(result.message(), "failed to start")) << result.message();
}

}  // namespace
}  // namespace tarn::runtime
