#include "train/setup.h"

#include "model/epoch_report.h"

namespace tarn::train {

Result<TrainSetup> TrainSetup::FromTrainParams(const model::TrainParams& params, int inputs) {
  TrainSetup s;
  s.params = params;
  TARN_ASSIGN_OR_RETURN(s.spec, model::ModelSpec::FromTrainParams(params, inputs));
  s.optimizer = model::OptimizerConfig::FromTrainParams(params);
  s.shifu_kind = model::ShifuErrorKind(params);
  s.checkpoint_interval = params.checkpoint_interval;
  s.batch_size = params.mini_batch_rows;
  s.full_batch = model::IsFullBatch(s.optimizer.kind);
  return s;
}

Result<TrainSetup> TrainSetup::FromTrainParams(const data::Json& params,
                                               const std::string& algorithm, int inputs) {
  TARN_ASSIGN_OR_RETURN(auto typed, model::TrainParams::Parse(params, algorithm));
  return FromTrainParams(typed, inputs);
}

}  // namespace tarn::train
