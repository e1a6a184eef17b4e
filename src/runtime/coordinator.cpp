// The coordinator of a distributed job. It launches the parameter servers,
// workers and backups through the backend, publishes the cluster once they
// have registered, and drives the epochs: workers report, and the answer to
// each report is the worker's next directive (train from a position,
// validate, stand by, finish). Every failure is turned into an event the
// driver thread handles between directives:
//   - a worker that exits or misses its heartbeats: a backup takes over its
//     slot (its shards) from the last position the worker reported;
//   - a parameter server that dies: it is launched again, every server
//     reloads the last checkpoint, and the workers roll back to it;
//   - the coordinator itself: its children die with it, and `tarn train`
//     with isContinuous resumes from the newest complete checkpoint.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "cluster/backend.h"
#include "cluster/local_backend.h"
#include "cluster/yarn/yarn_backend.h"
#include "common/checksum.h"
#include "common/files.h"
#include "common/log.h"
#include "common/strings.h"
#include "data/file_system.h"
#include "model/epoch_report.h"
#include "model/model_file.h"
#include "model/model_spec.h"
#include "model/serving_version.h"
#include "model/tensorboard.h"
#include "model/training_data.h"
#include "net/http_server.h"
#include "runtime/checkpoint.h"
#include "runtime/embedded_backend.h"
#include "runtime/messages.h"
#include "runtime/node.h"
#include "runtime/protocol.h"
#include "runtime/status_page.h"

namespace tarn::runtime {

namespace {

using Clock = std::chrono::steady_clock;
using Responder = std::shared_ptr<net::RpcServer::Responder>;
using data::Json;
using data::OrNull;

Status MakeDirsAnywhere(const std::string& dir) {
  TARN_ASSIGN_OR_RETURN(auto fs, data::FileSystemFor(dir));
  return fs->MakeDirs(dir);
}

Status RemoveAnywhere(const std::string& path) {
  TARN_ASSIGN_OR_RETURN(auto fs, data::FileSystemFor(path));
  return fs->Delete(path, true);
}

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

// AUC from score histograms of positive and negative weight (bins ascending).
double HistogramAuc(const std::vector<double>& pos, const std::vector<double>& neg) {
  double tp = 0, fp = 0, area = 0, total_pos = 0, total_neg = 0;
  for (size_t i = 0; i < pos.size(); ++i) {
    total_pos += pos[i];
    total_neg += neg[i];
  }
  if (total_pos <= 0 || total_neg <= 0) return NAN;
  for (size_t i = pos.size(); i-- > 0;) {  // from the highest scores down
    const double tp2 = tp + pos[i], fp2 = fp + neg[i];
    area += (fp2 - fp) * (tp + tp2) / 2;
    tp = tp2;
    fp = fp2;
  }
  return area / (total_pos * total_neg);
}

class Coordinator {
 public:
  Coordinator(JobConfig job, std::string secret, std::string binary)
      : job_(std::move(job)), secret_(std::move(secret)), binary_(std::move(binary)) {}

  ~Coordinator() {
    stopping_ = true;
    if (monitor_.joinable()) monitor_.join();
    if (backend_) backend_->Shutdown();
    if (status_) status_->Stop();
    if (server_) server_->Stop();
  }

  Status Run() {
    TARN_RETURN_IF_ERROR(Setup());
    Status st = Train();
    if (st.ok() && job_.serving_instances > 0) {
      StopTraining();
      KeepServing();
    }
    Finish(st);
    return st;
  }

  // Ends the workers and parameter servers, not the model servers.
  void StopTraining() {
    std::unique_lock<std::mutex> lock(mu_);
    for (auto& [id, n] : nodes_) {
      if (n.role == "worker" && n.state == State::kRunning) {
        msg::Directive finish;
        finish.action = "finish";
        DirectLocked(n, std::move(finish));
      }
    }
    lock.unlock();
    for (auto& c : ps_clients_) {
      if (c) (void)msg::CallForStatus(*c, msg::Shutdown{}, net::Deadline::InMs(2000));
    }
  }

 private:
  enum class State { kLaunching, kRunning, kDead };
  struct Node {
    int id = 0;
    std::string role;  // "ps" or "worker"
    int index = 0;
    int64_t task = -1;
    int64_t pid = 0;
    std::string address;
    State state = State::kLaunching;
    Clock::time_point launched, last_beat;
    int bag = 0, epoch = 0;
    int64_t position = 0;
    int slot = -1;  // workers: the slot held, -1 for a standing-by backup
    Json directive;
    int64_t directive_seq = 0;
    Responder waiting;  // a report waiting for its next directive
    std::string exit;   // how it ended
    int exit_code = -1;
  };
  struct SlotState {
    std::vector<int> shards;
    int holder = -1;  // node id
    bool dropped = false;
    bool trained = false, validated = false;
    Json train_report, valid_report;
  };
  struct Event {
    int node;
    std::string why;
  };

  // ---- set-up ----

  Status Setup() {
    for (const auto& dir : {job_.checkpoint_dir, job_.logs_dir, job_.models_dir}) {
      TARN_RETURN_IF_ERROR(MakeDirsAnywhere(dir));
    }
    TARN_ASSIGN_OR_RETURN(
        spec_, model::ModelSpec::FromTrainParams(job_.train_params, job_.algorithm, job_.inputs));
    param_count_ = spec_.ParameterCount();
    if (job_.ps > static_cast<int>(param_count_)) {
      return InvalidArgument("shifu.ps.instances (" + std::to_string(job_.ps) +
                             ") exceeds the model's " + std::to_string(param_count_) +
                             " parameters");
    }
    std::string print = spec_.ToJson().dump() + " ps=" + std::to_string(job_.ps);
    char hex[16];
    std::snprintf(hex, sizeof(hex), "%08x", Crc32c(0, print.data(), print.size()));
    fingerprint_ = hex;
    if (job_.backend == "local") {
      transport_ = MakeTcpTransport(secret_);
      backend_ = cluster::MakeLocalBackend(job_.logs_dir);
    } else if (job_.backend == "yarn") {
      // This process is the ApplicationMaster: containers come from YARN.
      transport_ = MakeTcpTransport(secret_);
      TARN_ASSIGN_OR_RETURN(auto options, cluster::yarn::YarnBackendOptionsFromEnvironment());
      auto yarn = std::make_unique<cluster::yarn::YarnBackend>(std::move(options));
      yarn_ = yarn.get();
      yarn_->OnFatal([this](const Status& st) {
        std::lock_guard<std::mutex> lock(mu_);
        fatal_ = st;
        cv_.notify_all();
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
    net::HttpServer::Options http;
    http.host = job_.bind_host == "auto" ? "0.0.0.0" : job_.bind_host;
    http.port = job_.status_port;
    http.threads = 1;
    auto status = net::HttpServer::Start(
        http, [this](const net::HttpRequest& q, net::HttpResponse* a) { ServeStatus(q, a); });
    if (!status.ok()) return status.status().WithContext("coordinator status page");
    status_ = std::move(*status);
    if (yarn_) {
      cluster::yarn::RegisterRequest reg;
      reg.host = job_.bind_host == "auto" ? HostName() : job_.bind_host;
      reg.tracking_url = StatusUrl();
      TARN_RETURN_IF_ERROR(yarn_->Register(reg).status().WithContext("registering the AM"));
      if (yarn_->attempt().attempt > 1) {
        // A second attempt continues from the first one's newest checkpoint.
        job_.is_continuous = true;
        TARN_LOG(kInfo) << "application attempt " << yarn_->attempt().attempt
                        << ": resuming from the checkpoint in " << job_.checkpoint_dir;
      }
    }
    TARN_LOG(kInfo) << "coordinator on " << address_ << "; status page http://" << job_.bind_host
                    << ":" << status_->port() << "/";
    // Shards to slots, round robin: slot s trains shards s, s + W, ...
    slots_.resize(job_.workers);
    for (size_t i = 0; i < job_.shard_paths.size(); ++i) {
      slots_[i % job_.workers].shards.push_back(static_cast<int>(i));
    }
    std::lock_guard<std::mutex> lock(mu_);
    for (int i = 0; i < job_.ps; ++i) {
      TARN_ASSIGN_OR_RETURN(int id, LaunchLocked("ps", i));
      ps_node_.push_back(id);
    }
    for (int i = 0; i < job_.workers + job_.backups; ++i) {
      TARN_ASSIGN_OR_RETURN(int id, LaunchLocked("worker", i));
      if (i < job_.workers) {
        nodes_[id].slot = i;
        slots_[i].holder = id;
      }
    }
    for (int i = 0; i < job_.serving_instances; ++i) {
      TARN_RETURN_IF_ERROR(LaunchLocked("serving", i).status());
    }
    monitor_ = std::thread([this] { MonitorLoop(); });
    WriteClusterLocked();
    return Status::Ok();
  }

  Result<int> LaunchLocked(const std::string& role, int index) {
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
    n.launched = Clock::now();
    nodes_[id] = n;
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
    nodes_[id].task = *task;
    ++generation_;
    return id;
  }

  // ---- the RPC handler (server threads) ----

  void Handle(const net::RpcServer::Request& r, Responder out) {
    Status st = Dispatch(r, out);
    if (!st.ok()) out->Fail(st);
  }

  // Every message is parsed whole before it touches a node: a malformed one
  // is refused with the field it got wrong.
  Status Dispatch(const net::RpcServer::Request& r, Responder& out) {
    switch (r.type) {
      case kRegister: {
        TARN_ASSIGN_OR_RETURN(auto m, msg::Parse<msg::Register>(r.payload));
        std::lock_guard<std::mutex> lock(mu_);
        TARN_ASSIGN_OR_RETURN(Node * n, LiveNodeLocked(m.node));
        if (m.role != n->role || m.index != n->index) {
          return PermissionDenied("registration does not match the launched node");
        }
        n->pid = m.pid;
        n->address = m.address;
        n->state = State::kRunning;
        n->last_beat = Clock::now();
        ++generation_;
        dirty_ = true;
        out->Reply(msg::RegisterReply{generation_, job_.heartbeat_ms, job_.max_missed_heartbeats}
                       .ToJson()
                       .dump());
        cv_.notify_all();
        return Status::Ok();
      }
      case kHeartbeat: {
        TARN_ASSIGN_OR_RETURN(auto m, msg::Parse<msg::Heartbeat>(r.payload));
        std::lock_guard<std::mutex> lock(mu_);
        TARN_ASSIGN_OR_RETURN(Node * n, LiveNodeLocked(m.node));
        n->last_beat = Clock::now();
        n->bag = m.bag;
        n->epoch = m.epoch;
        n->position = m.position;
        out->Reply(msg::HeartbeatReply{finished_}.ToJson().dump());
        return Status::Ok();
      }
      case kReport: {
        TARN_ASSIGN_OR_RETURN(auto m, msg::Parse<msg::Report>(r.payload));
        std::lock_guard<std::mutex> lock(mu_);
        TARN_ASSIGN_OR_RETURN(Node * n, LiveNodeLocked(m.node));
        Report(*n, m, std::move(out));
        cv_.notify_all();
        return Status::Ok();
      }
      default:
        return InvalidArgument("the coordinator does not take " + MessageName(r.type));
    }
  }

  Result<Node*> LiveNodeLocked(int id) {
    auto it = nodes_.find(id);
    if (it == nodes_.end() || it->second.state == State::kDead) {
      return PermissionDenied("unknown or retired node " + std::to_string(id));
    }
    return &it->second;
  }

  void Report(Node& n, const msg::Report& m, Responder out) {
    const std::string& kind = m.kind;
    const int slot = m.slot;
    const bool current = m.term == term_ && m.bag == bag_ && m.epoch == epoch_ && slot >= 0 &&
                         slot < static_cast<int>(slots_.size()) && slots_[slot].holder == n.id;
    if (current && kind == "epoch_done" && !slots_[slot].trained) {
      slots_[slot].trained = true;
      slots_[slot].train_report = m.body;
    } else if (current && kind == "valid_done" && !slots_[slot].validated) {
      slots_[slot].validated = true;
      slots_[slot].valid_report = m.body;
    } else if (kind == "await" && !m.reason.empty()) {
      TARN_LOG(kInfo) << "worker " << n.index << " waits: " << m.reason;
    }
    if (n.directive_seq > m.seq) {
      out->Reply(n.directive.dump());
    } else {
      n.waiting = std::move(out);
    }
  }

  void DirectLocked(Node& n, msg::Directive d) {
    d.seq = ++n.directive_seq;
    n.directive = d.ToJson();
    if (n.waiting) {
      n.waiting->Reply(n.directive.dump());
      n.waiting.reset();
    }
  }

  msg::Directive SlotDirective(const std::string& action, int slot, int64_t position) {
    msg::Directive d;
    d.action = action;
    d.slot = slot;
    d.bag = bag_;
    d.epoch = epoch_;
    d.term = term_;
    d.position = position;
    for (int id : ps_node_) d.ps.push_back(nodes_[id].address);
    d.shards = slots_[slot].shards;
    d.job = job_json_;
    return d;
  }

  // ---- failures ----

  void OnTaskExit(const cluster::TaskExit& e) {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [id, n] : nodes_) {
      if (n.task != e.task) continue;
      n.exit = e.describe;
      n.exit_code = e.exit_code;
      if (n.state != State::kDead && !finished_) events_.push_back({id, e.describe});
      n.state = State::kDead;
      if (n.waiting) n.waiting.reset();
      dirty_ = true;
    }
    cv_.notify_all();
  }

  void MonitorLoop() {
    const auto allowance = std::chrono::milliseconds(static_cast<int64_t>(job_.heartbeat_ms) *
                                                     job_.max_missed_heartbeats);
    // A node must register within this long of its launch; YARN may queue a
    // container ask for a while on a busy cluster.
    const auto start_allowance = std::max<Clock::duration>(
        allowance, std::chrono::seconds(job_.backend == "yarn" ? 600 : 60));
    while (!stopping_.load()) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        auto now = Clock::now();
        for (auto& [id, n] : nodes_) {
          bool late = n.state == State::kRunning && now - n.last_beat > allowance;
          bool never = n.state == State::kLaunching && now - n.launched > start_allowance;
          if ((!late && !never) || finished_) continue;
          std::string why =
              n.role + " " + std::to_string(n.index) +
              (late ? " missed " + std::to_string(job_.max_missed_heartbeats) + " heartbeats"
                    : " did not register in time (" + backend_->Where(n.task) + ")");
          (void)backend_->Kill(n.task);
          n.state = State::kDead;
          n.exit = why;
          if (n.waiting) n.waiting.reset();
          events_.push_back({id, why});
          dirty_ = true;
          cv_.notify_all();
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min(job_.heartbeat_ms, 200)));
    }
  }

  // Handles queued failures. Returns true when the parameter servers rolled
  // back (the caller restarts the epoch from epoch_).
  Result<bool> HandleEvents(std::unique_lock<std::mutex>& lock) {
    bool rolled_back = false;
    while (!events_.empty()) {
      Event e = events_.front();
      events_.pop_front();
      Node& n = nodes_[e.node];
      TARN_LOG(kWarn) << "lost " << e.why;
      if (n.role == "serving") {
        continue;  // the model servers do not hold up training
      } else if (n.role == "worker") {
        TARN_RETURN_IF_ERROR(ReplaceWorkerLocked(n));
      } else {
        TARN_RETURN_IF_ERROR(RestartPsLocked(lock, n.index));
        rolled_back = true;
      }
      WriteClusterLocked();
    }
    return rolled_back;
  }

  Status ReplaceWorkerLocked(Node& dead) {
    const int slot = dead.slot;
    dead.slot = -1;
    if (slot < 0) return Status::Ok();  // a backup standing by
    SlotState& s = slots_[slot];
    Node* backup = nullptr;
    for (auto& [id, n] : nodes_) {
      if (n.role == "worker" && n.slot < 0 && n.state == State::kRunning) {
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
      for (auto& c : ps_clients_) {
        (void)msg::CallForStatus(*c, msg::SlotDone{term_, slot}, net::Deadline::InMs(10000));
      }
      int active = 0;
      for (const auto& x : slots_) active += !x.dropped;
      if (active == 0) return FailedPrecondition("every worker slot is lost");
      return Status::Ok();
    }
    backup->slot = slot;
    s.holder = backup->id;
    // Continue where the lost worker was: its last reported batch of this epoch.
    int64_t position = (dead.bag == bag_ && dead.epoch == epoch_) ? dead.position : 0;
    if (s.trained) position = INT64_MAX / 2;  // its epoch is done; only validation is left
    const char* action = phase_ == "validate" ? "validate" : "train";
    TARN_LOG(kInfo) << "backup worker " << backup->index << " takes over slot " << slot
                    << " (shards " << s.shards.size() << ") at batch "
                    << (s.trained ? -1 : position) << " of epoch " << epoch_ + 1;
    DirectLocked(*backup, SlotDirective(action, slot, position));
    ++generation_;
    return Status::Ok();
  }

  Status RestartPsLocked(std::unique_lock<std::mutex>& lock, int index) {
    if (++ps_restarts_ > job_.max_ps_restarts) {
      return FailedPrecondition("parameter server " + std::to_string(index) + " failed " +
                                std::to_string(ps_restarts_) +
                                " times (tarn.train.max-ps-restarts)");
    }
    ++term_;
    // The live servers stop taking pushes of the old term; waiting workers
    // get an error and report back for their next directive.
    lock.unlock();
    for (size_t i = 0; i < ps_clients_.size(); ++i) {
      if (static_cast<int>(i) == index || !ps_clients_[i]) continue;
      (void)msg::CallForStatus(*ps_clients_[i], msg::Reset{term_}, net::Deadline::InMs(10000));
    }
    lock.lock();
    TARN_ASSIGN_OR_RETURN(int id, LaunchLocked("ps", index));
    ps_node_[index] = id;
    TARN_LOG(kInfo) << "relaunched parameter server " << index;
    TARN_RETURN_IF_ERROR(WaitRegisteredLocked(lock, {id}, std::chrono::seconds(60)));
    lock.unlock();
    Status st = ConnectPs(index);
    if (st.ok()) {
      auto m = NewestManifest(job_.checkpoint_dir);
      if (!m.ok() || m->bag != bag_) {
        st =
            FailedPrecondition("no checkpoint of bag " + std::to_string(bag_) + " to roll back to");
      } else {
        st = ConfigurePs(&*m);
        if (st.ok()) {
          std::lock_guard<std::mutex> g(mu_);
          epoch_ = m->epoch;
          RestoreState(m->state);
          TARN_LOG(kInfo) << "rolled back to the checkpoint after epoch " << epoch_ << " ("
                          << m->path << ")";
        }
      }
    }
    lock.lock();
    return st;
  }

  // Waits (handling nothing else) until the nodes registered.
  Status WaitRegisteredLocked(std::unique_lock<std::mutex>& lock, const std::vector<int>& ids,
                              Clock::duration timeout) {
    auto deadline = Clock::now() + timeout;
    while (true) {
      bool all = true;
      for (int id : ids) {
        const Node& n = nodes_[id];
        if (n.state == State::kDead) {
          return Unavailable(n.role + " " + std::to_string(n.index) +
                             " failed to start: " + n.exit + " (see " + job_.logs_dir + "/" +
                             n.role + "-" + std::to_string(n.index) + ".log)");
        }
        all = all && n.state == State::kRunning;
      }
      if (all) return Status::Ok();
      if (Clock::now() > deadline) return DeadlineExceeded("nodes did not register in time");
      cv_.wait_for(lock, std::chrono::milliseconds(100));
    }
  }

  // ---- parameter servers ----

  Status ConnectPs(int index) {
    std::string address;
    {
      std::lock_guard<std::mutex> lock(mu_);
      address = nodes_[ps_node_[index]].address;
    }
    net::ConnectionOptions o;
    o.max_message_bytes = static_cast<size_t>(job_.max_message_bytes);
    TARN_ASSIGN_OR_RETURN(auto c,
                          transport_->Dial(address, o, job_.retry_ms, net::Deadline::InMs(30000)));
    if (ps_clients_.size() <= static_cast<size_t>(index)) ps_clients_.resize(index + 1);
    ps_clients_[index] = std::move(c);
    return Status::Ok();
  }

  template <typename Message>
  Status CallPs(int i, const Message& m, std::string* reply = nullptr) {
    auto r = ps_clients_[i]->Call(Message::kType, m.ToJson().dump(), net::Deadline::InMs(120000));
    if (!r.ok()) return r.status().WithContext("parameter server " + std::to_string(i));
    if (reply) *reply = std::move(*r);
    return Status::Ok();
  }

  // Initializes (m == nullptr) or loads every server's slice.
  Status ConfigurePs(const Manifest* m) {
    if (m && m->fingerprint != fingerprint_) {
      return FailedPrecondition(m->path +
                                " was written for another network or number of parameter "
                                "servers; set train.isContinuous to false to start over");
    }
    for (int i = 0; i < job_.ps; ++i) {
      auto [b, e] = SliceRange(param_count_, job_.ps, i);
      msg::Configure c;
      c.term = term_;
      c.bag = bag_;
      c.epoch = epoch_;
      c.begin = b;
      c.end = e;
      c.job = job_json_;
      c.init_seed =
          model::MixSeed(static_cast<uint64_t>(job_.seed) + 7919 * static_cast<uint64_t>(bag_));
      c.load = m ? m->slices[i].path : "";
      TARN_RETURN_IF_ERROR(CallPs(i, c));
    }
    return Status::Ok();
  }

  Status Checkpoint(int epochs_done) {
    Manifest m;
    m.bag = bag_;
    m.epoch = epochs_done;
    m.term = term_;
    m.fingerprint = fingerprint_;
    m.state = SaveState();
    for (int i = 0; i < job_.ps; ++i) {
      const std::string path = JoinPath(job_.checkpoint_dir, SliceName(bag_, epochs_done, i));
      std::string reply;
      TARN_RETURN_IF_ERROR(CallPs(i, msg::Checkpoint{epochs_done, path}, &reply));
      TARN_ASSIGN_OR_RETURN(auto answer, msg::Parse<msg::CheckpointReply>(reply));
      auto [b, e] = SliceRange(param_count_, job_.ps, i);
      m.slices.push_back({path, answer.crc, b, e});
    }
    TARN_RETURN_IF_ERROR(WriteManifest(job_.checkpoint_dir, m));
    PruneCheckpoints(job_.checkpoint_dir, bag_, epochs_done, 2);
    return Status::Ok();
  }

  Result<std::vector<float>> GatherParams() {
    std::vector<float> all(param_count_);
    for (int i = 0; i < job_.ps; ++i) {
      std::string reply;
      TARN_RETURN_IF_ERROR(CallPs(i, msg::GetParams{}, &reply));
      auto [b, e] = SliceRange(param_count_, job_.ps, i);
      TARN_ASSIGN_OR_RETURN(auto slice, msg::Params::Decode(reply, e - b));
      std::copy(slice.begin(), slice.end(), all.begin() + static_cast<ptrdiff_t>(b));
    }
    return all;
  }

  Json SaveState() const {
    return Json{{"bestValid", std::isfinite(best_valid_) ? best_valid_ : 1e300},
                {"sinceBest", since_best_},
                {"final", final_}};
  }
  void RestoreState(const Json& s) {
    best_valid_ = s.value("bestValid", 1e300);
    if (best_valid_ >= 1e300) best_valid_ = INFINITY;
    since_best_ = s.value("sinceBest", 0);
  }

  // ---- training ----

  Status Train() {
    job_json_ = job_.ToJson();
    std::unique_lock<std::mutex> lock(mu_);
    std::vector<int> first;
    for (auto& [id, n] : nodes_) {
      if (n.role == "ps" || n.slot >= 0) first.push_back(id);
    }
    TARN_RETURN_IF_ERROR(WaitRegisteredLocked(lock, first, std::chrono::seconds(120)));
    lock.unlock();
    for (int i = 0; i < job_.ps; ++i) {
      TARN_RETURN_IF_ERROR(ConnectPs(i));
    }
    int start_bag = 0;
    std::optional<Manifest> resume;
    if (job_.is_continuous) {
      auto old = ReadWhole(job_.history_json);  // a resumed job keeps its epochs' history
      if (old.ok()) {
        Json h = Json::parse(*old, nullptr, false);
        if (h.is_array()) history_ = h;
      }
      auto m = NewestManifest(job_.checkpoint_dir);
      if (m.ok()) {
        resume = *m;
        start_bag = m->bag + (m->state.value("final", false) ? 1 : 0);
        if (m->state.value("final", false)) resume.reset();
      }
    } else {
      TARN_RETURN_IF_ERROR(RemoveAnywhere(job_.checkpoint_dir));
      TARN_RETURN_IF_ERROR(MakeDirsAnywhere(job_.checkpoint_dir));
    }
    for (int bag = start_bag; bag < job_.bags; ++bag) {
      lock.lock();
      bag_ = bag;
      epoch_ = 0;
      best_valid_ = INFINITY;
      since_best_ = 0;
      final_ = false;
      best_params_.clear();
      ++term_;
      lock.unlock();
      if (resume && resume->bag == bag) {
        TARN_RETURN_IF_ERROR(ConfigurePs(&*resume));
        std::lock_guard<std::mutex> g(mu_);
        epoch_ = resume->epoch;
        RestoreState(resume->state);
        TARN_LOG(kInfo) << "resuming bag " << bag << " after epoch " << epoch_ << " from "
                        << resume->path;
      } else {
        TARN_RETURN_IF_ERROR(ConfigurePs(nullptr));
        TARN_RETURN_IF_ERROR(Checkpoint(0));
      }
      TARN_RETURN_IF_ERROR(OpenTensorBoard());
      while (true) {
        TARN_ASSIGN_OR_RETURN(int epochs, TrainBag());
        Status written = WriteModel(epochs);
        if (written.ok()) break;
        TARN_RETURN_IF_ERROR(RecoverFromPsFailure(written).status());
      }
    }
    return Status::Ok();
  }

  // Runs the epochs of bag_; returns the epochs completed.
  // This bag's TensorBoard writer (a fresh job clears the old logs once).
  Status OpenTensorBoard() {
    if (!job_.tensorboard) return Status::Ok();
    std::string dir = job_.bags > 1 ? JoinPath(job_.tensorboard_dir, "bag" + std::to_string(bag_))
                                    : job_.tensorboard_dir;
    if (!job_.is_continuous && bag_ == 0) {
      TARN_RETURN_IF_ERROR(RemoveAnywhere(job_.tensorboard_dir));
    }
    // Event files are appended to: on HDFS they are written here and copied.
    tensorboard_local_ = data::IsHdfsPath(dir)
                             ? JoinPath("tensorboard", dir.substr(job_.tensorboard_dir.size()))
                             : dir;
    tensorboard_remote_ = data::IsHdfsPath(dir) ? dir : "";
    TARN_ASSIGN_OR_RETURN(tensorboard_, model::TensorBoardWriter::Open(tensorboard_local_));
    return Status::Ok();
  }

  // A call to a parameter server failed. When the server is lost (its exit
  // or missed heartbeats arrive shortly), handle that as during training:
  // relaunch it and roll back; true then. Any other failure stands.
  Result<bool> RecoverFromPsFailure(const Status& failure) {
    if (failure.code() != StatusCode::kUnavailable &&
        failure.code() != StatusCode::kDeadlineExceeded) {
      return failure;
    }
    std::unique_lock<std::mutex> lock(mu_);
    const auto deadline = Clock::now() +
                          std::chrono::milliseconds(static_cast<int64_t>(job_.heartbeat_ms) *
                                                    job_.max_missed_heartbeats) +
                          std::chrono::seconds(5);
    while (events_.empty() && fatal_.ok() && Clock::now() < deadline) {
      cv_.wait_for(lock, std::chrono::milliseconds(100));
    }
    if (events_.empty()) return failure;
    TARN_ASSIGN_OR_RETURN(bool rolled, HandleEvents(lock));
    if (!rolled) return failure;
    return true;
  }

  // Runs the epochs of bag_; returns the epochs completed.
  Result<int> TrainBag() {
    while (epoch_ < job_.epochs) {
      std::unique_lock<std::mutex> lock(mu_);
      // Start the epoch on the servers, then release the workers.
      std::vector<int> active;
      for (size_t s = 0; s < slots_.size(); ++s) {
        slots_[s].trained = slots_[s].validated = false;
        if (!slots_[s].dropped) active.push_back(static_cast<int>(s));
      }
      phase_ = "train";
      lock.unlock();
      Status started = Status::Ok();
      for (int i = 0; i < job_.ps && started.ok(); ++i) {
        started = CallPs(i, msg::StartEpoch{term_, epoch_, active});
      }
      if (!started.ok()) {
        TARN_RETURN_IF_ERROR(RecoverFromPsFailure(started).status());
        continue;
      }
      lock.lock();
      const auto t0 = Clock::now();
      for (int s : active) DirectLocked(nodes_[slots_[s].holder], SlotDirective("train", s, 0));
      WriteClusterLocked();
      TARN_ASSIGN_OR_RETURN(bool rolled, WaitSlots(lock, &SlotState::trained));
      if (rolled) continue;
      const double train_secs = Seconds(t0);
      phase_ = "validate";
      for (size_t s = 0; s < slots_.size(); ++s) {
        if (!slots_[s].dropped) {
          DirectLocked(nodes_[slots_[s].holder], SlotDirective("validate", static_cast<int>(s), 0));
        }
      }
      TARN_ASSIGN_OR_RETURN(rolled, WaitSlots(lock, &SlotState::validated));
      if (rolled) continue;
      const double secs = Seconds(t0);
      // The epoch's figures, summed over the slots.
      double loss = 0, weight = 0, vloss = 0, vweight = 0, rows = 0, stale = 0, bytes = 0;
      // Shifu's errors: each worker's mean, averaged over the workers (NNMaster).
      double shifu_train = 0, shifu_valid = 0;
      int shifu_train_workers = 0, shifu_valid_workers = 0;
      std::vector<double> pos, neg;
      for (const auto& s : slots_) {
        if (s.dropped) continue;
        const model::ShifuError st{s.train_report.value("shifuError", 0.0),
                                   s.train_report.value("shifuRows", 0.0)};
        const model::ShifuError sv{s.valid_report.value("shifuError", 0.0),
                                   s.valid_report.value("shifuRows", 0.0)};
        if (st.rows > 0) {
          shifu_train += st.Mean();
          ++shifu_train_workers;
        }
        if (sv.rows > 0) {
          shifu_valid += sv.Mean();
          ++shifu_valid_workers;
        }
        loss += s.train_report.value("loss", 0.0);
        weight += s.train_report.value("weight", 0.0);
        rows += s.train_report.value("rows", 0.0);
        stale += s.train_report.value("stale", 0.0);
        bytes += s.train_report.value("bytes", 0.0);
        vloss += s.valid_report.value("loss", 0.0);
        vweight += s.valid_report.value("weight", 0.0);
        auto p = s.valid_report.value("pos", std::vector<double>{});
        auto q = s.valid_report.value("neg", std::vector<double>{});
        pos.resize(std::max(pos.size(), p.size()));
        neg.resize(std::max(neg.size(), q.size()));
        for (size_t i = 0; i < p.size(); ++i) pos[i] += p[i];
        for (size_t i = 0; i < q.size(); ++i) neg[i] += q[i];
      }
      phase_ = "checkpoint";
      lock.unlock();
      const double train_err = weight > 0 ? loss / weight : NAN;
      const double valid_err = vweight > 0 ? vloss / vweight : NAN;
      const double auc = HistogramAuc(pos, neg);
      const double samples_per_sec = rows / std::max(train_secs, 1e-9);
      model::EpochFigures figures;
      figures.epoch = epoch_ + 1;
      figures.shifu_train_error = shifu_train_workers ? shifu_train / shifu_train_workers : NAN;
      figures.shifu_valid_error = shifu_valid_workers ? shifu_valid / shifu_valid_workers : NAN;
      figures.train_loss = train_err;
      figures.valid_loss = valid_err;
      figures.samples_per_sec = samples_per_sec;
      figures.seconds = secs;
      figures.bag = job_.bags > 1 ? bag_ : -1;
      if (!Quiet()) {
        std::printf("%s\n", model::FormatEpochLine(figures).c_str());
        std::fflush(stdout);
      }
      {
        std::lock_guard<std::mutex> g(mu_);
        history_.push_back({{"bag", bag_},
                            {"epoch", epoch_ + 1},
                            {"trainError", train_err},
                            {"validError", OrNull(valid_err)},
                            {"shifuTrainError", OrNull(figures.shifu_train_error)},
                            {"shifuValidError", OrNull(figures.shifu_valid_error)},
                            {"auc", OrNull(auc)},
                            {"samplesPerSec", samples_per_sec},
                            {"staleGradients", stale},
                            {"bytesPerSample", rows > 0 ? bytes / rows : 0.0},
                            {"seconds", secs},
                            {"trainSeconds", train_secs}});
        // The history survives the job, for benchmarks and post-mortems.
        Status hs = WriteWhole(job_.history_json, history_.dump(1) + "\n");
        if (!hs.ok()) {
          TARN_LOG(kWarn) << "cannot write the epoch history: " << hs.message();
        }
      }
      if (tensorboard_) {
        const int64_t step = epoch_ + 1;
        TARN_RETURN_IF_ERROR(tensorboard_->AddScalar("loss/train", step, train_err));
        if (std::isfinite(valid_err)) {
          TARN_RETURN_IF_ERROR(tensorboard_->AddScalar("loss/valid", step, valid_err));
        }
        if (std::isfinite(auc)) {
          TARN_RETURN_IF_ERROR(tensorboard_->AddScalar("auc/valid", step, auc));
        }
        TARN_RETURN_IF_ERROR(
            tensorboard_->AddScalar("throughput/samples_per_sec", step, samples_per_sec));
        TARN_RETURN_IF_ERROR(tensorboard_->Flush());
        if (!tensorboard_remote_.empty()) {
          TARN_RETURN_IF_ERROR(data::CopyTree(tensorboard_local_, tensorboard_remote_));
        }
      }
      if (!std::isfinite(train_err)) {
        return FailedPrecondition("training diverged at epoch " + std::to_string(epoch_ + 1) +
                                  "; lower train.params.LearningRate");
      }
      bool improved = std::isfinite(valid_err) && valid_err < best_valid_;
      if (improved) {
        best_valid_ = valid_err;
        since_best_ = 0;
        if (job_.early_stop_patience > 0) {
          auto best = GatherParams();
          if (!best.ok()) {
            TARN_RETURN_IF_ERROR(RecoverFromPsFailure(best.status()).status());
            continue;
          }
          best_params_ = std::move(*best);
        }
      } else {
        ++since_best_;
      }
      last_train_ = train_err;
      last_valid_ = valid_err;
      last_shifu_train_ = figures.shifu_train_error;
      last_shifu_valid_ = figures.shifu_valid_error;
      bool stop = false;
      if (job_.convergence_threshold > 0 && train_err < job_.convergence_threshold) {
        TARN_LOG(kInfo) << "training error below convergenceThreshold; stopping";
        stop = true;
      }
      if (job_.early_stop_patience > 0 && since_best_ >= job_.early_stop_patience) {
        TARN_LOG(kInfo) << "valid error has not improved for " << job_.early_stop_patience
                        << " epochs; stopping and keeping the best epoch";
        stop = true;
      }
      {
        std::lock_guard<std::mutex> g(mu_);
        ++epoch_;
        final_ = stop || epoch_ == job_.epochs;
      }
      Status checkpointed = Checkpoint(epoch_);
      if (!checkpointed.ok()) {
        TARN_RETURN_IF_ERROR(RecoverFromPsFailure(checkpointed).status());
        continue;
      }
      if (!job_.serving_export_dir.empty() && job_.serving_export_every > 0 &&
          epoch_ % job_.serving_export_every == 0 && !final_) {
        auto params = GatherParams();
        if (!params.ok()) {
          TARN_RETURN_IF_ERROR(RecoverFromPsFailure(params.status()).status());
          continue;
        }
        auto version = ExportServing(MakeModel(*params, epoch_));
        if (!version.ok()) return version.status();
        TARN_LOG(kInfo) << "exported serving version " << *version << " to "
                        << job_.serving_export_dir;
      }
      if (stop) break;
    }
    return epoch_;
  }

  // Waits until every active slot has `flag`, handling failures meanwhile.
  // True when a parameter server failure rolled the job back.
  Result<bool> WaitSlots(std::unique_lock<std::mutex>& lock, bool SlotState::*flag) {
    while (true) {
      if (!fatal_.ok()) return fatal_;
      if (!events_.empty()) {
        TARN_ASSIGN_OR_RETURN(bool rolled, HandleEvents(lock));
        if (rolled) return true;
      }
      bool all = true;
      for (const auto& s : slots_) all = all && (s.dropped || s.*flag);
      if (all) return false;
      if (dirty_) WriteClusterLocked();
      cv_.wait_for(lock, std::chrono::milliseconds(200));
    }
  }

  model::ModelFile MakeModel(const std::vector<float>& params, int epochs) const {
    model::ModelFile f;
    f.spec = spec_;
    f.columns = job_.columns;
    f.norm_type = job_.norm_type;
    f.std_dev_cut_off = job_.std_dev_cut_off;
    f.missing_values = job_.missing_values;
    f.model_set_columns = job_.model_set_columns;
    f.training = {{"algorithm", job_.algorithm},
                  {"bag", bag_},
                  {"epochs", epochs},
                  {"trainError", OrNull(last_train_)},
                  {"validError", OrNull(last_valid_)},
                  {"shifuTrainError", OrNull(last_shifu_train_)},
                  {"shifuValidError", OrNull(last_shifu_valid_)},
                  {"seed", job_.seed},
                  {"runMode", "DIST"},
                  {"consistency", ConsistencyName(job_.consistency)},
                  {"parameterServers", job_.ps},
                  {"workers", job_.workers},
                  {"params", job_.train_params}};
    f.params = params;
    return f;
  }

  Status WriteModel(int epochs) {
    std::vector<float> params;
    if (job_.early_stop_patience > 0 && !best_params_.empty()) {
      params = best_params_;
    } else {
      TARN_ASSIGN_OR_RETURN(params, GatherParams());
    }
    auto model = MakeModel(params, epochs);
    const std::string path = JoinPath(job_.models_dir, "model" + std::to_string(bag_) + ".tarn");
    if (data::IsHdfsPath(path)) {  // written here, then copied whole
      const std::string local = "model" + std::to_string(bag_) + ".tarn";
      TARN_RETURN_IF_ERROR(model.Save(local));
      TARN_RETURN_IF_ERROR(data::CopyTree(local, path));
    } else {
      TARN_RETURN_IF_ERROR(model.Save(path));
    }
    TARN_LOG(kInfo) << "bag " << bag_ << " -> " << path;
    if (!job_.serving_export_dir.empty()) {
      TARN_ASSIGN_OR_RETURN(auto v, ExportServing(model));
      TARN_LOG(kInfo) << "exported serving version " << v << " to " << job_.serving_export_dir;
    }
    return Status::Ok();
  }

  // A new serving version: locally in place, or on HDFS written here first and
  // copied with its completion marker last.
  Result<int64_t> ExportServing(const model::ModelFile& model) {
    if (!data::IsHdfsPath(job_.serving_export_dir)) {
      return model::WriteServingVersion(model, job_.serving_export_dir);
    }
    TARN_ASSIGN_OR_RETURN(auto fs, data::FileSystemFor(job_.serving_export_dir));
    TARN_RETURN_IF_ERROR(fs->MakeDirs(job_.serving_export_dir));
    TARN_ASSIGN_OR_RETURN(auto entries, fs->List(job_.serving_export_dir));
    int64_t next = 1;
    for (const auto& e : entries) {
      auto v = ParseInt(e.name);
      if (e.is_dir && v) next = std::max<int64_t>(next, *v + 1);
    }
    const std::string local = "serving-export";
    (void)RemoveAll(local);
    TARN_ASSIGN_OR_RETURN(int64_t v, model::WriteServingVersion(model, local, next));
    const std::string from = JoinPath(local, std::to_string(v));
    const std::string to = data::ChildPath(job_.serving_export_dir, std::to_string(v));
    TARN_RETURN_IF_ERROR(data::CopyTree(
        from, to, [](const std::string& rel) { return rel != model::kServingReadyMarker; }));
    TARN_RETURN_IF_ERROR(data::CopyTree(JoinPath(from, model::kServingReadyMarker),
                                        data::ChildPath(to, model::kServingReadyMarker)));
    return v;
  }

  // Training is over; the model servers stay until the application is killed.
  void KeepServing() {
    std::unique_lock<std::mutex> lock(mu_);
    phase_ = "serving";
    Json servers = Json::array();
    for (const auto& [id, n] : nodes_) {
      if (n.role == "serving" && n.state == State::kRunning) servers.push_back(n.address);
    }
    WriteClusterLocked();
    const char* staging = std::getenv("TARN_YARN_STAGING_DIR");
    if (staging && *staging) {
      Status st = WriteWhole(data::ChildPath(staging, "serving.json"),
                             Json{{"servers", servers}}.dump() + "\n");
      if (!st.ok()) {
        TARN_LOG(kWarn) << "cannot record the model servers: " << st.message();
      }
    }
    TARN_LOG(kInfo) << "training done; " << servers.size()
                    << " model server(s) keep serving until the application is killed";
    while (fatal_.ok()) cv_.wait_for(lock, std::chrono::seconds(1));
  }

  void Finish(const Status& result) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      finished_ = true;
      phase_ = result.ok() ? "succeeded" : "failed";
      status_message_ = result.ok() ? "" : result.message();
    }
    StopTraining();
    // Give the nodes a moment to exit on their own, then stop the rest.
    auto deadline = Clock::now() + std::chrono::seconds(5);
    std::unique_lock<std::mutex> lock(mu_);
    while (Clock::now() < deadline) {
      bool any = false;
      for (auto& [id, n] : nodes_) any = any || n.state != State::kDead;
      if (!any) break;
      cv_.wait_for(lock, std::chrono::milliseconds(50));
    }
    WriteClusterLocked();
    lock.unlock();
    backend_->Shutdown();
    if (yarn_) {
      Status st = yarn_->Unregister(result.ok() ? cluster::yarn::FinalApplicationStatus::kSucceeded
                                                : cluster::yarn::FinalApplicationStatus::kFailed,
                                    result.ok() ? "" : result.message(), StatusUrl());
      if (!st.ok()) {
        TARN_LOG(kWarn) << "unregistering from YARN: " << st.message();
      }
    }
  }

  std::string StatusUrl() const {
    if (!status_) return "";
    const std::string host = job_.bind_host == "auto" ? HostName() : job_.bind_host;
    return "http://" + host + ":" + std::to_string(status_->port()) + "/";
  }

  // ---- cluster.json and the status page ----

  Json ClusterJsonLocked() const {
    Json nodes = Json::array();
    for (const auto& [id, n] : nodes_) {
      // A node that ended cleanly at the end of the job exited; any other end is a death.
      const bool clean = finished_ && n.exit_code == 0;
      const char* state = n.state == State::kLaunching ? "launching"
                          : n.state == State::kRunning ? "running"
                          : clean                      ? "exited"
                                                       : "dead";
      Json j{{"node", id},
             {"role", n.role == "worker" && n.slot < 0 ? "backup" : n.role},
             {"index", n.index},
             {"state", state},
             {"address", n.address},
             {"pid", n.pid},
             {"where", n.task >= 0 ? backend_->Where(n.task) : ""},
             {"epoch", n.epoch + 1},
             {"position", n.position}};
      if (n.role == "worker") j["slot"] = n.slot;
      if (!n.exit.empty()) j["exit"] = n.exit;
      nodes.push_back(j);
    }
    Json j{{"generation", generation_},
           {"term", term_},
           {"phase", phase_},
           {"bag", bag_},
           {"epoch", std::min(epoch_ + 1, job_.epochs)},
           {"epochs", job_.epochs},
           {"consistency", ConsistencyName(job_.consistency)},
           {"coordinator",
            {{"address", address_},
             {"pid", static_cast<int64_t>(::getpid())},
             {"status", StatusUrl()}}},
           {"nodes", nodes}};
    if (!status_message_.empty()) j["error"] = status_message_;
    return j;
  }

  void WriteClusterLocked() {
    dirty_ = false;
    Status st = WriteWhole(job_.cluster_json, ClusterJsonLocked().dump(2) + "\n");
    if (!st.ok()) {
      TARN_LOG(kWarn) << "cannot write " << job_.cluster_json << ": " << st.message();
    }
  }

  void ServeStatus(const net::HttpRequest& q, net::HttpResponse* a) {
    std::lock_guard<std::mutex> lock(mu_);
    Json j = ClusterJsonLocked();
    j["history"] = history_;
    if (q.path == "/status.json" || q.path == "/api/status") {
      a->body = j.dump(2);
    } else if (q.path == "/" || q.path == "/index.html") {
      a->content_type = "text/html; charset=utf-8";
      a->body = RenderStatusPage(j);
    } else {
      a->status = 404;
      a->body = Json{{"error", "no page " + q.path + "; try / or /status.json"}}.dump();
    }
  }

  JobConfig job_;
  std::string secret_, binary_, address_, fingerprint_;
  Json job_json_;
  model::ModelSpec spec_;
  size_t param_count_ = 0;
  std::unique_ptr<cluster::Backend> backend_;
  cluster::yarn::YarnBackend* yarn_ = nullptr;  // backend_ when it is YARN
  Status fatal_;                                // the cluster manager gave up on us
  std::shared_ptr<Transport> transport_;
  std::shared_ptr<net::RpcServer> server_;
  std::unique_ptr<net::HttpServer> status_;
  std::vector<std::unique_ptr<net::RpcClient>> ps_clients_;
  std::unique_ptr<model::TensorBoardWriter> tensorboard_;
  std::string tensorboard_local_, tensorboard_remote_;
  std::thread monitor_;
  std::atomic<bool> stopping_{false};

  std::mutex mu_;
  std::condition_variable cv_;
  std::map<int, Node> nodes_;
  std::vector<int> ps_node_;
  std::vector<SlotState> slots_;
  std::deque<Event> events_;
  int next_node_ = 1;
  int64_t generation_ = 0, term_ = 0;
  int bag_ = 0, epoch_ = 0, ps_restarts_ = 0;
  std::string phase_ = "starting", status_message_;
  bool finished_ = false, dirty_ = false, final_ = false;
  double best_valid_ = INFINITY, last_train_ = NAN, last_valid_ = NAN;
  double last_shifu_train_ = NAN, last_shifu_valid_ = NAN;  // Shifu's errors
  int since_best_ = 0;
  std::vector<float> best_params_;
  Json history_ = Json::array();
};

}  // namespace

Status RunCoordinator(const JobConfig& job, const std::string& secret,
                      const std::string& tarn_binary) {
  Coordinator c(job, secret, tarn_binary);
  return c.Run();
}

}  // namespace tarn::runtime
