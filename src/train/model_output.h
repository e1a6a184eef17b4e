// The model file a training run writes (final model, checkpoint or serving
// export), from one function for LOCAL and DIST: the network, its input
// columns and normalization settings, and the `training` object.
#pragma once

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "data/column_config.h"
#include "data/id_column.h"
#include "data/json_fields.h"
#include "model/epoch_report.h"
#include "model/model_file.h"
#include "model/model_spec.h"

namespace tarn::train {

// What does not change during a run.
struct ModelDescription {
  model::ModelSpec spec;                    // a graph model: input_count only
  std::optional<model::GraphSpec> graph;    // WDL, DeepFM, DCN, Keras graphs
  std::vector<data::ColumnConfig> columns;  // input columns, in input order
  std::vector<data::IdColumn> id_columns;   // the ids a graph model reads
  std::string norm_type;
  double std_dev_cut_off = 4;
  std::vector<std::string> missing_values;
  std::vector<std::string> model_set_columns;
  std::string algorithm;
  int64_t seed = 0;
  data::Json train_params = data::Json::object();
  // Added to `training`: LOCAL's row counts, DIST's cluster.
  data::Json run = data::Json::object();
};

// Where the run stands.
struct TrainedSoFar {
  int bag = 0;
  int epochs = 0;                                           // completed
  double train_error = NAN, valid_error = NAN;              // tarn's losses
  double shifu_train_error = NAN, shifu_valid_error = NAN;  // Shifu's errors

  /// Takes the errors of an epoch's figures.
  void Record(const model::EpochFigures& f);
};

model::ModelFile MakeModelFile(const ModelDescription& d, const TrainedSoFar& s,
                               std::vector<float> params);

}  // namespace tarn::train
