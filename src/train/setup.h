// What train#params says about one training run, read in one place for
// LOCAL training, the coordinator, the parameter servers and the workers.
#pragma once

#include <string>

#include "common/status.h"
#include "data/json_fields.h"
#include "model/model_spec.h"
#include "model/optimizer.h"

namespace tarn::train {

struct TrainSetup {
  model::ModelSpec spec;
  model::OptimizerConfig optimizer;
  model::LossKind shifu_kind = model::LossKind::kSquared;  // the error Shifu prints
  int checkpoint_interval = 0;  // train#params CheckpointInterval: epochs, 0: none
  bool full_batch = false;      // the optimizer takes the whole bag as one batch

  /// Errors name the train#params key.
  static Result<TrainSetup> FromTrainParams(const data::Json& params, const std::string& algorithm,
                                            int inputs);
};

}  // namespace tarn::train
