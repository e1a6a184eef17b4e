// Backend: launches the processes of a training job (parameter servers,
// workers, backups, model servers) with resources, a command line and an
// environment, reports each exit, and kills on request. The coordinator
// drives it; `local` runs child processes on this machine, `yarn` asks the
// ResourceManager for containers.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

namespace tarn::cluster {

struct Resources {
  int64_t memory_mb = 1024;
  int vcores = 1;
  int gpus = 0;  // yarn.io/gpu
};

struct LaunchSpec {
  std::string role;               // "ps", "worker", "serving"; part of the log name
  int index = 0;                  // the role's index, for names and logs
  std::vector<std::string> argv;  // argv[0]: the tarn binary (a backend may use its staged copy)
  std::map<std::string, std::string> env;  // added to the launcher's environment
  Resources resources;
  // Archives (name -> URI) a backend that localizes files unpacks into the task's working
  // folder under that name (YARN: ARCHIVE local resources); the local backend ignores them.
  std::map<std::string, std::string> archives;
};

struct TaskExit {
  int64_t task = 0;      // the id Launch returned
  int exit_code = 0;     // the process's exit code; 128 + signal when killed by one
  std::string describe;  // "pid 1234 (worker 1) killed by signal 9", container diagnostics...
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;  // "local", "yarn"
  // Starts a task; returns its id. The start may complete asynchronously
  // (a YARN container), so a failure to start can also arrive as an exit.
  virtual Result<int64_t> Launch(const LaunchSpec& spec) = 0;
  // Kills a running task (SIGKILL locally); its exit is still reported.
  virtual Status Kill(int64_t task) = 0;
  // Where a task runs, for cluster.json and logs: "pid 1234", "container_...".
  virtual std::string Where(int64_t task) const = 0;
  // Exits are reported on a backend thread, once per launched task.
  virtual void OnExit(std::function<void(const TaskExit&)> callback) = 0;
  // Kills every task still running and waits for them.
  virtual void Shutdown() = 0;
};

}  // namespace tarn::cluster
