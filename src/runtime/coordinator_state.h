// What the coordinator's three parts share, under one mutex: the nodes
// (membership keeps them), the slots and the epoch's position (the epoch
// driver moves them), and what the status page shows of both.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/status.h"
#include "data/json_fields.h"
#include "net/rpc.h"
#include "runtime/messages.h"

namespace tarn::runtime {

using CoordinatorClock = std::chrono::steady_clock;

enum class NodeState { kLaunching, kRunning, kDead };

struct Node {
  int id = 0;
  std::string role;  // "ps", "worker" or "serving"
  int index = 0;
  int64_t task = -1;
  int64_t pid = 0;
  std::string address;
  NodeState state = NodeState::kLaunching;
  CoordinatorClock::time_point launched, last_beat;
  int bag = 0, epoch = 0;
  int64_t position = 0;
  int slot = -1;  // workers: the slot held, -1 for a standing-by backup
  data::Json directive;
  int64_t directive_seq = 0;
  std::shared_ptr<net::RpcServer::Responder> waiting;  // a report waiting for its next directive
  std::string exit;                                    // how it ended
  int exit_code = -1;
};

// A worker slot: its shards, the node holding it, and its reports of the epoch.
struct SlotState {
  std::vector<int> shards;
  int holder = -1;  // node id
  bool dropped = false;
  bool trained = false, validated = false;
  msg::EpochDoneReport train_report;
  msg::ValidDoneReport valid_report;
};

// A node lost: the driver thread handles it between directives.
struct NodeEvent {
  int node;
  std::string why;
};

struct ClusterState {
  std::mutex mu;
  std::condition_variable cv;
  std::map<int, Node> nodes;
  std::vector<int> ps_node;  // node id of each parameter server
  std::vector<SlotState> slots;
  std::deque<NodeEvent> events;
  int64_t generation = 0, term = 0;
  int bag = 0, epoch = 0;
  std::string phase = "starting", status_message;
  bool finished = false;
  bool dirty = false;                        // cluster.json is behind
  Status fatal;                              // the cluster manager gave up on us
  data::Json history = data::Json::array();  // the epochs' figures
};

}  // namespace tarn::runtime
