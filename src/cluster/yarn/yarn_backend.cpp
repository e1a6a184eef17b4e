#include "cluster/yarn/yarn_backend.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "cluster/yarn/credentials.h"
#include "cluster/yarn/staging.h"  // for ResourceFor
#include "common/log.h"
#include "common/shell.h"  // for ShellWord
#include "common/strings.h"
#include "net/http_client.h"  // for kContainerCaFileEnv

namespace tarn::cluster::yarn {

namespace {

constexpr int kKilledExitCode = 128 + 9;  // what a task killed by YARN reports

// Escapes for the double quotes the NodeManager's launch script puts around
// the command and environment values. The NM also rewrites "{{" to "$" and
// drops "}}" (its cross-platform variable syntax), so doubled braces are split
// by an empty "" (close and reopen the quotes), which bash joins back.
std::string EscapeForDoubleQuotes(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '\\' || c == '"' || c == '$' || c == '`') out.push_back('\\');
    out.push_back(c);
    if ((c == '{' || c == '}') && i + 1 < s.size() && s[i + 1] == c) out += "\"\"";
  }
  return out;
}

std::string Shorten(std::string s, size_t max = 600) {
  for (auto& c : s) {
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  }
  if (s.size() > max) s = s.substr(0, max) + "...";
  return s;
}

// "exit 0", "exit -100 ABORTED: diagnostics" for a completed container.
std::string CompletionWhy(const ContainerStatus& s) {
  std::string why = "exit " + std::to_string(s.exit_status);
  if (const char* name = ContainerExitStatusName(s.exit_status)) why += " " + std::string(name);
  if (!s.diagnostics.empty() && s.diagnostics != "N/A") why += ": " + Shorten(s.diagnostics);
  return why;
}

}  // namespace

std::string ContainerCommand(const std::vector<std::string>& argv) {
  std::string command;
  for (const auto& arg : argv) {
    if (!command.empty()) command += ' ';
    command += EscapeForDoubleQuotes(ShellWord(arg));
  }
  // <LOG_DIR> is replaced by the NodeManager with the container's log folder.
  return command + " 1><LOG_DIR>/stdout 2><LOG_DIR>/stderr";
}

std::string EnvironmentValue(const std::string& value) { return EscapeForDoubleQuotes(value); }

Result<std::map<std::string, LocalResource>> ParseLocalResourcesJson(const std::string& json) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(json);
  } catch (const std::exception& e) {
    return InvalidArgument(std::string(kLocalResourcesEnv) + " is not JSON: " + e.what());
  }
  if (!doc.is_object()) {
    return InvalidArgument(std::string(kLocalResourcesEnv) + " must be a JSON object");
  }
  std::map<std::string, LocalResource> out;
  for (const auto& [name, v] : doc.items()) {
    const std::string where = std::string(kLocalResourcesEnv) + " entry '" + name + "'";
    if (!v.is_object() || !v.contains("url") || !v["url"].is_string() || !v.contains("size") ||
        !v["size"].is_number_integer() || !v.contains("timestamp") ||
        !v["timestamp"].is_number_integer()) {
      return InvalidArgument(where +
                             ": needs \"url\" (string), \"size\" and \"timestamp\" (integers)");
    }
    if (name.empty() || name.find('/') != std::string::npos) {
      return InvalidArgument(where + ": the name must be a plain file name");
    }
    LocalResource r;
    r.url = v["url"].get<std::string>();
    r.size = v["size"].get<int64_t>();
    r.timestamp = v["timestamp"].get<int64_t>();
    TARN_RETURN_IF_ERROR(ParseResourceUrl(r.url).status().WithContext(where));
    const std::string type = v.value("type", "FILE");
    if (type == "FILE") {
      r.type = LocalResourceType::kFile;
    } else if (type == "ARCHIVE") {
      r.type = LocalResourceType::kArchive;
    } else {
      return InvalidArgument(where + ": type must be FILE or ARCHIVE, got '" + type + "'");
    }
    const std::string visibility = v.value("visibility", "APPLICATION");
    if (visibility == "APPLICATION") {
      r.visibility = LocalResourceVisibility::kApplication;
    } else if (visibility == "PRIVATE") {
      r.visibility = LocalResourceVisibility::kPrivate;
    } else if (visibility == "PUBLIC") {
      r.visibility = LocalResourceVisibility::kPublic;
    } else {
      return InvalidArgument(where + ": visibility must be APPLICATION, PRIVATE or PUBLIC");
    }
    out[name] = r;
  }
  return out;
}

std::string LocalResourcesToJson(const std::map<std::string, LocalResource>& resources) {
  nlohmann::json doc = nlohmann::json::object();
  for (const auto& [name, r] : resources) {
    doc[name] = {{"url", r.url},
                 {"size", r.size},
                 {"timestamp", r.timestamp},
                 {"type", LocalResourceTypeName(r.type)},
                 {"visibility", LocalResourceVisibilityName(r.visibility)}};
  }
  return doc.dump();
}

Result<YarnBackendOptions> YarnBackendOptionsFromEnvironment() {
  YarnBackendOptions o;
  TARN_ASSIGN_OR_RETURN(o.am, AmClientOptionsFromEnvironment());
  if (const char* json = std::getenv(kLocalResourcesEnv); json && *json) {
    TARN_ASSIGN_OR_RETURN(o.local_resources, ParseLocalResourcesJson(json));
  }
  // What names the AM's working folder names each container's.
  char cwd[4096];
  const char* pwd = std::getenv("PWD");
  const std::string work_dir = pwd && *pwd ? pwd : (getcwd(cwd, sizeof(cwd)) ? cwd : "");
  for (const char* name : {"LD_LIBRARY_PATH", "HADOOP_CONF_DIR"}) {
    const char* v = std::getenv(name);
    if (v && !work_dir.empty() && std::string(v) == work_dir) o.raw_env[name] = "{{PWD}}";
  }
  for (const char* name : {"HADOOP_USER_NAME", "TARN_YARN_STAGING_DIR", net::kContainerCaFileEnv}) {
    if (const char* v = std::getenv(name); v && *v) o.env[name] = v;
  }
  // Containers get the AM's other tokens (HDFS delegation tokens on secure
  // clusters), never the AMRMToken.
  if (const char* path = std::getenv("HADOOP_TOKEN_FILE_LOCATION"); path && *path) {
    TARN_ASSIGN_OR_RETURN(Credentials c, ReadCredentialsFile(path));
    Credentials forwarded;
    for (const auto& [alias, token] : c.tokens) {
      if (token.kind != kAmRmTokenKind) forwarded.tokens.emplace_back(alias, token);
    }
    forwarded.secrets = c.secrets;
    if (!forwarded.tokens.empty() || !forwarded.secrets.empty()) {
      o.container_tokens = SerializeCredentials(forwarded);
    }
  }
  return o;
}

YarnBackend::YarnBackend(YarnBackendOptions options)
    : options_(std::move(options)),
      am_(options_.am),
      nm_(options_.nm_call_timeout_ms, options_.am.connect_timeout_ms, options_.am.rpc_protection) {
}

YarnBackend::~YarnBackend() { StopHeartbeat(); }

void YarnBackend::StopHeartbeat() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (heartbeat_.joinable() && heartbeat_.get_id() != std::this_thread::get_id()) {
    heartbeat_.join();
    DeliverQueued();  // what the heartbeat found last
  }
}

Result<RegisterResponse> YarnBackend::Register(const RegisterRequest& request) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (registration_) return FailedPrecondition("the ApplicationMaster is already registered");
  }
  auto r = am_.Register(request);
  if (!r.ok()) {
    return r.status().WithContext("registering with the ResourceManager at " + am_.address());
  }
  for (const auto& t : r->nm_tokens_from_previous_attempts) nm_.AddToken(t);
  {
    std::lock_guard<std::mutex> lock(mu_);
    registration_ = request;
    register_response_ = *r;
    stop_ = false;
  }
  TARN_LOG(kInfo) << "registered " << am_.attempt().ToString() << " with the ResourceManager at "
                  << am_.address() << " (queue " << r->queue << ", largest container "
                  << r->maximum_capability.ToString() << ", "
                  << r->containers_from_previous_attempts.size()
                  << " containers from earlier attempts)";
  heartbeat_ = std::thread([this] { HeartbeatLoop(); });
  return r;
}

Status YarnBackend::ReregisterLocked(std::unique_lock<std::mutex>& lock) {
  if (!registration_) return FailedPrecondition("re-registering before registering");
  const RegisterRequest request = *registration_;
  lock.unlock();
  auto r = am_.Register(request);
  lock.lock();
  if (!r.ok()) return r.status().WithContext("re-registering with the ResourceManager");
  for (const auto& t : r->nm_tokens_from_previous_attempts) nm_.AddToken(t);
  response_id_ = 0;
  for (const auto& [priority, queue] : pending_) {
    if (!queue.empty()) dirty_.insert(priority);
  }
  ++stats_.reregistrations;
  TARN_LOG(kWarn) << "re-registered with the ResourceManager; resending the container asks";
  return Status::Ok();
}

Status YarnBackend::Unregister(FinalApplicationStatus status, const std::string& diagnostics,
                               const std::string& tracking_url, int timeout_ms) {
  StopHeartbeat();
  FinishRequest request{status, diagnostics, tracking_url};
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  Status last = Status::Ok();
  while (true) {
    auto r = am_.Finish(request);
    if (r.ok() && *r) {
      TARN_LOG(kInfo) << "unregistered from the ResourceManager with final status "
                      << FinalApplicationStatusName(status);
      return Status::Ok();
    }
    if (!r.ok()) {
      last = r.status();
      if (am_.last_exception_class() == kNotRegisteredException) {
        std::unique_lock<std::mutex> lock(mu_);
        Status s = ReregisterLocked(lock);
        if (!s.ok()) last = s;
      }
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      return Unavailable("finishApplicationMaster did not complete within " +
                         std::to_string(timeout_ms) + " ms" +
                         (last.ok() ? std::string() : ": " + last.message()));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

std::vector<Container> YarnBackend::PreviousContainers() const {
  std::lock_guard<std::mutex> lock(mu_);
  return register_response_.containers_from_previous_attempts;
}

Result<int64_t> YarnBackend::Adopt(const std::string& container_id, const std::string& role,
                                   int index) {
  TARN_ASSIGN_OR_RETURN(ContainerId id, ContainerId::Parse(container_id));
  std::unique_lock<std::mutex> lock(mu_);
  if (by_container_.count(id)) return FailedPrecondition(container_id + " is already a task");
  if (id.attempt.app != am_.attempt().app) {
    return InvalidArgument(container_id + " is not a container of " + am_.attempt().app.ToString());
  }
  Task t;
  t.spec.role = role;
  t.spec.index = index;
  t.state = State::kRunning;
  t.adopted = true;
  for (const auto& c : register_response_.containers_from_previous_attempts) {
    if (c.id == id) t.container = c;
  }
  if (!t.container) {  // ended while no attempt ran, or lost
    Container c;
    c.id = id;
    t.container = c;
    t.awaiting_report = true;
    t.report_by = stats_.heartbeats + kAdoptReportHeartbeats;
  }
  const int64_t task = next_task_++;
  by_container_[id] = task;
  Task& added = tasks_[task] = std::move(t);
  auto done = unclaimed_completed_.find(id);
  if (done != unclaimed_completed_.end()) {
    const ContainerStatus s = done->second;
    unclaimed_completed_.erase(done);
    added.state = State::kDone;
    added.awaiting_report = false;
    TaskExit e = ExitFor(task, added, s.exit_status >= 0 ? s.exit_status : kKilledExitCode,
                         CompletionWhy(s) + " (while no ApplicationMaster ran)");
    if (!QueueExitLocked(e)) {
      lock.unlock();
      Deliver({e});
    }
  }
  return task;
}

void YarnBackend::OnFatal(std::function<void(const Status&)> callback) {
  std::lock_guard<std::mutex> lock(mu_);
  on_fatal_ = std::move(callback);
}

void YarnBackend::OnExit(std::function<void(const TaskExit&)> callback) {
  std::vector<TaskExit> early;
  {
    std::lock_guard<std::mutex> lock(mu_);
    on_exit_ = std::move(callback);
    early.swap(undelivered_);
  }
  Deliver(std::move(early));
}

void YarnBackend::Deliver(std::vector<TaskExit> exits) {
  if (exits.empty()) return;
  std::lock_guard<std::mutex> order(deliver_mu_);
  std::function<void(const TaskExit&)> callback;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!on_exit_) {
      for (auto& e : exits) undelivered_.push_back(std::move(e));
      return;
    }
    callback = on_exit_;
  }
  for (const auto& e : exits) callback(e);
}

bool YarnBackend::QueueExitLocked(TaskExit exit) {
  if (!HeartbeatAliveLocked()) return false;
  queued_.push_back(std::move(exit));
  wake_requested_ = true;
  wake_.notify_all();
  return true;
}

void YarnBackend::DeliverQueued() {
  std::vector<TaskExit> exits;
  {
    std::lock_guard<std::mutex> lock(mu_);
    exits.swap(queued_);
    if (exits.empty()) return;
    ++delivering_;
  }
  Deliver(std::move(exits));
  std::lock_guard<std::mutex> lock(mu_);
  --delivering_;
  exited_.notify_all();
}

int32_t YarnBackend::PriorityFor(const LaunchSpec& spec) {
  const auto key = std::make_tuple(spec.role, spec.resources.memory_mb, spec.resources.vcores,
                                   spec.resources.gpus);
  auto it = priorities_.find(key);
  if (it != priorities_.end()) return it->second;
  const auto priority = static_cast<int32_t>(priorities_.size() + 1);
  priorities_[key] = priority;
  Resource shape;
  shape.memory_mb = spec.resources.memory_mb;
  shape.vcores = spec.resources.vcores;
  if (spec.resources.gpus > 0) shape.others[kGpuResource] = spec.resources.gpus;
  shapes_[priority] = shape;
  return priority;
}

Result<int64_t> YarnBackend::Launch(const LaunchSpec& spec) {
  if (spec.argv.empty()) return InvalidArgument("launching " + spec.role + ": empty command");
  if (spec.resources.memory_mb <= 0 || spec.resources.vcores <= 0 || spec.resources.gpus < 0) {
    return InvalidArgument("launching " + spec.role + " " + std::to_string(spec.index) +
                           ": memory and vcores must be positive");
  }
  // Archives are looked up (size, time) before the lock: a file system call.
  std::map<std::string, LocalResource> archives;
  for (const auto& [name, uri] : spec.archives) {
    auto r = ResourceFor(uri, LocalResourceType::kArchive);
    if (!r.ok()) {
      return r.status().WithContext(spec.role + " " + std::to_string(spec.index) +
                                    ": the archive " + name);
    }
    archives[name] = *r;
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (fatal_) return Unavailable("the ResourceManager connection is lost; cannot launch");
  const Resource& max = register_response_.maximum_capability;
  const std::string what = spec.role + " " + std::to_string(spec.index);
  if (registration_ && max.memory_mb > 0 && spec.resources.memory_mb > max.memory_mb) {
    return InvalidArgument(what + " asks for " + std::to_string(spec.resources.memory_mb) +
                           " MB; the cluster's largest container has " +
                           std::to_string(max.memory_mb) +
                           " MB (yarn.scheduler.maximum-allocation-mb)");
  }
  if (registration_ && max.vcores > 0 && spec.resources.vcores > max.vcores) {
    return InvalidArgument(what + " asks for " + std::to_string(spec.resources.vcores) +
                           " vcores; the cluster's largest container has " +
                           std::to_string(max.vcores) +
                           " (yarn.scheduler.maximum-allocation-vcores)");
  }
  if (registration_ && spec.resources.gpus > 0) {
    auto gpu = max.others.find(kGpuResource);
    const int64_t max_gpus = gpu == max.others.end() ? 0 : gpu->second;
    if (spec.resources.gpus > max_gpus) {
      return InvalidArgument(what + " asks for " + std::to_string(spec.resources.gpus) +
                             " yarn.io/gpu; the cluster's largest container has " +
                             std::to_string(max_gpus) +
                             " (is yarn.io/gpu declared in resource-types.xml?)");
    }
  }
  const int64_t id = next_task_++;
  Task t;
  t.spec = spec;
  t.archives = std::move(archives);
  t.priority = PriorityFor(spec);
  pending_[t.priority].push_back(id);
  dirty_.insert(t.priority);
  tasks_[id] = std::move(t);
  wake_requested_ = true;
  wake_.notify_all();
  return id;
}

std::string YarnBackend::Describe(int64_t id, const Task& task) const {
  const std::string name = task.spec.role + " " + std::to_string(task.spec.index);
  if (!task.container) return "task " + std::to_string(id) + " (" + name + ", no container yet)";
  return task.container->id.ToString() + " on " + task.container->node.ToString() + " (" + name +
         ")";
}

TaskExit YarnBackend::ExitFor(int64_t id, const Task& task, int exit_code,
                              const std::string& why) const {
  return TaskExit{id, exit_code, Describe(id, task) + ": " + why};
}

std::string YarnBackend::Where(int64_t task) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = tasks_.find(task);
  if (it == tasks_.end()) return "unknown task " + std::to_string(task);
  if (!it->second.container) {
    // Why it waits: what was asked, and what the ResourceManager says the queue has left.
    const auto& r = it->second.spec.resources;
    std::string out = "pending container: YARN has allocated none yet for the " +
                      std::to_string(r.memory_mb) + " MB, " + std::to_string(r.vcores) + " vcores" +
                      (r.gpus > 0 ? ", " + std::to_string(r.gpus) + " yarn.io/gpu" : "") + " asked";
    if (headroom_) out += " (the queue's headroom is " + headroom_->ToString() + ")";
    return out;
  }
  return it->second.container->id.ToString();
}

Result<ContainerStatus> YarnBackend::QueryContainer(int64_t task) {
  std::optional<Container> container;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = tasks_.find(task);
    if (it == tasks_.end()) return NotFound("no task " + std::to_string(task));
    container = it->second.container;
  }
  if (!container) return FailedPrecondition("task " + std::to_string(task) + " has no container");
  TARN_ASSIGN_OR_RETURN(ContainerStatusesResponse r,
                        nm_.GetContainerStatuses(container->node, {container->id}));
  if (!r.failed.empty()) return Unavailable(r.failed[0].message);
  if (r.statuses.empty()) {
    return NotFound(container->node.ToString() + " reports no status for " +
                    container->id.ToString());
  }
  return r.statuses[0];
}

bool YarnBackend::IsRunning(int64_t task) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = tasks_.find(task);
  return it != tasks_.end() && it->second.state == State::kRunning;
}

Status YarnBackend::Kill(int64_t task) {
  std::unique_lock<std::mutex> lock(mu_);
  auto it = tasks_.find(task);
  if (it == tasks_.end()) return NotFound("no task " + std::to_string(task));
  Task& t = it->second;
  switch (t.state) {
    case State::kDone:
      return Status::Ok();
    case State::kStarting:
      t.kill_requested = true;
      return Status::Ok();
    case State::kPending: {
      auto& queue = pending_[t.priority];
      queue.erase(std::remove(queue.begin(), queue.end(), task), queue.end());
      dirty_.insert(t.priority);
      t.state = State::kDone;
      TaskExit e = ExitFor(task, t, kKilledExitCode, "killed before a container was allocated");
      if (QueueExitLocked(e)) return Status::Ok();
      lock.unlock();
      Deliver({e});
      return Status::Ok();
    }
    case State::kRunning:
      break;
  }
  t.kill_requested = true;
  if (t.awaiting_report) return Status::Ok();  // not running: its report ends it
  const Container container = *t.container;
  lock.unlock();
  auto r = nm_.StopContainers(container.node, {container.id});
  if (r.ok() && r->failed.empty()) return Status::Ok();
  // The NodeManager refused or is unreachable: let the RM kill it instead.
  const std::string why = r.ok() ? r->failed[0].message : r.status().message();
  TARN_LOG(kWarn) << "stopContainers for " << container.id.ToString() << " failed (" << why
                  << "); releasing it through the ResourceManager";
  lock.lock();
  releases_.push_back(container.id);
  wake_requested_ = true;
  wake_.notify_all();
  return Status::Ok();
}

void YarnBackend::StartContainer(int64_t id) {
  Container container;
  LaunchContext context;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Task& t = tasks_.at(id);
    if (t.state != State::kStarting) return;
    container = *t.container;
    if (t.kill_requested) {
      t.state = State::kDone;
      releases_.push_back(container.id);
      queued_.push_back(ExitFor(id, t, kKilledExitCode, "killed before it started"));
      exited_.notify_all();
      return;
    }
    std::vector<std::string> argv = t.spec.argv;
    const std::string& binary = options_.binary_resource;
    const size_t slash = argv[0].rfind('/');
    const std::string base = slash == std::string::npos ? argv[0] : argv[0].substr(slash + 1);
    if (!binary.empty() && base == binary && options_.local_resources.count(binary)) {
      argv[0] = "./" + binary;
    }
    context.local_resources = options_.local_resources;
    for (const auto& [name, r] : t.archives) context.local_resources[name] = r;
    for (const auto& [k, v] : options_.env) context.environment[k] = EnvironmentValue(v);
    for (const auto& [k, v] : options_.raw_env) context.environment[k] = v;
    for (const auto& [k, v] : t.spec.env) context.environment[k] = EnvironmentValue(v);
    context.commands = {ContainerCommand(argv)};
    context.tokens = options_.container_tokens;
  }
  auto r = nm_.StartContainers(container.node, {StartRequest{context, container.container_token}});
  bool stop_now = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Task& t = tasks_.at(id);
    if (t.state != State::kStarting) return;  // completed meanwhile
    if (!r.ok() || !r->failed.empty()) {
      const std::string why = r.ok() ? r->failed[0].message : r.status().message();
      t.state = State::kDone;
      releases_.push_back(container.id);
      queued_.push_back(ExitFor(id, t, 127, "the NodeManager could not start it: " + Shorten(why)));
      exited_.notify_all();
      return;
    }
    t.state = State::kRunning;
    stop_now = t.kill_requested;
    TARN_LOG(kDebug) << "started " << Describe(id, t);
  }
  if (stop_now) {
    auto s = nm_.StopContainers(container.node, {container.id});
    if (!s.ok() || !s->failed.empty()) {
      std::lock_guard<std::mutex> lock(mu_);
      releases_.push_back(container.id);
    }
  }
}

Status YarnBackend::HeartbeatOnce(std::vector<int64_t>* to_start, bool* fatal) {
  *fatal = false;
  AllocateRequest request;
  std::set<int32_t> sent;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (int32_t p : dirty_) {
      request.asks.push_back(
          ResourceRequest{p, "*", shapes_[p], static_cast<int32_t>(pending_[p].size()), true});
    }
    sent.swap(dirty_);
    request.releases.swap(releases_);
    request.response_id = response_id_;
    request.progress = progress_;
    wake_requested_ = false;
  }
  auto r = am_.Allocate(request);
  std::unique_lock<std::mutex> lock(mu_);
  if (!r.ok()) {
    dirty_.insert(sent.begin(), sent.end());
    releases_.insert(releases_.end(), request.releases.begin(), request.releases.end());
    if (am_.last_exception_class() == kNotRegisteredException) return ReregisterLocked(lock);
    return r.status();
  }
  ++stats_.heartbeats;
  response_id_ = r->response_id;
  if (r->limit) headroom_ = r->limit;
  for (const auto& t : r->nm_tokens) nm_.AddToken(t);
  if (r->am_rm_token) {
    TARN_LOG(kInfo) << "the ResourceManager rolled the AMRMToken over";
  }
  if (r->am_command == AmCommand::kShutdown) {
    *fatal = true;
    return Unavailable(
        "the ResourceManager ordered this ApplicationMaster to shut down "
        "(AM_SHUTDOWN)");
  }
  // Containers of earlier attempts that the RM learns of late (an NM re-registering).
  for (const auto& c : r->containers_from_previous_attempts) {
    register_response_.containers_from_previous_attempts.push_back(c);
  }
  for (const auto& c : r->allocated) {
    ++stats_.allocated;
    auto& queue = pending_[c.priority];
    if (queue.empty()) {  // more than asked (the ask table raced an allocation)
      releases_.push_back(c.id);
      ++stats_.released_surplus;
      TARN_LOG(kDebug) << "releasing surplus " << c.id.ToString();
      continue;
    }
    const int64_t id = queue.front();
    queue.pop_front();
    Task& t = tasks_.at(id);
    t.container = c;
    t.state = State::kStarting;
    by_container_[c.id] = id;
    to_start->push_back(id);
  }
  for (const auto& s : r->completed) {
    auto it = by_container_.find(s.id);
    if (it == by_container_.end()) {   // a released surplus, or an earlier attempt's
      unclaimed_completed_[s.id] = s;  // for Adopt; bounded (the oldest go)
      if (unclaimed_completed_.size() > 10000) {
        unclaimed_completed_.erase(unclaimed_completed_.begin());
      }
      continue;
    }
    Task& t = tasks_.at(it->second);
    if (t.state == State::kDone) continue;
    t.state = State::kDone;
    std::string why = CompletionWhy(s);
    if (t.awaiting_report) why += " (while no ApplicationMaster ran)";
    t.awaiting_report = false;
    queued_.push_back(
        ExitFor(it->second, t, s.exit_status >= 0 ? s.exit_status : kKilledExitCode, why));
    exited_.notify_all();
  }
  for (auto& [id, t] : tasks_) {
    if (!t.awaiting_report || t.state == State::kDone || stats_.heartbeats < t.report_by) continue;
    t.state = State::kDone;
    t.awaiting_report = false;
    queued_.push_back(ExitFor(id, t, 1,
                              "lost: it was not running when this attempt registered, and YARN "
                              "reported no exit for it"));
    exited_.notify_all();
  }
  if (r->am_command == AmCommand::kResync) return ReregisterLocked(lock);
  return Status::Ok();
}

void YarnBackend::HeartbeatLoop() {
  int failures = 0;
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait_for(lock, std::chrono::milliseconds(options_.heartbeat_ms),
                     [&] { return stop_ || wake_requested_; });
      if (stop_) return;
    }
    DeliverQueued();
    std::vector<int64_t> to_start;
    bool fatal = false;
    Status st = HeartbeatOnce(&to_start, &fatal);
    if (!st.ok()) {
      ++failures;
      if (fatal || failures >= options_.max_heartbeat_failures) {
        std::function<void(const Status&)> callback;
        {
          std::lock_guard<std::mutex> lock(mu_);
          fatal_ = true;
          callback = on_fatal_;
        }
        Status why = fatal ? st
                           : Unavailable("the ResourceManager did not answer " +
                                         std::to_string(failures) + " heartbeats: " + st.message());
        TARN_LOG(kError) << why.message();
        DeliverQueued();
        if (callback) callback(why);
        return;
      }
      TARN_LOG(kWarn) << "heartbeat to the ResourceManager failed (" << failures << " of "
                      << options_.max_heartbeat_failures << "): " << st.message();
    } else {
      failures = 0;
    }
    for (int64_t id : to_start) StartContainer(id);
    DeliverQueued();
  }
}

void YarnBackend::Shutdown() {
  std::vector<TaskExit> exits;
  std::map<NodeId, std::vector<ContainerId>> to_stop;
  std::set<int64_t> waiting;
  bool heartbeat_alive;
  {
    std::lock_guard<std::mutex> lock(mu_);
    heartbeat_alive = HeartbeatAliveLocked();
    for (auto& [id, t] : tasks_) {
      if (t.state == State::kPending) {
        auto& queue = pending_[t.priority];
        queue.erase(std::remove(queue.begin(), queue.end(), id), queue.end());
        dirty_.insert(t.priority);
        t.state = State::kDone;
        TaskExit e = ExitFor(id, t, kKilledExitCode, "killed before a container was allocated");
        if (!QueueExitLocked(e)) exits.push_back(std::move(e));
      } else if (t.state == State::kStarting || t.state == State::kRunning) {
        t.kill_requested = true;
        waiting.insert(id);
        if (t.state == State::kRunning && !t.awaiting_report) {
          to_stop[t.container->node].push_back(t.container->id);
        }
      }
    }
  }
  Deliver(std::move(exits));
  for (const auto& [node, ids] : to_stop) {
    auto r = nm_.StopContainers(node, ids);
    if (!r.ok() || !r->failed.empty()) {
      std::lock_guard<std::mutex> lock(mu_);
      releases_.insert(releases_.end(), ids.begin(), ids.end());
    }
  }
  std::vector<TaskExit> unconfirmed;
  {
    std::unique_lock<std::mutex> lock(mu_);
    const auto all_done = [&] {
      for (int64_t id : waiting) {
        if (tasks_.at(id).state != State::kDone) return false;
      }
      return queued_.empty() && delivering_ == 0;
    };
    if (heartbeat_alive) {
      wake_requested_ = true;
      wake_.notify_all();
      exited_.wait_for(lock, std::chrono::seconds(60), all_done);
    }
    for (int64_t id : waiting) {
      Task& t = tasks_.at(id);
      if (t.state == State::kDone) continue;
      t.state = State::kDone;
      unconfirmed.push_back(
          ExitFor(id, t, kKilledExitCode, "stopped at shutdown (no completion report from YARN)"));
    }
  }
  Deliver(std::move(unconfirmed));
}

YarnBackend::Stats YarnBackend::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace tarn::cluster::yarn
