// What train#params says about one training run, read in one place for
// LOCAL training, the coordinator, the parameter servers and the workers.
#pragma once

#include <string>

#include "common/status.h"
#include "data/json_fields.h"
#include "model/model_spec.h"
#include "model/optimizer.h"
#include "model/train_params.h"

namespace tarn::train {

struct TrainSetup {
  model::TrainParams params;  // train#params, typed and checked
  model::ModelSpec spec;
  model::OptimizerConfig optimizer;
  model::LossKind shifu_kind = model::LossKind::kSquared;  // the error Shifu prints
  int checkpoint_interval = 0;  // train#params CheckpointInterval: epochs, 0: none
  int batch_size = 0;           // train#params MiniBatchs: rows per mini-batch
  bool full_batch = false;      // the optimizer takes the whole bag as one batch

  /// From train#params already parsed (LOCAL: ModelSet::ReadTrainParams, which
  /// logs its warnings). Errors name the train#params key.
  static Result<TrainSetup> FromTrainParams(const model::TrainParams& params, int inputs);
  /// From the raw object a job description carries (parameter servers and workers).
  static Result<TrainSetup> FromTrainParams(const data::Json& params, const std::string& algorithm,
                                            int inputs);
};

}  // namespace tarn::train
