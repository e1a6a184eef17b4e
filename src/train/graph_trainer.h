// Training a graph model (WDL, DeepFM, DCN, Keras graphs) LOCAL: the graph
// engine's passes over the training core's rows and order. Each mini-batch is
// one ForwardBackward (batch norm needs the whole batch at once), so the
// figures do not depend on threads.
//
// Parameters are one flat vector: the dense parameters, then every table
// (GraphSpec::TableShapes() order), then the batch-norm state. The optimizer
// steps the first TrainableCount() floats; the state moves by UpdateState.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "common/status.h"
#include "model/graph.h"
#include "model/graph_feed.h"
#include "model/optimizer.h"
#include "model/training_data.h"
#include "train/batch_loop.h"
#include "train/graph_models.h"
#include "train/validation.h"

namespace tarn::train {

// BuildGraphModel over training data: the input columns' ids and the
// measurement width come from their normalization.
Result<GraphModel> BuildGraphModelFor(const std::string& algorithm,
                                      const model::TrainParams& params,
                                      const model::TrainingData& data, double std_dev_cut_off,
                                      const std::vector<std::string>& model_set_columns,
                                      const std::string& model_set_dir);

class GraphTrainer {
 public:
  // `std_dev_cut_off` and the data's columns and normType rebuild the
  // normalization, so that the rows feed the graph as the Scorer feeds it.
  static Result<GraphTrainer> Create(const model::GraphSpec& spec, const model::TrainingData& data,
                                     double std_dev_cut_off, int batch, uint64_t seed,
                                     model::LossKind shifu_kind);

  const model::Graph& graph() const { return *graph_; }
  size_t TrainableCount() const { return trainable_; }
  size_t ParameterCount() const { return trainable_ + graph_->StateCount(); }
  // Regularization skips biases, cross b, gamma and beta, and every weight of
  // the `unregularized` nodes; other weights and tables are regularized.
  std::vector<bool> UnregularizedMask(const std::vector<std::string>& unregularized) const;
  void InitParameters(float* params, uint64_t seed) const;

  // Called after each batch's step with its index and the rows of the order done.
  using Progress = std::function<void(int64_t batch, size_t done, const TrainSums& sums)>;
  // Trains one epoch over `order`: per batch a forward-backward, the step of
  // the mean gradient, then the batch-norm state.
  Status RunEpoch(std::vector<float>* params, const std::vector<uint32_t>& order, int epoch,
                  model::Optimizer* optimizer, const Progress& progress, TrainSums* sums);
  ValidationSummary Validate(const std::vector<float>& params,
                             const std::vector<uint32_t>& rows) const;

 private:
  GraphTrainer() = default;
  model::GraphParams Params(const float* params) const;
  // Rows [lo, hi) of `order` into the batch buffers.
  void Gather(const std::vector<uint32_t>& order, size_t lo, size_t hi) const;
  // The one place tables are updated: their sparse gradients are scattered
  // into the flat gradient and the optimizer steps dense parameters and
  // tables alike (Keras' dense update). A lazy per-row optimizer replaces this.
  void ApplyGradient(float* params, double weight, int epoch, model::Optimizer* optimizer);

  const model::TrainingData* data_ = nullptr;
  std::unique_ptr<model::Graph> graph_;
  std::unique_ptr<model::GraphFeed> feed_;
  size_t trainable_ = 0;
  std::vector<size_t> table_offset_;
  int batch_ = 128;
  uint64_t seed_ = 0;
  model::LossKind shifu_kind_ = model::LossKind::kSquared;
  std::unique_ptr<model::GraphWorkspace> ws_;
  mutable std::vector<float> dense_, y_, w_, pred_;
  mutable std::vector<std::vector<int64_t>> ids_;
  std::vector<int64_t*> id_pointers_;
  mutable std::vector<const float*> tables_;  // Params()' table pointers
  std::vector<float> grad_;
};

}  // namespace tarn::train
