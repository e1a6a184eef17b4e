// The assembly runner: runs a validated Service (spec.h) on a cluster::Backend,
// as YARN's service ApplicationMaster does (docs/ASSEMBLY.md "Running"):
//
//  - each component has number_of_containers instances "<component>-<i>", i
//    increasing and never reused; a relaunch keeps the instance (restarts + 1);
//  - a component's instances are launched only when every dependency is ready
//    for dependants: a long-lived (ALWAYS) one when all its instances are READY
//    by their readiness check, an ON_FAILURE one when all succeeded, a NEVER one
//    when all finished;
//  - readiness checks DEFAULT (the process runs), PORT (a connect to the port
//    succeeds) and HTTP (a GET answers min.success..max.success), from the
//    runner's side, on this host;
//  - restart policies: ALWAYS relaunches whatever the exit code, ON_FAILURE when
//    it is not 0, NEVER never; the service SUCCEEDS when every component has
//    finished and no instance failed, else FAILS; an ALWAYS component keeps it
//    running; `lifetime` stops it;
//  - the launch command runs under `bash -c` in the instance's folder with the
//    substitutions done, the configuration's env, and its config files written
//    under conf/ (STATIC and ARCHIVE under resources/); a TARBALL artifact is
//    unpacked into lib/ first; a DOCKER artifact runs with `docker run`
//    (the instance and log folders mounted, host network, tarn's user; the
//    container removed when the instance is killed);
//  - TensorFlow components (named ps, worker, chief, evaluator, master, or with
//    the property tarn.tf.role) get addresses reserved before any of them
//    starts, TF_CONFIG and the TonY variables, and the job ends with the chief
//    (worker 0 without one): the rest is killed and the chief's exit is the
//    service's;
//  - tarn.backups: N in a component's properties keeps N spare instances
//    running; a failed instance is replaced by one, which takes its identity
//    (instance id, TF task index and address, substitutions).
//
// With RunnerOptions::remote (tarn's YARN ApplicationMaster) the instances run in
// containers on other hosts: each runs tarn's launcher (launcher.h), which
// registers with the runner from its container (Register: its host, log folder;
// a backup waits there until it is promoted), reserves its TF port on its own
// host, sends the address (Plan) and gets back, once every TF task has one, the
// environment (TF_CONFIG ...), the command and the config files to write; it
// then execs the command, as TonY's task executor does. DOCKER artifacts set
// YARN's Docker runtime variables; a TARBALL is localized by the backend as the
// ARCHIVE lib/.
//
// State lives in memory and is written atomically to <state_dir>/status.json on
// every change; a remote runner also writes <state_dir>/state.json (runner_state.h),
// from which the next attempt of the ApplicationMaster resumes (Resume): it adopts
// the containers that still run, hears the exits of those that ended meanwhile, and
// launches again what had no container yet.
#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "assembly/spec.h"
#include "assembly/substitute.h"
#include "assembly/tf_cluster.h"
#include "cluster/backend.h"
#include "common/status.h"
#include "net/socket.h"

namespace tarn::assembly {

// Hadoop's ServiceState and container states, as the runner uses them.
enum class ServiceState { kAccepted, kStarted, kStable, kSucceeded, kFailed, kStopped };
enum class InstanceState { kInit, kRunningButUnready, kReady, kSucceeded, kFailed, kStopped };
const char* ServiceStateName(ServiceState s);    // "ACCEPTED", "STARTED", "STABLE", ...
const char* InstanceStateName(InstanceState s);  // "INIT", "RUNNING_BUT_UNREADY", "READY", ...
bool IsFinal(ServiceState s);

// Every instance's command finds the tarn binary that runs the service in $TARN_BIN: the
// supervisor's own executable on this machine, the staged ./tarn in a YARN container (set by
// the launcher). A component's configuration.env may set it otherwise.
inline constexpr const char* kTarnBinEnv = "TARN_BIN";
// The running executable (/proc/self/exe).
Result<std::string> RunningExecutable();

struct RunnerOptions {
  // The local backend: $TARN_BIN of every instance (empty: not set).
  std::string tarn_binary;
  std::string state_dir;           // status.json, instances/<instance>/, logs/ (the backend's)
  std::string host = "127.0.0.1";  // where instances run and listen (the local backend)
  std::string user;                // ${USER}
  std::string source;              // the assembly file, named in messages
  // The docker client, and whether its daemon answered (DockerAvailable).
  std::string docker = "docker";
  bool docker_available = false;
  // How often readiness checks and lifetime are looked at; Hadoop checks every
  // yarn.service.readiness-check-interval.seconds (30), which a component's or
  // the service's properties may still set.
  int tick_ms = 500;
  // Called (on the runner's thread, without its lock) after every status.json write.
  std::function<void()> on_change;
  // Instances run tarn's launcher in containers elsewhere (see above): `launcher` is its argv,
  // to which the runner appends --instance NAME --launch N.
  bool remote = false;
  std::vector<std::string> launcher;
  std::string application_id;  // the YARN application, in status.json
  int attempt = 0;             // the AM's attempt, in status.json as am_attempt (0: none)
  // Resume: makes an earlier attempt's container (its id) the backend's task for the
  // instance (YarnBackend::Adopt); its exit is then reported as any task's.
  std::function<Result<int64_t>(const std::string& container, const std::string& role, int index)>
      adopt;
};

struct RunnerState;

// A file an instance needs in its folder, planned by the runner and written by
// WritePlannedFiles (the runner locally, the launcher in a container).
struct PlannedFile {
  std::string path;     // relative to the instance's folder: conf/x, resources/y, mounts/...
  std::string content;  // the text to write, unless src is set
  std::string src;      // a file (local, file:// or hdfs://) to copy, or to unpack
  bool unpack = false;  // ARCHIVE: unpack src into path
};
Status WritePlannedFiles(const std::vector<PlannedFile>& files, const std::string& dir,
                         const std::string& log);

// YARN's Docker runtime variables for a DOCKER component (Hadoop's DockerContainers.md):
// YARN_CONTAINER_RUNTIME_TYPE=docker, _DOCKER_IMAGE, _DOCKER_CONTAINER_NETWORK (host unless
// the component's env sets one), _DOCKER_RUN_PRIVILEGED_CONTAINER with
// run_privileged_container, _DOCKER_RUN_OVERRIDE_DISABLE without a launch command; the
// component's env may set the others (_DOCKER_MOUNTS, _DOCKER_PORTS_MAPPING, ...).
std::map<std::string, std::string> YarnDockerEnv(const Component& component,
                                                 const std::string& image,
                                                 const std::map<std::string, std::string>& env);

// The launcher's control calls (remote runners), beside the supervisor's.
inline constexpr uint16_t kCallRegister = 4;
inline constexpr uint16_t kCallPlan = 5;

// Starts argv (a path, or a name found on PATH) with stdin from /dev/null and its output
// appended to `log`; in a session of its own when `new_session` (it then outlives its
// parent's terminal, like an AM). Returns its pid, for the caller to wait for.
Result<pid_t> SpawnLogged(const std::vector<std::string>& argv, const std::string& log,
                          bool new_session);

// Whether `docker info` answers within a few seconds.
bool DockerAvailable(const std::string& docker);

// Component property: how many spare instances of it run ready to take over a failed one.
inline constexpr const char* kBackupsProperty = "tarn.backups";

// The component's tarn.backups count; a bad one is an error naming the field in `file`.
Result<int> BackupsOf(const Service& service, const Component& component, const std::string& file);

// Refuses a service the runner cannot run here, naming the field or the component: a bad
// tarn.backups or tarn.tf.role, a DOCKER component without a Docker daemon, a SERVICE artifact.
Status CheckRunnable(const Service& service, const std::string& file, bool docker_available);

// Whether a component of the service has a DOCKER artifact (its own or the service's).
bool NeedsDocker(const Service& service);

// A flex request as `yarn app -flex` takes it: "3", "+1", "-2".
struct FlexCount {
  bool relative = false;
  int64_t value = 0;
};
Result<FlexCount> ParseFlexCount(const std::string& text);

// A control channel's flex call, {"component": C, "count": "+1"}: both fields strings,
// an error naming the field otherwise.
struct FlexRequest {
  std::string component;
  FlexCount count;
};
Result<FlexRequest> ParseFlexRequest(const std::string& payload);

class Runner {
 public:
  Runner(Service service, cluster::Backend& backend, RunnerOptions options);
  ~Runner();
  Runner(const Runner&) = delete;
  Runner& operator=(const Runner&) = delete;

  // Reserves the TF addresses, writes the first status.json, starts the loop.
  Status Start();
  // Instead of Start: goes on from an earlier attempt's state (remote runners), adopting
  // the containers of its launched instances through RunnerOptions::adopt; one that cannot
  // be adopted exits (its restart policy applies), one that had no container yet is
  // launched again. A state of another service, or of components the spec lacks, is refused.
  Status Resume(const RunnerState& saved);
  // Sets a component's instance count (Hadoop's messages for an unknown
  // component, a service that is not running, a restart policy that forbids it).
  // Returns the new count.
  Result<int64_t> Flex(const std::string& component, FlexCount count);
  // Kills every instance; the service ends STOPPED.
  void Stop(const std::string& why);
  // Blocks until the service reached a final state; returns it.
  ServiceState Wait();
  ServiceState state() const;
  // The service's exit code: the chief's for a TF job, else 0 when SUCCEEDED.
  int exit_code() const;
  // The status document (status.json's content).
  std::string StatusJson() const;

  // The launcher's calls (remote). A reply may come later, from the runner's thread: a
  // backup's Register when it is promoted, a TF task's Plan once every TF task has an address.
  //   Register {"instance", "launch", "host", "log_dir"} -> {"identity", "tf", "port"}
  //   Plan {"instance", "launch", "address"} -> {"env", "command", "files"}
  using Reply = std::function<void(Result<std::string>)>;
  void Register(const std::string& request, Reply reply);
  void Plan(const std::string& request, Reply reply);

 private:
  struct Instance {
    std::string name;  // "<component>-<id>"
    int64_t id = 0;
    bool backup = false;
    // The identity it runs with: its own, or the failed instance's it replaced.
    int64_t identity = 0;
    std::string replaced;  // the instance it took over from
    std::string replaced_by;
    InstanceState state = InstanceState::kInit;
    int64_t task = 0;  // the backend's id while launched
    bool launched = false;
    bool kill_requested = false;
    bool flexed_down = false;  // killed by a flex down: removed at its exit
    bool container = false;    // ran with docker run
    int restarts = 0;
    std::optional<int> exit_code;
    std::string diagnostics;
    std::string where;
    int64_t launch_time_ms = 0;
    int64_t relaunch_at_ms = 0;  // when a relaunch is due (0: none)
    int64_t next_probe_ms = 0;
    std::string host;          // where it runs (remote: its launcher's host)
    std::string container_id;  // remote: its YARN container, once allocated
    int64_t launch_seq = 0;    // remote: the launch its launcher names
    std::string log_dir;       // remote: the container's log folder
    bool registered = false;   // remote: its launcher has registered for this launch
    Reply pending_register;    // a backup's, answered at its promotion
    Reply pending_plan;        // a TF task's, answered once every TF task has an address
  };
  struct Comp {
    const Component* spec = nullptr;
    int64_t desired = 0;
    int backups = 0;
    int64_t next_id = 0;
    std::string tf_role;  // "" unless a TensorFlow task
    int failures = 0;     // failed exits so far (for the failure threshold)
    std::vector<Instance> instances;
  };
  struct ReservedAddress {
    std::string address;   // host:port
    net::Socket reserved;  // held until the task launches
  };

  // The lock, wake-ups and exits the backend reports: shared with the backend's
  // exit callback, which may outlive the runner.
  struct Mailbox {
    std::mutex mu;
    std::condition_variable wake;
    std::condition_variable done;
    std::deque<cluster::TaskExit> exits;
  };

  Status BuildComponentsLocked();
  void StartLoopLocked();
  RunnerState SavedStateLocked() const;
  void Loop();
  void HandleExit(const cluster::TaskExit& exit);
  void Advance(int64_t now_ms);
  void ProbeReadiness(std::unique_lock<std::mutex>& lock, int64_t now_ms);
  bool DependenciesReady(const Comp& c) const;
  bool ReadyForDependants(const Comp& c) const;
  bool Finished(const Comp& c) const;
  Status LaunchInstance(Comp& c, Instance& inst);
  Status LaunchStandby(Comp& c, Instance& inst);
  void Launched(Comp& c, Instance& inst, int64_t task);
  std::string DockerName(const Instance& inst) const;
  // Whether task `index` of the component's TF job is the chief (IsTfChief).
  bool IsTfChiefTask(const Comp& c, int64_t index) const;
  Status Promote(Comp& c, Instance& backup, const Instance& failed);
  struct InstancePlan {
    std::map<std::string, std::string> env;
    std::string command;
    std::vector<PlannedFile> files;
    std::vector<std::pair<std::string, std::string>> mounts;  // docker: host file -> dest
    bool docker = false;
  };
  Result<InstancePlan> MakePlan(const Comp& c, const Instance& inst, const std::string& dir);
  Result<cluster::LaunchSpec> PlanLaunch(const Comp& c, const Instance& inst,
                                         const std::string& dir);
  Result<cluster::LaunchSpec> RemoteLaunchSpec(const Comp& c, Instance& inst);
  using Replies = std::vector<std::pair<Reply, Result<std::string>>>;
  std::string RegisterAnswer(const Comp& c, const Instance& inst) const;
  Result<std::string> PlanAnswer(const Comp& c, const Instance& inst);
  void AnswerPlansLocked(Replies* out);
  bool TfAddressesKnown() const;
  Instance* FindLaunch(const std::string& name, int64_t launch, Comp** comp);
  assembly::Tokens InstanceTokensOf(const Comp& c, const Instance& inst) const;
  TfCluster TfClusterOf() const;
  void Finish(ServiceState state, const std::string& why, std::optional<int> exit_code);
  void KillAll();
  void KillInstance(const Instance& inst);
  void AddInstance(Comp& c, bool backup);
  std::string InstanceDir(const Instance& inst) const;
  Comp* FindComp(const std::string& name);
  void MarkChanged() { changed_ = true; }
  std::string StatusJsonLocked() const;
  void WriteStatusLocked();

  Service service_;
  cluster::Backend& backend_;
  RunnerOptions options_;

  std::shared_ptr<Mailbox> box_;
  std::vector<Comp> comps_;                                       // in dependency order
  std::map<std::string, std::vector<ReservedAddress>> tf_tasks_;  // TF job -> its tasks
  std::map<int64_t, std::pair<size_t, std::string>> by_task_;     // task -> (comp, instance)
  ServiceState state_ = ServiceState::kAccepted;
  std::string diagnostics_;
  std::optional<int> exit_code_;
  int64_t launch_time_ms_ = 0;
  int64_t started_steady_ms_ = 0;
  int64_t finished_steady_ms_ = 0;
  bool loop_done_ = false;
  bool stop_requested_ = false;
  std::string stop_reason_;
  bool changed_ = true;
  int64_t next_launch_seq_ = 1;
  Replies replies_;  // answered by the loop, without the lock
  std::thread loop_;
};

}  // namespace tarn::assembly
