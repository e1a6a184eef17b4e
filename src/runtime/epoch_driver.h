// The coordinator's epoch driver: the bags and their epochs (train, then
// validate, every slot; the figures merged in slot order), the parameter
// servers' configuration, checkpoints and the roll back to one when a
// server is lost, the model files and the serving exports.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"
#include "model/embedding_table.h"
#include "model/graph.h"
#include "model/model_file.h"
#include "model/model_spec.h"
#include "model/tensorboard.h"
#include "net/rpc.h"
#include "runtime/checkpoint.h"
#include "runtime/checkpoint_committer.h"
#include "runtime/coordinator_state.h"
#include "runtime/job.h"
#include "runtime/membership.h"
#include "runtime/sparse_client.h"
#include "runtime/status_page.h"
#include "train/epoch_outcome.h"
#include "train/model_output.h"

namespace tarn::runtime {

class EpochDriver {
 public:
  EpochDriver(JobConfig* job, ClusterState* state, Membership* membership, StatusPage* status)
      : job_(*job), s_(*state), membership_(*membership), status_(*status) {}

  /// Before any node starts: the folders, the network, the checkpoints' fingerprint.
  Status Prepare();
  /// Every bag, from the newest checkpoint with isContinuous.
  Status Train();
  /// Asks the parameter servers to exit.
  void ShutdownParameterServers();

  // Membership's hooks.
  Status RestartPsLocked(std::unique_lock<std::mutex>& lock, int index);
  void SlotDropped(int slot);

 private:
  Status ConnectPs(int index);
  // Sends message struct `m` to parameter server i (defined in epoch_driver.cpp).
  template <typename Message>
  Status CallPs(int i, const Message& m, std::string* reply = nullptr);
  // Initializes (m == nullptr) or loads every server's slice.
  Status ConfigurePs(const Manifest* m);
  // Takes a checkpoint: the servers' slices are written behind and the
  // committer writes its manifest once they are in place.
  Status Checkpoint(int epochs_done);
  // Until every checkpoint taken is committed; Unavailable when a server
  // was lost before writing its slice (the caller rolls back).
  Status WaitCheckpointsCommitted();
  // The servers' dense slices joined: the dense parameters, then the state.
  Result<std::vector<float>> GatherDense();
  // The model file's parameters whole (a graph's with its tables whole).
  Result<std::vector<float>> GatherParams();
  // The model file's parameters into sink: a graph's tables written by the
  // servers as shares to a scratch folder and merged from there, InitialRow
  // values for the rows no server holds.
  Status WriteParams(std::span<const float> dense_and_state, model::ParamsSink& sink);
  data::Json SaveState() const;
  // A checkpoint's state back (resume, roll back): the epochs done, early
  // stopping's state and best epoch's parameters, the last epoch's errors.
  Status RestoreState(const Manifest& m);
  // Whether a finished bag's outputs (model file, serving export) are in
  // place: its last manifest says they were written, and the model is there.
  Result<bool> OutputsWritten(const Manifest& m) const;
  // Records in the bag's last manifest that its outputs are written.
  Status MarkOutputsWritten();
  Status OpenTensorBoard();
  Status PutTensorBoardCopy();
  Result<bool> RecoverFromPsFailure(const Status& failure);
  Result<int> TrainBag();
  Result<int> TrainEpochs();  // TrainBag's epochs, before its last checkpoints are committed
  Result<bool> WaitSlots(std::unique_lock<std::mutex>& lock, bool SlotState::*flag);
  model::ModelFile MakeModel(const std::vector<float>& params, int epochs) const;
  Status WriteModel(int epochs);
  Result<int64_t> ExportServing(const model::ModelFile& model);

  JobConfig& job_;
  ClusterState& s_;
  Membership& membership_;
  StatusPage& status_;
  std::string fingerprint_;
  data::Json job_json_;
  data::Json server_job_json_;  // job_json_ without the columns, for the parameter servers
  model::ModelSpec spec_;
  train::ModelDescription description_;  // of the model files this job writes
  size_t param_count_ = 0;               // the servers' flat vector
  // A graph model: its graph, optimizer and this bag's tables on the servers.
  std::unique_ptr<model::Graph> graph_;
  model::OptimizerConfig optimizer_;
  std::vector<model::TableSpec> table_specs_;
  std::unique_ptr<SparseTableClient> tables_;
  std::vector<std::unique_ptr<net::RpcClient>> ps_clients_;
  std::unique_ptr<CheckpointCommitter> committer_;
  CoordinatorClock::time_point last_checkpoint_{};  // when the newest was taken
  std::unique_ptr<model::TensorBoardWriter> tensorboard_;
  std::string tensorboard_local_, tensorboard_remote_;
  int ps_restarts_ = 0;
  bool final_ = false;                      // the bag's last epoch is done
  std::optional<Manifest> final_manifest_;  // the bag's last checkpoint, once taken
  train::EarlyStop early_stop_{{job_.convergence_threshold, job_.early_stop_patience}};
  train::TrainedSoFar so_far_;  // the last epoch's errors
  // Early stopping: the best epoch's parameters (the model file's), that
  // epoch (-1: none kept), and the epoch of the best file a checkpoint
  // submitted already carries, with its checksum.
  std::vector<float> best_params_;
  int best_epoch_ = -1, best_submitted_ = -1;
  uint32_t best_crc_ = 0;
};

}  // namespace tarn::runtime
