#include "assembly/runner_state.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <thread>

#include "assembly/awaited_reply.h"
#include "assembly/runner.h"
#include "assembly/yarn_master.h"
#include "common/files.h"
#include "common/settings.h"
#include "test_util.h"

namespace tarn::assembly {
namespace {

using Json = nlohmann::json;
using tarn::testing::TempDir;

RunnerState SampleState() {
  RunnerState s;
  s.service = "svc";
  s.application_id = "application_1_0001";
  s.state = ServiceState::kStable;
  s.diagnostics = "";
  s.launch_time_ms = 1700000000000;
  s.next_launch_seq = 7;
  s.tf_addresses["worker"] = {"host-a:1000", ""};
  SavedComponent c;
  c.name = "worker";
  c.desired = 2;
  c.next_id = 3;
  c.failures = 1;
  SavedInstance a;
  a.name = "worker-0";
  a.id = 0;
  a.identity = 0;
  a.state = InstanceState::kFailed;
  a.replaced_by = "worker-2";
  a.exit_code = 3;
  a.diagnostics = "exit 3";
  SavedInstance b;
  b.name = "worker-2";
  b.id = 2;
  b.identity = 0;
  b.replaced = "worker-0";
  b.state = InstanceState::kReady;
  b.launched = true;
  b.container = "container_1_0001_01_000004";
  b.restarts = 2;
  b.launch_time_ms = 1700000000500;
  b.host = "host-a";
  b.launch_seq = 6;
  b.log_dir = "/logs/c4";
  b.registered = true;
  b.docker = true;
  c.instances = {a, b};
  s.components = {c};
  return s;
}

TEST(RunnerState, RoundTrip) {
  const RunnerState s = SampleState();
  auto back = ParseRunnerState(RunnerStateJson(s), "state.json");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->service, "svc");
  EXPECT_EQ(back->application_id, "application_1_0001");
  EXPECT_EQ(back->state, ServiceState::kStable);
  EXPECT_FALSE(back->exit_code.has_value());
  EXPECT_EQ(back->launch_time_ms, 1700000000000);
  EXPECT_EQ(back->next_launch_seq, 7);
  EXPECT_EQ(back->tf_addresses.at("worker"), (std::vector<std::string>{"host-a:1000", ""}));
  ASSERT_EQ(back->components.size(), 1u);
  const SavedComponent& c = back->components[0];
  EXPECT_EQ(c.desired, 2);
  EXPECT_EQ(c.next_id, 3);
  EXPECT_EQ(c.failures, 1);
  ASSERT_EQ(c.instances.size(), 2u);
  EXPECT_EQ(c.instances[0].state, InstanceState::kFailed);
  EXPECT_EQ(c.instances[0].exit_code, 3);
  EXPECT_EQ(c.instances[0].replaced_by, "worker-2");
  const SavedInstance& b = c.instances[1];
  EXPECT_EQ(b.state, InstanceState::kReady);
  EXPECT_TRUE(b.launched && b.registered && b.docker);
  EXPECT_EQ(b.container, "container_1_0001_01_000004");
  EXPECT_EQ(b.replaced, "worker-0");
  EXPECT_EQ(b.restarts, 2);
  EXPECT_EQ(b.host, "host-a");
  EXPECT_EQ(b.launch_seq, 6);
  EXPECT_EQ(b.log_dir, "/logs/c4");
  EXPECT_FALSE(b.exit_code.has_value());
  // Written again, it is the same text.
  EXPECT_EQ(RunnerStateJson(*back), RunnerStateJson(s));
}

// A damaged state is refused whole, the error naming the file and the field.
TEST(RunnerState, RefusesADamagedFile) {
  const std::string good = RunnerStateJson(SampleState());
  auto cut = ParseRunnerState(good.substr(0, good.size() / 2), "hdfs://nn/x/state.json");
  ASSERT_FALSE(cut.ok());
  EXPECT_EQ(cut.status().code(), StatusCode::kCorrupt);
  EXPECT_NE(cut.status().message().find("hdfs://nn/x/state.json: not JSON"), std::string::npos);

  auto with = [&](const std::function<void(Json&)>& change) {
    Json j = Json::parse(good);
    change(j);
    return ParseRunnerState(j.dump(), "state.json");
  };
  auto expect = [](const Result<RunnerState>& r, const std::string& words) {
    ASSERT_FALSE(r.ok()) << words;
    EXPECT_EQ(r.status().code(), StatusCode::kCorrupt);
    EXPECT_NE(r.status().message().find(words), std::string::npos) << r.status().message();
  };
  expect(with([](Json& j) { j["components"][0]["instances"][1]["state"] = "RUNNING"; }),
         "state.json: components[0].instances[1].state is not an instance state: 'RUNNING'");
  expect(with([](Json& j) { j["components"][0]["instances"][1]["launch"] = "six"; }),
         "components[0].instances[1].launch");
  expect(with([](Json& j) { j["components"][0]["instances"][0].erase("container"); }),
         "components[0].instances[0].container is missing");
  expect(with([](Json& j) { j["components"][0]["instances"][1]["name"] = "worker-9"; }),
         "'worker-9' is not instance 2 of worker");
  expect(with([](Json& j) { j["components"][0]["next_id"] = 1; }), "is not below");
  expect(with([](Json& j) { j["components"] = Json::object(); }), "components must be a list");
  expect(with([](Json& j) { j["version"] = 99; }), "version is 99");
  expect(with([](Json& j) { j["state"] = "DONE"; }), "state is not a service state: 'DONE'");
  expect(with([](Json& j) { j["tf_addresses"]["worker"] = 5; }), "tf_addresses");
  expect(ParseRunnerState("[1, 2]", "state.json"), "a runner state is a JSON object");
}

// A backend whose tasks get container ids and run until killed; containers of an earlier
// attempt are adopted through the runner's hook.
class ContainerBackend : public cluster::Backend {
 public:
  explicit ContainerBackend(int attempt) : attempt_(attempt) {}
  std::string name() const override { return "containers"; }
  Result<int64_t> Launch(const cluster::LaunchSpec& spec) override {
    std::lock_guard<std::mutex> lock(mu_);
    const int64_t task = next_++;
    where_[task] = "container_1_0001_0" + std::to_string(attempt_) + "_" + std::to_string(task);
    launched_.push_back(spec.role + "-" + std::to_string(spec.index));
    return task;
  }
  Result<int64_t> Adopt(const std::string& container) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!running_before_.count(container)) return NotFound(container + " is not running");
    const int64_t task = next_++;
    where_[task] = container;
    return task;
  }
  Status Kill(int64_t task) override {
    Exit(task, 137);
    return Status::Ok();
  }
  void Exit(int64_t task, int code) {
    std::function<void(const cluster::TaskExit&)> cb;
    {
      std::lock_guard<std::mutex> lock(mu_);
      cb = on_exit_;
    }
    if (cb) std::thread([cb, task, code] { cb(cluster::TaskExit{task, code, "exit"}); }).detach();
  }
  std::string Where(int64_t task) const override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = where_.find(task);
    return it == where_.end() ? "pending container" : it->second;
  }
  void OnExit(std::function<void(const cluster::TaskExit&)> callback) override {
    std::lock_guard<std::mutex> lock(mu_);
    on_exit_ = std::move(callback);
  }
  void Shutdown() override {}
  std::vector<std::string> launched() const {
    std::lock_guard<std::mutex> lock(mu_);
    return launched_;
  }
  std::set<std::string> running_before_;

 private:
  int attempt_;
  mutable std::mutex mu_;
  int64_t next_ = 1;
  std::map<int64_t, std::string> where_;
  std::vector<std::string> launched_;
  std::function<void(const cluster::TaskExit&)> on_exit_;
};

Service TwoComponents() {
  Service s;
  s.name = "svc";
  s.version = "1";
  Component web;
  web.name = "web";
  web.launch_command = "exec sleep 100";
  web.number_of_containers = 2;
  Component once;
  once.name = "once";
  once.launch_command = "true";
  once.restart_policy = RestartPolicy::kNever;
  s.components = {web, once};
  return s;
}

const Json& Inst(const Json& status, const std::string& name) {
  for (const auto& c : status["components"]) {
    for (const auto& i : c["containers"]) {
      if (i["component_instance_name"] == name) return i;
    }
  }
  static const Json none;
  ADD_FAILURE() << "no instance " << name << " in " << status.dump();
  return none;
}

bool WaitFor(const Runner& r, const std::function<bool(const Json&)>& done) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < until) {
    if (done(Json::parse(r.StatusJson()))) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

// The state a remote runner leaves is what a second runner resumes from: it adopts the
// containers still running (no second launch of them), hears the exit of one that ended
// meanwhile (its restart policy relaunches it), and keeps counts and launch numbers.
TEST(RunnerState, ASecondAttemptAdoptsTheRunningContainers) {
  TempDir first_dir, second_dir;
  RunnerOptions o;
  o.user = "tester";
  o.tick_ms = 20;
  o.remote = true;
  o.launcher = {"tarn", "assembly", "launcher"};
  ContainerBackend first(1);
  o.state_dir = first_dir.path();
  Runner one(TwoComponents(), first, o);
  ASSERT_TRUE(one.Start().ok());
  ASSERT_TRUE(WaitFor(one, [](const Json& s) {
    return Inst(s, "web-1").contains("launch") && Inst(s, "once-0").contains("launch");
  }));
  for (const char* name : {"web-0", "web-1", "once-0"}) {
    one.Register(Json{{"instance", name},
                      {"launch", Inst(Json::parse(one.StatusJson()), name).value("launch", 0)},
                      {"host", "h"},
                      {"log_dir", "/l"},
                      {"address", ""}}
                     .dump(),
                 [](Result<std::string>) {});
  }
  ASSERT_TRUE(WaitFor(one, [](const Json& s) { return s["state"] == "STABLE"; }));
  std::string text;
  // Every container id is in the state (recorded as YARN allocates it).
  ASSERT_TRUE(WaitFor(one, [&](const Json&) {
    auto t = ReadFile(first_dir.File("state.json"));
    text = t.ok() ? *t : "";
    return text.find("container_1_0001_01_3") != std::string::npos;
  }));
  auto saved = ParseRunnerState(text, "state.json");
  ASSERT_TRUE(saved.ok()) << saved.status().message();
  // The AM dies here: `one` is left unstopped until the end (its backend is another).

  ContainerBackend second(2);
  second.running_before_ = {"container_1_0001_01_1", "container_1_0001_01_3"};  // web-1 ended
  std::vector<std::string> adopted;
  o.state_dir = second_dir.path();
  o.adopt = [&](const std::string& container, const std::string&, int) {
    adopted.push_back(container);
    return second.Adopt(container);
  };
  Runner two(TwoComponents(), second, o);
  ASSERT_TRUE(two.Resume(*saved).ok());
  ASSERT_TRUE(WaitFor(two, [](const Json& s) {
    return Inst(s, "web-1")["restarts"] == 1 && Inst(s, "web-1").contains("launch");
  }));
  EXPECT_EQ(adopted.size(), 3u);
  // Only web-1, whose container could not be adopted, is launched again.
  EXPECT_EQ(second.launched(), (std::vector<std::string>{"web-1"}));
  const Json s = Json::parse(two.StatusJson());
  EXPECT_EQ(Inst(s, "web-0")["where"], "container_1_0001_01_1");
  EXPECT_EQ(Inst(s, "web-0")["restarts"], 0);
  EXPECT_EQ(Inst(s, "web-0")["state"], "READY");
  EXPECT_EQ(Inst(s, "web-0")["host"], "h");
  EXPECT_GT(Inst(s, "web-1").value("launch", 0), 3);  // a launch number never used before
  EXPECT_EQ(Inst(s, "once-0")["state"], "READY");

  two.Stop("test over");
  EXPECT_EQ(two.Wait(), ServiceState::kStopped);
  one.Stop("test over");
  EXPECT_EQ(one.Wait(), ServiceState::kStopped);
}

// A TF task that waited for the cluster when the AM died registers again with the next
// attempt, which still knows its address and answers once every task has one.
TEST(RunnerState, ATfTaskWaitingForTheClusterGetsItsPlanFromTheNextAttempt) {
  Service service;
  service.name = "tf";
  service.version = "1";
  Component chief, worker;
  chief.name = "chief";
  chief.launch_command = "echo chief";
  chief.restart_policy = RestartPolicy::kNever;
  worker.name = "worker";
  worker.launch_command = "echo worker";
  worker.restart_policy = RestartPolicy::kNever;
  service.components = {chief, worker};
  TempDir first_dir, second_dir;
  RunnerOptions o;
  o.tick_ms = 20;
  o.remote = true;
  o.launcher = {"tarn", "assembly", "launcher"};
  o.state_dir = first_dir.path();
  ContainerBackend first(1);
  Runner one(service, first, o);
  ASSERT_TRUE(one.Start().ok());
  ASSERT_TRUE(WaitFor(one, [](const Json& s) {
    return Inst(s, "chief-0").contains("launch") && Inst(s, "worker-0").contains("launch");
  }));
  const Json s1 = Json::parse(one.StatusJson());
  auto request = [&](const std::string& name, const std::string& address) {
    return Json{{"instance", name},
                {"launch", Inst(s1, name)["launch"]},
                {"host", address.substr(0, address.find(':'))},
                {"log_dir", "/l"},
                {"address", address}}
        .dump();
  };
  AwaitedReply r0, p0;
  one.Register(request("worker-0", "host-a:1000"), r0.Reply());
  r0.Get();
  one.Plan(request("worker-0", "host-a:1000"), p0.Reply());  // waits for the chief
  std::string text;
  ASSERT_TRUE(WaitFor(one, [&](const Json&) {
    auto t = ReadFile(first_dir.File("state.json"));
    text = t.ok() ? *t : "";
    return text.find("host-a:1000") != std::string::npos &&
           text.find("container_1_0001_01_2") != std::string::npos;
  }));
  auto saved = ParseRunnerState(text, "state.json");
  ASSERT_TRUE(saved.ok()) << saved.status().message();
  EXPECT_FALSE(p0.Answered());

  ContainerBackend second(2);
  second.running_before_ = {"container_1_0001_01_1", "container_1_0001_01_2"};
  o.state_dir = second_dir.path();
  o.adopt = [&](const std::string& c, const std::string&, int) { return second.Adopt(c); };
  Runner two(service, second, o);
  ASSERT_TRUE(two.Resume(*saved).ok());
  AwaitedReply r0b, p0b, rc, pc;
  two.Register(request("worker-0", "host-a:1000"), r0b.Reply());
  // Its port again (same host): the launcher keeps the one it holds.
  EXPECT_EQ(r0b.Get(), (Json{{"identity", 0}, {"tf", true}, {"port", 1000}}));
  two.Plan(request("worker-0", "host-a:1000"), p0b.Reply());
  EXPECT_FALSE(p0b.Answered());
  two.Register(request("chief-0", "host-c:1002"), rc.Reply());
  rc.Get();
  two.Plan(request("chief-0", "host-c:1002"), pc.Reply());
  const Json tf = Json::parse(p0b.Get()["env"]["TF_CONFIG"].get<std::string>());
  EXPECT_EQ(tf["cluster"]["worker"], (Json{"host-a:1000"}));
  EXPECT_EQ(tf["cluster"]["chief"], (Json{"host-c:1002"}));
  EXPECT_EQ(pc.Get()["env"]["IS_CHIEF"], "true");
  EXPECT_TRUE(second.launched().empty());  // nothing launched twice
  two.Stop("test over");
  EXPECT_EQ(two.Wait(), ServiceState::kStopped);
  one.Stop("test over");
  EXPECT_EQ(one.Wait(), ServiceState::kStopped);
}

TEST(RunnerState, AStateOfAnotherServiceIsRefused) {
  TempDir dir;
  RunnerState s = SampleState();
  s.service = "other";
  ContainerBackend backend(2);
  RunnerOptions o;
  o.state_dir = dir.path();
  o.remote = true;
  o.adopt = [&](const std::string& c, const std::string&, int) { return backend.Adopt(c); };
  Runner r(TwoComponents(), backend, o);
  Status st = r.Resume(s);
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(st.message().find("'other'"), std::string::npos) << st.message();
  s.service = "svc";  // worker is no component of it
  Runner r2(TwoComponents(), backend, o);
  st = r2.Resume(s);
  EXPECT_NE(st.message().find("component worker"), std::string::npos) << st.message();
}

// The AM's attempts: Hadoop's service key, else tarn's setting; a bad count names the field.
TEST(RunnerState, AmAttemptsFromTheServiceOrTheSetting) {
  Settings settings;
  Service service = TwoComponents();
  EXPECT_EQ(*AmMaxAttempts(service, settings), 20);
  ASSERT_TRUE(settings.ApplyOverride("tarn.assembly.am-max-attempts=3").ok());
  EXPECT_EQ(*AmMaxAttempts(service, settings), 3);
  service.configuration.properties[kAmRestartMaxAttempts] = "1";
  EXPECT_EQ(*AmMaxAttempts(service, settings), 1);
  service.configuration.properties[kAmRestartMaxAttempts] = "0";
  auto bad = AmMaxAttempts(service, settings);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find(
                "configuration.properties.yarn.service.am-restart.max-attempts needs a count"),
            std::string::npos)
      << bad.status().message();
}

}  // namespace
}  // namespace tarn::assembly
