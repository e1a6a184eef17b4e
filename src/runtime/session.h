// A node's link to its coordinator: registration, then heartbeats on their
// own connection. When the coordinator stops answering for the job's
// heartbeat allowance (or tells the node to stop), the process exits: a node
// never outlives its job.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/status.h"
#include "net/rpc.h"
#include "runtime/node.h"

namespace tarn::runtime {

struct Progress {
  std::atomic<int> bag{0}, epoch{0};
  std::atomic<int64_t> position{0};
};

class Session {
 public:
  // Dials and registers; `address` is what this node serves on ("" for a worker).
  static Result<std::unique_ptr<Session>> Open(const NodeArgs& args, const std::string& address);
  ~Session();
  net::RpcClient& calls() { return *calls_; }
  Progress& progress() { return progress_; }
  Transport& transport() { return *args_.transport; }
  int heartbeat_ms() const { return heartbeat_ms_; }

 private:
  Session() = default;
  void HeartbeatLoop();
  NodeArgs args_;
  std::unique_ptr<net::RpcClient> calls_, beats_;
  int heartbeat_ms_ = 1000;
  int max_missed_ = 25;
  Progress progress_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace tarn::runtime
