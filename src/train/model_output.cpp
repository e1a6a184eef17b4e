#include "train/model_output.h"

namespace tarn::train {

void TrainedSoFar::Record(const model::EpochFigures& f) {
  train_error = f.train_loss;
  valid_error = f.valid_loss;
  shifu_train_error = f.shifu_train_error;
  shifu_valid_error = f.shifu_valid_error;
}

model::ModelFile MakeModelFile(const ModelDescription& d, const TrainedSoFar& s,
                               std::vector<float> params) {
  model::ModelFile f;
  f.spec = d.spec;
  f.graph = d.graph;
  f.columns = d.columns;
  f.id_columns = d.id_columns;
  f.norm_type = d.norm_type;
  f.std_dev_cut_off = d.std_dev_cut_off;
  f.missing_values = d.missing_values;
  f.model_set_columns = d.model_set_columns;
  f.training = {{"algorithm", d.algorithm},
                {"bag", s.bag},
                {"epochs", s.epochs},
                {"trainError", data::OrNull(s.train_error)},
                {"validError", data::OrNull(s.valid_error)},
                {"shifuTrainError", data::OrNull(s.shifu_train_error)},
                {"shifuValidError", data::OrNull(s.shifu_valid_error)},
                {"seed", d.seed}};
  for (const auto& [k, v] : d.run.items()) f.training[k] = v;
  f.training["params"] = d.train_params;
  f.params = std::move(params);
  return f;
}

}  // namespace tarn::train
