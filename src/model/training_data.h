// Training rows: the selected columns' slices of the normalized shards,
// gathered into one row-major matrix, with the deterministic validation
// split. Single-machine training and each distributed worker (on its own
// shards) read their rows through this, so both see the same split.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "data/column_config.h"
#include "data/id_column.h"

namespace tarn::model {

// SplitMix64's finalizer: seeds and hashes derived from (seed, ...).
uint64_t MixSeed(uint64_t x);

struct TrainingData {
  int inputs = 0;
  // Row-major rows of inputs + 2 floats: the inputs, the target, the weight
  // (one cache line or two per row, as rows are gathered at random).
  std::vector<float> x;
  int stride() const { return inputs + 2; }
  const float* row(uint32_t r) const { return x.data() + static_cast<size_t>(r) * stride(); }
  std::vector<uint32_t> train, valid;       // row indexes
  std::vector<data::ColumnConfig> columns;  // the input columns, in input order
  std::vector<int> widths;                  // each input column's inputs (one-hot: > 1)
  std::string norm_type;
  // Integer ids of the input columns that have an id column in the shards
  // (data/id_column.h), in input order: row-major rows of id_columns.size()
  // uint32, row r beside x's row r (so train and valid index both). Empty
  // when no input column has one; the MLP ignores them.
  std::vector<data::IdColumn> id_columns;
  std::vector<uint32_t> ids;
  const uint32_t* id_row(uint32_t r) const {
    return ids.data() + static_cast<size_t>(r) * id_columns.size();
  }
};

struct TrainingDataOptions {
  std::string data_dir;                  // tmp/NormalizedData, for messages
  std::vector<std::string> shard_paths;  // every shard of data_dir, in order
  // The shards to load (indexes into shard_paths); empty loads all. A row's
  // validation draw depends on its shard's index here, not on which shards
  // are loaded, so any split of the shards among workers gives the same rows.
  std::vector<int> shards;
  std::vector<data::ColumnConfig> selected;  // the input columns, in order
  std::string norm_type;                     // normalize.normType as configured
  double valid_rate = 0.2;
  uint64_t seed = 0;
  bool require_train_rows = true;
  // Only the columns, widths and id columns (no rows are read).
  bool schema_only = false;
};

Result<TrainingData> LoadTrainingData(const TrainingDataOptions& options);
// The network's input count for these options, from the first shard's
// schema only (no rows are read).
Result<int> InputWidth(const TrainingDataOptions& options);

}  // namespace tarn::model
