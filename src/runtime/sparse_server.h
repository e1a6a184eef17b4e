// A parameter server's share of the job's embedding tables: the rows r with
// r % P == this server's part, with their optimizer state, created on first
// touch. It answers the kSparse* messages (runtime/sparse_messages.h).
//
// Consistency, as the dense parameters' (runtime/parameter_server.cpp):
//   sync:       a table step closes when every slot of the quorum (the slots
//               training this epoch, less those done) has pushed for it; the
//               workers' gradient rows are summed per row in slot order,
//               divided by the step's total weight, and applied as one
//               optimizer step, as the dense step averages the workers'
//               gradients. Pushes are answered when their step closes.
//   async, ssp: each push is applied on arrival, its own optimizer step
//               (also the mode of a share whose server was not configured).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "model/embedding_table.h"
#include "net/rpc.h"
#include "runtime/job.h"

namespace tarn::runtime {

class SparseShard {
 public:
  explicit SparseShard(int ps) : ps_(ps) {}
  // Answers one kSparse* message (may run on several connections' threads).
  void Handle(const net::RpcServer::Request& r, std::shared_ptr<net::RpcServer::Responder> out);

  // The step barrier, driven by the parameter server's own messages: its
  // consistency mode (kConfigure), the slots training an epoch
  // (kStartEpoch), a slot done with it (kSlotDone), and a reconfiguration,
  // which fails the pushes waiting on a step.
  void SetConsistency(Consistency mode);
  void StartEpoch(const std::vector<int>& slots);
  void SlotDone(int slot);
  void FailWaiting(const std::string& why);
  // A roll back (kReset) to `term`: from now on the older terms' pulls,
  // pushes and checkpoints are refused ("stale term") at once, the pushes
  // waiting on a step fail with `why`, and the tables are dropped until they
  // are declared again under the new term (the new term's messages get "no
  // embedding table" meanwhile). A term not above the share's changes nothing.
  void Reset(int64_t term, const std::string& why);

 private:
  using Responder = std::shared_ptr<net::RpcServer::Responder>;
  // A checked push, waiting for its step (sync mode).
  struct PendingPush {
    std::vector<std::shared_ptr<model::EmbeddingTable>> tables;
    std::vector<std::vector<uint64_t>> ids;
    std::vector<std::vector<float>> grads;
    double weight = 0;
    int epoch = 0;
  };

  Result<std::string> Declare(const std::string& payload);
  Result<std::string> Pull(const std::string& payload);
  // Answers `out` at once (async, ssp, an error) or when its step closes (sync).
  void Push(const std::string& payload, Responder out);
  // The push's fields and rows (no lock needed), then its tables, checked (under mu_).
  Result<PendingPush> DecodePush(const std::string& payload, int* slot, bool* last, int64_t* term,
                                 std::vector<std::string>* names);
  Status FindPushTablesLocked(const std::vector<std::string>& names, int64_t term,
                              PendingPush* push);
  // Under mu_: closes the step when every slot of the quorum has pushed.
  void MaybeCloseStepLocked();
  void FailWaitingLocked(const std::string& why);
  Result<std::string> Checkpoint(const std::string& payload);
  Result<std::string> Held(const std::string& payload);
  // The named table, under mu_.
  Result<std::shared_ptr<model::EmbeddingTable>> Find(const std::string& name, int64_t term);

  const int ps_;
  std::mutex mu_;  // guards the tables, their rows, and term_
  int64_t term_ = -1;
  std::map<std::string, std::shared_ptr<model::EmbeddingTable>> tables_;
  // The step barrier (sync), under mu_.
  Consistency mode_ = Consistency::kAsync;
  std::set<int> quorum_;
  std::map<int, PendingPush> pending_;                   // by slot: summed in slot order
  std::vector<std::pair<Responder, uint32_t>> waiting_;  // and the tables each pushed
};

}  // namespace tarn::runtime
