// The coordinator's membership: the nodes it launched through the backend,
// their registrations, heartbeats and reports (the RPC server), the monitor
// that declares silent nodes lost, exits and the failure events they make,
// and backups taking over a lost worker's slot. What a lost parameter
// server means (a roll back) is the epoch driver's, through Hooks.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cluster/backend.h"
#include "common/status.h"
#include "runtime/coordinator_state.h"
#include "runtime/job.h"
#include "runtime/messages.h"
#include "runtime/transport.h"

namespace tarn::cluster::yarn {
class YarnBackend;
}

namespace tarn::runtime {

class Membership {
 public:
  struct Hooks {
    // A parameter server was lost: relaunch it and roll back (lock held).
    std::function<Status(std::unique_lock<std::mutex>& lock, int ps_index)> restart_ps;
    // A slot was dropped (degraded mode): the servers stop waiting for it.
    std::function<void(int slot)> slot_dropped;
    // The nodes changed (lock held): cluster.json is to be written.
    std::function<void()> cluster_changed;
  };

  Membership(JobConfig* job, ClusterState* state, std::string secret, std::string binary);
  ~Membership();

  /// The backend, the transport and the coordinator's RPC server.
  Status Start(Hooks hooks);
  /// Launches the parameter servers, workers, backups and model servers,
  /// gives each worker its slot (shards round robin) and starts the monitor.
  Status LaunchAll();

  Result<int> LaunchLocked(const std::string& role, int index);
  /// Waits (handling nothing else) until the nodes registered.
  Status WaitRegisteredLocked(std::unique_lock<std::mutex>& lock, const std::vector<int>& ids,
                              CoordinatorClock::duration timeout);
  /// The node's next directive: the answer to its waiting report, or to its next one.
  void DirectLocked(Node& n, msg::Directive d);
  msg::Directive SlotDirective(const std::string& action, int slot, int64_t position);
  /// Handles queued failures. True when the parameter servers rolled back.
  Result<bool> HandleEvents(std::unique_lock<std::mutex>& lock);

  /// Tells every running worker to finish.
  void FinishWorkers();
  /// Gives the nodes a moment to exit on their own, then stops the rest.
  void Shutdown();

  void set_job_json(data::Json job) { job_json_ = std::move(job); }
  const std::string& address() const { return address_; }
  Transport& transport() { return *transport_; }
  const cluster::Backend& backend() const { return *backend_; }
  cluster::yarn::YarnBackend* yarn() { return yarn_; }

 private:
  void Handle(const net::RpcServer::Request& r, std::shared_ptr<net::RpcServer::Responder> out);
  // Every message is parsed whole before it touches a node: a malformed one
  // is refused with the field it got wrong.
  Status Dispatch(const net::RpcServer::Request& r,
                  std::shared_ptr<net::RpcServer::Responder>& out);
  Result<Node*> LiveNodeLocked(int id);
  void Report(Node& n, msg::Report m, std::shared_ptr<net::RpcServer::Responder> out);
  void OnTaskExit(const cluster::TaskExit& e);
  void MonitorLoop();
  Status ReplaceWorkerLocked(Node& dead);

  JobConfig& job_;
  ClusterState& s_;
  std::string secret_, binary_, address_;
  data::Json job_json_;
  Hooks hooks_;
  std::unique_ptr<cluster::Backend> backend_;
  cluster::yarn::YarnBackend* yarn_ = nullptr;  // backend_ when it is YARN
  std::shared_ptr<Transport> transport_;
  std::shared_ptr<net::RpcServer> server_;
  std::thread monitor_;
  std::atomic<bool> stopping_{false};
  int next_node_ = 1;
};

}  // namespace tarn::runtime
