#include "assembly/runner.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <functional>
#include <nlohmann/json.hpp>
#include <thread>

#include "cluster/local_backend.h"
#include "common/files.h"
#include "net/socket.h"
#include "test_util.h"

namespace tarn::assembly {
namespace {

using Json = nlohmann::json;
using tarn::testing::TempDir;

Component Comp(const std::string& name, const std::string& command, RestartPolicy policy,
               int64_t count = 1) {
  Component c;
  c.name = name;
  c.launch_command = command;
  c.restart_policy = policy;
  c.number_of_containers = count;
  return c;
}

Service MakeService(const std::string& name, std::vector<Component> components) {
  Service s;
  s.name = name;
  s.version = "1";
  s.components = std::move(components);
  return s;
}

// Runs a service on the local backend in a temporary folder.
struct Harness {
  TempDir dir;
  std::unique_ptr<cluster::Backend> backend;
  std::unique_ptr<Runner> runner;

  explicit Harness(Service service) {
    EXPECT_TRUE(MakeDirs(dir.File("logs")).ok());
    backend = cluster::MakeLocalBackend(dir.File("logs"));
    RunnerOptions o;
    o.state_dir = dir.path();
    o.user = "tester";
    o.tick_ms = 100;
    runner = std::make_unique<Runner>(std::move(service), *backend, o);
  }
  Json Status() const { return Json::parse(runner->StatusJson()); }
  // Waits (up to a bound, so a broken runner fails instead of hanging) for `done`.
  bool WaitFor(const std::function<bool(const Json&)>& done, int seconds = 60) const {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    while (std::chrono::steady_clock::now() < until) {
      if (done(Status())) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }
};

const Json& CompOf(const Json& status, const std::string& name) {
  for (const auto& c : status["components"]) {
    if (c["name"] == name) return c;
  }
  static const Json none;
  ADD_FAILURE() << "no component " << name << " in " << status.dump();
  return none;
}

// The command fails the first time it runs in an instance's folder, then succeeds.
constexpr const char* kFailsOnce = "if [ -e ran-once ]; then exit 0; fi; touch ran-once; exit 1";

TEST(AssemblyRunner, OnFailureRelaunchesAFailedInstanceUntilItSucceeds) {
  Harness h(MakeService("once", {Comp("job", kFailsOnce, RestartPolicy::kOnFailure)}));
  ASSERT_TRUE(h.runner->Start().ok());
  EXPECT_EQ(h.runner->Wait(), ServiceState::kSucceeded);
  Json s = h.Status();
  const Json& i = CompOf(s, "job")["containers"][0];
  EXPECT_EQ(i["component_instance_name"], "job-0");
  EXPECT_EQ(i["state"], "SUCCEEDED");
  EXPECT_EQ(i["restarts"], 1);
  EXPECT_EQ(i["exit_code"], 0);
  EXPECT_EQ(h.runner->exit_code(), 0);
  // status.json on disk is the same document.
  auto disk = ReadFile(h.dir.File("status.json"));
  ASSERT_TRUE(disk.ok());
  EXPECT_EQ(Json::parse(*disk)["state"], "SUCCEEDED");
}

TEST(AssemblyRunner, NeverLeavesAFailedInstanceAndTheServiceFails) {
  Harness h(MakeService("never", {Comp("job", kFailsOnce, RestartPolicy::kNever)}));
  ASSERT_TRUE(h.runner->Start().ok());
  EXPECT_EQ(h.runner->Wait(), ServiceState::kFailed);
  const Json s = h.Status();
  const Json& i = CompOf(s, "job")["containers"][0];
  EXPECT_EQ(i["state"], "FAILED");
  EXPECT_EQ(i["restarts"], 0);
  EXPECT_EQ(i["exit_code"], 1);
  EXPECT_NE(h.runner->exit_code(), 0);
}

TEST(AssemblyRunner, SubstitutionsEnvAndConfigFilesReachTheInstance) {
  Component c = Comp("echo",
                     "printf '%s %s %s' ${COMPONENT_INSTANCE_NAME} ${COMPONENT_ID} \"$GREETING\" "
                     "> out.txt",
                     RestartPolicy::kNever, 2);
  c.configuration.env["GREETING"] = "hello from ${SERVICE_NAME}";
  ConfigFile f;
  f.type = ConfigFileType::kProperties;
  f.dest_file = "app.properties";
  f.properties["instance"] = "${COMPONENT_INSTANCE_NAME}";
  c.configuration.files.push_back(f);
  Harness h(MakeService("subst", {c}));
  ASSERT_TRUE(h.runner->Start().ok());
  EXPECT_EQ(h.runner->Wait(), ServiceState::kSucceeded);
  auto out = ReadFile(h.dir.File("instances/echo-1/out.txt"));
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(*out, "echo-1 1 hello from subst");
  auto props = ReadFile(h.dir.File("instances/echo-1/conf/app.properties"));
  ASSERT_TRUE(props.ok());
  EXPECT_EQ(*props, "instance=echo-1\n");
}

TEST(AssemblyRunner, DependantsStartOnlyWhenThePortCheckPasses) {
  auto probe = net::ListenTcp("127.0.0.1", 0);
  ASSERT_TRUE(probe.ok());
  const int port = net::LocalPort(*probe);
  probe->Close();
  // The server listens only after a pause; the client fails unless it can connect.
  Component server =
      Comp("server",
           "sleep 1; exec python3 -c 'import socket,time; s=socket.socket(); "
           "s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind((\"127.0.0.1\", " +
               std::to_string(port) + ")); s.listen(); time.sleep(120)'",
           RestartPolicy::kAlways);
  server.readiness_check = ReadinessCheck{ReadinessType::kPort, {{"port", std::to_string(port)}}};
  Component client = Comp("client",
                          "python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", " +
                              std::to_string(port) + "), 2)'",
                          RestartPolicy::kNever);
  client.dependencies = {"server"};
  Harness h(MakeService("ordered", {server, client}));
  ASSERT_TRUE(h.runner->Start().ok());
  ASSERT_TRUE(h.WaitFor([](const Json& s) {
    return CompOf(s, "client")["containers"][0]["state"] == "SUCCEEDED";
  })) << h.runner->StatusJson();
  Json s = h.Status();
  EXPECT_EQ(CompOf(s, "server")["containers"][0]["state"], "READY");
  EXPECT_EQ(CompOf(s, "server")["containers"][0]["ports"][0], port);
  // The ALWAYS server keeps the service alive.
  EXPECT_EQ(s["state"], "STABLE");
  h.runner->Stop("test over");
  EXPECT_EQ(h.runner->Wait(), ServiceState::kStopped);
  EXPECT_EQ(CompOf(h.Status(), "server")["containers"][0]["state"], "STOPPED");
}

TEST(AssemblyRunner, FlexAddsNewInstancesAndRemovesTheNewest) {
  Harness h(MakeService("flexy", {Comp("sleeper", "exec sleep 120", RestartPolicy::kAlways),
                                  Comp("oneshot", "exec sleep 120", RestartPolicy::kNever)}));
  ASSERT_TRUE(h.runner->Start().ok());
  ASSERT_TRUE(h.WaitFor([](const Json& s) { return s["state"] == "STABLE"; }));
  auto up = h.runner->Flex("sleeper", FlexCount{true, 2});
  ASSERT_TRUE(up.ok()) << up.status().ToString();
  EXPECT_EQ(*up, 3);
  ASSERT_TRUE(h.WaitFor([](const Json& s) {
    const auto& c = CompOf(s, "sleeper")["containers"];
    return c.size() == 3 && c[2]["state"] == "READY";
  }));
  EXPECT_EQ(CompOf(h.Status(), "sleeper")["containers"][2]["component_instance_name"], "sleeper-2");
  auto down = h.runner->Flex("sleeper", FlexCount{false, 1});
  ASSERT_TRUE(down.ok());
  ASSERT_TRUE(
      h.WaitFor([](const Json& s) { return CompOf(s, "sleeper")["containers"].size() == 1; }));
  EXPECT_EQ(CompOf(h.Status(), "sleeper")["containers"][0]["component_instance_name"], "sleeper-0");
  // Up again: a new name, never a reused one.
  ASSERT_TRUE(h.runner->Flex("sleeper", FlexCount{true, 1}).ok());
  EXPECT_EQ(CompOf(h.Status(), "sleeper")["containers"][1]["component_instance_name"], "sleeper-3");
  auto refused = h.runner->Flex("oneshot", FlexCount{false, 2});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("restart_policy=ON_FAILURE/NEVER"), std::string::npos);
  auto unknown = h.runner->Flex("nope", FlexCount{false, 2});
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().message(), "nope does not exist !");
  h.runner->Stop("test over");
  EXPECT_EQ(h.runner->Wait(), ServiceState::kStopped);
}

int PidOf(const Json& instance) {
  const std::string where = instance["where"];  // "pid 1234"
  return std::stoi(where.substr(4));
}

TEST(AssemblyRunner, ABackupTakesTheFailedWorkersTaskIndexAndAddress) {
  Component chief = Comp("chief", "sleep 3", RestartPolicy::kNever);
  Component worker = Comp("worker", "echo \"$TF_CONFIG\" > tf_config.json; exec sleep 120",
                          RestartPolicy::kNever, 2);
  worker.configuration.properties["tarn.backups"] = "1";
  Harness h(MakeService("tfjob", {chief, worker}));
  ASSERT_TRUE(h.runner->Start().ok());
  ASSERT_TRUE(h.WaitFor(
      [&](const Json&) { return PathExists(h.dir.File("instances/worker-0/tf_config.json")); }));
  Json s = h.Status();
  const Json& workers = CompOf(s, "worker")["containers"];
  ASSERT_EQ(workers.size(), 3u);
  EXPECT_TRUE(workers[2]["backup"].get<bool>());
  const std::string address = workers[0]["tf_task"]["address"];
  auto original = ReadFile(h.dir.File("instances/worker-0/tf_config.json"));
  ASSERT_TRUE(original.ok());
  EXPECT_EQ(Json::parse(*original)["task"], (Json{{"type", "worker"}, {"index", 0}}));
  EXPECT_EQ(Json::parse(*original)["cluster"]["worker"][0], address);
  ::kill(-PidOf(workers[0]), SIGKILL);
  ASSERT_TRUE(h.WaitFor(
      [&](const Json&) { return PathExists(h.dir.File("instances/worker-2/tf_config.json")); }));
  auto taken = ReadFile(h.dir.File("instances/worker-2/tf_config.json"));
  ASSERT_TRUE(taken.ok());
  EXPECT_EQ(*taken, *original);  // the same task and the same address
  s = h.Status();
  const Json& after = CompOf(s, "worker")["containers"];
  EXPECT_EQ(after[0]["replaced_by"], "worker-2");
  EXPECT_EQ(after[2]["replaced"], "worker-0");
  EXPECT_EQ(after[2]["tf_task"]["index"], 0);
  EXPECT_EQ(after[2]["tf_task"]["address"], address);
  // The pool is refilled.
  EXPECT_TRUE(after.back()["backup"].get<bool>());
  EXPECT_EQ(after.back()["component_instance_name"], "worker-3");
  // The job ends with the chief; the workers are killed, its exit is the job's.
  EXPECT_EQ(h.runner->Wait(), ServiceState::kSucceeded);
  EXPECT_EQ(h.runner->exit_code(), 0);
  EXPECT_EQ(CompOf(h.Status(), "worker")["containers"][1]["state"], "STOPPED");
}

TEST(AssemblyRunner, LifetimeStopsTheService) {
  Service s = MakeService("brief", {Comp("sleeper", "exec sleep 120", RestartPolicy::kAlways)});
  s.lifetime_s = 1;
  Harness h(s);
  ASSERT_TRUE(h.runner->Start().ok());
  EXPECT_EQ(h.runner->Wait(), ServiceState::kStopped);
  EXPECT_NE(h.Status()["diagnostics"].get<std::string>().find("lifetime of 1 s"),
            std::string::npos);
}

TEST(AssemblyRunner, ADockerComponentIsRefusedWithoutDocker) {
  Component c = Comp("web", "", RestartPolicy::kAlways);
  c.artifact = Artifact{"nginx:latest", ArtifactType::kDocker, ""};
  Status s = CheckRunnable(MakeService("web", {c}), "web.json", false);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("component web has a DOCKER artifact (nginx:latest)"),
            std::string::npos);
}

TEST(AssemblyRunner, FlexCounts) {
  auto abs = ParseFlexCount("3");
  ASSERT_TRUE(abs.ok());
  EXPECT_FALSE(abs->relative);
  EXPECT_EQ(abs->value, 3);
  auto down = ParseFlexCount("-2");
  ASSERT_TRUE(down.ok());
  EXPECT_TRUE(down->relative);
  EXPECT_EQ(down->value, -2);
  EXPECT_FALSE(ParseFlexCount("two").ok());
  EXPECT_FALSE(ParseFlexCount("+").ok());
}

}  // namespace
}  // namespace tarn::assembly
