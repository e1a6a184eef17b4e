// tarn yarn am-selftest: the smallest complete ApplicationMaster, to prove
// tarn's YARN protocol clients against a real cluster (tests/integration/
// test_yarn_am.py submits it). Run as an AM container's command, it reads the
// AMRMToken from the container credentials, registers with the
// ResourceManager's scheduler (Hadoop IPC + SASL DIGEST-MD5), asks for a
// container and starts `tarn yarn am-selftest --child ...` in it through the
// NodeManager (NMToken), waits for its exit, then starts `sleep 600` in a
// second container and kills it, and unregisters SUCCEEDED when both behaved,
// FAILED (with diagnostics) otherwise.
//
// --previous checks keep-containers-across-application-attempts: the first
// attempt starts `sleep 600` and exits without unregistering (an AM crash);
// the second finds that container in its register response, adopts it, kills
// it and unregisters SUCCEEDED.
//
// --child prints its arguments and $TARN_SELFTEST_VALUE, one per line, so the
// test can check that quoting survived the NodeManager's launch script.
#include <limits.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cluster/yarn/yarn_backend.h"
#include "commands.h"
#include "common/strings.h"

namespace tarn::app {

namespace {

using cluster::LaunchSpec;
using cluster::TaskExit;
using cluster::yarn::FinalApplicationStatus;
using cluster::yarn::YarnBackend;

constexpr const char* kUsage =
    "usage: tarn yarn am-selftest [--previous] [--memory MB] [--timeout SECONDS] [--value TEXT]\n"
    "       tarn yarn am-selftest --child ARG...\n"
    "Runs as a YARN ApplicationMaster (in the AM container YARN starts): registers, runs one\n"
    "container to completion and kills another, then unregisters. --previous: the first\n"
    "attempt leaves a container running and crashes; the second adopts and kills it.\n"
    "Needs the container's HADOOP_TOKEN_FILE_LOCATION and the scheduler address\n"
    "($TARN_YARN_SCHEDULER_ADDRESS or yarn-site.xml in $HADOOP_CONF_DIR);\n"
    "$TARN_YARN_LOCAL_RESOURCES localizes ./tarn in the containers.\n";

// The exit status of an attempt that crashes on purpose (--previous).
constexpr int kCrashExit = 3;

struct Options {
  int64_t memory_mb = 128;
  int timeout_s = 180;
  std::string value = "a \"quoted\" $HOME `x` it's \\ {{PWD}} done";
  bool previous = false;
};

void Say(const std::string& line) {
  std::printf("am-selftest: %s\n", line.c_str());
  std::fflush(stdout);
}

std::string SelfPath() {
  char buf[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "tarn";
}

int RunChild(int argc, char** argv, int first) {
  for (int i = first; i < argc; ++i) std::printf("arg=%s\n", argv[i]);
  const char* value = std::getenv("TARN_SELFTEST_VALUE");
  std::printf("value=%s\n", value ? value : "(unset)");
  const char* container = std::getenv("CONTAINER_ID");
  std::printf("container=%s\n", container ? container : "(unset)");
  return 0;
}

class ExitWaiter {
 public:
  void Record(const TaskExit& e) {
    std::lock_guard<std::mutex> lock(mu_);
    exits_[e.task] = e;
    cv_.notify_all();
  }
  std::optional<TaskExit> Wait(int64_t task, int seconds) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::seconds(seconds), [&] { return exits_.count(task) > 0; });
    auto it = exits_.find(task);
    if (it == exits_.end()) return std::nullopt;
    return it->second;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<int64_t, TaskExit> exits_;
};

LaunchSpec Sleeper(const Options& o) {
  LaunchSpec s;
  s.role = "sleeper";
  s.argv = {"sleep", "600"};
  s.resources.memory_mb = o.memory_mb;
  return s;
}

// Kills a running task and checks that its exit is reported as a failure.
void KillAndCheck(YarnBackend& backend, ExitWaiter& waiter, int64_t task, const Options& o,
                  std::vector<std::string>* problems) {
  Say("killing " + backend.Where(task));
  Status killed = backend.Kill(task);
  if (!killed.ok()) problems->push_back("kill: " + killed.message());
  auto exit = waiter.Wait(task, o.timeout_s);
  if (!exit) {
    problems->push_back("the killed container's exit was not reported");
    return;
  }
  Say("killed task exited " + std::to_string(exit->exit_code) + ": " + exit->describe);
  if (exit->exit_code == 0) problems->push_back("a killed container exited 0");
}

// Waits until the task's process runs in its container, as its NodeManager
// reports it (getContainerStatuses), bounded by the timeout.
bool WaitForContainer(YarnBackend& backend, int64_t task, const Options& o) {
  using cluster::yarn::ContainerState;
  using cluster::yarn::ContainerSubState;
  for (int i = 0; i < o.timeout_s * 10; ++i) {
    if (backend.IsRunning(task)) {
      auto s = backend.QueryContainer(task);
      if (s.ok() && s->state == ContainerState::kRunning &&
          (s->sub_state == ContainerSubState::kRunning ||
           s->sub_state == ContainerSubState::kUnknown)) {
        return true;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

void RunAndKill(YarnBackend& backend, ExitWaiter& waiter, const Options& o,
                const cluster::yarn::YarnBackendOptions& options,
                std::vector<std::string>* problems) {
  // 1. A container that runs tarn itself (the localized ./tarn, else this binary) to the end.
  LaunchSpec child;
  child.role = "child";
  child.argv = {options.local_resources.count("tarn") ? "tarn" : SelfPath(),
                "yarn",
                "am-selftest",
                "--child",
                "two words",
                "it's",
                "$HOME"};
  child.env["TARN_SELFTEST_VALUE"] = o.value;
  child.resources.memory_mb = o.memory_mb;
  auto task = backend.Launch(child);
  if (!task.ok()) {
    problems->push_back(task.status().message());
    return;
  }
  auto exit = waiter.Wait(*task, o.timeout_s);
  if (!exit) {
    problems->push_back("the child container did not finish within " + std::to_string(o.timeout_s) +
                        " s");
    return;
  }
  Say("child exited " + std::to_string(exit->exit_code) + ": " + exit->describe);
  if (exit->exit_code != 0) {
    problems->push_back("child: " + exit->describe);
    return;
  }
  // 2. A long-running container, killed through the NodeManager.
  auto sleeper = backend.Launch(Sleeper(o));
  if (!sleeper.ok()) {
    problems->push_back(sleeper.status().message());
    return;
  }
  if (!WaitForContainer(backend, *sleeper, o)) {
    problems->push_back("no container for the sleeper within " + std::to_string(o.timeout_s) +
                        " s");
    return;
  }
  KillAndCheck(backend, waiter, *sleeper, o, problems);
}

// --previous, second attempt: adopt and kill what the first one left running.
void AdoptPrevious(YarnBackend& backend, ExitWaiter& waiter, const Options& o,
                   std::vector<std::string>* problems) {
  const auto previous = backend.PreviousContainers();
  Say(std::to_string(previous.size()) + " containers from earlier attempts");
  if (previous.empty()) {
    problems->push_back("the register response listed no containers from the first attempt");
    return;
  }
  for (const auto& c : previous) {
    auto task = backend.Adopt(c.id.ToString(), "sleeper", 0);
    if (!task.ok()) {
      problems->push_back(task.status().message());
      continue;
    }
    Say("adopted " + c.id.ToString() + " on " + c.node.ToString());
    KillAndCheck(backend, waiter, *task, o, problems);
  }
}

}  // namespace

int RunYarnAmSelftest(int argc, char** argv) {
  // argv: tarn yarn am-selftest ...
  Options o;
  for (int i = 3; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--child") return RunChild(argc, argv, i + 1);
    if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (a == "--previous") {
      o.previous = true;
      continue;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "tarn: %s needs a value\n%s", a.c_str(), kUsage);
      return 2;
    }
    const std::string v = argv[++i];
    const auto n = ParseInt(v);
    if (a == "--memory" && n && *n > 0) {
      o.memory_mb = *n;
    } else if (a == "--timeout" && n && *n > 0) {
      o.timeout_s = static_cast<int>(*n);
    } else if (a == "--value") {
      o.value = v;
    } else {
      std::fprintf(stderr, "tarn: bad option %s %s\n%s", a.c_str(), v.c_str(), kUsage);
      return 2;
    }
  }

  auto options = cluster::yarn::YarnBackendOptionsFromEnvironment();
  if (!options.ok()) {
    std::fprintf(stderr, "tarn: error: %s\n", options.status().message().c_str());
    return 1;
  }
  Say("scheduler " + options->am.scheduler_host + ":" + std::to_string(options->am.scheduler_port) +
      ", " + std::to_string(options->local_resources.size()) + " local resources");
  YarnBackend backend(*options);
  ExitWaiter waiter;
  backend.OnExit([&](const TaskExit& e) { waiter.Record(e); });

  const char* nm_host = std::getenv("NM_HOST");
  auto registered = backend.Register({nm_host ? nm_host : "localhost", 0, ""});
  if (!registered.ok()) {
    std::fprintf(stderr, "tarn: error: %s\n", registered.status().message().c_str());
    return 1;
  }
  Say("registered " + backend.attempt().ToString() + " (largest container " +
      registered->maximum_capability.ToString() + ")");

  std::vector<std::string> problems;
  if (o.previous && backend.attempt().attempt <= 1) {
    auto sleeper = backend.Launch(Sleeper(o));
    if (sleeper.ok() && WaitForContainer(backend, *sleeper, o)) {
      Say("first attempt: leaving " + backend.Where(*sleeper) + " running and crashing");
      std::fflush(stdout);
      std::_Exit(kCrashExit);
    }
    problems.push_back("first attempt: no container for the sleeper");
  } else if (o.previous) {
    AdoptPrevious(backend, waiter, o, &problems);
  } else {
    RunAndKill(backend, waiter, o, *options, &problems);
  }

  const bool ok = problems.empty();
  const std::string diagnostics = ok ? "am-selftest: all checks passed" : Join(problems, "; ");
  Status s = backend.Unregister(
      ok ? FinalApplicationStatus::kSucceeded : FinalApplicationStatus::kFailed, diagnostics);
  if (!s.ok()) {
    std::fprintf(stderr, "tarn: error: %s\n", s.message().c_str());
    return 1;
  }
  Say(std::string(ok ? "SUCCEEDED" : "FAILED") + ": " + diagnostics);
  return ok ? 0 : 1;
}

}  // namespace tarn::app
