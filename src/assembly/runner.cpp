#include "assembly/runner.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <thread>

#include "assembly/runner_state.h"
#include "common/checksum.h"
#include "common/files.h"
#include "common/log.h"
#include "common/strings.h"
#include "data/file_system.h"
#include "data/json_fields.h"
#include "net/deadline.h"
#include "net/http_client.h"

namespace tarn::assembly {

Result<std::string> RunningExecutable() {
  std::string buf(4096, '\0');
  const ssize_t n = ::readlink("/proc/self/exe", buf.data(), buf.size() - 1);
  if (n <= 0) return ErrnoError("readlink /proc/self/exe", errno);
  buf.resize(static_cast<size_t>(n));
  return buf;
}

namespace {

using Json = nlohmann::ordered_json;

int64_t SteadyMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int64_t WallMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// A property of the component, else of the service (the parser merges the
// service's into each component; a Service built by hand may not).
std::string Property(const Service& service, const Component& c, const std::string& key,
                     const std::string& fallback = "") {
  auto it = c.configuration.properties.find(key);
  if (it != c.configuration.properties.end()) return it->second;
  it = service.configuration.properties.find(key);
  return it != service.configuration.properties.end() ? it->second : fallback;
}

ArtifactType ArtifactTypeOf(const Service& s, const Component& c) {
  if (c.artifact) return c.artifact->type;
  if (s.artifact) return s.artifact->type;
  return ArtifactType::kTarball;  // no artifact: a plain command (Hadoop's DefaultProvider)
}

bool HasArtifact(const Service& s, const Component& c) { return c.artifact || s.artifact; }

const Artifact& ArtifactOf(const Service& s, const Component& c) {
  return c.artifact ? *c.artifact : *s.artifact;
}

// Runs argv (found on PATH) to its end, its output appended to `log`; kills it
// after `timeout_ms`. An error says how it failed.
Status RunToEnd(const std::vector<std::string>& args, const std::string& log,
                int timeout_ms = 600000) {
  TARN_ASSIGN_OR_RETURN(const pid_t pid, SpawnLogged(args, log, /*new_session=*/false));
  const int64_t until = SteadyMs() + timeout_ms;
  int status = 0;
  while (true) {
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (r < 0 && errno != EINTR) return ErrnoError("waitpid", errno);
    if (SteadyMs() > until) {
      ::kill(pid, SIGKILL);
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      return DeadlineExceeded("'" + Join(args, " ") + "' did not end within " +
                              std::to_string(timeout_ms / 1000) + " s");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return IoError("'" + Join(args, " ") + "' failed (" +
                   (WIFEXITED(status) ? "exit code " + std::to_string(WEXITSTATUS(status))
                                      : "signal " + std::to_string(WTERMSIG(status))) +
                   "; see " + log + ")");
  }
  return Status::Ok();
}

// A local copy of a file a URI names (hdfs://, file://, a path), for tar.
Result<std::string> LocalCopy(const std::string& uri, const std::string& dir) {
  const std::string plain = data::StripFileScheme(uri);
  if (!data::IsHdfsPath(plain)) return plain;
  TARN_ASSIGN_OR_RETURN(auto fs, data::FileSystemFor(plain));
  TARN_ASSIGN_OR_RETURN(std::string bytes, fs->ReadAll(plain));
  const std::string local = JoinPath(dir, BaseName(plain));
  TARN_RETURN_IF_ERROR(WriteFileAtomic(local, bytes));
  return local;
}

Status Unpack(const std::string& archive, const std::string& into, const std::string& log) {
  TARN_RETURN_IF_ERROR(MakeDirs(into));
  if (EndsWith(ToLower(archive), ".zip") || EndsWith(ToLower(archive), ".jar")) {
    return RunToEnd({"unzip", "-q", "-o", archive, "-d", into}, log);
  }
  return RunToEnd({"tar", "-xf", archive, "-C", into}, log);
}

std::string XmlEscape(const std::string& s) { return EscapeMarkup(s); }

// A config file's text in its type's format (Hadoop's ConfigFile types); its properties are
// substituted already (ResolveInstance), a TEMPLATE's src_file is substituted here.
Result<std::string> RenderConfigFile(const ConfigFile& f, const Tokens& tokens,
                                     const std::string& where) {
  std::map<std::string, std::string> props = f.properties;
  std::string out;
  switch (f.type) {
    case ConfigFileType::kProperties:
      for (const auto& [k, v] : props) out += k + "=" + v + "\n";
      return out;
    case ConfigFileType::kXml:
    case ConfigFileType::kHadoopXml:
      if (!f.src_file.empty()) {
        return Unsupported(where + ": merging src_file " + f.src_file +
                           " into an XML file is not done by tarn's runner; give the "
                           "properties in the file itself");
      }
      out = "<?xml version=\"1.0\"?>\n<configuration>\n";
      for (const auto& [k, v] : props) {
        out += "  <property>\n    <name>" + XmlEscape(k) + "</name>\n    <value>" + XmlEscape(v) +
               "</value>\n  </property>\n";
      }
      return out + "</configuration>\n";
    case ConfigFileType::kJson: {
      Json j = Json::object();
      for (const auto& [k, v] : props) j[k] = v;
      return j.dump(2) + "\n";
    }
    case ConfigFileType::kYaml:
      for (const auto& [k, v] : props) out += Json(k).dump() + ": " + Json(v).dump() + "\n";
      return out;
    case ConfigFileType::kEnv:
      if (props.count("content")) return props["content"];
      for (const auto& [k, v] : props) out += k + "=" + v + "\n";
      return out;
    case ConfigFileType::kTemplate: {
      if (f.src_file.empty()) return props["content"];
      TARN_ASSIGN_OR_RETURN(auto fs, data::FileSystemFor(f.src_file));
      auto text = fs->ReadAll(f.src_file);
      if (!text.ok()) return text.status().WithContext(where + ": src_file");
      return Substitute(*text, tokens);
    }
    case ConfigFileType::kStatic:
    case ConfigFileType::kArchive:
      break;  // copied or unpacked by the caller
  }
  return out;
}

// The standby loop a backup runs until the runner promotes it: it then execs
// the failed instance's launch (the runner writes its environment and argv,
// NUL-separated, then the marker), so the backup's pid and log stay the same.
constexpr const char* kPromoteFile = ".tarn-promote";
constexpr const char* kPromoteEnvFile = ".tarn-promote.env";
// The env of a DOCKER instance, read by `docker run --env-file`.
constexpr const char* kDockerEnvFile = ".tarn-docker.env";
constexpr const char* kPromoteArgvFile = ".tarn-promote.argv";

std::string StandbyCommand() {
  return std::string("while [ ! -e ") + kPromoteFile + " ]; do sleep 0.2; done; " +
         "while IFS= read -r -d '' kv; do export \"$kv\"; done < " + kPromoteEnvFile + "; " +
         "mapfile -d '' -t argv < " + kPromoteArgvFile + "; exec \"${argv[@]}\"";
}

// Every instance leads a session (and process group) of its own, so that a
// kill reaches what its shell started; setsid(1) execs in place (the backend's
// child is no group leader), so the backend's pid is the group's id.
constexpr const char* kSetsid = "/usr/bin/setsid";

// How long `docker rm -f` of an instance's container may take.
constexpr int kDockerRmMs = 30000;

// `command` under bash in the instance's folder ($WORK_DIR).
std::vector<std::string> InFolder(const std::string& command) {
  return {kSetsid, "/bin/bash", "-c", "cd \"$WORK_DIR\" || exit 127\n" + command};
}

std::string NulJoined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& i : items) {
    out += i;
    out.push_back('\0');
  }
  return out;
}

}  // namespace

Result<pid_t> SpawnLogged(const std::vector<std::string>& args, const std::string& log,
                          bool new_session) {
  std::vector<std::string> copy = args;
  std::vector<char*> argv;
  for (auto& a : copy) argv.push_back(a.data());
  argv.push_back(nullptr);
  const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoError("open " + log, errno);
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fd);
    return ErrnoError("fork", errno);
  }
  if (pid == 0) {
    if (new_session) ::setsid();
    ::dup2(fd, STDOUT_FILENO);
    ::dup2(fd, STDERR_FILENO);
    const int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, STDIN_FILENO);
    ::execvp(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(fd);
  return pid;
}

const char* ServiceStateName(ServiceState s) {
  switch (s) {
    case ServiceState::kAccepted:
      return "ACCEPTED";
    case ServiceState::kStarted:
      return "STARTED";
    case ServiceState::kStable:
      return "STABLE";
    case ServiceState::kSucceeded:
      return "SUCCEEDED";
    case ServiceState::kFailed:
      return "FAILED";
    case ServiceState::kStopped:
      return "STOPPED";
  }
  return "?";
}

const char* InstanceStateName(InstanceState s) {
  switch (s) {
    case InstanceState::kInit:
      return "INIT";
    case InstanceState::kRunningButUnready:
      return "RUNNING_BUT_UNREADY";
    case InstanceState::kReady:
      return "READY";
    case InstanceState::kSucceeded:
      return "SUCCEEDED";
    case InstanceState::kFailed:
      return "FAILED";
    case InstanceState::kStopped:
      return "STOPPED";
  }
  return "?";
}

bool IsFinal(ServiceState s) {
  return s == ServiceState::kSucceeded || s == ServiceState::kFailed || s == ServiceState::kStopped;
}

bool DockerAvailable(const std::string& docker) {
  return !docker.empty() && RunToEnd({docker, "info"}, "/dev/null", 10000).ok();
}

Result<int> BackupsOf(const Service& service, const Component& component, const std::string& file) {
  const std::string text = Property(service, component, kBackupsProperty, "0");
  auto backups = ParseInt(text);
  if (!backups || *backups < 0 || *backups > 1000) {
    return InvalidArgument(file + ": components[" + std::to_string(component.index) +
                           "].configuration.properties." + kBackupsProperty +
                           ": needs a count from 0 to 1000, got '" + text + "'");
  }
  return static_cast<int>(*backups);
}

Status CheckRunnable(const Service& service, const std::string& file, bool docker_available) {
  TARN_RETURN_IF_ERROR(TfJobs(service, file).status());
  for (const Component& c : service.components) {
    TARN_RETURN_IF_ERROR(BackupsOf(service, c, file).status());
    if (!HasArtifact(service, c)) continue;
    const ArtifactType type = ArtifactTypeOf(service, c);
    if (type == ArtifactType::kDocker && !docker_available) {
      return FailedPrecondition(
          "component " + c.name + " has a DOCKER artifact (" + ArtifactOf(service, c).id +
          ") but Docker is not available here ('docker info' did not answer; "
          "tarn.assembly.docker names the client): install and start Docker, or give the "
          "component a TARBALL artifact or none");
    }
    if (type == ArtifactType::kService) {
      return Unsupported("component " + c.name +
                         " has a SERVICE artifact, which the parser imports; it cannot run");
    }
  }
  return Status::Ok();
}

bool NeedsDocker(const Service& service) {
  for (const Component& c : service.components) {
    if (HasArtifact(service, c) && ArtifactTypeOf(service, c) == ArtifactType::kDocker) return true;
  }
  return false;
}

Result<FlexCount> ParseFlexCount(const std::string& text) {
  FlexCount f;
  std::string digits = text;
  if (!text.empty() && (text[0] == '+' || text[0] == '-')) {
    f.relative = true;
    digits = text.substr(1);
  }
  auto n = ParseInt(digits);
  if (digits.empty() || !n || *n < 0) {
    return InvalidArgument("the instance count must be N, +N or -N, got '" + text + "'");
  }
  f.value = text[0] == '-' ? -*n : *n;
  return f;
}

Result<FlexRequest> ParseFlexRequest(const std::string& payload) {
  auto j = Json::parse(payload, nullptr, false);
  if (!j.is_object()) return InvalidArgument("a flex request is a JSON object");
  data::JsonFields f(&j, "a flex request", "");
  std::string component, count;
  TARN_RETURN_IF_ERROR(f.GetString("component", &component));
  TARN_RETURN_IF_ERROR(f.GetString("count", &count));
  if (component.empty()) return InvalidArgument("a flex request names no component");
  TARN_ASSIGN_OR_RETURN(FlexCount n, ParseFlexCount(count));
  return FlexRequest{component, n};
}

Runner::Runner(Service service, cluster::Backend& backend, RunnerOptions options)
    : service_(std::move(service)),
      backend_(backend),
      options_(std::move(options)),
      box_(std::make_shared<Mailbox>()) {}

Runner::~Runner() {
  Stop("the runner was destroyed");
  if (loop_.joinable()) loop_.join();
  backend_.OnExit(nullptr);
}

Status Runner::BuildComponentsLocked() {
  TARN_RETURN_IF_ERROR(MakeDirs(JoinPath(options_.state_dir, "instances")));
  TARN_RETURN_IF_ERROR(CheckRunnable(service_, options_.source, options_.docker_available));
  for (const Component& spec : service_.components) {
    Comp c;
    c.spec = &spec;
    c.desired = spec.number_of_containers.value_or(1);
    TARN_ASSIGN_OR_RETURN(c.backups, BackupsOf(service_, spec, options_.source));
    TARN_ASSIGN_OR_RETURN(c.tf_role, TfJobOf(spec, options_.source));
    comps_.push_back(std::move(c));
  }
  return Status::Ok();
}

void Runner::StartLoopLocked() {
  std::weak_ptr<Mailbox> box = box_;
  backend_.OnExit([box](const cluster::TaskExit& e) {
    auto b = box.lock();
    if (!b) return;
    std::lock_guard<std::mutex> l(b->mu);
    b->exits.push_back(e);
    b->wake.notify_all();
  });
}

Status Runner::Start() {
  std::unique_lock<std::mutex> lock(box_->mu);
  TARN_RETURN_IF_ERROR(BuildComponentsLocked());
  // TF addresses, reserved before any task starts: a listening socket per task
  // (close-on-exec, so no child inherits it), closed just before the task's launch.
  for (Comp& c : comps_) {
    if (c.tf_role.empty()) continue;
    auto& tasks = tf_tasks_[c.tf_role];
    for (int64_t i = 0; i < c.desired; ++i) {
      if (options_.remote) {  // each task's launcher reserves its address on its own host
        tasks.emplace_back();
        continue;
      }
      auto s = net::ListenTcp(options_.host, 0, 1);
      if (!s.ok()) return s.status().WithContext("reserving a port for " + c.spec->name);
      ReservedAddress t;
      t.address = options_.host + ":" + std::to_string(net::LocalPort(*s));
      t.reserved = std::move(*s);
      tasks.push_back(std::move(t));
    }
  }
  for (Comp& c : comps_) {
    for (int64_t i = 0; i < c.desired; ++i) AddInstance(c, false);
    for (int i = 0; i < c.backups; ++i) AddInstance(c, true);
  }
  launch_time_ms_ = WallMs();
  started_steady_ms_ = SteadyMs();
  state_ = ServiceState::kStarted;
  StartLoopLocked();
  WriteStatusLocked();
  loop_ = std::thread([this] { Loop(); });
  return Status::Ok();
}

Status Runner::Resume(const RunnerState& saved) {
  std::unique_lock<std::mutex> lock(box_->mu);
  if (!options_.remote || !options_.adopt) {
    return FailedPrecondition("only a remote runner with an adopt hook resumes a saved state");
  }
  if (saved.service != service_.name) {
    return FailedPrecondition("the saved state is of service '" + saved.service + "', not '" +
                              service_.name + "'");
  }
  TARN_RETURN_IF_ERROR(BuildComponentsLocked());
  for (const SavedComponent& sc : saved.components) {
    Comp* c = FindComp(sc.name);
    if (c == nullptr) {
      return FailedPrecondition("the saved state has component " + sc.name + ", which " +
                                options_.source + " has not");
    }
    c->desired = sc.desired;
    c->next_id = sc.next_id;
    c->failures = sc.failures;
    for (const SavedInstance& si : sc.instances) {
      Instance i;
      i.name = si.name;
      i.id = si.id;
      i.backup = si.backup;
      i.identity = si.identity;
      i.replaced = si.replaced;
      i.replaced_by = si.replaced_by;
      i.state = si.state;
      i.launched = si.launched;
      i.container_id = si.container;
      i.where = si.container;
      i.kill_requested = si.kill_requested;
      i.flexed_down = si.flexed_down;
      i.container = si.docker;
      i.restarts = si.restarts;
      i.exit_code = si.exit_code;
      i.diagnostics = si.diagnostics;
      i.launch_time_ms = si.launch_time_ms;
      i.host = si.host;
      i.launch_seq = si.launch_seq;
      i.log_dir = si.log_dir;
      i.registered = si.registered;
      c->instances.push_back(std::move(i));
    }
  }
  for (Comp& c : comps_) {
    if (c.tf_role.empty()) continue;
    auto& tasks = tf_tasks_[c.tf_role];
    tasks.resize(static_cast<size_t>(std::max<int64_t>(c.desired, 0)));
    auto known = saved.tf_addresses.find(c.tf_role);
    for (size_t k = 0; known != saved.tf_addresses.end() && k < tasks.size(); ++k) {
      if (k < known->second.size()) tasks[k].address = known->second[k];
    }
  }
  state_ = saved.state;
  diagnostics_ = saved.diagnostics;
  exit_code_ = saved.exit_code;
  launch_time_ms_ = saved.launch_time_ms;
  started_steady_ms_ = SteadyMs() - std::max<int64_t>(0, WallMs() - saved.launch_time_ms);
  next_launch_seq_ = std::max<int64_t>(saved.next_launch_seq, 1);
  stop_requested_ = saved.stop_requested;
  stop_reason_ = saved.stop_reason;
  StartLoopLocked();
  // The launched instances: their containers adopted; one without a container had only its
  // ask at the earlier attempt (gone with it) and is launched again; one that cannot be
  // adopted exits here, as a task of this attempt, for its restart policy to decide.
  struct ToAdopt {
    size_t comp;
    std::string name, container, role;
    int index;
  };
  std::vector<ToAdopt> to_adopt;
  for (size_t ci = 0; ci < comps_.size(); ++ci) {
    Comp& c = comps_[ci];
    std::vector<std::string> gone;
    for (Instance& i : c.instances) {
      if (!i.launched) {
        if (i.state == InstanceState::kInit) i.relaunch_at_ms = 0;
        continue;
      }
      if (!i.container_id.empty()) {
        to_adopt.push_back({ci, i.name, i.container_id, c.spec->name, static_cast<int>(i.id)});
        continue;
      }
      i.launched = false;
      i.registered = false;
      if (i.flexed_down) {
        gone.push_back(i.name);
      } else {
        i.state = i.kill_requested ? InstanceState::kStopped : InstanceState::kInit;
      }
      TARN_LOG(kInfo) << service_.name << ": " << i.name
                      << " had no container at the earlier attempt; it is launched again";
    }
    for (const auto& name : gone) {
      c.instances.erase(std::find_if(c.instances.begin(), c.instances.end(),
                                     [&](const Instance& i) { return i.name == name; }));
    }
  }
  // The backend is called without the lock (an adopted container's exit may be delivered at
  // once); the exits wait in the mailbox until the loop starts.
  lock.unlock();
  std::vector<Result<int64_t>> tasks;
  for (const auto& a : to_adopt) tasks.push_back(options_.adopt(a.container, a.role, a.index));
  lock.lock();
  int64_t unadoptable = 0;
  for (size_t k = 0; k < to_adopt.size(); ++k) {
    const ToAdopt& a = to_adopt[k];
    Comp& c = comps_[a.comp];
    auto it = std::find_if(c.instances.begin(), c.instances.end(),
                           [&](const Instance& i) { return i.name == a.name; });
    if (tasks[k].ok()) {
      it->task = *tasks[k];
      TARN_LOG(kInfo) << service_.name << ": " << a.name << " goes on in " << a.container;
    } else {
      it->task = -(++unadoptable);
      box_->exits.push_back(cluster::TaskExit{it->task, 1,
                                              a.container + " of the earlier attempt: not " +
                                                  "recovered (" + tasks[k].status().message() +
                                                  ")"});
    }
    by_task_[it->task] = {a.comp, a.name};
  }
  if (IsFinal(state_)) {  // it had ended; this attempt only stops what still runs
    finished_steady_ms_ = SteadyMs();
    KillAll();
  }
  TARN_LOG(kInfo) << service_.name << ": resumed at " << ServiceStateName(state_)
                  << " from the earlier attempt's state";
  MarkChanged();
  WriteStatusLocked();
  loop_ = std::thread([this] { Loop(); });
  return Status::Ok();
}

RunnerState Runner::SavedStateLocked() const {
  RunnerState s;
  s.service = service_.name;
  s.application_id = options_.application_id;
  s.state = state_;
  s.diagnostics = diagnostics_;
  s.exit_code = exit_code_;
  s.launch_time_ms = launch_time_ms_;
  s.next_launch_seq = next_launch_seq_;
  s.stop_requested = stop_requested_;
  s.stop_reason = stop_reason_;
  for (const auto& [job, tasks] : tf_tasks_) {
    for (const auto& t : tasks) s.tf_addresses[job].push_back(t.address);
  }
  for (const auto& c : comps_) {
    SavedComponent sc;
    sc.name = c.spec->name;
    sc.desired = c.desired;
    sc.next_id = c.next_id;
    sc.failures = c.failures;
    for (const auto& i : c.instances) {
      SavedInstance si;
      si.name = i.name;
      si.id = i.id;
      si.backup = i.backup;
      si.identity = i.identity;
      si.replaced = i.replaced;
      si.replaced_by = i.replaced_by;
      si.state = i.state;
      si.launched = i.launched;
      si.container = i.launched ? i.container_id : "";
      si.kill_requested = i.kill_requested;
      si.flexed_down = i.flexed_down;
      si.docker = i.container;
      si.restarts = i.restarts;
      si.exit_code = i.exit_code;
      si.diagnostics = i.diagnostics;
      si.launch_time_ms = i.launch_time_ms;
      si.host = i.host;
      si.launch_seq = i.launch_seq;
      si.log_dir = i.log_dir;
      si.registered = i.registered;
      sc.instances.push_back(std::move(si));
    }
    s.components.push_back(std::move(sc));
  }
  return s;
}

void Runner::AddInstance(Comp& c, bool backup) {
  Instance inst;
  inst.id = c.next_id++;
  inst.identity = inst.id;
  inst.name = c.spec->name + "-" + std::to_string(inst.id);
  inst.backup = backup;
  c.instances.push_back(std::move(inst));
  MarkChanged();
}

std::string Runner::InstanceDir(const Instance& inst) const {
  return JoinPath(JoinPath(options_.state_dir, "instances"), inst.name);
}

Runner::Comp* Runner::FindComp(const std::string& name) {
  for (auto& c : comps_) {
    if (c.spec->name == name) return &c;
  }
  return nullptr;
}

Tokens Runner::InstanceTokensOf(const Comp& c, const Instance& inst) const {
  InstanceContext context;
  context.user = options_.user;
  context.component_id = inst.identity;
  context.container_id = service_.name + "_" + inst.name + "_" + std::to_string(inst.restarts);
  // ${<INSTANCE>_HOST} / _IP of the instances of the components this one depends on.
  for (const auto& dep : c.spec->dependencies) {
    for (const auto& d : comps_) {
      if (d.spec->name != dep) continue;
      for (const auto& di : d.instances) {
        if (di.backup) continue;
        const std::string host = di.host.empty() ? options_.host : di.host;
        context.dependency_instances[InstanceName(d.spec->name, di.identity)] = {host, host};
      }
    }
  }
  return InstanceTokens(service_, *c.spec, context);
}

TfCluster Runner::TfClusterOf() const {
  TfCluster cluster;
  for (const auto& [job, tasks] : tf_tasks_) {
    for (const auto& t : tasks) cluster[job].push_back(t.address);
  }
  return cluster;
}

bool Runner::IsTfChiefTask(const Comp& c, int64_t index) const {
  return !c.tf_role.empty() && IsTfChief(TfClusterOf(), {c.tf_role, static_cast<int>(index)});
}

Result<Runner::InstancePlan> Runner::MakePlan(const Comp& c, const Instance& inst,
                                              const std::string& dir) {
  const Component& spec = *c.spec;
  InstancePlan plan;
  const bool has_artifact = HasArtifact(service_, spec);
  const ArtifactType type = ArtifactTypeOf(service_, spec);
  plan.docker = has_artifact && type == ArtifactType::kDocker;
  // Remote: the launcher sets WORK_DIR and LOG_DIR to its container's folders.
  std::map<std::string, std::string> tarn_env;
  if (!options_.remote) {
    tarn_env = {{"WORK_DIR", dir}, {"LOG_DIR", JoinPath(options_.state_dir, "logs")}};
    if (!options_.tarn_binary.empty()) tarn_env[kTarnBinEnv] = options_.tarn_binary;
  }
  const TfTask task{c.tf_role, static_cast<int>(inst.identity)};
  if (!c.tf_role.empty()) tarn_env.merge(TfTaskEnv(TfClusterOf(), task));
  ResolvedInstance resolved = ResolveInstance(spec, InstanceTokensOf(c, inst), tarn_env);
  plan.env = resolved.env;
  plan.command = resolved.launch_command;
  if (!c.tf_role.empty() && Property(service_, spec, kTfLegacyArgsProperty) == "true") {
    plan.command += " " + TfLegacyArgs(TfClusterOf(), task);
  }
  for (const ConfigFile& f : resolved.files) {
    const std::string where =
        "component " + spec.name + " " + f.field_path + " (" + f.dest_file + ")";
    const bool resource = f.type == ConfigFileType::kStatic || f.type == ConfigFileType::kArchive;
    const bool absolute = !f.dest_file.empty() && f.dest_file[0] == '/';
    PlannedFile out;
    if (absolute) {
      if (!plan.docker)
        return InvalidArgument(where + ": dest_file must be relative without Docker");
      if (options_.remote) {
        return Unsupported(where +
                           ": an absolute dest_file is not mounted by tarn's runner on YARN; "
                           "give a relative one (it is written under conf/)");
      }
      out.path = JoinPath("mounts", f.dest_file.substr(1));
      plan.mounts.emplace_back(JoinPath(dir, out.path), f.dest_file);
    } else {
      out.path = JoinPath(resource ? "resources" : "conf", f.dest_file);
    }
    if (resource) {
      if (f.src_file.empty()) return InvalidArgument(where + ": needs a src_file");
      out.src = f.src_file;
      out.unpack = f.type == ConfigFileType::kArchive;
    } else {
      TARN_ASSIGN_OR_RETURN(out.content, RenderConfigFile(f, resolved.tokens, where));
    }
    plan.files.push_back(std::move(out));
  }
  return plan;
}

Status WritePlannedFiles(const std::vector<PlannedFile>& files, const std::string& dir,
                         const std::string& log) {
  TARN_RETURN_IF_ERROR(MakeDirs(JoinPath(dir, "conf")));
  for (const PlannedFile& f : files) {
    if (f.path.empty() || f.path[0] == '/' || f.path.find("..") != std::string::npos) {
      return InvalidArgument("a planned file's path must stay in the instance folder: '" + f.path +
                             "'");
    }
    const std::string path = JoinPath(dir, f.path);
    TARN_RETURN_IF_ERROR(MakeDirs(DirName(path)));
    if (f.src.empty()) {
      TARN_RETURN_IF_ERROR(WriteFileAtomic(path, f.content));
      continue;
    }
    TARN_ASSIGN_OR_RETURN(std::string local, LocalCopy(f.src, DirName(path)));
    if (f.unpack) {
      TARN_RETURN_IF_ERROR(Unpack(local, path, log).WithContext(f.path));
    } else {
      TARN_ASSIGN_OR_RETURN(std::string bytes, ReadFile(local));
      TARN_RETURN_IF_ERROR(WriteFileAtomic(path, bytes));
    }
  }
  return Status::Ok();
}

std::map<std::string, std::string> YarnDockerEnv(const Component& component,
                                                 const std::string& image,
                                                 const std::map<std::string, std::string>& env) {
  std::map<std::string, std::string> out = {
      {"YARN_CONTAINER_RUNTIME_TYPE", "docker"},
      {"YARN_CONTAINER_RUNTIME_DOCKER_IMAGE", image},
  };
  // The host network unless the component chose one: TF tasks and readiness checks reach
  // the instance at its host's address, as the local runner's `docker run --network host`.
  if (!env.count("YARN_CONTAINER_RUNTIME_DOCKER_CONTAINER_NETWORK")) {
    out["YARN_CONTAINER_RUNTIME_DOCKER_CONTAINER_NETWORK"] = "host";
  }
  if (component.run_privileged_container) {
    out["YARN_CONTAINER_RUNTIME_DOCKER_RUN_PRIVILEGED_CONTAINER"] = "true";
  }
  if (Trim(component.launch_command).empty()) {
    out["YARN_CONTAINER_RUNTIME_DOCKER_RUN_OVERRIDE_DISABLE"] = "true";
  }
  return out;
}

Result<cluster::LaunchSpec> Runner::PlanLaunch(const Comp& c, const Instance& inst,
                                               const std::string& dir) {
  const Component& spec = *c.spec;
  const std::string log = JoinPath(JoinPath(options_.state_dir, "logs"), inst.name + ".log");
  TARN_RETURN_IF_ERROR(MakeDirs(JoinPath(dir, "conf")));
  if (HasArtifact(service_, spec) && ArtifactTypeOf(service_, spec) == ArtifactType::kTarball) {
    // Unpacked once per instance folder, as YARN localizes an ARCHIVE into ./lib.
    const std::string lib = JoinPath(dir, "lib");
    const std::string marker = JoinPath(dir, ".tarn-lib-unpacked");
    if (!PathExists(marker)) {
      TARN_ASSIGN_OR_RETURN(std::string archive, LocalCopy(ArtifactOf(service_, spec).id, dir));
      if (!PathExists(archive)) {
        return NotFound("component " + spec.name + ": the TARBALL artifact " + archive +
                        " does not exist");
      }
      TARN_RETURN_IF_ERROR(Unpack(archive, lib, log).WithContext("component " + spec.name));
      TARN_RETURN_IF_ERROR(WriteFileAtomic(marker, ""));
    }
  }
  TARN_ASSIGN_OR_RETURN(InstancePlan plan, MakePlan(c, inst, dir));
  TARN_RETURN_IF_ERROR(WritePlannedFiles(plan.files, dir, log));
  const std::map<std::string, std::string>& env = plan.env;
  const std::string& command = plan.command;
  cluster::LaunchSpec ls;
  ls.role = spec.name;
  ls.index = static_cast<int>(inst.id);
  ls.env = env;
  const auto& resource = spec.resource ? spec.resource : service_.resource;
  if (resource) {
    if (resource->cpus) ls.resources.vcores = *resource->cpus;
    if (resource->memory_mb) ls.resources.memory_mb = *resource->memory_mb;
    auto gpu = resource->additional.find("yarn.io/gpu");
    if (gpu != resource->additional.end()) ls.resources.gpus = static_cast<int>(gpu->second.value);
  }
  if (plan.docker) {
    // As YARN's Docker runtime: the instance folder and the log folder mounted at the same
    // paths, the host network (TF tasks' and readiness checks' ports), the user running tarn
    // (what the container writes stays the user's); --rm and a name so that a kill can remove
    // it. The component's env goes into the container only: the client keeps tarn's (PATH,
    // DOCKER_HOST).
    const std::string logs = JoinPath(options_.state_dir, "logs");
    ls.env.clear();
    ls.argv = {options_.docker,
               "run",
               "--rm",
               "--name",
               DockerName(inst),
               "--network",
               "host",
               "--user",
               std::to_string(::getuid()) + ":" + std::to_string(::getgid()),
               "-v",
               dir + ":" + dir,
               "-v",
               logs + ":" + logs,
               "-w",
               dir};
    for (const auto& [host, dest] : plan.mounts) {
      ls.argv.push_back("-v");
      ls.argv.push_back(host + ":" + dest + ":ro");
    }
    // The component's env through a file only this user reads, not `-e K=V` arguments that
    // every local user sees in ps; a value with a line break (which an env file cannot hold)
    // still goes as an argument.
    std::string env_file;
    for (const auto& [k, v] : env) {
      if (v.find_first_of("\r\n") == std::string::npos) {
        env_file += k + "=" + v + "\n";
      } else {
        ls.argv.push_back("-e");
        ls.argv.push_back(k + "=" + v);
      }
    }
    const std::string env_path = JoinPath(dir, kDockerEnvFile);
    {
      TARN_ASSIGN_OR_RETURN(AtomicFile f, AtomicFile::Open(env_path));
      // Private before the first byte is written.
      if (::chmod(f.temp_path().c_str(), 0600) != 0) {
        return ErrnoError("chmod 0600 " + f.temp_path(), errno);
      }
      TARN_RETURN_IF_ERROR(f.Write(env_file));
      TARN_RETURN_IF_ERROR(f.Commit());
    }
    ls.argv.push_back("--env-file");
    ls.argv.push_back(env_path);
    if (spec.run_privileged_container) ls.argv.push_back("--privileged");
    ls.argv.push_back(ArtifactOf(service_, spec).id);
    if (!command.empty()) {
      ls.argv.push_back("bash");
      ls.argv.push_back("-c");
      ls.argv.push_back(command);
    }
    ls.argv.insert(ls.argv.begin(), kSetsid);
  } else {
    ls.argv = InFolder(command);
  }
  return ls;
}

Result<cluster::LaunchSpec> Runner::RemoteLaunchSpec(const Comp& c, Instance& inst) {
  const Component& spec = *c.spec;
  cluster::LaunchSpec ls;
  ls.role = spec.name;
  ls.index = static_cast<int>(inst.id);
  const auto& resource = spec.resource ? spec.resource : service_.resource;
  if (resource) {
    if (resource->cpus) ls.resources.vcores = *resource->cpus;
    if (resource->memory_mb) ls.resources.memory_mb = *resource->memory_mb;
    auto gpu = resource->additional.find("yarn.io/gpu");
    if (gpu != resource->additional.end()) ls.resources.gpus = static_cast<int>(gpu->second.value);
  }
  inst.container = false;
  if (HasArtifact(service_, spec)) {
    const Artifact& a = ArtifactOf(service_, spec);
    if (a.type == ArtifactType::kTarball) {
      ls.archives["lib"] = a.id;  // YARN unpacks it into ./lib, as Hadoop's TarballProviderService
    } else if (a.type == ArtifactType::kDocker) {
      std::map<std::string, std::string> env;
      for (const auto& [k, v] : spec.configuration.env) env[k] = v;
      ls.env = YarnDockerEnv(spec, a.id, env);
      inst.container = true;
    }
  }
  // The component's own runtime variables (a DOCKER component's _DOCKER_MOUNTS, ...) belong to
  // the launch context too: the NodeManager reads them before the container starts.
  for (const auto& [k, v] : spec.configuration.env) {
    if (StartsWith(k, "YARN_CONTAINER_RUNTIME_")) ls.env[k] = v;
  }
  // What the launcher will get, planned once here too: a file the runner cannot give it
  // (an absolute dest_file, a TEMPLATE whose src_file is unreadable) refuses the launch.
  if (!inst.backup) TARN_RETURN_IF_ERROR(MakePlan(c, inst, "").status());
  inst.launch_seq = next_launch_seq_++;
  ls.argv = options_.launcher;
  for (const std::string& a : {std::string("--instance"), inst.name, std::string("--launch"),
                               std::to_string(inst.launch_seq)}) {
    ls.argv.push_back(a);
  }
  return ls;
}

std::string Runner::DockerName(const Instance& inst) const {
  // Unique per assembly folder and instance (a same-named service in another folder gets
  // another name), and the same on every launch: a leftover is recognisably this instance's.
  std::string name = "tarn-" + service_.name + "-" + inst.name;
  for (char& ch : name) {
    const bool allowed =
        std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '.' || ch == '-';
    if (!allowed) ch = '-';
  }
  char folder[16];
  std::snprintf(folder, sizeof(folder), "-%08x",
                Crc32c(0, options_.state_dir.data(), options_.state_dir.size()));
  return name + folder;
}

Status Runner::LaunchInstance(Comp& c, Instance& inst) {
  if (options_.remote) {
    TARN_ASSIGN_OR_RETURN(cluster::LaunchSpec ls, RemoteLaunchSpec(c, inst));
    TARN_ASSIGN_OR_RETURN(int64_t task, backend_.Launch(ls));
    Launched(c, inst, task);
    return Status::Ok();
  }
  const std::string dir = InstanceDir(inst);
  TARN_ASSIGN_OR_RETURN(cluster::LaunchSpec ls, PlanLaunch(c, inst, dir));
  const bool container = ls.argv.size() > 1 && ls.argv[1] == options_.docker;
  if (container) {
    // One this instance left behind (its supervisor was killed before it could remove it)
    // would refuse the name.
    (void)RunToEnd({options_.docker, "rm", "-f", DockerName(inst)}, "/dev/null", kDockerRmMs);
  }
  if (!c.tf_role.empty()) tf_tasks_[c.tf_role][inst.identity].reserved.Close();
  TARN_ASSIGN_OR_RETURN(int64_t task, backend_.Launch(ls));
  inst.container = container;
  Launched(c, inst, task);
  return Status::Ok();
}

void Runner::Launched(Comp& c, Instance& inst, int64_t task) {
  inst.task = task;
  inst.launched = true;
  inst.kill_requested = false;
  inst.relaunch_at_ms = 0;
  inst.launch_time_ms = WallMs();
  inst.where = backend_.Where(task);
  inst.container_id.clear();
  inst.exit_code.reset();
  inst.next_probe_ms = 0;
  const bool checked = !inst.backup && c.spec->readiness_check &&
                       c.spec->readiness_check->type != ReadinessType::kDefault;
  inst.state = checked ? InstanceState::kRunningButUnready : InstanceState::kReady;
  inst.registered = false;
  inst.pending_register = nullptr;
  inst.pending_plan = nullptr;
  if (options_.remote) {
    // Running (and, without a check, ready) once its launcher registers from its container.
    inst.state = InstanceState::kRunningButUnready;
    inst.host.clear();
    inst.log_dir.clear();
  } else {
    inst.host = options_.host;
  }
  by_task_[task] = {static_cast<size_t>(&c - comps_.data()), inst.name};
  MarkChanged();
}

Status Runner::LaunchStandby(Comp& c, Instance& inst) {
  if (options_.remote) {  // its launcher waits in Register until a promotion answers it
    TARN_ASSIGN_OR_RETURN(cluster::LaunchSpec ls, RemoteLaunchSpec(c, inst));
    TARN_ASSIGN_OR_RETURN(int64_t task, backend_.Launch(ls));
    Launched(c, inst, task);
    return Status::Ok();
  }
  const std::string dir = InstanceDir(inst);
  TARN_RETURN_IF_ERROR(MakeDirs(dir));
  (void)RemoveAll(JoinPath(dir, kPromoteFile));
  cluster::LaunchSpec ls;
  ls.role = c.spec->name;
  ls.index = static_cast<int>(inst.id);
  ls.env["WORK_DIR"] = dir;
  ls.argv = InFolder(StandbyCommand());
  TARN_ASSIGN_OR_RETURN(int64_t task, backend_.Launch(ls));
  Launched(c, inst, task);
  return Status::Ok();
}

Status Runner::Promote(Comp& c, Instance& backup, const Instance& failed) {
  if (options_.remote) {
    backup.backup = false;
    backup.identity = failed.identity;
    backup.replaced = failed.name;
    const bool checked =
        c.spec->readiness_check && c.spec->readiness_check->type != ReadinessType::kDefault;
    backup.state = checked ? InstanceState::kRunningButUnready : InstanceState::kReady;
    backup.next_probe_ms = 0;
    if (backup.pending_register) {
      replies_.emplace_back(std::move(backup.pending_register), RegisterAnswer(c, backup));
      backup.pending_register = nullptr;
    }
    MarkChanged();
    return Status::Ok();
  }
  const std::string dir = InstanceDir(backup);
  Instance as = backup;
  as.identity = failed.identity;
  TARN_ASSIGN_OR_RETURN(cluster::LaunchSpec ls, PlanLaunch(c, as, dir));
  // The standby already leads its session: a second setsid would fork.
  if (!ls.argv.empty() && ls.argv[0] == kSetsid) ls.argv.erase(ls.argv.begin());
  std::vector<std::string> env;
  for (const auto& [k, v] : ls.env) env.push_back(k + "=" + v);
  TARN_RETURN_IF_ERROR(WriteFileAtomic(JoinPath(dir, kPromoteEnvFile), NulJoined(env)));
  TARN_RETURN_IF_ERROR(WriteFileAtomic(JoinPath(dir, kPromoteArgvFile), NulJoined(ls.argv)));
  if (!c.tf_role.empty()) tf_tasks_[c.tf_role][failed.identity].reserved.Close();
  TARN_RETURN_IF_ERROR(WriteFileAtomic(JoinPath(dir, kPromoteFile),
                                       backup.name + " takes over from " + failed.name + "\n"));
  backup.backup = false;
  backup.identity = failed.identity;
  backup.replaced = failed.name;
  backup.container = ls.argv[0] == options_.docker;
  const bool checked =
      c.spec->readiness_check && c.spec->readiness_check->type != ReadinessType::kDefault;
  backup.state = checked ? InstanceState::kRunningButUnready : InstanceState::kReady;
  backup.next_probe_ms = 0;
  MarkChanged();
  return Status::Ok();
}

void Runner::HandleExit(const cluster::TaskExit& exit) {
  auto it = by_task_.find(exit.task);
  if (it == by_task_.end()) return;
  const auto [comp_index, name] = it->second;
  by_task_.erase(it);
  Comp& c = comps_[comp_index];
  auto inst_it = std::find_if(c.instances.begin(), c.instances.end(),
                              [&](const Instance& i) { return i.name == name; });
  if (inst_it == c.instances.end()) return;
  Instance& inst = *inst_it;
  inst.launched = false;
  inst.registered = false;
  inst.pending_register = nullptr;
  inst.pending_plan = nullptr;
  inst.exit_code = exit.exit_code;
  inst.diagnostics = exit.describe;
  MarkChanged();
  TARN_LOG(kInfo) << service_.name << ": " << inst.name << " " << exit.describe;
  if (inst.container && !options_.remote) {
    // A killed `docker run` client leaves its container running.
    (void)RunToEnd({options_.docker, "rm", "-f", DockerName(inst)}, "/dev/null", kDockerRmMs);
    if (exit.exit_code == 125) {
      inst.diagnostics +=
          "; 125: docker run could not start the container (a missing image, "
          "a daemon error; see the instance's log)";
    }
  }
  if (inst.kill_requested) {
    if (inst.flexed_down) {
      c.instances.erase(inst_it);
    } else {
      inst.state = InstanceState::kStopped;
    }
    return;
  }
  if (IsFinal(state_)) {
    inst.state = InstanceState::kStopped;
    return;
  }
  const RestartPolicy policy = c.spec->restart_policy;
  if (inst.backup) {  // a standby that died: replaced by a fresh one
    inst.state = InstanceState::kFailed;
    ++c.failures;
    AddInstance(c, true);
    return;
  }
  const bool failed = exit.exit_code != 0;
  if (failed) ++c.failures;
  const int threshold = static_cast<int>(
      ParseInt(Property(service_, *c.spec, "yarn.service.container-failure-per-component.threshold",
                        "10"))
          .value_or(10));
  const bool over_threshold = failed && threshold > 0 && c.failures > threshold;
  if (failed) {
    auto spare = std::find_if(c.instances.begin(), c.instances.end(), [](const Instance& i) {
      return i.backup && i.launched && i.state == InstanceState::kReady;
    });
    // A takeover counts as a relaunch: an instance that fails every time does not use up
    // backups (the pool is refilled) for ever.
    if (spare != c.instances.end() && over_threshold) {
      inst.state = InstanceState::kFailed;
      Finish(ServiceState::kFailed,
             "component " + c.spec->name + " failed " + std::to_string(c.failures) +
                 " times, more than yarn.service.container-failure-per-component.threshold (" +
                 std::to_string(threshold) + "); no backup takes over " + inst.name,
             exit.exit_code);
      return;
    }
    if (spare != c.instances.end()) {
      Instance& b = *spare;
      const std::string failed_name = inst.name;
      Status s = Promote(c, b, inst);
      Instance& dead = *std::find_if(c.instances.begin(), c.instances.end(),
                                     [&](const Instance& i) { return i.name == failed_name; });
      if (s.ok()) {
        dead.state = InstanceState::kFailed;
        dead.replaced_by = b.name;
        TARN_LOG(kInfo) << service_.name << ": " << b.name << " takes over from " << dead.name
                        << " (task index " << dead.identity << ")";
        AddInstance(c, true);  // keep the pool full
        return;
      }
      TARN_LOG(kWarn) << service_.name << ": promoting " << b.name << " failed: " << s.message();
    }
  }
  const bool relaunch =
      policy == RestartPolicy::kAlways || (policy == RestartPolicy::kOnFailure && failed);
  if (relaunch && over_threshold) {
    inst.state = InstanceState::kFailed;
    Finish(ServiceState::kFailed,
           "component " + c.spec->name + " failed " + std::to_string(c.failures) +
               " times, more than yarn.service.container-failure-per-component.threshold (" +
               std::to_string(threshold) + ")",
           exit.exit_code == 0 ? 1 : exit.exit_code);
    return;
  }
  if (relaunch) {
    ++inst.restarts;
    inst.state = InstanceState::kInit;
    const int64_t delay =
        ParseInt(Property(service_, *c.spec, "tarn.assembly.relaunch-delay-ms", "1000"))
            .value_or(1000);
    inst.relaunch_at_ms = SteadyMs() + std::max<int64_t>(0, delay);
    if (!c.tf_role.empty() && !options_.remote) {  // hold the address again until the relaunch
      auto& t = tf_tasks_[c.tf_role][inst.identity];
      std::string host;
      int port = 0;
      if (net::SplitHostPort(t.address, &host, &port).ok()) {
        auto s = net::ListenTcp(host, port, 1);
        if (s.ok()) t.reserved = std::move(*s);
      }
    }
    return;
  }
  inst.state = failed ? InstanceState::kFailed : InstanceState::kSucceeded;
  if (IsTfChiefTask(c, inst.identity)) {
    // The job ends with its chief: the rest is killed, its exit is the job's.
    Finish(failed ? ServiceState::kFailed : ServiceState::kSucceeded,
           "the chief " + inst.name + " " + exit.describe, exit.exit_code);
  }
}

bool Runner::DependenciesReady(const Comp& c) const {
  for (const auto& dep : c.spec->dependencies) {
    for (const auto& d : comps_) {
      if (d.spec->name == dep && !ReadyForDependants(d)) return false;
    }
  }
  return true;
}

namespace {
bool Primary(const auto& inst) { return !inst.backup && inst.replaced_by.empty(); }
}  // namespace

bool Runner::ReadyForDependants(const Comp& c) const {
  int64_t n = 0;
  for (const auto& i : c.instances) {
    if (!Primary(i)) continue;
    ++n;
    switch (c.spec->restart_policy) {
      case RestartPolicy::kAlways:
        if (i.state != InstanceState::kReady) return false;
        break;
      case RestartPolicy::kOnFailure:
        if (i.state != InstanceState::kSucceeded) return false;
        break;
      case RestartPolicy::kNever:
        if (i.state != InstanceState::kSucceeded && i.state != InstanceState::kFailed) return false;
        break;
    }
  }
  return n >= c.desired;
}

bool Runner::Finished(const Comp& c) const {
  return c.spec->restart_policy != RestartPolicy::kAlways && ReadyForDependants(c);
}

void Runner::Finish(ServiceState state, const std::string& why, std::optional<int> exit_code) {
  if (IsFinal(state_)) return;
  state_ = state;
  diagnostics_ = why;
  exit_code_ = exit_code;
  finished_steady_ms_ = SteadyMs();
  TARN_LOG(kInfo) << service_.name << ": " << ServiceStateName(state) << " (" << why << ")";
  KillAll();
  MarkChanged();
}

void Runner::KillInstance(const Instance& inst) {
  // Locally the instance's process group too (see kSetsid).
  if (backend_.name() == "local" && StartsWith(inst.where, "pid ")) {
    auto pid = ParseInt(inst.where.substr(4));
    if (pid && *pid > 1) ::kill(-static_cast<pid_t>(*pid), SIGKILL);
  }
  (void)backend_.Kill(inst.task);
}

void Runner::KillAll() {
  for (auto& c : comps_) {
    for (auto& i : c.instances) {
      if (i.launched) {
        i.kill_requested = true;
        KillInstance(i);
      } else if (i.state == InstanceState::kInit) {
        i.state = InstanceState::kStopped;
        i.relaunch_at_ms = 0;
      }
    }
  }
}

void Runner::Advance(int64_t now_ms) {
  if (stop_requested_) {
    Finish(ServiceState::kStopped, stop_reason_, std::nullopt);
    return;
  }
  if (service_.lifetime_s && *service_.lifetime_s > 0 &&
      now_ms - started_steady_ms_ >= *service_.lifetime_s * 1000) {
    Finish(ServiceState::kStopped,
           "its lifetime of " + std::to_string(*service_.lifetime_s) + " s expired", std::nullopt);
    return;
  }
  for (auto& c : comps_) {
    if (!DependenciesReady(c)) continue;
    for (auto& inst : c.instances) {
      if (inst.launched || inst.state != InstanceState::kInit) continue;
      if (inst.relaunch_at_ms > now_ms) continue;
      Status s = inst.backup ? LaunchStandby(c, inst) : LaunchInstance(c, inst);
      if (!s.ok()) {
        inst.state = InstanceState::kFailed;
        inst.diagnostics = s.message();
        ++c.failures;
        MarkChanged();
        TARN_LOG(kError) << service_.name << ": launching " << inst.name
                         << " failed: " << s.message();
        Finish(ServiceState::kFailed, "launching " + inst.name + " failed: " + s.message(), 1);
        return;
      }
    }
  }
  bool has_tf_chief = false;
  for (const auto& c : comps_) has_tf_chief = has_tf_chief || IsTfChiefTask(c, 0);
  if (!has_tf_chief) {
    bool all_finished = true, any_failed = false;
    for (const auto& c : comps_) {
      if (!Finished(c)) all_finished = false;
      for (const auto& i : c.instances) {
        if (Primary(i) && i.state == InstanceState::kFailed) any_failed = true;
      }
    }
    if (all_finished) {
      Finish(any_failed ? ServiceState::kFailed : ServiceState::kSucceeded,
             any_failed ? "every component finished, and an instance failed"
                        : "every component finished",
             any_failed ? 1 : 0);
      return;
    }
  }
  bool stable = true;
  for (const auto& c : comps_) {
    if (Finished(c)) continue;
    int64_t ready = 0;
    for (const auto& i : c.instances) {
      if (Primary(i) && i.state == InstanceState::kReady) ++ready;
    }
    if (ready < c.desired) stable = false;
  }
  const ServiceState next = stable ? ServiceState::kStable : ServiceState::kStarted;
  if (next != state_) {
    state_ = next;
    MarkChanged();
  }
}

void Runner::ProbeReadiness(std::unique_lock<std::mutex>& lock, int64_t now_ms) {
  struct Probe {
    size_t comp;
    std::string name;
    int64_t task;
    ReadinessType type;
    std::map<std::string, std::string> props;
    std::string host;
  };
  std::vector<Probe> probes;
  for (size_t ci = 0; ci < comps_.size(); ++ci) {
    Comp& c = comps_[ci];
    if (!c.spec->readiness_check) continue;
    for (auto& i : c.instances) {
      if (!i.launched || i.state != InstanceState::kRunningButUnready) continue;
      if (i.next_probe_ms > now_ms) continue;
      if (options_.remote && !i.registered) continue;  // its host is not known yet
      auto tokens = InstanceTokensOf(c, i);
      tokens["THIS_HOST"] = i.host;
      Probe p{ci, i.name, i.task, c.spec->readiness_check->type, {}, i.host};
      for (const auto& [k, v] : c.spec->readiness_check->properties) {
        p.props[k] = Substitute(v, tokens);
      }
      probes.push_back(std::move(p));
      const auto interval = ParseInt(
          Property(service_, *c.spec, "yarn.service.readiness-check-interval.seconds", ""));
      i.next_probe_ms = now_ms + (interval ? *interval * 1000 : options_.tick_ms);
    }
  }
  if (probes.empty()) return;
  lock.unlock();
  std::vector<bool> ok(probes.size(), false);
  for (size_t k = 0; k < probes.size(); ++k) {
    const Probe& p = probes[k];
    const int timeout = static_cast<int>(
        ParseInt(p.props.count("timeout") ? p.props.at("timeout") : "1000").value_or(1000));
    if (p.type == ReadinessType::kPort) {
      auto port = ParseInt(p.props.count("port") ? p.props.at("port") : "");
      if (!port) continue;
      auto s = net::ConnectTcp(p.host, static_cast<int>(*port), net::Deadline::InMs(timeout));
      ok[k] = s.ok();
    } else if (p.type == ReadinessType::kHttp) {
      net::HttpClient http;
      net::ClientRequest r;
      r.url = p.props.count("url") ? p.props.at("url") : "";
      r.connect_timeout_ms = timeout;
      r.timeout_ms = timeout * 2;
      auto resp = http.Send(r);
      const int lo = static_cast<int>(
          ParseInt(p.props.count("min.success") ? p.props.at("min.success") : "200").value_or(200));
      const int hi = static_cast<int>(
          ParseInt(p.props.count("max.success") ? p.props.at("max.success") : "299").value_or(299));
      ok[k] = resp.ok() && resp->status >= lo && resp->status <= hi;
    }
  }
  lock.lock();
  for (size_t k = 0; k < probes.size(); ++k) {
    if (!ok[k]) continue;
    Comp& c = comps_[probes[k].comp];
    for (auto& i : c.instances) {
      if (i.name == probes[k].name && i.launched && i.task == probes[k].task &&
          i.state == InstanceState::kRunningButUnready) {
        i.state = InstanceState::kReady;
        TARN_LOG(kInfo) << service_.name << ": " << i.name << " is READY";
        MarkChanged();
      }
    }
  }
}

void Runner::Loop() {
  std::unique_lock<std::mutex> lock(box_->mu);
  while (true) {
    while (!box_->exits.empty()) {
      cluster::TaskExit e = box_->exits.front();
      box_->exits.pop_front();
      HandleExit(e);
    }
    const int64_t now = SteadyMs();
    if (!IsFinal(state_)) Advance(now);
    if (!IsFinal(state_)) ProbeReadiness(lock, now);
    bool any_launched = false;
    for (auto& c : comps_) {
      for (auto& i : c.instances) {
        any_launched = any_launched || i.launched;
        if (options_.remote && i.launched && i.container_id.empty()) {
          // Recorded as soon as YARN allocates it: a next attempt adopts it, never launching
          // a second copy.
          std::string where = backend_.Where(i.task);
          if (StartsWith(where, "container_")) {
            i.container_id = std::move(where);
            MarkChanged();
          }
        }
      }
    }
    if (!replies_.empty()) {
      Replies out;
      out.swap(replies_);
      lock.unlock();
      for (auto& [reply, answer] : out) reply(std::move(answer));
      lock.lock();
    }
    if (changed_) WriteStatusLocked();
    if (changed_ && options_.on_change) {
      changed_ = false;
      lock.unlock();
      options_.on_change();
      lock.lock();
    }
    changed_ = false;
    // A final state waits for its instances' exits (bounded), so that none is
    // left behind and status.json shows them STOPPED.
    if (IsFinal(state_) && (!any_launched || SteadyMs() - finished_steady_ms_ > 30000)) break;
    if (!box_->exits.empty()) continue;
    box_->wake.wait_for(lock, std::chrono::milliseconds(options_.tick_ms));
  }
  WriteStatusLocked();
  loop_done_ = true;
  box_->done.notify_all();
}

Runner::Instance* Runner::FindLaunch(const std::string& name, int64_t launch, Comp** comp) {
  for (auto& c : comps_) {
    for (auto& i : c.instances) {
      if (i.name == name && i.launched && i.launch_seq == launch) {
        *comp = &c;
        return &i;
      }
    }
  }
  return nullptr;
}

bool Runner::TfAddressesKnown() const {
  for (const auto& [job, tasks] : tf_tasks_) {
    for (const auto& t : tasks) {
      if (t.address.empty()) return false;
    }
  }
  return true;
}

std::string Runner::RegisterAnswer(const Comp& c, const Instance& inst) const {
  int port = 0;
  if (!c.tf_role.empty()) {
    // A relaunched or replacing task takes its address back where it can: same host, same port
    // (the other tasks have it in their TF_CONFIG).
    const auto& tasks = tf_tasks_.at(c.tf_role);
    if (inst.identity < static_cast<int64_t>(tasks.size())) {
      std::string host;
      int p = 0;
      if (net::SplitHostPort(tasks[inst.identity].address, &host, &p).ok() && host == inst.host) {
        port = p;
      }
    }
  }
  return Json{{"identity", inst.identity}, {"tf", !c.tf_role.empty()}, {"port", port}}.dump();
}

Result<std::string> Runner::PlanAnswer(const Comp& c, const Instance& inst) {
  TARN_ASSIGN_OR_RETURN(InstancePlan plan, MakePlan(c, inst, ""));
  Json files = Json::array();
  for (const PlannedFile& f : plan.files) {
    files.push_back(
        {{"path", f.path}, {"content", f.content}, {"src", f.src}, {"unpack", f.unpack}});
  }
  Json env = Json::object();
  for (const auto& [k, v] : plan.env) env[k] = v;
  return Json{{"instance", inst.name}, {"env", env}, {"command", plan.command}, {"files", files}}
      .dump();
}

void Runner::AnswerPlansLocked(Replies* out) {
  if (!TfAddressesKnown()) return;
  for (auto& c : comps_) {
    for (auto& i : c.instances) {
      if (!i.pending_plan) continue;
      auto answer = PlanAnswer(c, i);
      if (!answer.ok()) i.diagnostics = answer.status().message();
      out->emplace_back(std::move(i.pending_plan), std::move(answer));
      i.pending_plan = nullptr;
    }
  }
}

namespace {

// A launcher's registration or plan request, read with the project's typed accessors: a field
// of the wrong type is an error naming it, never an exception on the runner's control thread.
struct LauncherRequest {
  std::string instance;
  int64_t launch = 0;
  std::string host;
  std::string log_dir;
  std::string address;
};

Result<LauncherRequest> ParseLauncherRequest(const std::string& request, const char* what) {
  auto j = Json::parse(request, nullptr, false);
  if (!j.is_object()) return InvalidArgument(std::string(what) + " is not a JSON object");
  LauncherRequest r;
  data::JsonFields f(&j, what, "");
  TARN_RETURN_IF_ERROR(f.GetString("instance", &r.instance));
  TARN_RETURN_IF_ERROR(f.GetInt64("launch", &r.launch));
  TARN_RETURN_IF_ERROR(f.GetString("host", &r.host));
  TARN_RETURN_IF_ERROR(f.GetString("log_dir", &r.log_dir));
  TARN_RETURN_IF_ERROR(f.GetString("address", &r.address));
  return r;
}

}  // namespace

void Runner::Register(const std::string& request, Reply reply) {
  auto parsed = ParseLauncherRequest(request, "a launcher's registration");
  if (!parsed.ok()) {
    reply(parsed.status());
    return;
  }
  const LauncherRequest& j = *parsed;
  std::unique_lock<std::mutex> lock(box_->mu);
  Comp* c = nullptr;
  Instance* inst = FindLaunch(j.instance, j.launch, &c);
  if (inst == nullptr || IsFinal(state_)) {
    lock.unlock();
    reply(FailedPrecondition("instance " + (j.instance.empty() ? "?" : j.instance) + " launch " +
                             std::to_string(j.launch) + " is not one the runner waits for"));
    return;
  }
  inst->registered = true;
  inst->host = j.host;
  inst->log_dir = j.log_dir;
  inst->where = backend_.Where(inst->task);  // its container, allocated by now
  if (StartsWith(inst->where, "container_")) inst->container_id = inst->where;
  TARN_LOG(kInfo) << service_.name << ": " << inst->name << " runs on " << inst->host << " ("
                  << inst->where << ")";
  const bool checked =
      c->spec->readiness_check && c->spec->readiness_check->type != ReadinessType::kDefault;
  if (inst->backup || !checked) inst->state = InstanceState::kReady;
  MarkChanged();
  box_->wake.notify_all();
  if (inst->backup) {  // answered when it takes over a failed instance
    inst->pending_register = std::move(reply);
    return;
  }
  std::string answer = RegisterAnswer(*c, *inst);
  lock.unlock();
  reply(std::move(answer));
}

void Runner::Plan(const std::string& request, Reply reply) {
  auto parsed = ParseLauncherRequest(request, "a launcher's plan request");
  if (!parsed.ok()) {
    reply(parsed.status());
    return;
  }
  const LauncherRequest& j = *parsed;
  std::unique_lock<std::mutex> lock(box_->mu);
  Comp* c = nullptr;
  Instance* inst = FindLaunch(j.instance, j.launch, &c);
  if (inst == nullptr || !inst->registered || inst->backup || IsFinal(state_)) {
    lock.unlock();
    reply(FailedPrecondition("instance " + (j.instance.empty() ? "?" : j.instance) +
                             " asked for its plan before it registered, or after its launch"));
    return;
  }
  if (c->tf_role.empty()) {
    auto answer = PlanAnswer(*c, *inst);
    if (!answer.ok()) {
      inst->diagnostics = answer.status().message();
      MarkChanged();
    }
    lock.unlock();
    reply(std::move(answer));
    return;
  }
  const std::string address = j.address;
  std::string host;
  int port = 0;
  if (!net::SplitHostPort(address, &host, &port).ok() || port <= 0) {
    lock.unlock();
    reply(InvalidArgument("TF task " + inst->name + " sent no host:port address ('" + address +
                          "')"));
    return;
  }
  auto& task = tf_tasks_[c->tf_role][inst->identity];
  if (!task.address.empty() && task.address != address) {
    TARN_LOG(kWarn) << service_.name << ": TF task " << c->tf_role << ":" << inst->identity
                    << " moved from " << task.address << " to " << address
                    << "; tasks started before have the old address in TF_CONFIG";
  }
  task.address = address;
  TARN_LOG(kInfo) << service_.name << ": " << inst->name << " is TF task " << c->tf_role << ":"
                  << inst->identity << " at " << address;
  inst->pending_plan = std::move(reply);
  MarkChanged();
  Replies out;
  AnswerPlansLocked(&out);
  lock.unlock();
  for (auto& [r, answer] : out) r(std::move(answer));
}

Result<int64_t> Runner::Flex(const std::string& component, FlexCount count) {
  std::unique_lock<std::mutex> lock(box_->mu);
  Comp* c = FindComp(component);
  if (c == nullptr) return NotFound(component + " does not exist !");
  if (IsFinal(state_) || stop_requested_) {
    return FailedPrecondition(service_.name + " is at " + ServiceStateName(state_) +
                              " state, flex can only be invoked when service is running");
  }
  if (c->spec->restart_policy != RestartPolicy::kAlways) {
    return FailedPrecondition(
        "component " + component + " has restart_policy " +
        RestartPolicyName(c->spec->restart_policy) +
        ": flexing is not supported for components which have restart_policy=ON_FAILURE/NEVER");
  }
  if (!c->tf_role.empty()) {
    return FailedPrecondition("component " + component + " is the TensorFlow role " + c->tf_role +
                              ": its tasks' addresses are fixed in TF_CONFIG at launch");
  }
  int64_t target = count.relative ? c->desired + count.value : count.value;
  if (target < 0) {
    TARN_LOG(kWarn) << "flex of " << component << " to " << target << " instances: 0 instead";
    target = 0;
  }
  std::vector<size_t> primaries;
  for (size_t k = 0; k < c->instances.size(); ++k) {
    if (Primary(c->instances[k]) && !c->instances[k].flexed_down) primaries.push_back(k);
  }
  int64_t have = static_cast<int64_t>(primaries.size());
  for (; have < target; ++have) AddInstance(*c, false);
  // Down: the newest instances go first.
  std::vector<std::string> drop;
  for (auto k = primaries.rbegin(); have > target && k != primaries.rend(); ++k, --have) {
    drop.push_back(c->instances[*k].name);
  }
  for (const auto& name : drop) {
    auto it = std::find_if(c->instances.begin(), c->instances.end(),
                           [&](const Instance& i) { return i.name == name; });
    if (it->launched) {
      it->kill_requested = true;
      it->flexed_down = true;
      KillInstance(*it);
    } else {
      c->instances.erase(it);
    }
  }
  c->desired = target;
  MarkChanged();
  box_->wake.notify_all();
  return target;
}

void Runner::Stop(const std::string& why) {
  std::lock_guard<std::mutex> lock(box_->mu);
  if (IsFinal(state_) || stop_requested_) return;
  stop_requested_ = true;
  stop_reason_ = why;
  box_->wake.notify_all();
}

ServiceState Runner::Wait() {
  std::unique_lock<std::mutex> lock(box_->mu);
  box_->done.wait(lock, [this] { return loop_done_ || !loop_.joinable(); });
  return state_;
}

ServiceState Runner::state() const {
  std::lock_guard<std::mutex> lock(box_->mu);
  return state_;
}

int Runner::exit_code() const {
  std::lock_guard<std::mutex> lock(box_->mu);
  if (exit_code_) return *exit_code_;
  return state_ == ServiceState::kSucceeded || state_ == ServiceState::kStopped ? 0 : 1;
}

std::string Runner::StatusJson() const {
  std::lock_guard<std::mutex> lock(box_->mu);
  return StatusJsonLocked();
}

std::string Runner::StatusJsonLocked() const {
  Json j;
  j["name"] = service_.name;
  j["version"] = service_.version;
  j["state"] = ServiceStateName(state_);
  j["backend"] = backend_.name();
  if (!options_.application_id.empty()) j["application_id"] = options_.application_id;
  if (options_.attempt > 0) j["am_attempt"] = options_.attempt;
  j["launch_time"] = launch_time_ms_;
  if (service_.lifetime_s) j["lifetime"] = *service_.lifetime_s;
  if (exit_code_) j["exit_code"] = *exit_code_;
  if (!diagnostics_.empty()) j["diagnostics"] = diagnostics_;
  j["state_dir"] = options_.state_dir;
  Json comps = Json::array();
  for (const auto& c : comps_) {
    Json jc;
    jc["name"] = c.spec->name;
    std::string state = "INIT";
    if (DependenciesReady(c)) {
      int64_t ready = 0;
      for (const auto& i : c.instances) ready += Primary(i) && i.state == InstanceState::kReady;
      state = Finished(c) ? "SUCCEEDED" : ready >= c.desired ? "STABLE" : "FLEXING";
    }
    jc["state"] = state;
    jc["restart_policy"] = RestartPolicyName(c.spec->restart_policy);
    jc["number_of_containers"] = c.desired;
    jc["backups"] = c.backups;
    jc["dependencies"] = c.spec->dependencies;
    if (!c.tf_role.empty()) jc["tf_role"] = c.tf_role;
    Json containers = Json::array();
    for (const auto& i : c.instances) {
      Json ji;
      ji["component_instance_name"] = i.name;
      ji["id"] = i.id;
      ji["state"] = InstanceStateName(i.state);
      ji["backup"] = i.backup;
      ji["host"] = i.host.empty() ? Json(nullptr) : Json(i.host);
      Json ports = Json::array();
      const auto tasks = c.tf_role.empty() ? tf_tasks_.end() : tf_tasks_.find(c.tf_role);
      if (tasks != tf_tasks_.end() && !i.backup &&
          i.identity < static_cast<int64_t>(tasks->second.size())) {
        const auto& t = tasks->second[i.identity];
        std::string host;
        int port = 0;
        if (net::SplitHostPort(t.address, &host, &port).ok()) ports.push_back(port);
        ji["tf_task"] = {{"type", c.tf_role}, {"index", i.identity}, {"address", t.address}};
      }
      if (c.spec->readiness_check && c.spec->readiness_check->type == ReadinessType::kPort) {
        auto p = ParseInt(Substitute(c.spec->readiness_check->properties.count("port")
                                         ? c.spec->readiness_check->properties.at("port")
                                         : "",
                                     InstanceTokensOf(c, i)));
        if (p) ports.push_back(*p);
      }
      ji["ports"] = ports;
      ji["restarts"] = i.restarts;
      ji["exit_code"] = i.exit_code ? Json(*i.exit_code) : Json(nullptr);
      ji["runtime"] = i.container ? "container" : "native";
      if (i.container) {
        ji["image"] = ArtifactOf(service_, *c.spec).id;
        // Locally the name tarn gave it (`docker ps`); on YARN the NodeManager names it.
        if (!options_.remote) ji["container_name"] = DockerName(i);
      }
      if (options_.remote) {  // the container's log folder (YARN keeps it, 'yarn logs' shows it)
        if (i.launched) ji["launch"] = i.launch_seq;
        ji["log"] = i.log_dir.empty() ? Json(nullptr) : Json(JoinPath(i.log_dir, "stdout"));
        if (!i.log_dir.empty()) ji["log_dir"] = i.log_dir;
      } else {
        ji["log"] = JoinPath(JoinPath(options_.state_dir, "logs"), i.name + ".log");
        ji["dir"] = InstanceDir(i);
      }
      if (options_.remote && i.launched && !i.registered) {
        ji["where"] = backend_.Where(i.task);  // a container allocated, or why none is
      } else if (!i.where.empty()) {
        ji["where"] = i.where;
      }
      if (i.launch_time_ms) ji["launch_time"] = i.launch_time_ms;
      if (!i.replaced.empty()) ji["replaced"] = i.replaced;
      if (!i.replaced_by.empty()) ji["replaced_by"] = i.replaced_by;
      if (!i.diagnostics.empty()) ji["diagnostics"] = i.diagnostics;
      containers.push_back(ji);
    }
    jc["containers"] = containers;
    comps.push_back(jc);
  }
  j["components"] = comps;
  return j.dump(2) + "\n";
}

void Runner::WriteStatusLocked() {
  if (options_.remote) {  // first: a status.json copied on is never ahead of the state
    Status s = WriteFileAtomic(JoinPath(options_.state_dir, "state.json"),
                               RunnerStateJson(SavedStateLocked()));
    if (!s.ok()) {
      TARN_LOG(kWarn) << "writing state.json: " << s.message();
    }
  }
  Status s = WriteFileAtomic(JoinPath(options_.state_dir, "status.json"), StatusJsonLocked());
  if (!s.ok()) {
    TARN_LOG(kWarn) << "writing status.json: " << s.message();
  }
}

}  // namespace tarn::assembly
