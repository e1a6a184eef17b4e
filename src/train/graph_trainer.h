// Training a graph model (WDL, DeepFM, DCN, Keras graphs) with the training
// core: the graph's side of train::BatchLoop (slices of a batch by its size
// alone, one slice when batch norm needs the whole batch at once, so the
// figures do not depend on threads), its validation scoring, and where its
// tables live.
//
// Parameters are split as the parameter servers hold them:
//   a flat vector: the dense parameters, then the batch-norm state (the
//     optimizer steps the first DenseCount() floats; UpdateState moves the
//     state);
//   the embedding tables: model::EmbeddingTable rows updated by the lazy
//     per-row optimizer (model/sparse_optimizer.h), LOCAL in this process
//     (LocalTables, one part), DIST on the servers (row r on server r % P).
// Per batch the rows the batch touches (after hashing) are found with an
// open-addressing map (model::RowSlots, no sort of the batch) and fetched
// into a compact table (ids remapped to 0..k-1 in ascending id order), the graph
// runs on it, and the tables' gradients go back by global row id. The model
// file holds full tables (GraphModelFileParams): dense, tables, state.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "common/status.h"
#include "model/embedding_table.h"
#include "model/graph.h"
#include "model/graph_feed.h"
#include "model/model_file.h"
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

// The optimizer of the dense parameters: train#params' with the graph's own L2.
model::OptimizerConfig GraphOptimizerConfig(model::OptimizerConfig config, const GraphModel& m);
// One flag per dense parameter: true where regularization skips it (biases,
// cross b, gamma, beta, and every weight of the `unregularized` nodes).
// Tables are never regularized (the lazy optimizer has no penalty).
std::vector<bool> GraphUnregularizedMask(const model::Graph& graph,
                                         const std::vector<std::string>& unregularized);
// The graph's tables (Graph::tables() order), named after their embedding
// nodes, rows initialised from `seed`, stepped by the lazy form of the dense
// optimizer (SparseOptimizerConfig::FromDense).
Result<std::vector<model::TableSpec>> GraphTableSpecs(const model::Graph& graph,
                                                      const model::OptimizerConfig& dense,
                                                      uint64_t seed);
// The model file's parameters: dense, every table whole, then the state.
std::vector<float> GraphModelFileParams(const model::Graph& graph,
                                        std::span<const float> dense_and_state,
                                        const std::vector<std::vector<float>>& tables);
// The same written into `sink` as they are made: write_table(t, sink)
// writes table t (Graph::tables() order) whole.
Status WriteGraphModelFileParams(
    const model::Graph& graph, std::span<const float> dense_and_state,
    const std::function<Status(size_t table, model::ParamsSink& sink)>& write_table,
    model::ParamsSink& sink);
// A table whole with every row at its InitialRow values (holders overwrite theirs).
std::vector<float> InitialTable(const model::TableSpec& spec);

// Where a graph's table rows are read from.
class TableSource {
 public:
  virtual ~TableSource() = default;
  // Per table (requests[t] is table t's, every table once, in table order):
  // its rows `ids` (distinct, ascending), ids.size() x dim floats into out.
  // One call per batch, so that a remote source asks each server once.
  struct Request {
    std::span<const uint64_t> ids;
    float* out = nullptr;
  };
  virtual Status Fetch(std::span<const Request> requests) = 0;
};

// Every table in this process, whole (one part), rows created on first touch.
class LocalTables : public TableSource {
 public:
  static Result<std::unique_ptr<LocalTables>> Create(const std::vector<model::TableSpec>& specs);
  Status Fetch(std::span<const Request> requests) override;
  // One step of every table: each gradient row divided by the batch's
  // weight, as a parameter server does with a push.
  void Apply(std::span<const TableGradient> gradients, double weight, int epoch);
  // Table t whole (untouched rows: InitialRow).
  std::vector<float> Whole(size_t t) const;
  std::vector<std::vector<float>> WholeTables() const;

  // Checkpoints: every table's optimizer state whole (rows x state floats,
  // zero for untouched rows) appended to *state, and their step counters.
  void SaveState(std::vector<float>* state, std::vector<uint64_t>* steps) const;
  // Restores from whole tables and that state: rows that differ from a fresh
  // row (values or state) are held again, so training continues bit-identically.
  Status LoadState(const std::vector<std::span<const float>>& values, std::span<const float> state,
                   const std::vector<uint64_t>& steps);
  size_t StateFloats() const;

 private:
  std::vector<std::unique_ptr<model::EmbeddingTable>> tables_;
  std::vector<float> scaled_;
};

class GraphTrainer : public BatchModel {
 public:
  // `std_dev_cut_off` and the data's columns and normType rebuild the
  // normalization, so that the rows feed the graph as the Scorer feeds it.
  static Result<std::unique_ptr<GraphTrainer>> Create(const model::GraphSpec& spec,
                                                      const model::TrainingData& data,
                                                      double std_dev_cut_off,
                                                      model::LossKind shifu_kind);
  ~GraphTrainer() override;

  const model::Graph& graph() const { return *graph_; }
  size_t DenseCount() const { return graph_->DenseParameterCount(); }
  // The flat vector: dense parameters, then batch-norm state.
  size_t ParameterCount() const { return DenseCount() + graph_->StateCount(); }
  void InitParameters(float* params, uint64_t seed) const;
  // Where passes and validation read table rows (not owned; set before training).
  void set_tables(TableSource* tables) { tables_ = tables; }

  // BatchModel: the dense gradient. A batch is cut into slices as an MLP's
  // (SlicesForBatch; one slice when the graph has batch norm, whose
  // statistics are the whole batch's); BeginBatch loads the batch's rows and
  // its compact tables once, and the slices read them.
  size_t GradientSize() const override { return DenseCount(); }
  int Slices(int batch) const override;
  Result<std::unique_ptr<SlicePass>> MakePass(int batch) override;
  Status BeginBatch(const std::vector<uint32_t>& order, size_t begin, size_t end) override;

  Result<ValidationSummary> Validate(const float* params, const std::vector<uint32_t>& rows);

  // A batch's inputs and compact tables (public for the passes).
  struct Rows;

 private:
  GraphTrainer() = default;

  const model::TrainingData* data_ = nullptr;
  std::unique_ptr<model::Graph> graph_;
  std::unique_ptr<model::GraphFeed> feed_;
  model::LossKind shifu_kind_ = model::LossKind::kSquared;
  TableSource* tables_ = nullptr;
  std::unique_ptr<Rows> batch_;  // the batch the passes run on
  int batch_rows_ = 0;
  size_t batch_begin_ = 0;  // its first row's place in the epoch's order
  std::unique_ptr<Rows> validation_;
  std::unique_ptr<model::GraphWorkspace> validation_ws_;
};

}  // namespace tarn::train
