// The YARN backend against a fake ResourceManager and NodeManager speaking
// Hadoop IPC with DIGEST-MD5 (fake_hadoop_server.h): the ask table, container
// starts with NMTokens, exits, kills, surplus releases, resync and unregister.
#include "cluster/yarn/yarn_backend.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

#include "cluster/yarn/credentials.h"
#include "cluster/yarn/protobuf_wire.h"
#include "common/files.h"
#include "common/strings.h"
#include "fake_hadoop_server.h"
#include "test_util.h"

namespace tarn::cluster::yarn {
namespace {

using testing::FakeCall;
using testing::FakeHadoopServer;
using testing::FakeReply;

constexpr int64_t kClusterTs = 1700000000123;

ApplicationAttemptId Attempt(int n) {
  return ApplicationAttemptId{ApplicationId{7, kClusterTs}, n};
}

Token AmRmToken() {
  ProtoWriter id;
  id.Bytes(1, EncodeApplicationAttemptId(Attempt(1)));
  id.Int(2, 42);
  return Token{id.Take(), "amrm-password", kAmRmTokenKind, ""};
}

Token NmTokenFor(const NodeId& node) {
  ProtoWriter id;
  id.Bytes(1, EncodeApplicationAttemptId(Attempt(1)));
  return Token{id.Take() + node.ToString(), "nm-password", kNmTokenKind, node.ToString()};
}

// Waits (bounded, to fail rather than hang) until `done` holds.
template <typename F>
bool WaitFor(F done) {
  for (int i = 0; i < 1000; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return done();
}

// The ResourceManager and one NodeManager of a one-node cluster.
struct FakeYarn {
  std::mutex mu;
  std::condition_variable changed;
  // RM state
  std::map<int32_t, int32_t> asks;  // priority -> outstanding count, as last sent
  std::map<int32_t, Resource> shapes;
  std::vector<std::pair<int32_t, int32_t>> ask_log;  // (priority, count) as received
  std::vector<ContainerId> released;
  std::deque<ContainerStatus> completions;
  std::vector<Container> previous;
  int registrations = 0;
  int allocates = 0;
  int finishes = 0;
  bool resync_next = false;
  bool not_registered_next = false;
  bool grant = true;
  int extra_containers = 0;
  int64_t next_container = 2;
  bool nm_token_sent = false;
  FinishRequest finish;
  // NM state
  NodeId node;
  std::map<ContainerId, std::vector<std::string>> commands;
  std::map<ContainerId, std::map<std::string, std::string>> environments;
  std::map<ContainerId, std::vector<std::string>> resources;
  std::vector<ContainerId> stopped;

  FakeReply Rm(const FakeCall& call) {
    std::lock_guard<std::mutex> lock(mu);
    if (call.method == "registerApplicationMaster") {
      ++registrations;
      ProtoWriter w;
      w.Bytes(1, EncodeResource(Resource{4096, 8, {}}));
      for (const auto& c : previous) w.Bytes(4, EncodeContainer(c));
      w.Bytes(5, "default");
      return FakeReply{w.Take()};
    }
    if (call.method == "finishApplicationMaster") {
      auto m = ProtoMessage::Parse(call.request, "finish");
      finish.diagnostics = m->String(1);
      finish.status = static_cast<FinalApplicationStatus>(m->Int32(3));
      ++finishes;
      ProtoWriter w;
      w.Bool(1, finishes >= 2);  // the first call is not yet final, as a busy RM may answer
      return FakeReply{w.Take()};
    }
    if (call.method != "allocate") return FakeReply{"", "java.io.IOException", "unknown method"};
    if (not_registered_next) {
      not_registered_next = false;
      return FakeReply{"", kNotRegisteredException, "Application Master is not registered"};
    }
    ++allocates;
    auto m = ProtoMessage::Parse(call.request, "allocate");
    for (auto a : m->RepeatedBytes(1)) {
      auto ask = ProtoMessage::Parse(a, "ask");
      auto priority = ProtoMessage::Parse(ask->Bytes(1), "priority");
      const int32_t p = priority->Int32(1);
      asks[p] = ask->Int32(4);
      shapes[p] = *DecodeResource(ask->Bytes(3));
      ask_log.emplace_back(p, asks[p]);
      EXPECT_EQ(ask->String(2), "*");
    }
    for (auto r : m->RepeatedBytes(2)) {
      auto id = DecodeContainerId(r);
      released.push_back(*id);
      completions.push_back(ContainerStatus{*id, ContainerState::kComplete, "released", -100});
    }
    ProtoWriter w;
    if (resync_next) {
      resync_next = false;
      w.Int(1, 1);  // AM_RESYNC
    }
    w.Int(2, m->Int32(4) + 1);
    if (grant) {
      for (auto& [p, n] : asks) {
        for (; n > 0; --n) w.Bytes(3, EncodeContainer(NewContainer(p)));
        for (; extra_containers > 0; --extra_containers) {
          w.Bytes(3, EncodeContainer(NewContainer(p)));
        }
      }
    }
    while (!completions.empty()) {
      w.Bytes(4, EncodeContainerStatus(completions.front()));
      completions.pop_front();
    }
    if (!nm_token_sent && grant) {
      ProtoWriter t;
      ProtoWriter n;
      n.Bytes(1, node.host);
      n.Int(2, node.port);
      t.Message(1, n);
      t.Bytes(2, EncodeToken(NmTokenFor(node)));
      w.Message(9, t);
      nm_token_sent = true;
    }
    changed.notify_all();
    return FakeReply{w.Take()};
  }

  Container NewContainer(int32_t priority) {
    Container c;
    c.id = ContainerId{Attempt(1), next_container++};
    c.node = node;
    c.resource = shapes[priority];
    c.priority = priority;
    // The container token's identifier carries the id, so the fake NM can read it back.
    c.container_token = Token{EncodeContainerId(c.id), "ct", "ContainerToken", node.ToString()};
    return c;
  }

  FakeReply Nm(const FakeCall& call) {
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_EQ(call.protocol, kContainerManagementProtocol);
    if (call.method == "startContainers") {
      auto m = ProtoMessage::Parse(call.request, "start");
      ProtoWriter w;
      for (auto r : m->RepeatedBytes(1)) {
        auto request = ProtoMessage::Parse(r, "StartContainerRequestProto");
        auto token = DecodeToken(request->Bytes(2));
        auto id = DecodeContainerId(token->identifier);
        auto context = ProtoMessage::Parse(request->Bytes(1), "context");
        for (auto c : context->RepeatedBytes(5)) commands[*id].push_back(std::string(c));
        for (auto e : context->RepeatedBytes(4)) {
          auto kv = ProtoMessage::Parse(e, "env");
          environments[*id][kv->String(1)] = kv->String(2);
        }
        for (auto lr : context->RepeatedBytes(1)) {
          auto kv = ProtoMessage::Parse(lr, "resource");
          auto value = ProtoMessage::Parse(kv->Bytes(2), "LocalResourceProto");
          auto url = ProtoMessage::Parse(value->Bytes(1), "URLProto");
          resources[*id].push_back(kv->String(1) + "=" + url->String(1) + "://" + url->String(2) +
                                   ":" + std::to_string(url->Int32(3)) + url->String(4) + " " +
                                   std::to_string(value->Int64(2)) + " " +
                                   std::to_string(value->Int64(3)));
        }
        w.Bytes(2, EncodeContainerId(*id));
      }
      changed.notify_all();
      return FakeReply{w.Take()};
    }
    if (call.method == "stopContainers") {
      auto m = ProtoMessage::Parse(call.request, "stop");
      ProtoWriter w;
      for (auto r : m->RepeatedBytes(1)) {
        auto id = DecodeContainerId(r);
        stopped.push_back(*id);
        completions.push_back(ContainerStatus{*id, ContainerState::kComplete,
                                              "Container killed by the ApplicationMaster.", -105});
        w.Bytes(1, r);
      }
      return FakeReply{w.Take()};
    }
    if (call.method == "getContainerStatuses") {
      auto m = ProtoMessage::Parse(call.request, "statuses");
      ProtoWriter w;
      for (auto r : m->RepeatedBytes(1)) {
        auto id = DecodeContainerId(r);
        w.Bytes(1, EncodeContainerStatus(ContainerStatus{*id, ContainerState::kRunning, "", -1000,
                                                         ContainerSubState::kRunning}));
      }
      return FakeReply{w.Take()};
    }
    return FakeReply{"", "java.io.IOException", "unknown method " + call.method};
  }

  // Completes a running container as its process exiting with `code`.
  void Exit(const ContainerId& id, int code) {
    std::lock_guard<std::mutex> lock(mu);
    completions.push_back(ContainerStatus{id, ContainerState::kComplete, "", code});
  }
};

class YarnBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    rm_ = std::make_unique<FakeHadoopServer>(AmRmToken(),
                                             [this](const FakeCall& c) { return yarn_.Rm(c); });
    // The NM's token names its address, known once it listens; the fake reads its token
    // per connection, so it is set right after.
    nm_ = std::make_unique<FakeHadoopServer>(Token{},
                                             [this](const FakeCall& c) { return yarn_.Nm(c); });
    yarn_.node = NodeId{"127.0.0.1", nm_->port()};
    nm_->SetToken(NmTokenFor(yarn_.node));

    YarnBackendOptions o;
    o.am.scheduler_host = "127.0.0.1";
    o.am.scheduler_port = rm_->port();
    o.am.amrm_token = AmRmToken();
    o.heartbeat_ms = 20;
    o.local_resources["tarn"] =
        LocalResource{"hdfs://nn.example:8020/user/u/.tarn/app_1/tarn", 12345, 1700000000999};
    o.env["TARN_JOB"] = "job-1";
    o.raw_env["LD_LIBRARY_PATH"] = "{{PWD}}";
    backend_ = std::make_unique<YarnBackend>(o);
    backend_->OnExit([this](const TaskExit& e) {
      std::lock_guard<std::mutex> lock(exits_mu_);
      exits_[e.task] = e;
      exit_threads_[e.task] = std::this_thread::get_id();
    });
  }

  void TearDown() override {
    backend_.reset();
    nm_.reset();
    rm_.reset();
  }

  std::optional<TaskExit> ExitOf(int64_t task) {
    std::lock_guard<std::mutex> lock(exits_mu_);
    auto it = exits_.find(task);
    if (it == exits_.end()) return std::nullopt;
    return it->second;
  }

  ContainerId ContainerOf(int64_t task) {
    auto id = ContainerId::Parse(backend_->Where(task));
    EXPECT_TRUE(id.ok()) << backend_->Where(task);
    return id.ok() ? *id : ContainerId{};
  }

  bool Started(int64_t task) {
    if (!ContainerId::Parse(backend_->Where(task)).ok()) return false;
    std::lock_guard<std::mutex> lock(yarn_.mu);
    return yarn_.commands.count(ContainerOf(task)) > 0;
  }

  LaunchSpec Spec(const std::string& role, int index, int64_t memory = 512) {
    LaunchSpec s;
    s.role = role;
    s.index = index;
    s.argv = {"/build/bin/tarn", "node", "--role", role, "--note", "it's $HOME"};
    s.env["TARN_ROLE"] = role;
    s.resources.memory_mb = memory;
    s.resources.vcores = 1;
    return s;
  }

  FakeYarn yarn_;
  std::unique_ptr<FakeHadoopServer> rm_, nm_;
  std::unique_ptr<YarnBackend> backend_;
  std::mutex exits_mu_;
  std::map<int64_t, TaskExit> exits_;
  std::map<int64_t, std::thread::id> exit_threads_;
};

TEST_F(YarnBackendTest, LaunchesTasksInContainersAndReportsTheirExits) {
  // Launched before the heartbeat starts, the three asks go out in the first allocate.
  auto ps = backend_->Launch(Spec("ps", 0, 1024));
  auto w0 = backend_->Launch(Spec("worker", 0));
  auto w1 = backend_->Launch(Spec("worker", 1));
  ASSERT_TRUE(ps.ok() && w0.ok() && w1.ok());
  auto reg = backend_->Register(RegisterRequest{"am-host", 0, ""});
  ASSERT_TRUE(reg.ok()) << reg.status().ToString();
  EXPECT_EQ(reg->maximum_capability.memory_mb, 4096);
  EXPECT_EQ(backend_->attempt(), Attempt(1));
  ASSERT_TRUE(WaitFor([&] { return Started(*ps) && Started(*w0) && Started(*w1); }));
  {
    std::lock_guard<std::mutex> lock(yarn_.mu);
    // One priority per role and shape; absolute counts.
    EXPECT_EQ(yarn_.shapes[1].memory_mb, 1024);
    EXPECT_EQ(yarn_.shapes[2].memory_mb, 512);
    EXPECT_EQ(yarn_.shapes[2].vcores, 1);
    bool saw_two_workers = false;
    for (auto [p, n] : yarn_.ask_log) saw_two_workers |= p == 2 && n == 2;
    EXPECT_TRUE(saw_two_workers);
    const ContainerId c = ContainerOf(*w1);
    ASSERT_EQ(yarn_.commands[c].size(), 1u);
    // argv[0] is the localized binary; quoting survives the launch script's double quotes.
    EXPECT_EQ(yarn_.commands[c][0],
              "./tarn node --role worker --note 'it'\\\\''s \\$HOME' "
              "1><LOG_DIR>/stdout 2><LOG_DIR>/stderr");
    EXPECT_EQ(yarn_.environments[c]["TARN_ROLE"], "worker");
    EXPECT_EQ(yarn_.environments[c]["TARN_JOB"], "job-1");
    EXPECT_EQ(yarn_.environments[c]["LD_LIBRARY_PATH"], "{{PWD}}");  // for the NM to expand
    ASSERT_EQ(yarn_.resources[c].size(), 1u);
    EXPECT_EQ(yarn_.resources[c][0],
              "tarn=hdfs://nn.example:8020/user/u/.tarn/app_1/tarn 12345 1700000000999");
  }
  EXPECT_TRUE(StartsWith(backend_->Where(*ps), "container_1700000000123_0007_01_"));
  ASSERT_TRUE(WaitFor([&] { return backend_->IsRunning(*w1); }));
  auto status = backend_->QueryContainer(*w1);
  ASSERT_TRUE(status.ok()) << status.status().ToString();
  EXPECT_EQ(status->id, ContainerOf(*w1));
  EXPECT_EQ(status->state, ContainerState::kRunning);
  EXPECT_EQ(status->sub_state, ContainerSubState::kRunning);

  yarn_.Exit(ContainerOf(*w0), 0);
  yarn_.Exit(ContainerOf(*ps), 3);
  ASSERT_TRUE(WaitFor([&] { return ExitOf(*w0) && ExitOf(*ps); }));
  EXPECT_EQ(ExitOf(*w0)->exit_code, 0);
  EXPECT_EQ(ExitOf(*ps)->exit_code, 3);
  EXPECT_NE(ExitOf(*ps)->describe.find("(ps 0)"), std::string::npos);
  EXPECT_NE(ExitOf(*ps)->describe.find(ContainerOf(*ps).ToString()), std::string::npos);

  // A running task killed: stopContainers, then YARN's KILLED_BY_APPMASTER completion.
  ASSERT_TRUE(backend_->Kill(*w1).ok());
  ASSERT_TRUE(WaitFor([&] { return ExitOf(*w1).has_value(); }));
  EXPECT_EQ(ExitOf(*w1)->exit_code, 137);
  EXPECT_NE(ExitOf(*w1)->describe.find("KILLED_BY_APPMASTER"), std::string::npos);
  {
    std::lock_guard<std::mutex> lock(yarn_.mu);
    ASSERT_EQ(yarn_.stopped.size(), 1u);
    EXPECT_EQ(yarn_.stopped[0], ContainerOf(*w1));
  }
  EXPECT_TRUE(nm_->failures().empty());
  EXPECT_TRUE(rm_->failures().empty());
  EXPECT_EQ(nm_->authentications(), 1);  // one cached connection with the NMToken

  ASSERT_TRUE(backend_->Unregister(FinalApplicationStatus::kSucceeded, "all done").ok());
  std::lock_guard<std::mutex> lock(yarn_.mu);
  EXPECT_EQ(yarn_.finishes, 2);  // repeated until isUnregistered
  EXPECT_EQ(yarn_.finish.status, FinalApplicationStatus::kSucceeded);
  EXPECT_EQ(yarn_.finish.diagnostics, "all done");
}

TEST_F(YarnBackendTest, PendingTaskKilledLowersTheAskAndExitsAtOnce) {
  yarn_.grant = false;
  ASSERT_TRUE(backend_->Register(RegisterRequest{"am-host", 0, ""}).ok());
  auto a = backend_->Launch(Spec("worker", 0));
  auto b = backend_->Launch(Spec("worker", 1));
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(WaitFor([&] {
    std::lock_guard<std::mutex> lock(yarn_.mu);
    return yarn_.asks[1] == 2;
  }));
  // Where it waits says what it asked.
  EXPECT_EQ(backend_->Where(*a).rfind("pending container: ", 0), 0u) << backend_->Where(*a);
  EXPECT_NE(backend_->Where(*a).find("512 MB, 1 vcores asked"), std::string::npos);
  ASSERT_TRUE(backend_->Kill(*a).ok());
  ASSERT_TRUE(WaitFor([&] { return ExitOf(*a).has_value(); }));  // without YARN's help
  EXPECT_EQ(ExitOf(*a)->exit_code, 137);
  EXPECT_NE(ExitOf(*a)->describe.find("before a container was allocated"), std::string::npos);
  {
    std::lock_guard<std::mutex> lock(exits_mu_);
    EXPECT_NE(exit_threads_[*a], std::this_thread::get_id());  // on the backend's thread
  }
  ASSERT_TRUE(WaitFor([&] {
    std::lock_guard<std::mutex> lock(yarn_.mu);
    return yarn_.asks[1] == 1;
  }));
  // Now the cluster grants: the remaining task gets the one container.
  {
    std::lock_guard<std::mutex> lock(yarn_.mu);
    yarn_.grant = true;
  }
  ASSERT_TRUE(WaitFor([&] { return Started(*b); }));
  std::lock_guard<std::mutex> lock(yarn_.mu);
  EXPECT_EQ(yarn_.commands.size(), 1u);
}

TEST_F(YarnBackendTest, SurplusContainersAreReleased) {
  {
    std::lock_guard<std::mutex> lock(yarn_.mu);
    yarn_.extra_containers = 2;
  }
  ASSERT_TRUE(backend_->Register(RegisterRequest{"am-host", 0, ""}).ok());
  auto a = backend_->Launch(Spec("worker", 0));
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(WaitFor([&] {
    std::lock_guard<std::mutex> lock(yarn_.mu);
    return yarn_.released.size() == 2;
  }));
  ASSERT_TRUE(WaitFor([&] { return Started(*a); }));
  EXPECT_EQ(backend_->stats().released_surplus, 2);
  // The released containers' completions do not turn into task exits.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(ExitOf(*a).has_value());
}

TEST_F(YarnBackendTest, ResyncAndNotRegisteredReRegisterAndResendAsks) {
  yarn_.grant = false;
  ASSERT_TRUE(backend_->Register(RegisterRequest{"am-host", 0, ""}).ok());
  ASSERT_TRUE(backend_->Launch(Spec("worker", 0)).ok());
  ASSERT_TRUE(WaitFor([&] {
    std::lock_guard<std::mutex> lock(yarn_.mu);
    return yarn_.asks[1] == 1;
  }));
  {
    std::lock_guard<std::mutex> lock(yarn_.mu);
    yarn_.asks.clear();
    yarn_.resync_next = true;
  }
  ASSERT_TRUE(WaitFor([&] {
    std::lock_guard<std::mutex> lock(yarn_.mu);
    return yarn_.registrations == 2 && yarn_.asks[1] == 1;
  }));
  {
    std::lock_guard<std::mutex> lock(yarn_.mu);
    yarn_.asks.clear();
    yarn_.not_registered_next = true;
  }
  ASSERT_TRUE(WaitFor([&] {
    std::lock_guard<std::mutex> lock(yarn_.mu);
    return yarn_.registrations == 3 && yarn_.asks[1] == 1;
  }));
  EXPECT_EQ(backend_->stats().reregistrations, 2);
}

TEST_F(YarnBackendTest, ContainersOfAnEarlierAttemptCanBeAdopted) {
  Container old;
  old.id = ContainerId{Attempt(1), 5};
  old.node = NodeId{"127.0.0.1", 1};
  old.priority = 2;
  yarn_.previous.push_back(old);
  ASSERT_TRUE(backend_->Register(RegisterRequest{"am-host", 0, ""}).ok());
  ASSERT_EQ(backend_->PreviousContainers().size(), 1u);
  const std::string name = old.id.ToString();
  EXPECT_EQ(name, "container_1700000000123_0007_01_000005");
  auto task = backend_->Adopt(name, "ps", 0);
  ASSERT_TRUE(task.ok()) << task.status().ToString();
  EXPECT_EQ(backend_->Where(*task), name);
  EXPECT_FALSE(backend_->Adopt(name, "ps", 0).ok());
  EXPECT_FALSE(backend_->Adopt("container_1700000000123_0008_01_000002", "ps", 1).ok());
  yarn_.Exit(old.id, 0);
  ASSERT_TRUE(WaitFor([&] { return ExitOf(*task).has_value(); }));
  EXPECT_EQ(ExitOf(*task)->exit_code, 0);

  // One that ended while no attempt ran: its exit is the one YARN reported.
  yarn_.Exit(ContainerId{Attempt(1), 9}, 3);
  const int seen = backend_->stats().heartbeats;
  ASSERT_TRUE(WaitFor([&] { return backend_->stats().heartbeats > seen + 2; }));
  auto ended = backend_->Adopt("container_1700000000123_0007_01_000009", "ps", 1);
  ASSERT_TRUE(ended.ok()) << ended.status().ToString();
  ASSERT_TRUE(WaitFor([&] { return ExitOf(*ended).has_value(); }));
  EXPECT_EQ(ExitOf(*ended)->exit_code, 3);
  EXPECT_NE(ExitOf(*ended)->describe.find("while no ApplicationMaster ran"), std::string::npos)
      << ExitOf(*ended)->describe;
  // One that YARN reports nothing of counts as lost after a few heartbeats.
  auto lost = backend_->Adopt("container_1700000000123_0007_01_000010", "ps", 2);
  ASSERT_TRUE(lost.ok());
  ASSERT_TRUE(backend_->Kill(*lost).ok());  // not running: no stopContainers, its report ends it
  ASSERT_TRUE(WaitFor([&] { return ExitOf(*lost).has_value(); }));
  EXPECT_EQ(ExitOf(*lost)->exit_code, 1);
  EXPECT_NE(ExitOf(*lost)->describe.find("lost"), std::string::npos) << ExitOf(*lost)->describe;
}

TEST_F(YarnBackendTest, RequestsBeyondTheLargestContainerAreRefused) {
  ASSERT_TRUE(backend_->Register(RegisterRequest{"am-host", 0, ""}).ok());
  auto big = backend_->Launch(Spec("ps", 0, 8192));
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.status().message().find("yarn.scheduler.maximum-allocation-mb"), std::string::npos);
  LaunchSpec gpu = Spec("worker", 0);
  gpu.resources.gpus = 1;
  auto g = backend_->Launch(gpu);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("yarn.io/gpu"), std::string::npos);
}

TEST_F(YarnBackendTest, ShutdownStopsRunningTasksAndWaitsForTheirExits) {
  ASSERT_TRUE(backend_->Register(RegisterRequest{"am-host", 0, ""}).ok());
  auto a = backend_->Launch(Spec("worker", 0));
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(WaitFor([&] { return Started(*a); }));
  {
    std::lock_guard<std::mutex> lock(yarn_.mu);
    yarn_.grant = false;
  }
  auto b = backend_->Launch(Spec("worker", 1));
  ASSERT_TRUE(b.ok());
  backend_->Shutdown();
  ASSERT_TRUE(ExitOf(*a).has_value());
  ASSERT_TRUE(ExitOf(*b).has_value());
  EXPECT_NE(ExitOf(*a)->describe.find("KILLED_BY_APPMASTER"), std::string::npos);
  EXPECT_NE(ExitOf(*b)->describe.find("before a container was allocated"), std::string::npos);
}

TEST(YarnBackendHelpers, LocalResourcesJsonRoundTripAndErrors) {
  std::map<std::string, LocalResource> r;
  r["tarn"] = LocalResource{"hdfs://nn:8020/x/tarn", 10, 20};
  r["job.tar.gz"] = LocalResource{"hdfs://nn:8020/x/job.tar.gz", 30, 40,
                                  LocalResourceType::kArchive, LocalResourceVisibility::kPrivate};
  auto back = ParseLocalResourcesJson(LocalResourcesToJson(r));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ASSERT_EQ(back->size(), 2u);
  EXPECT_EQ(back->at("job.tar.gz").type, LocalResourceType::kArchive);
  EXPECT_EQ(back->at("job.tar.gz").visibility, LocalResourceVisibility::kPrivate);
  EXPECT_EQ(back->at("tarn").timestamp, 20);
  EXPECT_FALSE(ParseLocalResourcesJson("[").ok());
  EXPECT_FALSE(ParseLocalResourcesJson("{\"a\": {\"url\": \"x\"}}").ok());
  EXPECT_FALSE(
      ParseLocalResourcesJson("{\"a/b\": {\"url\": \"/x\", \"size\": 1, \"timestamp\": 2}}").ok());
  auto bad_type = ParseLocalResourcesJson(
      "{\"a\": {\"url\": \"/x\", \"size\": 1, \"timestamp\": 2, \"type\": \"DIR\"}}");
  ASSERT_FALSE(bad_type.ok());
  EXPECT_NE(bad_type.status().message().find("'a'"), std::string::npos);
}

// Runs a launch script shaped as the NodeManager writes it (ContainerLaunch's
// UnixShellScriptBuilder: export KEY="value" and exec /bin/bash -c "<command>").
std::string RunLaunchScript(const std::string& env_value, const std::vector<std::string>& argv) {
  tarn::testing::TempDir dir;
  std::string command = ContainerCommand(argv);
  command.replace(command.find("<LOG_DIR>"), 9, dir.path());
  command.replace(command.find("<LOG_DIR>"), 9, dir.path());
  std::string script_text = "#!/bin/bash\nexport V=\"" + EnvironmentValue(env_value) +
                            "\"\nexec /bin/bash -c \"" + command + "\"\n";
  // The NM's expansion of its {{VAR}} syntax, applied to the whole script.
  for (size_t at; (at = script_text.find("{{")) != std::string::npos;) {
    script_text.replace(at, 2, "$");
  }
  for (size_t at; (at = script_text.find("}}")) != std::string::npos;) {
    script_text.erase(at, 2);
  }
  const std::string script = dir.Write("launch_container.sh", script_text);
  EXPECT_EQ(std::system(("/bin/bash " + script).c_str()), 0);
  auto out = ReadFile(dir.File("stdout"));
  return out.ok() ? *out : "(no stdout)";
}

TEST(YarnBackendHelpers, ArgumentsAndEnvironmentSurviveTheLaunchScriptLiterally) {
  const std::vector<std::string> tricky = {"a b",        "it's",        "$HOME",   "\"q\"",
                                           "`id`",       "back\\slash", "",        "*",
                                           "semi;colon", "new\nline",   "{{PWD}}", "{\"a\": {}}}"};
  std::vector<std::string> argv = {"printf", "[%s]"};
  argv.insert(argv.end(), tricky.begin(), tricky.end());
  std::string expected;
  for (const auto& a : tricky) expected += "[" + a + "]";
  EXPECT_EQ(RunLaunchScript("", argv), expected);
  const std::string value = "x\"y$HOME`id`\\z 'q' {\"tarn\": {\"size\": 1}}";
  EXPECT_EQ(RunLaunchScript(value, {"bash", "-c", "printf %s \"$V\""}), value);
}

TEST(YarnBackendHelpers, ContainerCommandQuotingForTheLaunchScript) {
  EXPECT_EQ(ContainerCommand({"./tarn", "node", "--port=0"}),
            "./tarn node --port=0 1><LOG_DIR>/stdout 2><LOG_DIR>/stderr");
  EXPECT_EQ(ContainerCommand({"echo", "a b", "\"q\"", "`x`", ""}),
            "echo 'a b' '\\\"q\\\"' '\\`x\\`' '' 1><LOG_DIR>/stdout 2><LOG_DIR>/stderr");
  EXPECT_EQ(EnvironmentValue("a\"b$c\\d"), "a\\\"b\\$c\\\\d");
}

}  // namespace
}  // namespace tarn::cluster::yarn
