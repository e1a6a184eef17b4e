// See membership.h. Every failure becomes an event that the driver thread
// handles between directives:
//   - a worker that exits or misses its heartbeats: a backup takes over its
//     slot (its shards) from the last position the worker reported;
//   - a parameter server that dies: the epoch driver relaunches it and rolls
//     every node back to the last checkpoint (Hooks::restart_ps).
#include "runtime/membership.h"

#include <algorithm>
#include <chrono>

#include "cluster/local_backend.h"
#include "cluster/yarn/yarn_backend.h"
#include "common/log.h"
#include "runtime/embedded_backend.h"
#include "runtime/node.h"
#include "runtime/protocol.h"

namespace tarn::runtime {

using data::Json;
using Responder = std::shared_ptr<net::RpcServer::Responder>;

Membership::Membership(JobConfig* job, ClusterState* state, std::string secret, std::string binary)
    : job_(*job), s_(*state), secret_(std::move(secret)), binary_(std::move(binary)) {}

Membership::~Membership() {
  stopping_ = true;
  if (monitor_.joinable()) monitor_.join();
  if (backend_) backend_->Shutdown();
  if (server_) server_->Stop();
}

Status Membership::Start(Hooks hooks) {
  hooks_ = std::move(hooks);
  if (job_.backend == "local") {
    transport_ = MakeTcpTransport(secret_, job_.cluster_tls);
    backend_ = cluster::MakeLocalBackend(job_.logs_dir);
  } else if (job_.backend == "yarn") {
    // This process is the ApplicationMaster: containers come from YARN.
    transport_ = MakeTcpTransport(secret_, job_.cluster_tls);
    TARN_ASSIGN_OR_RETURN(auto options, cluster::yarn::YarnBackendOptionsFromEnvironment());
    auto yarn = std::make_unique<cluster::yarn::YarnBackend>(std::move(options));
    yarn_ = yarn.get();
    yarn_->OnFatal([this](const Status& st) {
      std::lock_guard<std::mutex> lock(s_.mu);
      s_.fatal = st;
      s_.cv.notify_all();
    });
    backend_ = std::move(yarn);
  } else if (job_.backend == "embedded") {
    transport_ = MakeInProcessTransport();
    backend_ = MakeEmbeddedBackend(transport_);
  } else {
    return Unsupported("tarn.cluster.backend '" + job_.backend +
                       "' is not known (local: processes on this machine; embedded: threads "
                       "of one process)");
  }
  backend_->OnExit([this](const cluster::TaskExit& e) { OnTaskExit(e); });
  auto server = transport_->Serve(
      job_.bind_host, net::ConnectionOptions{},
      [this](const net::RpcServer::Request& r, Responder out) { Handle(r, std::move(out)); },
      &address_);
  if (!server.ok()) return server.status().WithContext("coordinator");
  server_ = std::move(*server);
  return Status::Ok();
}

Status Membership::LaunchAll() {
  // Shards to slots, round robin: slot s trains shards s, s + W, ...
  s_.slots.resize(job_.workers);
  for (size_t i = 0; i < job_.shard_paths.size(); ++i) {
    s_.slots[i % job_.workers].shards.push_back(static_cast<int>(i));
  }
  std::lock_guard<std::mutex> lock(s_.mu);
  for (int i = 0; i < job_.ps; ++i) {
    TARN_ASSIGN_OR_RETURN(int id, LaunchLocked("ps", i));
    s_.ps_node.push_back(id);
  }
  for (int i = 0; i < job_.workers + job_.backups; ++i) {
    TARN_ASSIGN_OR_RETURN(int id, LaunchLocked("worker", i));
    if (i < job_.workers) {
      s_.nodes[id].slot = i;
      s_.slots[i].holder = id;
    }
  }
  for (int i = 0; i < job_.serving_instances; ++i) {
    TARN_RETURN_IF_ERROR(LaunchLocked("serving", i).status());
  }
  monitor_ = std::thread([this] { MonitorLoop(); });
  hooks_.cluster_changed();
  return Status::Ok();
}

void Membership::FinishWorkers() {
  std::lock_guard<std::mutex> lock(s_.mu);
  for (auto& [id, n] : s_.nodes) {
    if (n.role == "worker" && n.state == NodeState::kRunning) {
      msg::Directive finish;
      finish.action = "finish";
      DirectLocked(n, std::move(finish));
    }
  }
}

void Membership::Shutdown() {
  auto deadline = CoordinatorClock::now() + std::chrono::seconds(5);
  std::unique_lock<std::mutex> lock(s_.mu);
  while (CoordinatorClock::now() < deadline) {
    bool any = false;
    for (auto& [id, n] : s_.nodes) any = any || n.state != NodeState::kDead;
    if (!any) break;
    s_.cv.wait_for(lock, std::chrono::milliseconds(50));
  }
  hooks_.cluster_changed();
  lock.unlock();
  backend_->Shutdown();
}

Result<int> Membership::LaunchLocked(const std::string& role, int index) {
  const int id = next_node_++;
  cluster::LaunchSpec spec;
  spec.role = role;
  spec.index = index;
  spec.argv = {binary_,         "node",
               "--role",        role,
               "--index",       std::to_string(index),
               "--node",        std::to_string(id),
               "--coordinator", address_,
               "--host",        job_.bind_host};
  spec.env[kSecretEnv] = secret_;
  if (job_.cluster_tls) spec.env[kClusterTlsEnv] = "1";
  if (role == "serving") {
    spec.argv.push_back("--model-base");
    spec.argv.push_back(job_.serving_export_dir);
  }
  if (role == "ps") {
    spec.resources = {job_.ps_memory_mb, job_.ps_vcores, 0};
  } else {
    spec.resources = {job_.worker_memory_mb, job_.worker_vcores, job_.worker_gpus};
  }
  Node n;
  n.id = id;
  n.role = role;
  n.index = index;
  n.launched = CoordinatorClock::now();
  s_.nodes[id] = n;
  auto task = backend_->Launch(spec);
  if (!task.ok()) {
    // A container the cluster refuses (larger than the largest it gives): name the setting.
    std::string hint;
    if (task.status().code() == StatusCode::kInvalidArgument && backend_->name() == "yarn") {
      hint = role == "ps" ? "; lower shifu.ps.memory or shifu.ps.vcores"
                          : "; lower shifu.worker.memory, shifu.worker.vcores or "
                            "shifu.worker.gpus";
    }
    return Status(task.status().code(), "launching " + role + " " + std::to_string(index) + ": " +
                                            task.status().message() + hint);
  }
  s_.nodes[id].task = *task;
  ++s_.generation;
  return id;
}

void Membership::Handle(const net::RpcServer::Request& r, Responder out) {
  Status st = Dispatch(r, out);
  if (!st.ok()) out->Fail(st);
}

Status Membership::Dispatch(const net::RpcServer::Request& r, Responder& out) {
  switch (r.type) {
    case kRegister: {
      TARN_ASSIGN_OR_RETURN(auto m, msg::Parse<msg::Register>(r.payload));
      std::lock_guard<std::mutex> lock(s_.mu);
      TARN_ASSIGN_OR_RETURN(Node * n, LiveNodeLocked(m.node));
      if (m.role != n->role || m.index != n->index) {
        return PermissionDenied("registration does not match the launched node");
      }
      n->pid = m.pid;
      n->address = m.address;
      n->state = NodeState::kRunning;
      n->last_beat = CoordinatorClock::now();
      ++s_.generation;
      s_.dirty = true;
      out->Reply(msg::RegisterReply{s_.generation, job_.heartbeat_ms, job_.max_missed_heartbeats}
                     .ToJson()
                     .dump());
      s_.cv.notify_all();
      return Status::Ok();
    }
    case kHeartbeat: {
      TARN_ASSIGN_OR_RETURN(auto m, msg::Parse<msg::Heartbeat>(r.payload));
      std::lock_guard<std::mutex> lock(s_.mu);
      TARN_ASSIGN_OR_RETURN(Node * n, LiveNodeLocked(m.node));
      n->last_beat = CoordinatorClock::now();
      n->bag = m.bag;
      n->epoch = m.epoch;
      n->position = m.position;
      out->Reply(msg::HeartbeatReply{s_.finished}.ToJson().dump());
      return Status::Ok();
    }
    case kReport: {
      TARN_ASSIGN_OR_RETURN(auto m, msg::Parse<msg::Report>(r.payload));
      std::lock_guard<std::mutex> lock(s_.mu);
      TARN_ASSIGN_OR_RETURN(Node * n, LiveNodeLocked(m.node));
      Report(*n, std::move(m), std::move(out));
      s_.cv.notify_all();
      return Status::Ok();
    }
    default:
      return InvalidArgument("the coordinator does not take " + MessageName(r.type));
  }
}

Result<Node*> Membership::LiveNodeLocked(int id) {
  auto it = s_.nodes.find(id);
  if (it == s_.nodes.end() || it->second.state == NodeState::kDead) {
    return PermissionDenied("unknown or retired node " + std::to_string(id));
  }
  return &it->second;
}

// `m` is whole and checked (msg::Report::FromJson): only whether it is about
// the current epoch of a slot this node holds is left to decide.
void Membership::Report(Node& n, msg::Report m, Responder out) {
  const msg::ReportOrigin* o = m.origin();
  const bool current = o && o->term == s_.term && o->bag == s_.bag && o->epoch == s_.epoch &&
                       o->slot >= 0 && o->slot < static_cast<int>(s_.slots.size()) &&
                       s_.slots[o->slot].holder == n.id;
  if (current && m.kind == msg::EpochDoneReport::kKind && !s_.slots[o->slot].trained) {
    s_.slots[o->slot].trained = true;
    s_.slots[o->slot].train_report = std::move(m.epoch_done);
  } else if (current && m.kind == msg::ValidDoneReport::kKind && !s_.slots[o->slot].validated) {
    s_.slots[o->slot].validated = true;
    s_.slots[o->slot].valid_report = std::move(m.valid_done);
  } else if (m.kind == "await" && !m.reason.empty()) {
    TARN_LOG(kInfo) << "worker " << n.index << " waits: " << m.reason;
  }
  if (n.directive_seq > m.seq) {
    out->Reply(n.directive.dump());
  } else {
    n.waiting = std::move(out);
  }
}

void Membership::DirectLocked(Node& n, msg::Directive d) {
  d.seq = ++n.directive_seq;
  n.directive = d.ToJson();
  if (n.waiting) {
    n.waiting->Reply(n.directive.dump());
    n.waiting.reset();
  }
}

msg::Directive Membership::SlotDirective(const std::string& action, int slot, int64_t position) {
  msg::Directive d;
  d.action = action;
  d.slot = slot;
  d.bag = s_.bag;
  d.epoch = s_.epoch;
  d.term = s_.term;
  d.position = position;
  for (int id : s_.ps_node) d.ps.push_back(s_.nodes[id].address);
  d.shards = s_.slots[slot].shards;
  d.job = job_json_;
  return d;
}

void Membership::OnTaskExit(const cluster::TaskExit& e) {
  std::lock_guard<std::mutex> lock(s_.mu);
  for (auto& [id, n] : s_.nodes) {
    if (n.task != e.task) continue;
    n.exit = e.describe;
    n.exit_code = e.exit_code;
    if (n.state != NodeState::kDead && !s_.finished) s_.events.push_back({id, e.describe});
    n.state = NodeState::kDead;
    if (n.waiting) n.waiting.reset();
    s_.dirty = true;
  }
  s_.cv.notify_all();
}

void Membership::MonitorLoop() {
  const auto allowance = std::chrono::milliseconds(static_cast<int64_t>(job_.heartbeat_ms) *
                                                   job_.max_missed_heartbeats);
  // A node must register within this long of its launch; YARN may queue a
  // container ask for a while on a busy cluster.
  const auto start_allowance = std::max<CoordinatorClock::duration>(
      allowance, std::chrono::seconds(job_.backend == "yarn" ? 600 : 60));
  while (!stopping_.load()) {
    {
      std::lock_guard<std::mutex> lock(s_.mu);
      auto now = CoordinatorClock::now();
      for (auto& [id, n] : s_.nodes) {
        bool late = n.state == NodeState::kRunning && now - n.last_beat > allowance;
        bool never = n.state == NodeState::kLaunching && now - n.launched > start_allowance;
        if ((!late && !never) || s_.finished) continue;
        std::string why =
            n.role + " " + std::to_string(n.index) +
            (late ? " missed " + std::to_string(job_.max_missed_heartbeats) + " heartbeats"
                  : " did not register in time (" + backend_->Where(n.task) + ")");
        (void)backend_->Kill(n.task);
        n.state = NodeState::kDead;
        n.exit = why;
        if (n.waiting) n.waiting.reset();
        s_.events.push_back({id, why});
        s_.dirty = true;
        s_.cv.notify_all();
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min(job_.heartbeat_ms, 200)));
  }
}

// Handles queued failures. Returns true when the parameter servers rolled
// back (the caller restarts the epoch from s_.epoch).
Result<bool> Membership::HandleEvents(std::unique_lock<std::mutex>& lock) {
  bool rolled_back = false;
  while (!s_.events.empty()) {
    NodeEvent e = s_.events.front();
    s_.events.pop_front();
    Node& n = s_.nodes[e.node];
    TARN_LOG(kWarn) << "lost " << e.why;
    if (n.role == "serving") {
      continue;  // the model servers do not hold up training
    } else if (n.role == "worker") {
      TARN_RETURN_IF_ERROR(ReplaceWorkerLocked(n));
    } else {
      TARN_RETURN_IF_ERROR(hooks_.restart_ps(lock, n.index));
      rolled_back = true;
    }
    hooks_.cluster_changed();
  }
  return rolled_back;
}

Status Membership::ReplaceWorkerLocked(Node& dead) {
  const int slot = dead.slot;
  dead.slot = -1;
  if (slot < 0) return Status::Ok();  // a backup standing by
  SlotState& s = s_.slots[slot];
  Node* backup = nullptr;
  for (auto& [id, n] : s_.nodes) {
    if (n.role == "worker" && n.slot < 0 && n.state == NodeState::kRunning) {
      backup = &n;
      break;
    }
  }
  if (!backup) {
    if (!job_.allow_degraded) {
      return FailedPrecondition(dead.exit + ", and no backup worker is left (" +
                                std::to_string(job_.backups) +
                                " configured by shifu.worker.instances.backup); set "
                                "tarn.train.allow-degraded=true to continue without its shards");
    }
    s.dropped = true;
    s.holder = -1;
    TARN_LOG(kWarn) << "continuing degraded: slot " << slot << "'s " << s.shards.size()
                    << " shard(s) are left out from now on";
    hooks_.slot_dropped(slot);
    int active = 0;
    for (const auto& x : s_.slots) active += !x.dropped;
    if (active == 0) return FailedPrecondition("every worker slot is lost");
    return Status::Ok();
  }
  backup->slot = slot;
  s.holder = backup->id;
  // Continue where the lost worker was: its last reported batch of this epoch.
  int64_t position = (dead.bag == s_.bag && dead.epoch == s_.epoch) ? dead.position : 0;
  if (s.trained) position = INT64_MAX / 2;  // its epoch is done; only validation is left
  const char* action = s_.phase == "validate" ? "validate" : "train";
  TARN_LOG(kInfo) << "backup worker " << backup->index << " takes over slot " << slot << " (shards "
                  << s.shards.size() << ") at batch " << (s.trained ? -1 : position) << " of epoch "
                  << s_.epoch + 1;
  DirectLocked(*backup, SlotDirective(action, slot, position));
  ++s_.generation;
  return Status::Ok();
}

// Waits (handling nothing else) until the nodes registered.
Status Membership::WaitRegisteredLocked(std::unique_lock<std::mutex>& lock,
                                        const std::vector<int>& ids,
                                        CoordinatorClock::duration timeout) {
  auto deadline = CoordinatorClock::now() + timeout;
  while (true) {
    bool all = true;
    for (int id : ids) {
      const Node& n = s_.nodes[id];
      if (n.state == NodeState::kDead) {
        return Unavailable(n.role + " " + std::to_string(n.index) + " failed to start: " + n.exit +
                           " (see " + job_.logs_dir + "/" + n.role + "-" + std::to_string(n.index) +
                           ".log)");
      }
      all = all && n.state == NodeState::kRunning;
    }
    if (all) return Status::Ok();
    if (CoordinatorClock::now() > deadline)
      return DeadlineExceeded("nodes did not register in time");
    s_.cv.wait_for(lock, std::chrono::milliseconds(100));
  }
}

}  // namespace tarn::runtime
