// The training pass of one epoch, shared by LOCAL training and every
// distributed worker, for MLPs and graph models alike: gathers each
// mini-batch's rows, runs forward-backward and hands the batch's gradient
// (dense, plus the embedding tables' sparse rows of a graph model) to a sink
// (LOCAL: the optimizers step; a worker: pushes to the parameter servers).
//
// A batch is cut into slices whose number depends on the batch size only
// and on the model (one below 512 rows, then one per 256 rows up to
// kMaxSlices; a graph with batch norm: one, as its statistics are the whole
// batch's); each slice's gradient goes into its own buffer and the
// buffers are added in slice order, the tables' sparse rows merged by global
// row id, summed in slice order. The team of threads only decides who
// computes which slice, so the figures are the same for any thread count,
// on one machine or many.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "common/status.h"
#include "common/thread_pool.h"
#include "model/epoch_report.h"
#include "model/network.h"
#include "model/training_data.h"

namespace tarn::train {

/// The training figures of (part of) an epoch.
struct TrainSums {
  double loss = 0;    // weighted loss sum
  double weight = 0;  // sum of the rows' weights
  model::ShifuError shifu;
  int64_t rows = 0;
  double MeanLoss() const;  // NaN without weight
};

struct BatchLoopConfig {
  int batch = 128;  // rows per mini-batch; full-batch training passes the bag's row count
  int threads = 1;  // the most threads a batch may use (never changes the figures)
  uint64_t seed = 0;
  int slot = 0;  // LOCAL: 0
  model::LossKind shifu_kind = model::LossKind::kSquared;
};

/// One embedding table's gradient from one batch: the distinct rows it
/// touched (global row ids, ascending) and their gradient rows summed over
/// the batch's rows (ids.size() x the table's dimension).
struct TableGradient {
  std::span<const uint64_t> ids;
  std::span<const float> grads;
};

/// What a batch hands to the sink.
struct BatchGradient {
  std::span<float> dense;                 // summed over the batch's rows; the sink may scale it
  std::span<const TableGradient> tables;  // one per table of a graph model; empty for an MLP
  double weight = 0;                      // the batch's total row weight
  int64_t batch = 0;                      // its index in the epoch
  size_t done = 0;                        // rows of the order done with it
};

/// The figures of one slice.
struct SliceSums {
  double loss = 0, weight = 0;
  model::ShifuError shifu;
};

/// One thread's forward-backward passes.
class SlicePass {
 public:
  virtual ~SlicePass() = default;
  // Rows order[lo, hi) at `params`: adds their dense gradient sum to grad
  // (zeroed by the caller) and their figures to *sums.
  virtual Status Run(float* params, const std::vector<uint32_t>& order, size_t lo, size_t hi,
                     int epoch, const BatchLoopConfig& config, float* grad, SliceSums* sums) = 0;
  // The tables' gradients of the last Run (graph models).
  virtual std::span<const TableGradient> tables() const { return {}; }
};

/// Slices of a batch of `batch` rows, for an MLP or a graph without batch
/// norm: one below 512 rows (a smaller slice costs less than the hand-off to
/// a thread; measured: graph slices of 64 rows at MiniBatchs 128 ran at half
/// the one-thread speed on 2 shared cores), then one per 256 rows up to
/// kMaxSlices (16).
int SlicesForBatch(int batch);

/// What a batch loop trains: an MLP (MlpBatchModel) or a graph (GraphTrainer).
class BatchModel {
 public:
  virtual ~BatchModel() = default;
  virtual size_t GradientSize() const = 0;  // the dense gradient's floats
  // Slices of a batch of `batch` rows (a function of the batch size alone).
  virtual int Slices(int batch) const = 0;
  // A pass for slices of at most ceil(batch / Slices(batch)) rows.
  virtual Result<std::unique_ptr<SlicePass>> MakePass(int batch) = 0;
  // Before the slices of the batch order[begin, end) run, on one thread
  // (a graph loads the batch's rows and the table rows they touch once).
  virtual Status BeginBatch(const std::vector<uint32_t>& /*order*/, size_t /*begin*/,
                            size_t /*end*/) {
    return Status::Ok();
  }
};

class MlpBatchModel : public BatchModel {
 public:
  static constexpr int kMaxSlices = 16;
  MlpBatchModel(const model::Network& net, const model::TrainingData& data)
      : net_(net), data_(data) {}
  size_t GradientSize() const override { return net_.ParameterCount(); }
  int Slices(int batch) const override;
  Result<std::unique_ptr<SlicePass>> MakePass(int batch) override;

 private:
  const model::Network& net_;
  const model::TrainingData& data_;
};

class BatchLoop {
 public:
  static constexpr int kMaxSlices = MlpBatchModel::kMaxSlices;

  // An MLP.
  BatchLoop(const model::Network& net, const model::TrainingData& data, BatchLoopConfig config);
  // Any model (it must outlive the loop). Errors come from the first RunEpoch.
  BatchLoop(BatchModel* model, BatchLoopConfig config);

  int64_t Batches(size_t rows) const;

  // Called after each batch; the spans are valid during the call only.
  using GradientSink = std::function<Status(const BatchGradient& gradient)>;

  // Trains batches first_batch.. of `order` (an epoch's rows) with the
  // parameters `params` as they are when each batch starts (a graph's batch
  // norm moves its state in them); adds the figures of the batches run to *sums.
  Status RunEpoch(float* params, const std::vector<uint32_t>& order, int epoch, int64_t first_batch,
                  const GradientSink& sink, TrainSums* sums);

 private:
  struct Slice {
    std::vector<float> grad;
    SliceSums sums;
    Status status = Status::Ok();
    std::vector<std::vector<uint64_t>> ids;  // per table: the pass's sparse rows, kept
    std::vector<std::vector<float>> grads;   // after its thread moves to another slice
  };
  Status Prepare();
  // The slices' table gradients merged by row id (ascending), summed in slice order.
  std::span<const TableGradient> MergeTables();

  std::unique_ptr<BatchModel> owned_;
  BatchModel* model_;
  BatchLoopConfig config_;
  int slices_ = 1;
  bool prepared_ = false;
  std::vector<Slice> slice_;
  std::vector<std::unique_ptr<SlicePass>> member_;
  std::unique_ptr<SpinTeam> team_;
  std::vector<float> grad_;
  std::vector<std::vector<uint64_t>> merged_ids_;
  std::vector<std::vector<float>> merged_grads_;
  std::vector<TableGradient> merged_;
  std::vector<size_t> heads_;
};

}  // namespace tarn::train
