// A model set folder: ModelConfig.json, ColumnConfig.json and the files the
// steps write beside them (SHIFU-COMPAT §1). Every step opens one.
#pragma once

#include <string>
#include <vector>

#include "common/settings.h"
#include "common/status.h"
#include "data/column_config.h"
#include "data/dataset_reader.h"
#include "data/model_config.h"
#include "model/train_params.h"
#include "model/training_data.h"

namespace tarn::pipeline {

struct ModelSet {
  std::string dir;  // absolute
  data::ModelConfig config;
  Settings settings;

  std::string Path(const std::string& relative) const;  // dir/relative
  // A path from ModelConfig.json: absolute, or relative to the model set.
  std::string ConfigPath(const std::string& path) const;
  std::string ModelConfigPath() const { return Path("ModelConfig.json"); }
  std::string ColumnConfigPath() const { return Path("ColumnConfig.json"); }
  std::string NormalizedDataDir() const { return Path("tmp/NormalizedData"); }
  std::string CorrelationPath() const { return Path("correlation.csv"); }

  // The training data source (paths resolved, missing values, filter).
  data::DataSource TrainingSource() const;
  data::DataSource SourceFor(const data::DataSetConfig& ds) const;
  // Reader options from the settings (threads, chunk size, bad-row ratio).
  Result<data::ReadOptions> ReadOptionsFor(const std::string& progress_label) const;
  int Threads() const;

  Result<std::vector<data::ColumnConfig>> LoadColumns() const;
  // The name of every column in ColumnConfig.json, in its order (what a
  // model file records so that a server accepts whole data rows).
  Result<std::vector<std::string>> ColumnNames() const;
  static std::vector<std::string> ColumnNames(const std::vector<data::ColumnConfig>& columns);
  // What training reads: `inputs` when given, else data::SelectModelInputs
  // (the finalSelect columns, or every good candidate when none has
  // finalSelect, logged); every normalized shard (errors say which step to
  // run first), the split rate and seed.
  Result<model::TrainingDataOptions> TrainingData(
      uint64_t seed, const std::vector<data::ColumnConfig>& inputs = {}) const;
  // The same, the inputs chosen from `columns`, ColumnConfig.json as the
  // caller loaded it (so that a step reads the file once).
  Result<model::TrainingDataOptions> TrainingDataFrom(
      uint64_t seed, const std::vector<data::ColumnConfig>& columns) const;
  // train.params, typed and checked for train.algorithm (errors name the file); logs the
  // warnings about unknown keys and the notes about ignored ones.
  Result<model::TrainParams> ReadTrainParams() const;
  Status SaveColumns(const std::vector<data::ColumnConfig>& columns) const;
  // Copies ColumnConfig.json to <folder>/ColumnConfig.json.N (N = `n`, or the next free N
  // when negative) before a step replaces it, and returns that path; "" when there is no
  // ColumnConfig.json yet.
  Result<std::string> KeepColumnConfigVersion(const std::string& folder, int n = -1) const;
  // A failure about a ModelConfig.json value (from a layer that only sees the value), with
  // the file's path in front.
  template <typename T>
  Result<T> InConfig(Result<T> r) const {
    if (r.ok()) return r;
    return r.status().WithContext(ModelConfigPath());
  }
};

// Opens the model set in `dir` (ModelConfig.json must exist). Prints each
// config warning (unknown keys) once.
Result<ModelSet> OpenModelSet(const std::string& dir, const Settings& settings);

// Settings with the shipped defaults, the conf/global-default.xml found next
// to the binary or in $TARN_CONF_DIR (if any), then the -D overrides.
Result<Settings> LoadSettings(const std::string& exe_path,
                              const std::vector<std::string>& overrides);

// A memory setting ("4g", "2048m", "512": MiB) in MiB; an error naming the key otherwise.
Result<int64_t> MemoryMb(const Settings& s, const char* key);

}  // namespace tarn::pipeline
