#include "train/setup.h"

#include "model/epoch_report.h"

namespace tarn::train {

Result<TrainSetup> TrainSetup::FromTrainParams(const data::Json& params,
                                               const std::string& algorithm, int inputs) {
  TrainSetup s;
  TARN_ASSIGN_OR_RETURN(s.spec, model::ModelSpec::FromTrainParams(params, algorithm, inputs));
  TARN_ASSIGN_OR_RETURN(s.optimizer, model::OptimizerConfig::FromTrainParams(params));
  s.shifu_kind = model::ShifuErrorKind(params);
  if (params.contains("CheckpointInterval") && params["CheckpointInterval"].is_number()) {
    s.checkpoint_interval = params["CheckpointInterval"].get<int>();
  }
  s.full_batch = model::IsFullBatch(s.optimizer.kind);
  return s;
}

}  // namespace tarn::train
