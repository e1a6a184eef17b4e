// Scores raw records with a trained model: the embedded normalization turns
// the raw fields of the model's input columns into the network's inputs, so
// eval and serving apply exactly what training saw.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "data/id_column.h"
#include "data/normalizer.h"
#include "data/record_parser.h"
#include "model/graph.h"
#include "model/graph_feed.h"
#include "model/model_file.h"
#include "model/network.h"

namespace tarn::model {

// Per-thread scratch for Scorer::Score (the network's or the graph's).
struct ScoreWorkspace {
  std::unique_ptr<Workspace> network;
  std::unique_ptr<GraphWorkspace> graph;
  int max_batch = 0;
  std::vector<float> dense;               // graph models: the dense input of a block
  std::vector<std::vector<int64_t>> ids;  // and each ids input
  std::vector<int64_t*> id_pointers;
};

// Builds a graph model's feed from its input columns' normalization and the
// id columns whose ids each row carries (in that order).
Result<GraphFeed> MakeGraphFeed(const GraphSpec& graph,
                                const std::vector<data::ColumnNormalizer>& normalizers,
                                const std::vector<data::IdColumn>& id_columns);

class Scorer {
 public:
  static Result<Scorer> Create(ModelFile file);

  // Raw column names the model reads, in input order.
  const std::vector<std::string>& input_columns() const { return input_columns_; }
  int input_width() const { return file_.spec.input_count; }
  const ModelFile& file() const { return file_; }

  // Normalizes one record: raw[k] is the value of input_columns()[k].
  void Normalize(std::span<const std::string_view> raw, float* out) const;
  // The ids the model reads (file().id_columns), one per id column.
  int id_count() const { return static_cast<int>(id_encoders_.size()); }
  // Writes id_count() ids of one record, computed as 'tarn norm' does: raw[k]
  // is the value of input_columns()[k].
  void Ids(std::span<const std::string_view> raw, uint32_t* out) const;
  // Id k's encoder and the input column (index into input_columns()) it reads.
  const data::IdEncoder& id_encoder(int k) const { return id_encoders_[k]; }
  size_t id_input(int k) const { return id_input_[k]; }
  // Scores `batch` rows: x holds batch x input_width() normalized floats and
  // ids batch x id_count() ids (Ids()); ids may be null when id_count() is 0.
  // An MLP reads x only.
  void Score(const float* x, const uint32_t* ids, int batch, float* out, ScoreWorkspace* ws) const;
  std::unique_ptr<ScoreWorkspace> MakeWorkspace(int max_batch) const;

 private:
  ModelFile file_;
  std::vector<std::string> input_columns_;
  std::vector<data::ColumnNormalizer> normalizers_;
  std::vector<data::IdEncoder> id_encoders_;
  std::vector<size_t> id_input_;  // the input column each id reads
  std::unique_ptr<data::MissingValues> missing_;
  std::unique_ptr<Network> network_;  // MLP models
  std::unique_ptr<Graph> graph_;      // graph models
  std::unique_ptr<GraphFeed> feed_;
  std::vector<const float*> tables_;
};

}  // namespace tarn::model
