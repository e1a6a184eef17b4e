// The YARN backend: runs inside the ApplicationMaster container and launches
// the job's tasks in YARN containers.
//
//   Launch   -> one container ask with the task's resources (one priority per
//               role and shape, so allocations map back to tasks); when a
//               container arrives, startContainers runs the task's command in
//               it, with the staged tarn binary localized as ./tarn.
//   exits    <- completed container statuses from allocate.
//   Kill     -> stopContainers (or the ask withdrawn while still pending).
//   heartbeat: a thread calls allocate every heartbeat_ms (well inside
//               yarn.am.liveness-monitor.expiry-interval-ms), sends changed
//               asks and releases, caches NMTokens, re-registers on
//               AM_RESYNC or ApplicationMasterNotRegisteredException, and
//               switches to a rolled-over AMRMToken.
//
// Register and Unregister are explicit calls of the coordinator. With
// keep-containers-across-application-attempts, a second attempt receives the
// previous attempt's live containers in the register response:
// PreviousContainers() lists them and Adopt() turns one into a task whose exit
// is reported like any other. A container of an earlier attempt that ended while
// no attempt ran is reported to the new attempt as completed (the RM hands the
// earlier attempt's finished containers on): Adopt() of it reports that exit, or,
// when no report comes within a few heartbeats, the container as lost.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "cluster/backend.h"
#include "cluster/yarn/am_client.h"
#include "cluster/yarn/nm_client.h"
#include "cluster/yarn/protobuf_records.h"

namespace tarn::cluster::yarn {

// Local resources for every container, as JSON set by the submitter:
// {"tarn": {"url": "hdfs://nn:8020/user/u/.tarn/app/tarn", "size": 123,
//           "timestamp": 1700000000000, "type": "FILE", "visibility": "APPLICATION"}, ...}
inline constexpr const char* kLocalResourcesEnv = "TARN_YARN_LOCAL_RESOURCES";

Result<std::map<std::string, LocalResource>> ParseLocalResourcesJson(const std::string& json);
std::string LocalResourcesToJson(const std::map<std::string, LocalResource>& resources);

// A container command line for the NodeManager's launch script: argv quoted
// for bash (the NM runs `bash -c "<command>"`, so quoting covers both layers),
// stdout and stderr sent to the container's log folder.
std::string ContainerCommand(const std::vector<std::string>& argv);
// An environment value for the launch script's `export KEY="value"`, escaped so
// that the container sees `value` literally. Submitters must escape the AM's
// environment the same way (the RM REST API passes values to the script as is).
std::string EnvironmentValue(const std::string& value);

struct YarnBackendOptions {
  AmClientOptions am;
  // Localized into every container's working folder under these names.
  std::map<std::string, LocalResource> local_resources;
  // When local_resources has this name, a task whose argv[0] is a file of that
  // name (the AM's own "./tarn" or "/x/bin/tarn") runs the localized "./<name>".
  std::string binary_resource = "tarn";
  std::map<std::string, std::string> env;  // added to every container's environment
  // Values the NodeManager expands ({{PWD}}, $VAR), sent as they are; override `env`.
  std::map<std::string, std::string> raw_env;
  // Credentials file bytes for containers (the AM's tokens without the AMRMToken).
  std::string container_tokens;
  int heartbeat_ms = 1000;
  int nm_call_timeout_ms = 30000;
  // Consecutive failed heartbeats before the RM is given up as lost.
  int max_heartbeat_failures = 30;
};

// Options from the AM container's environment: AmClientOptionsFromEnvironment,
// $TARN_YARN_LOCAL_RESOURCES, the container credentials' other tokens, and the
// environment the AM's submitter set that containers need alike:
// LD_LIBRARY_PATH and HADOOP_CONF_DIR when they name the AM's working folder
// (staged libraries and configuration: {{PWD}} in every container), and
// HADOOP_USER_NAME and TARN_YARN_STAGING_DIR as they are.
Result<YarnBackendOptions> YarnBackendOptionsFromEnvironment();

class YarnBackend : public Backend {
 public:
  explicit YarnBackend(YarnBackendOptions options);
  ~YarnBackend() override;

  // registerApplicationMaster; starts the heartbeat thread.
  Result<RegisterResponse> Register(const RegisterRequest& request);
  // Stops the heartbeat and calls finishApplicationMaster until the RM has
  // unregistered the attempt (bounded by `timeout_ms`).
  Status Unregister(FinalApplicationStatus status, const std::string& diagnostics,
                    const std::string& tracking_url = "", int timeout_ms = 60000);
  // Containers of earlier attempts still running (from the register response).
  std::vector<Container> PreviousContainers() const;
  // Makes an earlier attempt's container a task (Kill, Where and its exit work): a running
  // one (PreviousContainers), or one that is not running any more, whose exit is the one
  // YARN reports for it (exit 1 "lost" when none comes within kAdoptReportHeartbeats).
  Result<int64_t> Adopt(const std::string& container_id, const std::string& role, int index);
  static constexpr int kAdoptReportHeartbeats = 10;
  // Called once, on the heartbeat thread, when the RM is lost or orders a shutdown.
  void OnFatal(std::function<void(const Status&)> callback);
  void SetProgress(float progress) { progress_ = progress; }
  const ApplicationAttemptId& attempt() const { return am_.attempt(); }

  // Backend
  std::string name() const override { return "yarn"; }
  Result<int64_t> Launch(const LaunchSpec& spec) override;
  Status Kill(int64_t task) override;
  std::string Where(int64_t task) const override;
  void OnExit(std::function<void(const TaskExit&)> callback) override;
  // Kills every task still running and waits (up to 60 s) for their exits.
  // Not to be called from the exit callback (it runs on the heartbeat thread).
  void Shutdown() override;

  // The NodeManager's view of a task's container (getContainerStatuses): with
  // sub_state kRunning once its process runs (after localization).
  Result<ContainerStatus> QueryContainer(int64_t task);
  // True once the NodeManager has accepted the task's start (and it has not exited).
  bool IsRunning(int64_t task) const;

  // Counts for tests and logs.
  struct Stats {
    int heartbeats = 0;
    int allocated = 0;
    int released_surplus = 0;
    int reregistrations = 0;
  };
  Stats stats() const;

 private:
  enum class State { kPending, kStarting, kRunning, kDone };
  struct Task {
    LaunchSpec spec;
    std::map<std::string, LocalResource> archives;  // spec.archives, as local resources
    int32_t priority = 0;
    State state = State::kPending;
    std::optional<Container> container;
    bool kill_requested = false;
    bool adopted = false;
    // Adopted but not running at the registration: its completion report is awaited until
    // the heartbeat count reaches report_by.
    bool awaiting_report = false;
    int report_by = 0;
  };

  void HeartbeatLoop();
  // One allocate round trip; returns tasks whose containers must be started.
  // *fatal: the RM ordered a shutdown (no retry helps).
  Status HeartbeatOnce(std::vector<int64_t>* to_start, bool* fatal);
  Status ReregisterLocked(std::unique_lock<std::mutex>& lock);
  void StartContainer(int64_t task);
  void Deliver(std::vector<TaskExit> exits);
  // Every exit is queued (with the task's state change, under mu_) for the
  // heartbeat thread to deliver, so callbacks never run inside a caller's
  // Kill or Shutdown. Without a heartbeat thread, QueueExitLocked returns
  // false and the caller delivers synchronously.
  bool QueueExitLocked(TaskExit exit);
  void DeliverQueued();
  bool HeartbeatAliveLocked() const { return heartbeat_.joinable() && !stop_ && !fatal_; }
  TaskExit ExitFor(int64_t id, const Task& task, int exit_code, const std::string& why) const;
  std::string Describe(int64_t id, const Task& task) const;
  int32_t PriorityFor(const LaunchSpec& spec);
  void StopHeartbeat();

  YarnBackendOptions options_;
  AmClient am_;
  NmClient nm_;

  mutable std::mutex mu_;
  std::condition_variable wake_;    // heartbeat thread: sleep or wake early
  std::condition_variable exited_;  // Shutdown: wait for exits
  std::optional<RegisterRequest> registration_;
  RegisterResponse register_response_;
  int32_t response_id_ = 0;
  std::atomic<float> progress_{0};
  int64_t next_task_ = 1;
  std::map<int64_t, Task> tasks_;
  std::map<int32_t, std::deque<int64_t>> pending_;  // priority -> tasks waiting for a container
  std::map<int32_t, Resource> shapes_;              // priority -> the resources asked
  std::map<std::tuple<std::string, int64_t, int, int>, int32_t> priorities_;
  std::set<int32_t> dirty_;  // priorities whose outstanding count changed
  std::vector<ContainerId> releases_;
  std::map<ContainerId, int64_t> by_container_;
  // Completions of earlier attempts' containers that are no task (yet): what Adopt reports.
  std::map<ContainerId, ContainerStatus> unclaimed_completed_;
  std::optional<Resource> headroom_;   // the last allocate answer's limit (what the queue has left)
  std::vector<TaskExit> undelivered_;  // exits before OnExit was set
  std::vector<TaskExit> queued_;       // exits for the heartbeat thread to deliver
  int delivering_ = 0;                 // batches taken from queued_, not yet delivered
  std::function<void(const TaskExit&)> on_exit_;
  std::function<void(const Status&)> on_fatal_;
  Stats stats_;

  std::thread heartbeat_;
  bool stop_ = false;
  bool wake_requested_ = false;
  bool fatal_ = false;
  std::mutex deliver_mu_;  // exits are delivered in order, one batch at a time
};

}  // namespace tarn::cluster::yarn
