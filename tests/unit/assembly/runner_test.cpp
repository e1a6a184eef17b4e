#include "assembly/runner.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "assembly/awaited_reply.h"
#include "cluster/local_backend.h"
#include "common/files.h"
#include "common/strings.h"
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

  // `docker`: the Docker client DOCKER components run with (none: they are refused).
  explicit Harness(Service service, const std::string& docker = "") {
    EXPECT_TRUE(MakeDirs(dir.File("logs")).ok());
    backend = cluster::MakeLocalBackend(dir.File("logs"));
    RunnerOptions o;
    o.state_dir = dir.path();
    o.user = "tester";
    o.tick_ms = 100;
    if (!docker.empty()) {
      o.docker = docker;
      o.docker_available = true;
    }
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

TEST(AssemblyRunner, BackupsStopTakingOverPastTheFailureThreshold) {
  // Task 0 (the chief) fails every time: each takeover counts as a relaunch, so the service
  // fails once the component has failed more than the threshold (here 2). It fails a second
  // after it starts, time for the runner to refill the pool (a failure while the pool is
  // being refilled finds no backup); task 1 keeps running.
  Component worker =
      Comp("worker", "if [ \"$TASK_INDEX\" = 0 ]; then sleep 1; exit 5; fi; sleep 60",
           RestartPolicy::kNever, 2);
  worker.configuration.properties["tarn.backups"] = "1";
  worker.configuration.properties["yarn.service.container-failure-per-component.threshold"] = "2";
  Harness h(MakeService("tfjob", {worker}));
  ASSERT_TRUE(h.runner->Start().ok());
  EXPECT_EQ(h.runner->Wait(), ServiceState::kFailed);
  EXPECT_EQ(h.runner->exit_code(), 5);
  const Json s = h.Status();
  EXPECT_NE(s["diagnostics"].get<std::string>().find(
                "more than yarn.service.container-failure-per-component.threshold (2)"),
            std::string::npos)
      << s.dump();
  int takeovers = 0;
  for (const auto& i : CompOf(s, "worker")["containers"]) takeovers += i.contains("replaced");
  EXPECT_EQ(takeovers, 2) << s.dump();
}

const Json& InstanceOf(const Json& status, const std::string& name) {
  for (const auto& c : status["components"]) {
    for (const auto& i : c["containers"]) {
      if (i["component_instance_name"] == name) return i;
    }
  }
  static const Json none;
  ADD_FAILURE() << "no instance " << name << " in " << status.dump();
  return none;
}

// Remote mode, with the launchers' calls made by the test: each instance's process is a
// stand-in (sleep) for tarn's launcher in a container.
TEST(AssemblyRunner, RemoteTfTasksGetTheirPlanOnceEveryTaskRegisteredAnAddress) {
  Component chief = Comp("chief", "echo chief", RestartPolicy::kNever);
  Component worker = Comp("worker", "echo ${COMPONENT_INSTANCE_NAME}", RestartPolicy::kNever, 2);
  worker.configuration.properties["tarn.backups"] = "1";
  Harness h(MakeService("remote", {chief, worker}));
  RunnerOptions o;
  o.state_dir = h.dir.path();
  o.user = "tester";
  o.tick_ms = 100;
  o.remote = true;
  o.launcher = {"/bin/sh", "-c", "exec sleep 120", "launcher"};
  h.runner = std::make_unique<Runner>(MakeService("remote", {chief, worker}), *h.backend, o);
  ASSERT_TRUE(h.runner->Start().ok());
  ASSERT_TRUE(h.WaitFor([](const Json& s) {
    for (const auto& c : s["components"]) {
      for (const auto& i : c["containers"]) {
        if (!i.contains("launch")) return false;
      }
    }
    return true;
  }));
  Json s = h.Status();
  // Running, not ready, until its launcher registers.
  EXPECT_EQ(InstanceOf(s, "worker-0")["state"], "RUNNING_BUT_UNREADY");
  EXPECT_TRUE(InstanceOf(s, "worker-0")["host"].is_null());
  auto request = [&](const std::string& name, const std::string& host) {
    return Json{{"instance", name},
                {"launch", InstanceOf(s, name)["launch"]},
                {"host", host},
                {"log_dir", "/logs/" + name},
                {"address", host + ":" + std::to_string(1000 + host.back() - 'a')}}
        .dump();
  };
  AwaitedReply r0, r2, rc, p0, p1, pc, p2;
  h.runner->Register(request("worker-0", "host-a"), r0.Reply());
  EXPECT_EQ(r0.Get(), (Json{{"identity", 0}, {"tf", true}, {"port", 0}}));
  h.runner->Register(request("worker-2", "host-a"), r2.Reply());  // the backup waits
  h.runner->Plan(request("worker-0", "host-a"), p0.Reply());
  AwaitedReply r1;
  h.runner->Register(request("worker-1", "host-b"), r1.Reply());
  EXPECT_EQ(r1.Get()["identity"], 1);
  h.runner->Plan(request("worker-1", "host-b"), p1.Reply());
  EXPECT_FALSE(p0.Answered());  // the chief has no address yet
  EXPECT_FALSE(p1.Answered());
  h.runner->Register(request("chief-0", "host-c"), rc.Reply());
  rc.Get();
  h.runner->Plan(request("chief-0", "host-c"), pc.Reply());
  const Json plan0 = p0.Get();
  const Json tf = Json::parse(plan0["env"]["TF_CONFIG"].get<std::string>());
  EXPECT_EQ(tf["cluster"]["worker"], (Json{"host-a:1000", "host-b:1001"}));
  EXPECT_EQ(tf["cluster"]["chief"], (Json{"host-c:1002"}));
  EXPECT_EQ(tf["task"], (Json{{"type", "worker"}, {"index", 0}}));
  EXPECT_EQ(plan0["command"], "echo worker-0");
  EXPECT_EQ(plan0["env"].count("WORK_DIR"), 0u);  // the launcher's own folder
  EXPECT_EQ(p1.Get()["env"]["TASK_INDEX"], "1");
  EXPECT_EQ(pc.Get()["env"]["IS_CHIEF"], "true");
  EXPECT_FALSE(r2.Answered());

  s = h.Status();
  EXPECT_EQ(InstanceOf(s, "worker-0")["state"], "READY");
  EXPECT_EQ(InstanceOf(s, "worker-0")["host"], "host-a");
  EXPECT_EQ(InstanceOf(s, "worker-0")["log"], "/logs/worker-0/stdout");
  EXPECT_EQ(InstanceOf(s, "worker-0")["tf_task"]["address"], "host-a:1000");
  EXPECT_EQ(InstanceOf(s, "worker-0")["ports"], (Json{1000}));
  // worker-0 dies: the backup, on the same host, is told to take task 0 and its port.
  const std::string worker0_request = request("worker-0", "host-a");
  ::kill(PidOf(InstanceOf(s, "worker-0")), SIGKILL);
  EXPECT_EQ(r2.Get(), (Json{{"identity", 0}, {"tf", true}, {"port", 1000}}));
  h.runner->Plan(request("worker-2", "host-a"), p2.Reply());
  const Json plan2 = p2.Get();
  EXPECT_EQ(plan2["env"]["TF_CONFIG"], plan0["env"]["TF_CONFIG"]);
  EXPECT_EQ(plan2["command"], "echo worker-0");  // the failed instance's identity
  s = h.Status();
  EXPECT_EQ(InstanceOf(s, "worker-0")["replaced_by"], "worker-2");
  EXPECT_TRUE(InstanceOf(s, "worker-3")["backup"].get<bool>());
  // A launch that is not the current one is refused, and so is a field of the wrong type.
  AwaitedReply stale, mistyped;
  h.runner->Register(worker0_request, stale.Reply());
  ASSERT_TRUE(stale.Answered());
  EXPECT_EQ(stale.value->status().code(), StatusCode::kFailedPrecondition);
  h.runner->Register(Json{{"instance", "worker-1"}, {"launch", "one"}}.dump(), mistyped.Reply());
  ASSERT_TRUE(mistyped.Answered());
  EXPECT_EQ(mistyped.value->status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(mistyped.value->status().message().find("launch must be an integer"),
            std::string::npos);
  h.runner->Stop("test over");
  EXPECT_EQ(h.runner->Wait(), ServiceState::kStopped);
}

// Records what the runner asks a backend for; runs nothing (every task "runs" until killed).
class RecordingBackend : public cluster::Backend {
 public:
  std::string name() const override { return "recording"; }
  Result<int64_t> Launch(const cluster::LaunchSpec& spec) override {
    std::lock_guard<std::mutex> lock(mu_);
    specs_.push_back(spec);
    return static_cast<int64_t>(specs_.size());
  }
  Status Kill(int64_t task) override {
    std::function<void(const cluster::TaskExit&)> cb;
    {
      std::lock_guard<std::mutex> lock(mu_);
      cb = on_exit_;
    }
    // Reported on a thread of its own, as a backend's exits are (the caller holds its lock);
    // the runner's callback outlives nothing it needs.
    if (cb) std::thread([cb, task] { cb(cluster::TaskExit{task, 137, "killed"}); }).detach();
    return Status::Ok();
  }
  std::string Where(int64_t task) const override { return "task " + std::to_string(task); }
  void OnExit(std::function<void(const cluster::TaskExit&)> callback) override {
    std::lock_guard<std::mutex> lock(mu_);
    on_exit_ = std::move(callback);
  }
  void Shutdown() override {}
  std::vector<cluster::LaunchSpec> specs() const {
    std::lock_guard<std::mutex> lock(mu_);
    return specs_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<cluster::LaunchSpec> specs_;
  std::function<void(const cluster::TaskExit&)> on_exit_;
};

TEST(AssemblyRunner, RemoteAsksCarryResourcesGpusDockerVariablesAndTheTarball) {
  Component gpu = Comp("trainer", "python train.py", RestartPolicy::kAlways);
  Resource r;
  r.cpus = 2;
  r.memory_mb = 3072;
  r.additional["yarn.io/gpu"].value = 1;
  gpu.resource = r;
  Component boxed = Comp("boxed", "sleep 1", RestartPolicy::kAlways);
  boxed.artifact = Artifact{"busybox:1", ArtifactType::kDocker, ""};
  boxed.configuration.env["YARN_CONTAINER_RUNTIME_DOCKER_MOUNTS"] = "/a:/a:ro";
  Component packed = Comp("packed", "lib/run.sh", RestartPolicy::kAlways);
  packed.artifact = Artifact{"hdfs://nn:8020/apps/run.tgz", ArtifactType::kTarball, ""};
  TempDir dir;
  RecordingBackend backend;
  RunnerOptions o;
  o.state_dir = dir.path();
  o.tick_ms = 50;
  o.remote = true;
  o.docker_available = true;
  o.launcher = {"tarn", "assembly", "launcher", "--am", "h:1"};
  Runner runner(MakeService("asks", {gpu, boxed, packed}), backend, o);
  ASSERT_TRUE(runner.Start().ok());
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (backend.specs().size() < 3 && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const auto specs = backend.specs();
  ASSERT_EQ(specs.size(), 3u);  // one ask per instance
  std::map<std::string, cluster::LaunchSpec> by_role;
  for (const auto& spec : specs) by_role[spec.role] = spec;
  const auto& t = by_role["trainer"];
  EXPECT_EQ(t.resources.vcores, 2);
  EXPECT_EQ(t.resources.memory_mb, 3072);
  EXPECT_EQ(t.resources.gpus, 1);
  EXPECT_EQ(t.argv,
            (std::vector<std::string>{"tarn", "assembly", "launcher", "--am", "h:1", "--instance",
                                      "trainer-0", "--launch", t.argv.back()}));
  EXPECT_TRUE(t.env.empty());  // the launcher gets the rest from the runner
  const auto& b = by_role["boxed"];
  EXPECT_EQ(b.env.at("YARN_CONTAINER_RUNTIME_TYPE"), "docker");
  EXPECT_EQ(b.env.at("YARN_CONTAINER_RUNTIME_DOCKER_IMAGE"), "busybox:1");
  EXPECT_EQ(b.env.at("YARN_CONTAINER_RUNTIME_DOCKER_MOUNTS"), "/a:/a:ro");
  EXPECT_EQ(by_role["packed"].archives.at("lib"), "hdfs://nn:8020/apps/run.tgz");
  const Json s = Json::parse(runner.StatusJson());
  EXPECT_EQ(InstanceOf(s, "boxed-0")["runtime"], "container");
  EXPECT_EQ(InstanceOf(s, "trainer-0")["runtime"], "native");
  runner.Stop("test over");
  EXPECT_EQ(runner.Wait(), ServiceState::kStopped);
}

TEST(AssemblyRunner, RemoteRefusesAFileItCannotGiveTheLauncher) {
  Component boxed = Comp("boxed", "sleep 1", RestartPolicy::kAlways);
  boxed.artifact = Artifact{"busybox:1", ArtifactType::kDocker, ""};
  ConfigFile f;
  f.type = ConfigFileType::kProperties;
  f.dest_file = "/etc/app.properties";
  f.field_path = "configuration.files[0]";
  boxed.configuration.files.push_back(f);
  TempDir dir;
  RecordingBackend backend;
  RunnerOptions o;
  o.state_dir = dir.path();
  o.tick_ms = 50;
  o.remote = true;
  o.docker_available = true;
  o.launcher = {"tarn", "assembly", "launcher"};
  Runner runner(MakeService("mounts", {boxed}), backend, o);
  ASSERT_TRUE(runner.Start().ok());
  EXPECT_EQ(runner.Wait(), ServiceState::kFailed);
  EXPECT_TRUE(backend.specs().empty());  // nothing was asked for
  const Json s = Json::parse(runner.StatusJson());
  EXPECT_NE(s["diagnostics"].get<std::string>().find(
                "configuration.files[0] (/etc/app.properties): an absolute dest_file is not "
                "mounted by tarn's runner on YARN"),
            std::string::npos)
      << s.dump();
}

TEST(AssemblyRunner, YarnDockerEnvironment) {
  Component c = Comp("boxed", "sleep 1", RestartPolicy::kAlways);
  c.run_privileged_container = true;
  auto env = YarnDockerEnv(c, "busybox:1", {});
  EXPECT_EQ(env["YARN_CONTAINER_RUNTIME_TYPE"], "docker");
  EXPECT_EQ(env["YARN_CONTAINER_RUNTIME_DOCKER_IMAGE"], "busybox:1");
  EXPECT_EQ(env["YARN_CONTAINER_RUNTIME_DOCKER_CONTAINER_NETWORK"], "host");
  EXPECT_EQ(env["YARN_CONTAINER_RUNTIME_DOCKER_RUN_PRIVILEGED_CONTAINER"], "true");
  EXPECT_EQ(env.count("YARN_CONTAINER_RUNTIME_DOCKER_RUN_OVERRIDE_DISABLE"), 0u);
  c.run_privileged_container = false;
  c.launch_command = "";
  env = YarnDockerEnv(c, "busybox:1", {{"YARN_CONTAINER_RUNTIME_DOCKER_CONTAINER_NETWORK", "br"}});
  EXPECT_EQ(env.count("YARN_CONTAINER_RUNTIME_DOCKER_CONTAINER_NETWORK"), 0u);  // the env's
  EXPECT_EQ(env.count("YARN_CONTAINER_RUNTIME_DOCKER_RUN_PRIVILEGED_CONTAINER"), 0u);
  EXPECT_EQ(env["YARN_CONTAINER_RUNTIME_DOCKER_RUN_OVERRIDE_DISABLE"], "true");
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

// What the local runner asks of the Docker client, read from a client that records its calls
// (the real daemon: tests/integration/test_assembly_docker.py).
TEST(AssemblyRunner, ADockerInstanceRunsAsTheUserWithItsFoldersMountedAndItsEnvInside) {
  TempDir bin;
  const std::string calls = bin.File("calls");
  const std::string client =
      bin.Write("docker", "#!/bin/bash\nprintf '%s\\n' \"$@\" -- >> " + calls +
                              "\nif [ \"$1\" = run ]; then env > " + bin.File("client-env") +
                              "; exit 4; fi\nexit 1\n");
  ASSERT_EQ(::chmod(client.c_str(), 0755), 0);
  Component c = Comp("web", "echo in the box", RestartPolicy::kNever);
  c.artifact = Artifact{"busybox:1", ArtifactType::kDocker, ""};
  c.configuration.env["GREETING"] = "hi";
  c.configuration.env["PATH"] = "/in/the/image";
  Harness h(MakeService("boxed", {c}), client);
  ASSERT_TRUE(h.runner->Start().ok());
  EXPECT_EQ(h.runner->Wait(), ServiceState::kFailed);
  const Json s = h.Status();
  const Json& i = CompOf(s, "web")["containers"][0];
  EXPECT_EQ(i["exit_code"], 4);  // the client's, which is the container's
  EXPECT_EQ(i["runtime"], "container");
  EXPECT_EQ(i["image"], "busybox:1");
  const std::string name = i["container_name"];
  EXPECT_EQ(name.rfind("tarn-boxed-web-0-", 0), 0u) << name;
  auto text = ReadFile(calls);
  ASSERT_TRUE(text.ok());
  std::vector<std::vector<std::string>> got(1);
  for (const auto& line : Split(*text, "\n")) {
    if (line == "--") {
      got.emplace_back();
    } else if (!line.empty()) {
      got.back().push_back(line);
    }
  }
  got.pop_back();
  const std::string dir = h.dir.File("instances/web-0");
  const std::string logs = h.dir.File("logs");
  const std::string user = std::to_string(::getuid()) + ":" + std::to_string(::getgid());
  const std::vector<std::string> rm = {"rm", "-f", name};
  const std::vector<std::string> run = {"run",        "--rm",
                                        "--name",     name,
                                        "--network",  "host",
                                        "--user",     user,
                                        "-v",         dir + ":" + dir,
                                        "-v",         logs + ":" + logs,
                                        "-w",         dir,
                                        "--env-file", dir + "/.tarn-docker.env",
                                        "busybox:1",  "bash",
                                        "-c",         "echo in the box"};
  // A leftover of the name is removed before the run, the container after its exit.
  EXPECT_EQ(got, (std::vector<std::vector<std::string>>{rm, run, rm}));
  // The env reaches the container through a file only this user reads (not ps).
  auto env_file = ReadFile(dir + "/.tarn-docker.env");
  ASSERT_TRUE(env_file.ok()) << env_file.status().message();
  EXPECT_EQ(*env_file,
            "GREETING=hi\nLOG_DIR=" + logs + "\nPATH=/in/the/image\nWORK_DIR=" + dir + "\n");
  struct stat st;
  ASSERT_EQ(::stat((dir + "/.tarn-docker.env").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  // The component's env went into the container, not into the client's environment.
  auto env = ReadFile(bin.File("client-env"));
  ASSERT_TRUE(env.ok());
  EXPECT_EQ(env->find("GREETING="), std::string::npos);
  EXPECT_EQ(env->find("PATH=/in/the/image"), std::string::npos);
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
  // The control channel's request: a field of the wrong type is named, not thrown.
  auto req = ParseFlexRequest(R"({"component": "worker", "count": "+1"})");
  ASSERT_TRUE(req.ok()) << req.status().message();
  EXPECT_EQ(req->component, "worker");
  EXPECT_TRUE(req->count.relative);
  EXPECT_EQ(req->count.value, 1);
  // A number is read as Jackson (and every tarn config reader) coerces it; an array is refused.
  auto number = ParseFlexRequest(R"({"component": "worker", "count": 3})");
  ASSERT_TRUE(number.ok()) << number.status().message();
  EXPECT_EQ(number->count.value, 3);
  auto list = ParseFlexRequest(R"({"component": "worker", "count": [3]})");
  EXPECT_EQ(list.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(list.status().message().find("count must be a string"), std::string::npos);
  EXPECT_FALSE(ParseFlexRequest(R"({"count": "1"})").ok());
  EXPECT_FALSE(ParseFlexRequest("[1]").ok());
}

}  // namespace
}  // namespace tarn::assembly
