#include "train/epoch_outcome.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "common/log.h"
#include "common/strings.h"

namespace tarn::train {

void EpochTotals::AddSlot(const TrainSums& slot_train, const ValidationSummary& slot_valid) {
  train.loss += slot_train.loss;
  train.weight += slot_train.weight;
  train.rows += slot_train.rows;
  train.shifu.Merge(slot_train.shifu);
  shifu_train.push_back(slot_train.shifu);
  valid.Merge(slot_valid);
  shifu_valid.push_back(slot_valid.shifu);
}

model::EpochFigures EpochTotals::Figures(int epoch, int bag, double train_seconds,
                                         double seconds) const {
  model::EpochFigures f;
  f.epoch = epoch;
  f.shifu_train_error = ShifuErrorOverWorkers(shifu_train);
  f.shifu_valid_error = ShifuErrorOverWorkers(shifu_valid);
  f.train_loss = train.MeanLoss();
  f.valid_loss = valid.MeanLoss();
  f.samples_per_sec = static_cast<double>(train.rows) / std::max(train_seconds, 1e-9);
  f.seconds = seconds;
  f.bag = bag;
  return f;
}

Status ReportEpoch(const model::EpochFigures& f, double auc, model::TensorBoardWriter* tb) {
  if (!Quiet()) {
    std::printf("%s\n", model::FormatEpochLine(f).c_str());
    std::fflush(stdout);
  }
  if (!tb) return Status::Ok();
  const int64_t step = f.epoch;
  TARN_RETURN_IF_ERROR(tb->AddScalar("loss/train", step, f.train_loss));
  if (std::isfinite(f.valid_loss)) {
    TARN_RETURN_IF_ERROR(tb->AddScalar("loss/valid", step, f.valid_loss));
  }
  if (std::isfinite(auc)) TARN_RETURN_IF_ERROR(tb->AddScalar("auc/valid", step, auc));
  TARN_RETURN_IF_ERROR(tb->AddScalar("throughput/samples_per_sec", step, f.samples_per_sec));
  return tb->Flush();
}

double ShifuErrorOverWorkers(const std::vector<model::ShifuError>& workers) {
  double sum = 0;
  int counted = 0;
  for (const auto& w : workers) {
    if (w.rows <= 0) continue;
    sum += w.Mean();
    ++counted;
  }
  return counted > 0 ? sum / counted : NAN;
}

Status CheckNotDiverged(int epoch, double train_error) {
  if (std::isfinite(train_error)) return Status::Ok();
  return FailedPrecondition("training diverged at epoch " + std::to_string(epoch) + " (error " +
                            FormatDouble(train_error) + "); lower train.params.LearningRate");
}

EarlyStop::Verdict EarlyStop::AfterEpoch(double train_error, double valid_error) {
  Verdict v;
  v.improved = std::isfinite(valid_error) && valid_error < best_valid_;
  if (v.improved) {
    best_valid_ = valid_error;
    since_best_ = 0;
    v.keep_params = rules_.patience > 0;
  } else {
    ++since_best_;
  }
  if (rules_.convergence_threshold > 0 && train_error < rules_.convergence_threshold) {
    TARN_LOG(kInfo) << rules_.who << ": training error below convergenceThreshold "
                    << rules_.convergence_threshold << "; stopping";
    v.stop = true;
  }
  if (rules_.patience > 0 && since_best_ >= rules_.patience) {
    TARN_LOG(kInfo) << rules_.who << ": valid error has not improved for " << rules_.patience
                    << " epochs; stopping and keeping the best epoch";
    v.stop = true;
  }
  return v;
}

void EarlyStop::Reset() {
  best_valid_ = INFINITY;
  since_best_ = 0;
}

data::Json EarlyStop::SaveState() const {
  return data::Json{{"bestValid", std::isfinite(best_valid_) ? best_valid_ : 1e300},
                    {"sinceBest", since_best_}};
}

void EarlyStop::RestoreState(const data::Json& state) {
  best_valid_ = state.value("bestValid", 1e300);
  if (best_valid_ >= 1e300) best_valid_ = INFINITY;
  since_best_ = state.value("sinceBest", 0);
}

}  // namespace tarn::train
