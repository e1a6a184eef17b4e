// Small trained-looking models for the serving tests: two raw columns (a
// numeric "x" and a categorical "color"), ZSCALE, a 1-hidden-layer network
// with seeded weights.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "data/column_config.h"
#include "data/json_fields.h"
#include "model/model_file.h"
#include "model/network.h"
#include "model/serving_version.h"
#include "model/train_params.h"

namespace tarn::serving::testing {

inline data::ColumnConfig NumericColumn(const std::string& name = "x") {
  data::ColumnConfig c;
  c.column_num = 0;
  c.column_name = name;
  c.column_type = data::ColumnType::kNumeric;
  c.stats.mean = 10;
  c.stats.std_dev = 2;
  c.binning.length = 2;
  c.binning.bin_boundary = {-INFINITY, 10};
  c.binning.bin_count_neg = {30, 10, 5};
  c.binning.bin_count_pos = {10, 30, 5};
  c.binning.bin_pos_rate = {0.25, 0.75, 0.5};
  c.binning.bin_count_woe = {1.0, -1.0, 0.0};
  c.binning.bin_weighted_woe = {1.0, -1.0, 0.0};
  return c;
}

inline data::ColumnConfig CategoricalColumn(const std::string& name = "color") {
  data::ColumnConfig c;
  c.column_num = 1;
  c.column_name = name;
  c.column_type = data::ColumnType::kCategorical;
  c.stats.mean = 0.5;
  c.stats.std_dev = 0.25;
  c.binning.length = 2;
  c.binning.bin_category = {"red", "blue"};
  c.binning.bin_count_neg = {8, 2, 1};
  c.binning.bin_count_pos = {2, 8, 1};
  c.binning.bin_pos_rate = {0.2, 0.8, 0.5};
  c.binning.bin_count_woe = {1.4, -1.4, 0.0};
  c.binning.bin_weighted_woe = {1.4, -1.4, 0.0};
  return c;
}

// A model over `columns` (ZSCALE: one input each) with weights from `seed`.
inline model::ModelFile MakeModel(uint64_t seed,
                                  std::vector<data::ColumnConfig> columns = {NumericColumn(),
                                                                             CategoricalColumn()},
                                  const std::string& norm_type = "ZSCALE") {
  model::ModelFile f;
  int inputs = 0;
  for (const auto& c : columns) {
    (void)c;
    ++inputs;
  }
  if (norm_type == "ONEHOT") {
    inputs = 0;
    for (const auto& c : columns) inputs += c.binning.length + 1;
  }
  data::Json params = {
      {"NumHiddenLayers", 1}, {"NumHiddenNodes", {5}}, {"ActivationFunc", {"tanh"}}};
  f.spec =
      model::ModelSpec::FromTrainParams(model::TrainParams::Parse(params, "NN").value(), inputs)
          .value();
  f.columns = std::move(columns);
  f.norm_type = norm_type;
  f.std_dev_cut_off = 4;
  f.missing_values = {"", "?"};
  f.training = {{"seed", seed}};
  f.params.resize(f.spec.ParameterCount());
  model::Network(f.spec).InitParameters(f.params.data(), seed);
  // Larger weights than the initializer's, so that scores spread out.
  for (auto& p : f.params) p *= 3;
  return f;
}

}  // namespace tarn::serving::testing
